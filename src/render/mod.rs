//! Everything a person reads: tables, trees, SVG.
//!
//! One module per output format (STYLE.md §9): the stdio report
//! (`report`), its JSON twin (`report_json`), folded stacks (`folded`),
//! flame graph SVG (`flamegraph`). Renderers take `analysis` results and an
//! `impl Write`, and propagate io errors (a closed pipe ends the command
//! quietly in `main`).
pub(crate) mod annotate;
pub(crate) mod bio;
pub(crate) mod cachestat;
mod decimal;
pub(crate) mod export;
pub(crate) mod files;
mod flame_svg;
pub(crate) mod flamegraph;
pub(crate) mod folded;
pub(crate) mod funcs;
pub(crate) mod futexctn;
#[cfg(test)]
mod golden;
pub(crate) mod header;
pub(crate) mod heatmap;
pub(crate) mod hist;
pub(crate) mod irqs;
pub(crate) mod klockstat;
pub(crate) mod list;
mod markup;
pub(crate) mod memleak;
pub(crate) mod memsnoop;
pub(crate) mod mountsnoop;
pub(crate) mod net;
pub(crate) mod offcpu;
pub(crate) mod offcputime;
pub(crate) mod profile;
pub(crate) mod report;
pub(crate) mod report_columns;
pub(crate) mod report_json;
pub(crate) mod runqlen;
pub(crate) mod sched;
pub mod script;
pub(crate) mod script_file;
pub(crate) mod sigsnoop;
pub(crate) mod snoop;
pub(crate) mod sockcall;
pub(crate) mod stat;
pub(crate) mod statsnoop;
pub(crate) mod swapin;
pub(crate) mod syscount;
pub(crate) mod threadsnoop;
pub(crate) mod top;
pub(crate) mod top_screen;
pub(crate) mod trace;
pub(crate) mod trace_args;
pub(crate) mod tui;
pub(crate) mod vfsstat;
