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

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use serde_json::{Value, json};

use super::{
    EventKind, ExportError, ExportInput, ExportResult, ExportSummary, Exporter, function_name,
    source_location,
};
use crate::model::sample::FrameId;

/// The speedscope exporter.
pub(crate) struct Speedscope;

/// One profile being built: stacks as indices into the shared frames.
#[derive(Default)]
struct Thread {
    comm: String,
    samples: Vec<Vec<usize>>,
    weights: Vec<u64>,
}

impl Exporter for Speedscope {
    fn write(&self, input: &ExportInput, out: &mut dyn Write) -> ExportResult {
        let resolved = input.resolved;
        let order = super::time_order(&resolved.samples);
        let mut frames: Vec<Value> = Vec::new();
        let mut frame_index: HashMap<FrameId, usize> = HashMap::new();
        // Keyed by (event, pid, tid) so profiles come out in a stable order.
        let mut threads: BTreeMap<(usize, i32, i32), Thread> = BTreeMap::new();
        for i in order {
            let s = &resolved.samples[i];
            let thread = threads.entry((s.event, s.pid, s.tid)).or_default();
            if thread.comm.is_empty() {
                thread.comm = s.comm.to_string();
            }
            let stack = s
                .stack
                .iter()
                .rev()
                .map(|&id| {
                    *frame_index.entry(id).or_insert_with(|| {
                        let frame = resolved.frames.get(id);
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
            thread.samples.push(stack);
            thread.weights.push(s.period.max(1) * s.count.max(1));
        }
        if threads.is_empty() {
            return Err(ExportError::NoSamples);
        }
        let several_events = threads
            .keys()
            .any(|k| k.0 != threads.keys().next().map_or(0, |f| f.0));
        // Open on the heaviest profile, not on whichever thread came first.
        let active = threads
            .values()
            .enumerate()
            .max_by_key(|(_, t)| t.weights.iter().sum::<u64>())
            .map_or(0, |(i, _)| i);
        let profiles: Vec<Value> = threads
            .into_iter()
            .map(|((event, pid, tid), t)| {
                let event = input.event(event);
                let unit = match event.kind {
                    EventKind::Clock | EventKind::OffCpu => "nanoseconds",
                    _ => "none",
                };
                let total: u64 = t.weights.iter().sum();
                let mut name = format!("{} (pid {pid}, tid {tid})", t.comm);
                if several_events {
                    name = format!("{name} {}", event.base_name());
                }
                json!({
                    "type": "sampled",
                    "name": name,
                    "unit": unit,
                    "startValue": 0,
                    "endValue": total,
                    "samples": t.samples,
                    "weights": t.weights,
                })
            })
            .collect();
        let file = json!({
            "$schema": "https://www.speedscope.app/file-format-schema.json",
            "shared": { "frames": frames },
            "profiles": profiles,
            "name": "scry",
            "activeProfileIndex": active,
            "exporter": concat!("scry ", env!("CARGO_PKG_VERSION")),
        });
        serde_json::to_writer(&mut *out, &file).map_err(std::io::Error::from)?;
        Ok(ExportSummary::default())
    }
}
