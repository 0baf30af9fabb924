//! Aggregation: flat profiles with perf's self/children arithmetic, call
//! trees under report entries, folded stacks for flame graphs.
//!
//! Everything here consumes `sample::ResolvedSample`s (the contract with
//! `symbol`) and produces plain data for `render`; nothing here formats
//! text or touches the kernel. Keys are interned integers end to end
//! (`FrameId`, comm ids), hashed with `hash::FxHasher`.
pub mod annotate;
pub mod bio;
pub mod cachestat;
pub mod calltree;
mod calltrie;
pub mod decay;
pub mod feed;
pub mod files;
pub mod folded;
pub mod funcgraph;
pub mod funcs;
pub mod futexctn;
pub mod heatmap;
pub mod hist;
pub mod irqs;
pub mod klockstat;
pub mod memleak;
pub mod net;
pub mod offcpu;
pub mod offcpu_live;
pub mod offcputime;
pub mod pairs;
pub mod pairs_feed;
pub mod profile;
pub mod quality;
pub mod sched;
pub mod sched_feed;
pub mod settle;
pub mod snoop;
pub mod sort_key;
pub mod stack_text;
pub mod stat;
pub mod syscall_desc;
pub mod syscalls;
pub mod syscount;
#[cfg(test)]
pub(crate) mod testing;
pub mod vfsstat;

// The sample model and the hasher live below `symbol` (in `model`); these
// names keep `analysis::sample` and `analysis::hash` paths working.
pub use crate::model::{hash, sample};
