//! memleak's report in bcc's layout (`[HH:MM:SS] Top N stacks with
//! outstanding allocations:`, then per stack `B bytes in N allocations
//! from stack` and its frames, innermost first; with `-a` each allocation
//! as `addr = ... size = ...`, oldest first, with its age), and its JSON
//! (one object per interval: time and the stacks). `-t`'s calls, one
//! line each as they come: the monotonic time, the thread and bcc's trace
//! message (`alloc entered, size = N`, `alloc exited, size = N, result =
//! ADDR`, `free entered, address = ADDR, size = N`), or one JSON object.

use std::io::{self, Write};

use serde_json::json;

use super::snoop::hms;
use crate::analysis::memleak::LeakStack;
use crate::analysis::memleak::{TraceEvent, TraceKind};

/// One interval's report; `time` the wall clock.
pub(crate) fn write_text(
    w: &mut impl Write,
    time: (u32, u32, u32),
    stacks: &[LeakStack],
) -> io::Result<()> {
    writeln!(
        w,
        "[{}] Top {} stacks with outstanding allocations:",
        hms(time),
        stacks.len()
    )?;
    for s in stacks {
        for a in &s.allocations {
            writeln!(
                w,
                "\taddr = {:x} size = {} age = {} ms",
                a.address, a.size, a.age_ms
            )?;
        }
        writeln!(
            w,
            "\t{} bytes in {} allocations from stack",
            s.bytes, s.allocations_count
        )?;
        for frame in &s.frames {
            writeln!(w, "\t\t{frame}")?;
        }
    }
    Ok(())
}

/// One interval as a JSON object on one line.
pub(crate) fn write_json(
    w: &mut impl Write,
    time: (u32, u32, u32),
    stacks: &[LeakStack],
) -> io::Result<()> {
    serde_json::to_writer(&mut *w, &json!({ "time": hms(time), "stacks": stacks }))?;
    writeln!(w)
}

/// One call of `-t`, as text or a JSON object on one line.
pub(crate) fn write_trace(w: &mut impl Write, e: &TraceEvent, json: bool) -> io::Result<()> {
    let seconds = e.timestamp_ns as f64 / 1e9;
    if json {
        let call = match e.kind {
            TraceKind::AllocEntered => "alloc_entered",
            TraceKind::AllocExited => "alloc_exited",
            TraceKind::FreeEntered => "free_entered",
        };
        let mut v = json!({
            "time": seconds, "comm": e.comm, "pid": e.pid, "tid": e.tid,
            "call": call, "size": e.size,
        });
        if e.kind != TraceKind::AllocEntered {
            v["address"] = json!(format!("{:x}", e.address));
        }
        serde_json::to_writer(&mut *w, &v)?;
        return writeln!(w);
    }
    write!(w, "{seconds:.6} {}-{} ", e.comm, e.tid)?;
    match e.kind {
        TraceKind::AllocEntered => writeln!(w, "alloc entered, size = {}", e.size),
        TraceKind::AllocExited => writeln!(
            w,
            "alloc exited, size = {}, result = {:x}",
            e.size, e.address
        ),
        TraceKind::FreeEntered => writeln!(
            w,
            "free entered, address = {:x}, size = {}",
            e.address, e.size
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::memleak::Allocation;

    #[test]
    fn bcc_layout_and_json() {
        let stacks = vec![LeakStack {
            stack_id: 3,
            bytes: 128,
            allocations_count: 2,
            oldest_ms: 900,
            frames: vec!["leak_here".to_string(), "main".to_string()],
            allocations: vec![Allocation {
                address: 0x1000,
                size: 64,
                age_ms: 900,
            }],
        }];
        let mut out = Vec::new();
        write_text(&mut out, (1, 2, 3), &stacks).unwrap();
        write_json(&mut out, (1, 2, 3), &stacks).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("[01:02:03] Top 1 stacks with outstanding allocations:")
        );
        assert_eq!(lines.next(), Some("\taddr = 1000 size = 64 age = 900 ms"));
        assert_eq!(
            lines.next(),
            Some("\t128 bytes in 2 allocations from stack")
        );
        assert_eq!(lines.next(), Some("\t\tleak_here"));
        assert_eq!(lines.next(), Some("\t\tmain"));
        let doc: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        assert_eq!(doc["stacks"][0]["bytes"], 128);
        assert_eq!(doc["stacks"][0]["frames"][0], "leak_here");
        assert_eq!(doc["stacks"][0]["allocations"][0]["size"], 64);
    }

    #[test]
    fn trace_lines_are_bccs_messages() {
        let call = |kind, size, address| TraceEvent {
            timestamp_ns: 12_500_000_000,
            kind,
            size,
            address,
            pid: 7,
            tid: 8,
            comm: "app".to_string(),
        };
        let mut out = Vec::new();
        write_trace(&mut out, &call(TraceKind::AllocEntered, 16, 0), false).unwrap();
        write_trace(&mut out, &call(TraceKind::AllocExited, 16, 0xabc0), false).unwrap();
        write_trace(&mut out, &call(TraceKind::FreeEntered, 16, 0xabc0), false).unwrap();
        write_trace(&mut out, &call(TraceKind::FreeEntered, 16, 0xabc0), true).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "12.500000 app-8 alloc entered, size = 16");
        assert_eq!(
            lines[1],
            "12.500000 app-8 alloc exited, size = 16, result = abc0"
        );
        assert_eq!(
            lines[2],
            "12.500000 app-8 free entered, address = abc0, size = 16"
        );
        let doc: serde_json::Value = serde_json::from_str(lines[3]).unwrap();
        assert_eq!(doc["call"], "free_entered");
        assert_eq!(doc["address"], "abc0");
        assert_eq!(doc["pid"], 7);
    }
}
