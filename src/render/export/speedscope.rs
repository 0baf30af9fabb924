//! speedscope: its JSON file format
//! (<https://www.speedscope.app/file-format-schema.json>), one sampled
//! profile per event and thread, samples in time order (speedscope's "time
//! order" view replays them).
//!
//! Stacks are root first, as the format wants (resolved stacks are leaf
//! first). Weights are the samples' periods: nanoseconds for clock events,
//! a unitless count (`none`) for the others, tracepoints included (one per
//! occurrence). Frames are shared by every profile; each is a function,
//! with file and line when the recording was resolved with source lines.
//!
//! The decision that isn't obvious: each distinct stack (samples that share
//! one `Arc`) is turned into frame indices once, and a thread's samples are
//! indices of those stacks; the file is then written as it goes, stack by
//! stack, instead of as one `serde_json::Value`. On the bench's deep
//! 400,000-sample file the tree of values (every frame index of every
//! sample a `Value`) was most of the export's time and memory. The bytes
//! are the same: keys in the order serde_json's map sorts them.

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::{Value, json};

use super::{
    EventKind, ExportError, ExportInput, ExportResult, ExportSummary, Exporter, function_name,
    source_location,
};
use crate::model::hash::FxHashMap;
use crate::model::sample::{FrameId, ResolvedSample};

/// The speedscope exporter.
pub(crate) struct Speedscope;

/// One profile being built: its samples as indices into the stacks.
#[derive(Default)]
struct Thread {
    comm: String,
    samples: Vec<u32>,
    weights: Vec<u64>,
}

/// Frames and stacks, each interned once.
#[derive(Default)]
struct Tables {
    frames: Vec<Value>,
    frame_index: FxHashMap<FrameId, usize>,
    /// Root-first frame indices per distinct stack.
    stacks: Vec<Box<[usize]>>,
    /// Per stack (its `Arc`'s address): its index in `stacks`.
    stack_index: FxHashMap<usize, u32>,
}

impl Tables {
    fn stack(&mut self, s: &ResolvedSample, input: &ExportInput) -> u32 {
        let key = s.stack.as_ptr() as usize;
        if let Some(&known) = self.stack_index.get(&key) {
            return known;
        }
        let frames = &mut self.frames;
        let stack = s
            .stack
            .iter()
            .rev()
            .map(|&id| {
                *self.frame_index.entry(id).or_insert_with(|| {
                    let frame = input.resolved.frames.get(id);
                    let mut f = json!({ "name": function_name(frame) });
                    if let Some((file, line)) = source_location(frame) {
                        f["file"] = json!(file);
                        f["line"] = json!(line);
                    }
                    frames.push(f);
                    frames.len() - 1
                })
            })
            .collect();
        let index = u32::try_from(self.stacks.len()).unwrap_or(u32::MAX);
        self.stacks.push(stack);
        self.stack_index.insert(key, index);
        index
    }
}

/// `value` as JSON to `out`.
fn json_to(out: &mut dyn Write, value: &impl serde::Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(std::io::Error::from)
}

/// `[a,b,c]` of numbers.
fn write_numbers(out: &mut dyn Write, numbers: &[impl std::fmt::Display]) -> std::io::Result<()> {
    out.write_all(b"[")?;
    for (i, n) in numbers.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write!(out, "{n}")?;
    }
    out.write_all(b"]")
}

impl Exporter for Speedscope {
    fn write(&self, input: &ExportInput, out: &mut dyn Write) -> ExportResult {
        let resolved = input.resolved;
        let order = super::time_order(&resolved.samples);
        let mut tables = Tables::default();
        // Keyed by (event, pid, tid) so profiles come out in a stable order.
        let mut threads: BTreeMap<(usize, i32, i32), Thread> = BTreeMap::new();
        for i in order {
            let s = &resolved.samples[i];
            let thread = threads.entry((s.event, s.pid, s.tid)).or_default();
            if thread.comm.is_empty() {
                thread.comm = s.comm.to_string();
            }
            thread.samples.push(tables.stack(s, input));
            thread.weights.push(s.period.max(1) * s.count.max(1));
        }
        let Some(first_event) = threads.keys().next().map(|k| k.0) else {
            return Err(ExportError::NoSamples);
        };
        let several_events = threads.keys().any(|k| k.0 != first_event);
        // Open on the heaviest profile, not on whichever thread came first.
        let active = threads
            .values()
            .enumerate()
            .max_by_key(|(_, t)| t.weights.iter().fold(0u64, |sum, &w| sum.saturating_add(w)))
            .map_or(0, |(i, _)| i);
        out.write_all(b"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"")?;
        write!(out, ",\"activeProfileIndex\":{active},\"exporter\":")?;
        json_to(out, &concat!("scry ", env!("CARGO_PKG_VERSION")))?;
        out.write_all(b",\"name\":\"scry\",\"profiles\":[")?;
        for (n, ((event, pid, tid), t)) in threads.into_iter().enumerate() {
            let event = input.event(event);
            let unit = match event.kind {
                EventKind::Clock | EventKind::OffCpu => "nanoseconds",
                _ => "none",
            };
            let total = t.weights.iter().fold(0u64, |sum, &w| sum.saturating_add(w));
            let mut name = format!("{} (pid {pid}, tid {tid})", t.comm);
            if several_events {
                name = format!("{name} {}", event.base_name());
            }
            if n > 0 {
                out.write_all(b",")?;
            }
            write!(out, "{{\"endValue\":{total},\"name\":")?;
            json_to(out, &name)?;
            out.write_all(b",\"samples\":[")?;
            for (i, &stack) in t.samples.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_numbers(out, &tables.stacks[stack as usize])?;
            }
            write!(
                out,
                "],\"startValue\":0,\"type\":\"sampled\",\"unit\":\"{unit}\",\"weights\":"
            )?;
            write_numbers(out, &t.weights)?;
            out.write_all(b"}")?;
        }
        out.write_all(b"],\"shared\":{\"frames\":")?;
        json_to(out, &tables.frames)?;
        out.write_all(b"}}")?;
        Ok(ExportSummary::default())
    }
}
