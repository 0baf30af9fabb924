//! memleak's report in bcc's layout (`[HH:MM:SS] Top N stacks with
//! outstanding allocations:`, then per stack `B bytes in N allocations
//! from stack` and its frames, innermost first; with `-a` each allocation
//! as `addr = ... size = ...`, oldest first, with its age), and its JSON
//! (one object per interval: time and the stacks).

use std::io::{self, Write};

use serde_json::json;

use super::snoop::hms;
use crate::analysis::memleak::LeakStack;

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
}
