//! Hand-built samples for unit tests and golden files: frames named by
//! string, one `FrameTable`, deterministic periods (1000 per sample).
//!
//! Frame spec syntax: `name` is a user function in `/usr/bin/app`,
//! `k:name` a kernel function in `[kernel.kallsyms]`, `lib:name` a function
//! in `/usr/lib/libc.so.6`, `?` an unresolved user address in `/usr/bin/app`.

use std::sync::Arc;

use super::profile::{Entry, EventProfile};
use super::sample::{Frame, FrameId, FrameKind, FrameTable, ResolvedSample, StackQuality};

#[derive(Default)]
pub(crate) struct Builder {
    pub(crate) frames: FrameTable,
    pub(crate) samples: Vec<ResolvedSample>,
    pub(crate) event: usize,
    pub(crate) time: u64,
}

pub(crate) fn frame_of(spec: &str) -> Frame {
    let (sym, dso, kind) = if let Some(name) = spec.strip_prefix("k:") {
        (Some(name), "[kernel.kallsyms]", FrameKind::Kernel)
    } else if let Some(name) = spec.strip_prefix("lib:") {
        (Some(name), "/usr/lib/libc.so.6", FrameKind::User)
    } else if spec == "?" {
        (None, "/usr/bin/app", FrameKind::User)
    } else {
        (Some(spec), "/usr/bin/app", FrameKind::User)
    };
    Frame {
        sym: sym.map(Arc::from),
        dso: Arc::from(dso),
        kind,
        inlined: false,
        srcline: None,
    }
}

impl Builder {
    /// Adds `count` samples of `comm`/`pid` with the stack `leaf_first`.
    pub(crate) fn sample(&mut self, comm: &str, pid: i32, leaf_first: &[&str], count: usize) {
        let stack: Vec<FrameId> = leaf_first
            .iter()
            .map(|spec| self.frames.intern(frame_of(spec)))
            .collect();
        for _ in 0..count {
            self.time += 1_000_000;
            self.samples.push(ResolvedSample {
                event: self.event,
                comm: Arc::from(comm),
                pid,
                tid: pid,
                cpu: 0,
                time: self.time,
                period: 1000,
                stack: stack.clone().into(),
                quality: StackQuality::Complete,
                count: 1,
            });
        }
    }

    /// The id of an already interned frame.
    pub(crate) fn id(&mut self, spec: &str) -> FrameId {
        self.frames.intern(frame_of(spec))
    }
}

/// The entry whose symbol is `sym` (panics in tests if absent).
pub(crate) fn find<'a>(ev: &'a EventProfile, frames: &FrameTable, sym: &str) -> &'a Entry {
    ev.entries
        .iter()
        .find(|e| e.frame.and_then(|f| frames.get(f).sym.clone()).as_deref() == Some(sym))
        .unwrap_or_else(|| panic!("no entry {sym}"))
}
