//! Everything a person reads: tables, trees, SVG.
//!
//! One module per output format (STYLE.md §9): the stdio report
//! (`report`), its JSON twin (`report_json`), folded stacks (`folded`),
//! flame graph SVG (`flamegraph`). Renderers take `analysis` results and an
//! `impl Write`, and propagate io errors (a closed pipe ends the command
//! quietly in `main`).
pub mod annotate;
pub mod bio;
pub mod cachestat;
pub mod export;
pub mod files;
pub mod flamegraph;
pub mod folded;
pub mod funcs;
pub mod futexctn;
#[cfg(test)]
mod golden;
pub mod heatmap;
pub mod hist;
pub mod irqs;
pub mod klockstat;
pub mod list;
pub mod memleak;
pub mod memsnoop;
pub mod net;
pub mod offcpu;
pub mod offcputime;
pub mod profile;
pub mod report;
pub mod report_columns;
pub mod report_json;
pub mod runqlen;
pub mod sched;
pub mod script;
pub mod sigsnoop;
pub mod snoop;
pub mod sockcall;
pub mod stat;
pub mod statsnoop;
pub mod syscount;
pub mod threadsnoop;
pub mod top;
pub mod trace;
pub mod trace_args;
pub mod tui;
pub mod vfsstat;
