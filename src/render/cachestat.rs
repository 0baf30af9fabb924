//! cachestat's table in bcc's layout (`HITS MISSES DIRTIES HITRATIO
//! BUFFERS_MB CACHED_MB`, one line per interval, `-T` a leading TIME), and
//! its JSON (one object per interval).

use std::io::{self, Write};

use serde_json::json;

use super::snoop::hms;
use crate::analysis::cachestat::CacheInterval;

pub(crate) fn header(w: &mut impl Write, timestamp: bool) -> io::Result<()> {
    if timestamp {
        write!(w, "{:<8} ", "TIME")?;
    }
    writeln!(
        w,
        "{:>8} {:>8} {:>8} {:>8} {:>11} {:>10}",
        "HITS", "MISSES", "DIRTIES", "HITRATIO", "BUFFERS_MB", "CACHED_MB"
    )
}

/// One interval's line; `time` the wall clock at its end, under `-T`.
pub(crate) fn line(
    w: &mut impl Write,
    time: Option<(u32, u32, u32)>,
    i: &CacheInterval,
) -> io::Result<()> {
    if let Some(time) = time {
        write!(w, "{:<8} ", hms(time))?;
    }
    writeln!(
        w,
        "{:>8} {:>8} {:>8} {:>7.2}% {:>11} {:>10}",
        i.hits,
        i.misses,
        i.dirties,
        i.ratio(),
        i.buffers_mb,
        i.cached_mb
    )
}

/// One interval as a JSON object on one line.
pub(crate) fn json(w: &mut impl Write, time: (u32, u32, u32), i: &CacheInterval) -> io::Result<()> {
    let v = json!({
        "time": hms(time),
        "hits": i.hits,
        "misses": i.misses,
        "dirties": i.dirties,
        "hit_ratio": i.ratio(),
        "buffers_mb": i.buffers_mb,
        "cached_mb": i.cached_mb,
    });
    serde_json::to_writer(&mut *w, &v)?;
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_in_bcc_layout() {
        let i = CacheInterval {
            hits: 75,
            misses: 25,
            dirties: 3,
            buffers_mb: 2,
            cached_mb: 10,
        };
        let mut out = Vec::new();
        header(&mut out, false).unwrap();
        line(&mut out, None, &i).unwrap();
        line(&mut out, Some((1, 2, 3)), &i).unwrap();
        json(&mut out, (1, 2, 3), &i).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "    HITS   MISSES  DIRTIES HITRATIO  BUFFERS_MB  CACHED_MB"
        );
        assert_eq!(
            lines[1],
            "      75       25        3   75.00%           2         10"
        );
        assert!(lines[2].starts_with("01:02:03       75"), "{}", lines[2]);
        let v: serde_json::Value = serde_json::from_str(lines[3]).unwrap();
        assert_eq!(
            (v["misses"].as_u64(), v["hits"].as_u64()),
            (Some(25), Some(75))
        );
    }
}
