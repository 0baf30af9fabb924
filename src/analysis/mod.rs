//! Aggregation: flat profiles with perf's self/children arithmetic, call
//! trees under report entries, folded stacks for flame graphs.
//!
//! Everything here consumes `sample::ResolvedSample`s (the contract with
//! `symbol`) and produces plain data for `render`; nothing here formats
//! text or touches the kernel, but `kernel_top`, which reads top's counts
//! from its BPF program (through `sys`) as it names them. Keys are interned integers end to end
//! (`FrameId`, comm ids), hashed with `hash::FxHasher`.
pub(crate) mod annotate;
pub(crate) mod bio;
pub(crate) mod cachestat;
pub(crate) mod calltree;
mod calltrie;
pub(crate) mod decay;
pub(crate) mod feed;
pub(crate) mod files;
pub(crate) mod folded;
pub(crate) mod funcgraph;
pub(crate) mod funcs;
pub(crate) mod futexctn;
pub(crate) mod heatmap;
pub(crate) mod hist;
pub(crate) mod irqs;
pub(crate) mod kernel_top;
pub(crate) mod klockstat;
pub(crate) mod memleak;
pub(crate) mod net;
pub(crate) mod offcpu;
pub(crate) mod offcpu_live;
pub(crate) mod offcputime;
pub(crate) mod pairs;
pub(crate) mod pairs_feed;
pub(crate) mod pairs_file;
pub(crate) mod pairs_plan;
pub(crate) mod pairs_report;
pub(crate) mod profile;
pub(crate) mod quality;
pub(crate) mod sched;
pub(crate) mod sched_feed;
pub(crate) mod settle;
pub(crate) mod snoop;
pub(crate) mod sort_key;
pub(crate) mod stack_text;
pub(crate) mod stat;
pub(crate) mod swapin;
pub(crate) mod syscalls;
pub(crate) mod syscount;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod top;
pub(crate) mod vfsstat;

// The sample model and the hasher live below `symbol` (in `model`); these
// names keep `analysis::sample` and `analysis::hash` paths working.
pub(crate) use crate::model::hash;
pub use crate::model::sample;
