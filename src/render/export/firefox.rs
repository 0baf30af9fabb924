//! The Firefox Profiler's processed format, written by
//! fxprof-processed-profile (the crate samply writes it with).
//!
//! A process per pid and a thread per tid, named by comm; every sample at
//! its time, its stack a chain of label frames (the resolved function
//! names: the profile is symbolicated here, not by the viewer). Clock
//! events give each sample its period as CPU time (the CPU graph of the
//! thread track); other sampled events count one per sample. Tracepoint
//! samples are instant markers on their thread, named for the event, with
//! the CPU as a field and the stack attached. Kernel frames are in a
//! category of their own, so the call tree colours them apart.
//!
//! Each thread's stack is interned once per distinct stack (samples that
//! name the same frames share one `Arc`), each frame's name once: on a
//! deep 400k-sample file, naming every frame of every sample was most of
//! the export's time. The output is the same: the crate interns them
//! anyway, in the order first met.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use fxprof_processed_profile::{
    CategoryColor, CategoryHandle, CategoryPairHandle, CpuDelta, Frame, FrameFlags, FrameInfo,
    MarkerFieldFlags, MarkerFieldFormat, MarkerTiming, ProcessHandle, Profile, ReferenceTimestamp,
    SamplingInterval, StackHandle, StaticSchemaMarker, StaticSchemaMarkerField, StringHandle,
    ThreadHandle, Timestamp,
};

use super::{
    EventKind, ExportError, ExportInput, ExportResult, ExportSummary, Exporter, function_name,
    is_kernel,
};
use crate::model::hash::FxHashMap;
use crate::model::sample::{FrameId, ResolvedSample};

/// The Firefox Profiler exporter.
pub(crate) struct Firefox;

/// A tracepoint occurrence, as a marker.
struct TracepointMarker {
    name: StringHandle,
    cpu: u32,
}

impl StaticSchemaMarker for TracepointMarker {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "Tracepoint";
    const DESCRIPTION: Option<&'static str> = Some("A tracepoint event recorded by scry");
    const CHART_LABEL: Option<&'static str> = Some("{marker.name}");
    const TABLE_LABEL: Option<&'static str> = Some("{marker.name} on CPU {marker.data.cpu}");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[StaticSchemaMarkerField {
        key: "cpu",
        label: "CPU",
        format: MarkerFieldFormat::Integer,
        flags: MarkerFieldFlags::empty(),
    }];

    fn name(&self, _profile: &mut Profile) -> StringHandle {
        self.name
    }

    fn category(&self, _profile: &mut Profile) -> CategoryHandle {
        CategoryHandle::OTHER
    }

    fn string_field_value(&self, _field_index: u32) -> StringHandle {
        self.name
    }

    fn number_field_value(&self, _field_index: u32) -> f64 {
        f64::from(self.cpu)
    }
}

/// Threads and processes as they are met.
struct Builder {
    profile: Profile,
    processes: HashMap<i32, ProcessHandle>,
    threads: HashMap<i32, ThreadHandle>,
    user: CategoryPairHandle,
    kernel: CategoryPairHandle,
    base: u64,
    /// Per thread and stack (its `Arc`'s address): its handle.
    stacks: FxHashMap<(ThreadHandle, usize), Option<StackHandle>>,
    /// Per frame: its name's handle.
    names: FxHashMap<FrameId, StringHandle>,
}

impl Builder {
    fn thread(&mut self, s: &ResolvedSample) -> ThreadHandle {
        if let Some(&t) = self.threads.get(&s.tid) {
            return t;
        }
        let start = Timestamp::from_nanos_since_reference(s.time.saturating_sub(self.base));
        let profile = &mut self.profile;
        let process = *self.processes.entry(s.pid).or_insert_with(|| {
            profile.add_process(&s.comm, u32::try_from(s.pid).unwrap_or(0), start)
        });
        let tid = u32::try_from(s.tid).unwrap_or(0);
        let thread = profile.add_thread(process, tid, start, s.pid == s.tid);
        profile.set_thread_name(thread, &s.comm);
        self.threads.insert(s.tid, thread);
        thread
    }

    fn stack(
        &mut self,
        thread: ThreadHandle,
        s: &ResolvedSample,
        input: &ExportInput,
    ) -> Option<StackHandle> {
        let key = (thread, s.stack.as_ptr() as usize);
        if let Some(&known) = self.stacks.get(&key) {
            return known;
        }
        let frames: Vec<FrameInfo> = s
            .stack
            .iter()
            .rev()
            .map(|&id| {
                let frame = input.resolved.frames.get(id);
                let profile = &mut self.profile;
                let name = *self
                    .names
                    .entry(id)
                    .or_insert_with(|| profile.intern_string(&function_name(frame)));
                FrameInfo {
                    frame: Frame::Label(name),
                    category_pair: if is_kernel(frame) {
                        self.kernel
                    } else {
                        self.user
                    },
                    flags: FrameFlags::empty(),
                }
            })
            .collect();
        let handle = self.profile.intern_stack_frames(thread, frames.into_iter());
        self.stacks.insert(key, handle);
        handle
    }
}

impl Exporter for Firefox {
    fn write(&self, input: &ExportInput, out: &mut dyn Write) -> ExportResult {
        let resolved = input.resolved;
        let order = super::time_order(&resolved.samples);
        let Some(&first) = order.first() else {
            return Err(ExportError::NoSamples);
        };
        let base = resolved.samples[first].time;
        // The clock events' period is the interval the viewer assumes.
        let interval = resolved
            .samples
            .iter()
            .find(|s| input.event(s.event).kind == EventKind::Clock)
            .map_or(SamplingInterval::from_millis(1), |s| {
                SamplingInterval::from_nanos(s.period.max(1))
            });
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        let mut profile = Profile::new(
            "scry",
            ReferenceTimestamp::from_duration_since_unix_epoch(now),
            interval,
        );
        profile.set_symbolicated(true);
        let user = profile.add_category("User", CategoryColor::Yellow).into();
        let kernel = profile.add_category("Kernel", CategoryColor::Orange).into();
        let mut b = Builder {
            profile,
            processes: HashMap::new(),
            threads: HashMap::new(),
            user,
            kernel,
            base,
            stacks: FxHashMap::default(),
            names: FxHashMap::default(),
        };
        let mut event_names: HashMap<usize, StringHandle> = HashMap::new();
        for i in order {
            let s = &resolved.samples[i];
            let thread = b.thread(s);
            let stack = b.stack(thread, s, input);
            let at = Timestamp::from_nanos_since_reference(s.time.saturating_sub(base));
            let event = input.event(s.event);
            match event.kind {
                EventKind::Tracepoint => {
                    let name = *event_names
                        .entry(s.event)
                        .or_insert_with(|| b.profile.intern_string(&event.name));
                    let marker = b.profile.add_marker(
                        thread,
                        MarkerTiming::Instant(at),
                        TracepointMarker { name, cpu: s.cpu },
                    );
                    b.profile.set_marker_stack(thread, marker, stack);
                }
                kind => {
                    let cpu = if kind == EventKind::Clock {
                        CpuDelta::from_nanos(s.period)
                    } else {
                        CpuDelta::ZERO
                    };
                    let weight = i32::try_from(s.count).unwrap_or(i32::MAX);
                    b.profile.add_sample(thread, at, stack, cpu, weight);
                }
            }
        }
        serde_json::to_writer(&mut *out, &b.profile).map_err(std::io::Error::from)?;
        Ok(ExportSummary::default())
    }
}
