//! vfsstat's table in bcc's layout (`TIME READ/s WRITE/s FSYNC/s OPEN/s
//! CREATE/s`, one line per interval), and its JSON (one object per
//! interval, with the counts themselves and the interval's length).

use std::io::{self, Write};

use serde_json::json;

use super::snoop::hms;
use crate::analysis::vfsstat::VfsInterval;

/// The columns, in the counters' order.
const NAMES: [&str; 5] = ["READ", "WRITE", "FSYNC", "OPEN", "CREATE"];

pub(crate) fn header(w: &mut impl Write) -> io::Result<()> {
    write!(w, "{:<8}  ", "TIME")?;
    for name in NAMES {
        write!(w, " {name:>6}/s")?;
    }
    writeln!(w)
}

/// One interval's line; `time` the wall clock at its end.
pub(crate) fn line(w: &mut impl Write, time: (u32, u32, u32), i: &VfsInterval) -> io::Result<()> {
    write!(w, "{:<8}: ", hms(time))?;
    for rate in i.per_second() {
        write!(w, " {rate:>8}")?;
    }
    writeln!(w)
}

/// One interval as a JSON object on one line.
pub(crate) fn json(w: &mut impl Write, time: (u32, u32, u32), i: &VfsInterval) -> io::Result<()> {
    let mut fields = serde_json::Map::new();
    fields.insert("time".into(), hms(time).into());
    fields.insert("secs".into(), i.secs.into());
    for ((name, count), rate) in NAMES.iter().zip(i.counts).zip(i.per_second()) {
        let key = name.to_ascii_lowercase();
        fields.insert(key.clone(), count.into());
        fields.insert(format!("{key}_per_s"), rate.into());
    }
    serde_json::to_writer(&mut *w, &json!(fields))?;
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_in_bcc_layout() {
        let i = VfsInterval {
            counts: [10, 2, 0, 4, 1],
            secs: 1.0,
        };
        let mut out = Vec::new();
        header(&mut out).unwrap();
        line(&mut out, (1, 2, 3), &i).unwrap();
        json(&mut out, (1, 2, 3), &i).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "TIME         READ/s  WRITE/s  FSYNC/s   OPEN/s CREATE/s"
        );
        assert_eq!(
            lines[1],
            "01:02:03:        10        2        0        4        1"
        );
        let v: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(
            (v["read"].as_u64(), v["create_per_s"].as_u64()),
            (Some(10), Some(1))
        );
    }
}
