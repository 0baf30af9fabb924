//! Chrome trace event JSON (what Perfetto and Chromium's trace viewer
//! read): scheduler timelines and tracepoints.
//!
//! A `sched:sched_switch` sample is taken in the task switching out, so on
//! one CPU the span from the previous switch to this one is a run of this
//! sample's thread: each becomes a complete (`X`) slice on the thread's
//! track, named for the CPU. The first switch seen on a CPU has no start
//! and gives no slice (its run began before the recording). Other
//! tracepoints are thread-scoped instants (`i`). Timestamps are
//! microseconds (the format's unit) from the first sample, with nanosecond
//! fractions. Sampled profiles (cpu-clock, cycles) are not timelines:
//! they are left out, and said so.
//!
//! Events are written one at a time as the time-ordered samples are walked,
//! so a large recording is not held twice.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use serde_json::json;

use super::{EventKind, ExportError, ExportInput, ExportResult, ExportSummary, Exporter};

/// The Chrome trace exporter.
pub struct ChromeTrace;

/// Microseconds from `base` with nanosecond fractions.
fn micros(ns: u64, base: u64) -> f64 {
    ns.saturating_sub(base) as f64 / 1000.0
}

/// Writes the array's elements with the commas between them.
struct EventWriter<'a> {
    out: &'a mut dyn Write,
    first: bool,
}

impl EventWriter<'_> {
    fn push(&mut self, event: &serde_json::Value) -> std::io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut *self.out, event).map_err(std::io::Error::from)
    }
}

impl Exporter for ChromeTrace {
    fn write(&self, input: &ExportInput, out: &mut dyn Write) -> ExportResult {
        let resolved = input.resolved;
        let switch: Vec<bool> = (0..resolved.events.len())
            .map(|i| {
                let e = input.event(i);
                e.kind == EventKind::Tracepoint && e.name == "sched:sched_switch"
            })
            .collect();
        let mut order: Vec<usize> = (0..resolved.samples.len())
            .filter(|&i| input.event(resolved.samples[i].event).kind == EventKind::Tracepoint)
            .collect();
        let mut left_out: BTreeMap<String, u64> = BTreeMap::new();
        for s in &resolved.samples {
            let e = input.event(s.event);
            if e.kind != EventKind::Tracepoint {
                *left_out.entry(e.name).or_default() += s.count;
            }
        }
        if order.is_empty() {
            return Err(ExportError::Unsupported {
                format: "chrome-trace",
                what: format!(
                    "sampled profiles ({}): it needs sched or other tracepoint events",
                    left_out.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            });
        }
        order.sort_by_key(|&i| resolved.samples[i].time);
        let base = resolved.samples[order[0]].time;
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        let mut w = EventWriter { out, first: true };
        let mut last_switch: HashMap<u32, u64> = HashMap::new();
        let mut names: BTreeMap<(i32, i32), String> = BTreeMap::new();
        for i in order {
            let s = &resolved.samples[i];
            names
                .entry((s.pid, s.tid))
                .or_insert_with(|| s.comm.to_string());
            if switch.get(s.event).copied().unwrap_or(false) {
                if let Some(start) = last_switch.insert(s.cpu, s.time) {
                    w.push(&json!({
                        "name": format!("CPU {}", s.cpu),
                        "cat": "sched",
                        "ph": "X",
                        "ts": micros(start, base),
                        "dur": micros(s.time, start),
                        "pid": s.pid,
                        "tid": s.tid,
                        "args": { "cpu": s.cpu, "comm": &*s.comm },
                    }))?;
                }
                continue;
            }
            w.push(&json!({
                "name": input.event(s.event).name,
                "cat": "tracepoint",
                "ph": "i",
                "s": "t",
                "ts": micros(s.time, base),
                "pid": s.pid,
                "tid": s.tid,
                "args": { "cpu": s.cpu },
            }))?;
        }
        for ((pid, tid), comm) in &names {
            w.push(&json!({
                "name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                "args": { "name": comm },
            }))?;
            if pid == tid {
                w.push(&json!({
                    "name": "process_name", "ph": "M", "pid": pid, "tid": tid,
                    "args": { "name": comm },
                }))?;
            }
        }
        w.out.write_all(b"\n]}\n")?;
        let mut summary = ExportSummary::default();
        if !left_out.is_empty() {
            let what: Vec<String> = left_out
                .iter()
                .map(|(name, n)| format!("{name} ({n} samples)"))
                .collect();
            summary.skipped.push(format!(
                "chrome-trace holds timelines, not sampled profiles: left out {}",
                what.join(", ")
            ));
        }
        Ok(summary)
    }
}
