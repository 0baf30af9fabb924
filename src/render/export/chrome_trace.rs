//! Chrome trace event JSON (what Perfetto and Chromium's trace viewer
//! read): scheduler timelines and tracepoints.
//!
//! Runs come from `analysis::sched` (the tracker behind `scry sched
//! timehist`): each switch-out with a start is a complete (`X`)
//! slice on the thread's track, named for the CPU, so a thread's slices add
//! up to its time on CPU. The tracker takes switch-ins from the
//! tracepoint's `next_pid`; where the input lacks one (the kernel emits no
//! switch out of some tasks), the run starts at the latest moment the input
//! allows (`analysis::sched`) and its slice's args say
//! `"switch_in": "not recorded"`: it holds the run and whatever ran unseen
//! before it on that CPU, which no consumer could tell apart otherwise. A
//! run that began before the recording has no start and no slice.
//! The idle task's events (tid 0) get a track per CPU. Other tracepoints are
//! thread-scoped instants (`i`); sched_switch samples are already the
//! slices. Event pairs (`analysis::pairs`: a system call's enter to its
//! exit, a wakeup to the switch-in, blocked time, interrupts, faults; the
//! pairs `scry profile` and the latency heat maps count) are async slices
//! (`b`/`e`, category `pair`, named for the pair) on their task's process:
//! they overlap the run slices of their thread (a system call spans
//! switches), which a thread's own track cannot nest. Timestamps are
//! microseconds (the format's unit) from the first event, with nanosecond
//! fractions. Sampled profiles (cpu-clock, cycles)
//! are not timelines: they are left out, and said so.
//!
//! A slice begins at least 1 ns after its track's previous one ends. An
//! inferred start is often the thread's own switch-out, where its last
//! slice ended; a consumer that adds microseconds as floats (speedscope's
//! importer subtracts the first `ts`, then adds `dur`) can read such
//! slices as overlapping, and where they are on two CPUs (two frames)
//! speedscope keeps the first open to the end of the profile, weighing the
//! thread's every gap after it.
//!
//! Events are written one at a time, so a large recording is not held
//! twice.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use serde_json::json;

use super::{EventKind, ExportError, ExportInput, ExportResult, ExportSummary, Exporter};
use crate::analysis::pairs::Scope;

/// The Chrome trace exporter.
pub(crate) struct ChromeTrace;

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

/// The track of a task: the idle task's is per CPU (it runs on all at once).
fn track(pid: i32, tid: i32, cpu: u32) -> (i64, i64) {
    if tid == 0 {
        (0, -i64::from(cpu) - 1)
    } else {
        (i64::from(pid), i64::from(tid))
    }
}

