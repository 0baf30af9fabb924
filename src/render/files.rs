//! The file tools' output: filetop's table (libbpf-tools' columns and
//! widths: TID COMM READS WRITES R_Kb W_Kb T FILE) and its JSON (one
//! array per interval, bytes exact); fsslower's lines (libbpf-tools'
//! TIME COMM PID T BYTES OFF_KB LAT(ms) FILENAME), bcc's CSV (`-j`) and
//! JSON, as a [`SnoopFormat`] for the streaming loop.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::analysis::files::{FileStat, FsEvent};

use super::snoop::{Clock, SnoopFormat, hms};

/// One filetop interval: `head` (the time and load line) if given, the
/// header, the rows, a blank line.
pub(crate) fn filetop_table(
    w: &mut impl Write,
    head: Option<&str>,
    rows: &[FileStat],
) -> io::Result<()> {
    if let Some(head) = head {
        writeln!(w, "{head}")?;
    }
    writeln!(
        w,
        "{:<7} {:<16} {:<6} {:<6} {:<7} {:<7} {:1} FILE",
        "TID", "COMM", "READS", "WRITES", "R_Kb", "W_Kb", "T"
    )?;
    for s in rows {
        writeln!(
            w,
            "{:<7} {:<16} {:<6} {:<6} {:<7} {:<7} {} {}",
            s.tid,
            s.comm,
            s.reads,
            s.writes,
            s.read_bytes / 1024,
            s.write_bytes / 1024,
            s.kind,
            s.name
        )?;
    }
    writeln!(w)
}

/// One filetop interval as one JSON line: an array of rows.
pub(crate) fn filetop_json(w: &mut impl Write, rows: &[FileStat]) -> io::Result<()> {
    let rows: Vec<Value> = rows
        .iter()
        .map(|s| {
            json!({
                "pid": s.pid, "tid": s.tid, "comm": s.comm,
                "reads": s.reads, "writes": s.writes,
                "read_bytes": s.read_bytes, "write_bytes": s.write_bytes,
                "type": s.kind.to_string(), "file": s.name,
                "inode": s.inode, "dev": s.dev,
            })
        })
        .collect();
    serde_json::to_writer(&mut *w, &rows)?;
    writeln!(w)
}

/// fsslower's layout: the table, or bcc's CSV (`-j`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FsslowerLayout {
    pub(crate) csv: bool,
}

impl SnoopFormat for FsslowerLayout {
    type Event = FsEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        if self.csv {
            return writeln!(w, "ENDTIME_us,TASK,PID,TYPE,BYTES,OFFSET_b,LATENCY_us,FILE");
        }
        writeln!(
            w,
            "{:<8} {:<16} {:<7} {:1} {:<7} {:<8} {:>7} FILENAME",
            "TIME", "COMM", "PID", "T", "BYTES", "OFF_KB", "LAT(ms)"
        )
    }

    fn line<W: Write>(&self, w: &mut W, e: &FsEvent, clock: Clock) -> io::Result<()> {
        if self.csv {
            return writeln!(
                w,
                "{},{},{},{},{},{},{},{}",
                (clock.secs * 1e6) as u64,
                e.comm,
                e.pid,
                e.op.letter(),
                e.size,
                e.offset,
                e.latency_us,
                e.file
            );
        }
        writeln!(
            w,
            "{:<8} {:<16} {:<7} {} {:<7} {:<8} {:>7.2} {}",
            hms(clock.hms),
            e.comm,
            e.pid,
            e.op.letter(),
            e.size,
            e.offset / 1024,
            e.latency_us as f64 / 1000.0,
            e.file
        )
    }

    fn fields(&self, e: &FsEvent) -> Value {
        json!({
            "pid": e.pid, "tid": e.tid, "comm": e.comm,
            "op": e.op.letter().to_string(), "bytes": e.size, "offset": e.offset,
            "latency_us": e.latency_us, "fs": e.fs, "file": e.file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::files::FsOp;

    #[test]
    fn filetop_rows_in_libbpf_tools_widths() {
        let rows = [FileStat {
            tid: 42,
            comm: "dd".into(),
            reads: 3,
            read_bytes: 3 * 4096,
            writes: 1,
            write_bytes: 512,
            kind: 'R',
            name: "data".into(),
            ..FileStat::default()
        }];
        let mut out = Vec::new();
        filetop_table(&mut out, None, &rows).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "TID     COMM             READS  WRITES R_Kb    W_Kb    T FILE"
        );
        assert_eq!(
            lines[1],
            "42      dd               3      1      12      0       R data"
        );
    }

    #[test]
    fn fsslower_line_and_csv() {
        let e = FsEvent {
            latency_us: 12345,
            offset: 8192,
            size: 4096,
            pid: 7,
            op: FsOp::Write,
            comm: "db".into(),
            file: "wal".into(),
            ..FsEvent::default()
        };
        let clock = Clock {
            hms: (1, 2, 3),
            secs: 1.5,
        };
        let mut out = Vec::new();
        FsslowerLayout { csv: false }.header(&mut out).unwrap();
        FsslowerLayout { csv: false }
            .line(&mut out, &e, clock)
            .unwrap();
        FsslowerLayout { csv: true }
            .line(&mut out, &e, clock)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "TIME     COMM             PID     T BYTES   OFF_KB   LAT(ms) FILENAME"
        );
        assert_eq!(
            lines[1],
            "01:02:03 db               7       W 4096    8          12.35 wal"
        );
        assert_eq!(lines[2], "1500000,db,7,W,4096,8192,12345,wal");
    }
}
