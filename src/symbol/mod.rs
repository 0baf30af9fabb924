//! Symbolization and unwinding: the records of a recording in, resolved
//! samples (`analysis::sample`) out.
//!
//! - `process`: per-process maps and thread names from COMM/FORK/MMAP2.
//! - `unwind`: DWARF unwinding (framehop) of `--call-graph dwarf` samples
//!   and of the stack tops of `-g` samples; `stub_frames`: out of JIT
//!   stubs that have neither tables nor a frame (CPython's trampolines);
//! - `stack_join`: `-g`'s frame-pointer chain joined to the frames unwound
//!   from the top of the stack (`--call-graph fp` chains are used as the
//!   kernel gave them).
//! - `binary`: finding each mapped file, build-id checks, debug files;
//!   `function_ranges`: a stripped binary's functions from `.eh_frame`.
//! - `names`, `kallsyms`, `perf_map`, `jitdump`: addresses to names for ELF
//!   files (blazesym), the kernel, JIT code (perf-PID.map, jit-PID.dump)
//!   and the vDSO; demangling.
//! - `raw_stacks`: stacks a BPF program took (raw addresses) named by the
//!   resolver, each process's maps read from /proc when first seen.
//! - `code`: a function's bytes and DWARF lines (ELF files, /proc/kcore),
//!   for annotate.
//! - `allocator`: the file holding a process's malloc and the offsets of
//!   the allocator's functions (memleak's uprobes).
//! - `live_names`: names of addresses in running processes, looked up
//!   when asked (threadsnoop's start functions).
//! - `resolver`: the two-phase driver (collect locations, then name each
//!   distinct one once, in sorted batches per binary); a big file's
//!   records are read and its samples' addresses found (unwound, joined)
//!   on a second thread, which keeps a process model of its own
//!   (`resolver::pipeline`).
//!
//! Frame naming follows perf so that reports agree with `perf report`:
//! `Frame::dso` is the full path of a user binary (perf script prints it;
//! `--sort dso` and flame graphs print `dso_short_name`, its basename),
//! `[kernel.kallsyms]` or `[module]` for the kernel, `[vdso]`,
//! `/tmp/perf-PID.map` for JIT code, `[unknown]` when no mapping covered the
//! address. An address that could not be named has `sym: None` and its
//! reason counted in `ResolveStats`: expected misses are data, not errors.
//!
//! The resolver is not `Send` (blazesym's symbolizer caches with `Rc`): it
//! is made on the thread that uses it, and records cross threads owned.

pub(crate) mod allocator;
mod binary;
pub(crate) mod code;
pub(crate) mod debug_functions;
pub(crate) mod func_sites;
mod function_ranges;
mod jitdump;
mod kallsyms;
pub(crate) mod kprobe_spec;
pub(crate) mod live_names;
mod names;
mod perf_map;
pub(crate) mod probe_spec;
pub mod probe_target;
mod process;
pub(crate) mod raw_stacks;
mod resolver;
mod stack_join;
mod stacks;
mod stub_frames;
mod unwind;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(crate) use binary::build_id_matches;
pub use binary::read_build_id;
pub(crate) use kallsyms::Kallsyms;
pub use kallsyms::ProcKallsyms;
pub(crate) use resolver::{Reach, Resolution, Resolver};

use crate::model::sample::{FrameTable, ResolvedSample};

