//! scry: a Linux tracing and profiling toolkit.
//!
//! The library holds the stages of the pipe (see `DESIGN.md` in shared/):
//! `sys` (kernel interfaces, the only `unsafe`) → `capture` (drives `sys` for
//! live commands) → `event` (typed event model, event names) → `data`
//! (perf.data codec and exports) → `symbol` (symbols, unwinding) →
//! `analysis` (aggregation) → `render` (what a person reads). The binary in
//! `src/main.rs` + `src/cli/` wires them, one file per subcommand.

pub mod analysis;
pub mod capture;
pub mod data;
pub mod event;
pub mod render;
pub mod symbol;
pub mod sys;
