//! The resolved sample: the plain data the `symbol` stage hands to every
//! consumer downstream (report, flame graphs, script, top).
//!
//! Frames are interned: a sample holds `FrameId`s into a `FrameTable`, so that
//! aggregating hundreds of thousands of deep stacks hashes `u32`s, not
//! strings. Stacks are leaf first (index 0 is where the sample was taken), as
//! the kernel gives callchains.

use std::sync::Arc;

/// Index of a frame in a `FrameTable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub(crate) u32);

/// Which address space a frame's address belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// A kernel or kernel-module address (the callchain's kernel part).
    Kernel,
    /// A user-space address of the sampled process.
    User,
}

/// One resolved frame: a function in a binary, or an address that could not
/// be named (then `sym` is `None` and renderers print `[unknown]` or the
/// address, as perf does).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The symbol name, demangled unless the user asked for raw names.
    pub sym: Option<Arc<str>>,
    /// The binary: a path, `[kernel.kallsyms]`, a module name, `[vdso]`,
    /// `[JIT] tid N` (perf's name for perf-PID.map code) or `[unknown]`.
    pub dso: Arc<str>,
    /// Whether the address was in the kernel or in user space.
    pub kind: FrameKind,
    /// True for a frame DWARF says was inlined into the next one (`--inline`).
    pub inlined: bool,
    /// `file:line` of the address (perf's `srcline`), only when asked for
    /// (`ResolveOptions::srcline`): frames are then one per line, not one
    /// per function.
    pub(crate) srcline: Option<Arc<str>>,
}

/// Interned frames. Two addresses in one function share one `FrameId`.
#[derive(Debug, Default)]
pub struct FrameTable {
    frames: Vec<Frame>,
    index: std::collections::HashMap<Frame, FrameId>,
}

impl FrameTable {
    pub(crate) fn intern(&mut self, frame: Frame) -> FrameId {
        if let Some(&id) = self.index.get(&frame) {
            return id;
        }
        let id = FrameId(self.frames.len() as u32);
        self.frames.push(frame.clone());
        self.index.insert(frame, id);
        id
    }

    /// The frame interned as `id` (ids come from this table only).
    pub fn get(&self, id: FrameId) -> &Frame {
        &self.frames[id.0 as usize]
    }

    pub(crate) fn len(&self) -> usize {
        self.frames.len()
    }
}

/// One sample with its stack resolved to frames.
#[derive(Clone, Debug)]
pub struct ResolvedSample {
    /// Index of the event (attribute) in the file that produced the sample.
    pub event: usize,
    /// The thread's name when the sample was taken (from COMM records),
    /// `:TID` when none was seen.
    pub comm: Arc<str>,
    /// Process id (thread group id) from the sample's `PERF_SAMPLE_TID`.
    pub pid: i32,
    /// Thread id from the sample's `PERF_SAMPLE_TID`.
    pub tid: i32,
    /// `u32::MAX` when the sample does not say (no `PERF_SAMPLE_CPU`).
    pub(crate) cpu: u32,
    /// Nanoseconds, perf clock.
    pub time: u64,
    /// The sample's weight (period): what percentages are computed from.
    pub period: u64,
    /// Leaf first. Empty only if even the sampled IP was missing. Samples
    /// with the same stack share it (the resolver names each stack once).
    pub stack: Arc<[FrameId]>,
    /// Why the stack may be incomplete, if it may.
    pub quality: StackQuality,
    /// How many samples this one stands for: 1, or more when the resolver
    /// merged samples alike in all but time and CPU (`time` and `cpu` are
    /// then the first one's; see `ResolveOptions::merge_samples`).
    pub count: u64,
}

/// How complete a sample's stack is; counted and printed at the top of every
/// report ("stack quality: ..."), never silently dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum StackQuality {
    /// Unwound to the outermost frame (or no call graph was asked for).
    #[default]
    Complete,
    /// The unwinder stopped early (DWARF info missing, stack copy too small).
    Truncated,
    /// The file has no callchains for this sample's event.
    NoCallchain,
    /// A frame-pointer chain (`-g`) kept as the kernel gave it: the stack
    /// copy could not check its first frames (no unwind tables for the
    /// sampled code, or the copy too small), so the caller of a frameless
    /// function may be missing.
    FramePointerOnly,
}
