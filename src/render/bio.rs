//! The block I/O tools' text as libbpf-tools prints it: biosnoop's lines
//! (`TIME(s) COMM PID DISK T SECTOR BYTES [P] [QUE(ms)] LAT(ms)`, T being the
//! request's rwbs letters as the kernel's blk_fill_rwbs writes them),
//! biolatency's labels (`disk = vda`, `flags = Sync-Write`), and biotop's
//! table (`PID COMM D MAJ MIN DISK I/O Kbytes AVGms`, and its JSON). Flags are the
//! canonical ones `sys::bpf_bio` documents, so the names do not depend on
//! the kernel's bit numbers. The time column is seconds since the tool
//! started (libbpf-tools: since the first event).

use std::cell::RefCell;
use std::io::{self, Write};

use serde_json::{Value, json};

use crate::analysis::bio::{BioEvent, Partition, Pattern, Patterns, TopKey, TopSums};
use crate::render::snoop::{Clock, SnoopFormat};

const SYNC: u32 = 1 << 8;
const META: u32 = 1 << 9;
const FUA: u32 = 1 << 10;
const PREFLUSH: u32 = 1 << 11;
const RAHEAD: u32 = 1 << 12;

/// The flag names, in libbpf-tools' order, by canonical bit.
const FLAG_NAMES: [(u32, &str); 11] = [
    (1 << 14, "NoWait-"),
    (1 << 13, "Background-"),
    (RAHEAD, "ReadAhead-"),
    (PREFLUSH, "PreFlush-"),
    (FUA, "FUA-"),
    (1 << 18, "Integrity-"),
    (1 << 17, "Idle-"),
    (1 << 16, "NoMerge-"),
    (1 << 15, "Priority-"),
    (META, "Metadata-"),
    (SYNC, "Sync-"),
];

/// The operation's name (REQ_OP_*).
fn op_name(op: u32) -> &'static str {
    match op {
        0 => "Read",
        1 => "Write",
        2 => "Flush",
        3 => "Discard",
        5 => "SecureErase",
        9 => "WriteZeroes",
        10 => "ZoneOpen",
        11 => "ZoneClose",
        12 => "ZoneFinish",
        13 => "ZoneAppend",
        15 => "ZoneReset",
        17 => "ZoneResetAll",
        34 => "DrvIn",
        35 => "DrvOut",
        _ => "Unknown",
    }
}

/// biolatency -F's label: `flags = Sync-Write`.
pub(crate) fn flags_label(flags: u32) -> String {
    let mut label = String::from("flags = ");
    for (bit, name) in FLAG_NAMES {
        if flags & bit != 0 {
            label.push_str(name);
        }
    }
    label.push_str(op_name(flags & 0xff));
    label
}

/// The rwbs letters (`WS`, `R`, `FWFS`...).
pub(crate) fn rwbs(flags: u32) -> String {
    let mut s = String::new();
    if flags & PREFLUSH != 0 {
        s.push('F');
    }
    s.push_str(match flags & 0xff {
        1 => "W",
        3 => "D",
        5 => "DE",
        2 => "F",
        0 => "R",
        _ => "N",
    });
    for (bit, c) in [(FUA, 'F'), (RAHEAD, 'A'), (SYNC, 'S'), (META, 'M')] {
        if flags & bit != 0 {
            s.push(c);
        }
    }
    s
}

/// A disk's name, or `Unknown`.
pub(crate) fn disk_name(disks: &[Partition], dev: u32) -> &str {
    disks
        .iter()
        .find(|p| p.dev == dev)
        .map_or("Unknown", |p| p.name.as_str())
}

/// biosnoop's table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BioTable {
    /// -Q: the QUE(ms) column.
    pub(crate) queued: bool,
    /// -P: the P column (bcc's), each line's pattern from the stream so
    /// far (a cell: a format renders through `&self`, each event once).
    pub(crate) pattern: Option<RefCell<Patterns>>,
    pub(crate) disks: Vec<Partition>,
}

impl BioTable {
    fn pattern(&self, e: &BioEvent) -> Option<Pattern> {
        self.pattern.as_ref().map(|p| p.borrow_mut().next(e))
    }
}