/// Errors of the symbol stage: the recording could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SymbolError {
    /// The recording could not be opened.
    #[error("cannot open {path}")]
    Open {
        /// The recording's path.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file could not be read (the reader's message says where).
    #[error(transparent)]
    Read(#[from] crate::data::reader::ReadError),
    /// A record of the recording does not parse.
    #[error("{path}: malformed {record_type} record (event #{attr_index})")]
    Record {
        /// The recording's path.
        path: PathBuf,
        /// The record's kind, by its kernel name (`PERF_RECORD_SAMPLE`).
        record_type: String,
        /// Index of the record's event in the file's attributes.
        attr_index: usize,
        /// The parser's error, saying what is malformed.
        #[source]
        source: std::io::Error,
    },
}

/// How to resolve.
#[derive(Clone, Debug)]
pub struct ResolveOptions {
    /// Demangle Rust and C++ names. Default true (`--no-demangle` clears it).
    pub demangle: bool,
    /// Add frames for inlined functions from DWARF. Default false.
    pub inline: bool,
    /// kallsyms file to read instead of `/proc/kallsyms`. Default none.
    pub kallsyms: Option<PathBuf>,
    /// Let perf's `~/.debug` build-id cache stand in for binaries that were
    /// replaced or deleted after recording. Default true.
    pub use_build_id_cache: bool,
    /// Look return addresses up at `addr - 1` (the call instruction).
    /// Default false: perf 6.1 looks them up as recorded, and names then
    /// agree with its own; `inline` turns it on (lines and inlined frames
    /// need the call's address).
    pub adjust_return_addresses: bool,
    /// Hand out samples alike in all but time and CPU (event, thread and
    /// name, stack, its quality) as one, with `count` and the periods
    /// summed. Default false; reports and flame graphs, which look at
    /// neither time nor CPU, set it and keep one sample per distinct stack
    /// instead of one per sample.
    pub merge_samples: bool,
    /// With `merge_samples`: how many distinct samples wait before they are
    /// named and merged, and the location stacks start over (memory against
    /// naming the same stack once per batch). Default 4096.
    pub merge_batch: usize,
    /// Give each frame its source line (`Frame::srcline`, perf's `srcline`
    /// sort key): DWARF is read, and frames are one per line. Default false.
    pub srcline: bool,
}

impl Default for ResolveOptions {
    fn default() -> Self {
        ResolveOptions {
            demangle: true,
            inline: false,
            kallsyms: None,
            use_build_id_cache: true,
            adjust_return_addresses: false,
            merge_samples: false,
            merge_batch: 1 << 12,
            srcline: false,
        }
    }
}

/// Why a frame has no name. Counted per frame occurrence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum UnresolvedReason {
    /// No recorded mapping covered the address.
    UnknownMapping,
    /// The mapped file is not on disk (and not in the build-id cache).
    MissingBinary,
    /// The file on disk is not the one recorded (build-id differs).
    BuildIdMismatch,
    /// The file has no `.symtab` and no debug file: `.dynsym` did not cover
    /// the address.
    StrippedBinary,
    /// kallsyms addresses are hidden (`kernel.kptr_restrict`).
    KallsymsHidden,
    /// Anonymous code without a `/tmp/perf-PID.map`.
    MissingPerfMap,
    /// The binary was read but no symbol covers the address.
    NoSymbol,
}

impl UnresolvedReason {
    /// The words reports print.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::UnknownMapping => "unknown mapping",
            Self::MissingBinary => "missing binary",
            Self::BuildIdMismatch => "build-id mismatch",
            Self::StrippedBinary => "stripped binary",
            Self::KallsymsHidden => "kallsyms hidden by kptr_restrict",
            Self::MissingPerfMap => "no perf-PID.map",
            Self::NoSymbol => "no symbol",
        }
    }
}

/// What resolving saw: stack quality and the reasons for unnamed frames.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolveStats {
    /// Samples resolved, each counted as many times as it stands for.
    pub samples: u64,
    /// Of those, samples whose stack was unwound to its outermost frame
    /// (`StackQuality::Complete`).
    pub complete: u64,
    pub(crate) truncated: u64,
    pub(crate) no_callchain: u64,
    /// `-g` samples whose frame-pointer chain was kept unchecked
    /// (`StackQuality::FramePointerOnly`).
    pub(crate) fp_kept: u64,
    /// Frame occurrences over all samples (an inlined expansion counts once).
    pub frames: u64,
    /// Of those, frames without a name.
    pub unknown_frames: u64,
    /// Frames in functions without a symbol, named by the function range
    /// their binary's unwind tables give (`gzip+0x4290`).
    pub ranged_frames: u64,
    /// Unnamed frame occurrences, counted by why each has no name.
    pub reasons: BTreeMap<UnresolvedReason, u64>,
    /// Lines of perf-PID.map files that did not parse.
    pub malformed_perf_map_lines: u64,
    /// Distinct (binary, offset) locations named.
    pub(crate) distinct_locations: u64,
    /// Distinct stacks of locations.
    pub(crate) distinct_stacks: u64,
}

impl ResolveStats {
    fn pct(n: u64, d: u64) -> f64 {
        if d == 0 {
            0.0
        } else {
            n as f64 * 100.0 / d as f64
        }
    }

    /// Percentage of samples whose stack is complete.
    pub fn complete_pct(&self) -> f64 {
        Self::pct(self.complete, self.samples)
    }

    /// Percentage of frames without a name.
    pub(crate) fn unknown_frame_pct(&self) -> f64 {
        Self::pct(self.unknown_frames, self.frames)
    }