impl Exporter for ChromeTrace {
    fn write(&self, input: &ExportInput, out: &mut dyn Write) -> ExportResult {
        let resolved = input.resolved;
        let is_switch = |event: usize| input.event(event).name == "sched:sched_switch";
        let instants: Vec<usize> = super::time_order(&resolved.samples)
            .into_iter()
            .filter(|&i| {
                let s = &resolved.samples[i];
                input.event(s.event).kind == EventKind::Tracepoint && !is_switch(s.event)
            })
            .collect();
        let mut left_out: BTreeMap<String, u64> = BTreeMap::new();
        for s in &resolved.samples {
            let e = input.event(s.event);
            if e.kind != EventKind::Tracepoint {
                *left_out.entry(e.name).or_default() += s.count;
            }
        }
        let runs: Vec<_> = input.runs.iter().filter(|r| r.run.is_some()).collect();
        let pairs = input.pairs.map_or(&[][..], |log| &log.pairs[..]);
        if runs.is_empty() && instants.is_empty() && pairs.is_empty() {
            return Err(ExportError::Unsupported {
                format: "chrome-trace",
                what: format!(
                    "sampled profiles ({}): it needs sched or other tracepoint events",
                    left_out.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            });
        }
        let run_start =
            |r: &&crate::analysis::sched::TimehistRow| r.time.saturating_sub(r.run.unwrap_or(0));
        let base = runs
            .iter()
            .map(run_start)
            .chain(instants.iter().map(|&i| resolved.samples[i].time))
            .chain(pairs.iter().map(|p| p.2.saturating_sub(p.3)))
            .min()
            .unwrap_or(0);
        let mut names: BTreeMap<(i64, i64), String> = BTreeMap::new();
        let comm_of: HashMap<i32, &str> =
            resolved.samples.iter().map(|s| (s.tid, &*s.comm)).collect();
        let pid_of: HashMap<i32, i32> = resolved.samples.iter().map(|s| (s.tid, s.pid)).collect();
        out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        let mut w = EventWriter { out, first: true };
        // Each track's last slice end, ns.
        let mut ends: HashMap<(i64, i64), u64> = HashMap::new();
        for r in &runs {
            let (pid, tid) = track(r.pid, r.tid, r.cpu);
            let comm = match r.tid {
                0 => format!("swapper/{}", r.cpu),
                t => comm_of.get(&t).map_or(format!("{t}"), |c| c.to_string()),
            };
            let start = match ends.insert((pid, tid), r.time) {
                Some(end) if end >= run_start(r) => (end + 1).min(r.time),
                _ => run_start(r),
            };
            let mut args = json!({ "cpu": r.cpu, "state_out": r.state.to_string() });
            if r.start_inferred {
                args["switch_in"] = json!("not recorded");
            }
            w.push(&json!({
                "name": format!("CPU {}", r.cpu),
                "cat": "sched",
                "ph": "X",
                "ts": micros(start, base),
                "dur": micros(r.time, start),
                "pid": pid,
                "tid": tid,
                "args": args,
            }))?;
            names.entry((pid, tid)).or_insert(comm);
        }
        for i in instants {
            let s = &resolved.samples[i];
            let (pid, tid) = track(s.pid, s.tid, s.cpu);
            w.push(&json!({
                "name": input.event(s.event).name,
                "cat": "tracepoint",
                "ph": "i",
                "s": "t",
                "ts": micros(s.time, base),
                "pid": pid,
                "tid": tid,
                "args": { "cpu": s.cpu },
            }))?;
            names
                .entry((pid, tid))
                .or_insert_with(|| s.comm.to_string());
        }
        let labels = input.pairs.map_or(&[][..], |log| &log.labels[..]);
        for (id, (label, scope, end, duration)) in pairs.iter().enumerate() {
            let (pid, tid) = match *scope {
                Scope::Task(tid) => track(pid_of.get(&tid).copied().unwrap_or(tid), tid, 0),
                Scope::Cpu(cpu) => track(0, 0, cpu),
                // A global hook's sections (one per timer, ...): its own
                // process of tracks.
                Scope::Global(_) => (-1, -1),
            };
            let name = labels.get(*label as usize).map_or("pair", String::as_str);
            let start = end.saturating_sub(*duration);
            for (ph, ts) in [("b", start), ("e", *end)] {
                w.push(&json!({
                    "name": name, "cat": "pair", "ph": ph, "id": id,
                    "ts": micros(ts, base), "pid": pid, "tid": tid,
                }))?;
            }
            if let Scope::Task(t) = *scope {
                names
                    .entry((pid, tid))
                    .or_insert_with(|| comm_of.get(&t).map_or(format!("{t}"), |c| c.to_string()));
            }
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::analysis::sched::TimehistRow;
    use crate::symbol::Resolved;

    fn run(time: u64, run: u64, start_inferred: bool) -> TimehistRow {
        TimehistRow {
            time,
            cpu: 0,
            tid: 100,
            pid: 100,
            wait: None,
            delay: None,
            run: Some(run),
            start_inferred,
            state: 'R',
        }
    }

    #[test]
    fn a_run_without_its_switch_in_says_so_and_touches_no_other() {
        let resolved = Resolved {
            samples: Vec::new(),
            frames: Default::default(),
            events: Vec::new(),
            stats: Default::default(),
            lost: 0,
        };
        // The second run's inferred start is the first one's end.
        let runs = [run(10_000, 4_000, false), run(30_000, 20_000, true)];
        let input = ExportInput {
            resolved: &resolved,
            events: Vec::new(),
            build_ids: Vec::new(),
            runs: &runs,
            pairs: None,
        };
        let mut out = Vec::new();
        ChromeTrace.write(&input, &mut out).expect("write");
        let trace: Value = serde_json::from_slice(&out).expect("JSON");
        let slices: Vec<_> = trace["traceEvents"]
            .as_array()
            .expect("traceEvents")
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| (e["ts"].clone(), e["dur"].clone(), e["args"].clone()))
            .collect();
        assert_eq!(
            slices,
            [
                (
                    json!(0.0),
                    json!(4.0),
                    json!({ "cpu": 0, "state_out": "R" })
                ),
                (
                    json!(4.001),
                    json!(19.999),
                    json!({ "cpu": 0, "state_out": "R", "switch_in": "not recorded" })
                ),
            ]
        );
    }
}