impl SnoopFormat for BioTable {
    type Event = BioEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        write!(
            w,
            "{:<11} {:<14} {:<7} {:<7} {:<4} {:<10} {:<7} ",
            "TIME(s)", "COMM", "PID", "DISK", "T", "SECTOR", "BYTES"
        )?;
        if self.pattern.is_some() {
            write!(w, "{:<1} ", "P")?;
        }
        if self.queued {
            write!(w, "{:>7} ", "QUE(ms)")?;
        }
        writeln!(w, "{:>7}", "LAT(ms)")
    }

    fn line<W: Write>(&self, w: &mut W, e: &BioEvent, clock: Clock) -> io::Result<()> {
        write!(
            w,
            "{:<11.6} {:<14.14} {:<7} {:<7} {:<4} {:<10} {:<7} ",
            clock.secs,
            e.comm,
            e.pid,
            disk_name(&self.disks, e.dev),
            rwbs(e.flags),
            e.sector,
            e.bytes
        )?;
        if let Some(p) = self.pattern(e) {
            write!(w, "{} ", p.letter())?;
        }
        if self.queued {
            let ms = e.queued_ns.map_or(-1.0, |ns| ns as f64 / 1e6);
            write!(w, "{ms:>7.3} ")?;
        }
        writeln!(w, "{:>7.3}", e.latency_ns as f64 / 1e6)
    }

    fn fields(&self, e: &BioEvent) -> Value {
        let mut fields = json!({
            "comm": e.comm, "pid": e.pid, "disk": disk_name(&self.disks, e.dev),
            "rwbs": rwbs(e.flags), "flags": flags_label(e.flags).trim_start_matches("flags = "),
            "sector": e.sector, "bytes": e.bytes,
            "queued_ns": e.queued_ns, "latency_ns": e.latency_ns,
        });
        if let (Some(p), Value::Object(map)) = (self.pattern(e), &mut fields) {
            map.insert("pattern".into(), p.name().into());
        }
        fields
    }
}

/// One biotop interval: libbpf-tools' head (`HH:MM:SS loadavg: ...`, when
/// `head` is given), its header and rows, a blank line.
pub(crate) fn top_table(
    w: &mut impl Write,
    head: Option<&str>,
    rows: &[(TopKey, TopSums)],
    disks: &[Partition],
) -> io::Result<()> {
    if let Some(head) = head {
        writeln!(w, "{head}")?;
    }
    writeln!(
        w,
        "{:<7} {:<16} {:1} {:<3} {:<3} {:<8} {:>5} {:>7} {:>6}",
        "PID", "COMM", "D", "MAJ", "MIN", "DISK", "I/O", "Kbytes", "AVGms"
    )?;
    for (key, sums) in rows {
        let avg_ms = sums.latency_ns as f64 / 1e6 / sums.ios.max(1) as f64;
        writeln!(
            w,
            "{:<7} {:<16} {:1} {:<3} {:<3} {:<8} {:>5} {:>7} {avg_ms:>6.2}",
            key.pid,
            key.comm,
            if key.write { "W" } else { "R" },
            key.dev >> 20,
            key.dev & 0xfffff,
            top_disk(disks, key.dev),
            sums.ios,
            sums.bytes / 1024,
        )?;
    }
    writeln!(w)
}

/// biotop's disk column: the name, or empty (libbpf-tools).
fn top_disk(disks: &[Partition], dev: u32) -> &str {
    match disk_name(disks, dev) {
        "Unknown" => "",
        name => name,
    }
}

/// One biotop interval as one JSON line: an array of rows.
pub(crate) fn top_json(
    w: &mut impl Write,
    rows: &[(TopKey, TopSums)],
    disks: &[Partition],
) -> io::Result<()> {
    let rows: Vec<Value> = rows
        .iter()
        .map(|(key, sums)| {
            json!({
                "pid": key.pid, "comm": key.comm, "write": key.write,
                "major": key.dev >> 20, "minor": key.dev & 0xfffff,
                "disk": top_disk(disks, key.dev), "ios": sums.ios,
                "bytes": sums.bytes, "latency_ns": sums.latency_ns,
            })
        })
        .collect();
    serde_json::to_writer(&mut *w, &rows)?;
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_flags_as_libbpf_tools() {
        assert_eq!(flags_label(1 | SYNC), "flags = Sync-Write");
        assert_eq!(flags_label(RAHEAD), "flags = ReadAhead-Read");
        assert_eq!(rwbs(1 | SYNC | FUA), "WFS");
        assert_eq!(rwbs(2 | PREFLUSH), "FF");
        let table = BioTable {
            queued: false,
            pattern: None,
            disks: vec![Partition {
                dev: 254 << 20,
                name: "vda".into(),
            }],
        };
        let e = BioEvent {
            latency_ns: 1_500_000,
            sector: 2048,
            bytes: 65536,
            dev: 254 << 20,
            flags: 1 | SYNC,
            pid: 42,
            comm: "dwrites".into(),
            ..BioEvent::default()
        };
        let mut out = Vec::new();
        table.header(&mut out).unwrap();
        table.line(&mut out, &e, Clock::default()).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "TIME(s)     COMM           PID     DISK    T    SECTOR     BYTES   LAT(ms)\n\
             0.000000    dwrites        42      vda     WS   2048       65536     1.500\n"
        );
        let key = TopKey {
            pid: 42,
            comm: "dwrites".into(),
            write: true,
            dev: 254 << 20,
        };
        let sums = TopSums {
            ios: 4,
            bytes: 262144,
            latency_ns: 6_000_000,
        };
        let mut out = Vec::new();
        top_table(&mut out, None, &[(key, sums)], &table.disks).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "PID     COMM             D MAJ MIN DISK       I/O  Kbytes  AVGms\n\
             42      dwrites          W 254 0   vda          4     256   1.50\n\n"
        );
    }
}