    /// The line reports print first, e.g. `stack quality: 98.7% of samples
    /// fully unwound, 0.4% [unknown] frames (missing binary: 12)`.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "stack quality: {:.1}% of samples fully unwound, {:.1}% [unknown] frames",
            self.complete_pct(),
            self.unknown_frame_pct()
        );
        if self.ranged_frames > 0 {
            s.push_str(&format!(
                ", {:.1}% frames in functions without a symbol",
                Self::pct(self.ranged_frames, self.frames)
            ));
        }
        if self.fp_kept > 0 {
            // `-g` chains the stack copy could not check (stack_join).
            s.push_str(&format!(
                ", {:.1}% frame pointers only",
                Self::pct(self.fp_kept, self.samples)
            ));
        }
        let mut parts: Vec<String> = self
            .reasons
            .iter()
            .map(|(r, n)| format!("{}: {n}", r.describe()))
            .collect();
        if self.no_callchain > 0 {
            parts.push(format!("no callchain: {} samples", self.no_callchain));
        }
        if self.malformed_perf_map_lines > 0 {
            parts.push(format!(
                "malformed perf-map lines: {}",
                self.malformed_perf_map_lines
            ));
        }
        if !parts.is_empty() {
            s.push_str(&format!(" ({})", parts.join(", ")));
        }
        s
    }
}

/// One event (attribute) of a recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EventInfo {
    pub(crate) name: String,
}

/// A resolved recording.
#[derive(Debug)]
pub struct Resolved {
    /// The recording's samples in the order read, stacks resolved (merged
    /// when `ResolveOptions::merge_samples` asked).
    pub samples: Vec<ResolvedSample>,
    /// The frames the samples' stacks index into.
    pub frames: FrameTable,
    pub(crate) events: Vec<EventInfo>,
    /// Stack quality and unnamed-frame counts over all samples.
    pub stats: ResolveStats,
    /// Events the kernel reported lost (LOST and LOST_SAMPLES records).
    pub(crate) lost: u64,
}

/// The basename perf's `--sort dso` prints for a `Frame::dso`.
pub fn dso_short_name(dso: &str) -> &str {
    if dso.starts_with('[') {
        return dso;
    }
    dso.rsplit('/').next().unwrap_or(dso)
}

/// A file this big (bytes) is resolved on two threads
/// (`resolver::pipeline`); below it, a second thread's start and second
/// opening of the binaries cost more than they save.
const TWO_THREADS_BYTES: u64 = 8 << 20;

/// Read and resolve a perf.data file. Reading goes through
/// `data::reader`, which turns malformed input into an error with its
/// offset instead of a panic. A big file is resolved on two threads,
/// with the same result.
pub fn resolve_file(path: &Path, options: &ResolveOptions) -> Result<Resolved, SymbolError> {
    let reader = crate::data::reader::PerfReader::open(path)?;
    let big = std::fs::metadata(path).is_ok_and(|m| m.len() >= TWO_THREADS_BYTES);
    if !big || std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        return resolve_reader(reader, options);
    }
    let events = event_infos(&reader);
    let build_ids = reader.build_ids_raw().unwrap_or_default();
    let done = resolver::pipeline::resolve_on_two_threads(reader, options, &build_ids)?;
    Ok(Resolved::of(done, events))
}

/// The recording's events, as `Resolved` lists them.
fn event_infos(reader: &crate::data::reader::PerfReader) -> Vec<EventInfo> {
    reader
        .events()
        .iter()
        .map(|e| EventInfo {
            name: e.name.clone(),
        })
        .collect()
}

/// As [`resolve_file`], for a reader already open (a stream on stdin).
pub(crate) fn resolve_reader(
    mut reader: crate::data::reader::PerfReader,
    options: &ResolveOptions,
) -> Result<Resolved, SymbolError> {
    let events = event_infos(&reader);
    let mut resolver = Resolver::new(options);
    if let Ok(ids) = reader.build_ids_raw() {
        resolver.set_header_build_ids(ids);
    }
    reader.feed(&mut resolver)?;
    Ok(Resolved::of(resolver.finish(), events))
}

impl Resolved {
    /// A finished resolution with the recording's events.
    fn of(done: resolver::Resolution, events: Vec<EventInfo>) -> Resolved {
        Resolved {
            samples: done.samples,
            frames: done.frames,
            events,
            stats: done.stats,
            lost: done.lost,
        }
    }
}
