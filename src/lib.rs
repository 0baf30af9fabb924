//! scry: a Linux tracing and profiling toolkit.
//!
//! The library holds the stages of the pipe; `ARCHITECTURE.md` at the
//! repository's root is the map (the flow, each module's job, and who may
//! use whom, checked by `tests/architecture.rs`): `sys` (kernel interfaces,
//! the only `unsafe`), `event` (event model), `data` (perf.data codec),
//! `model` (resolved samples), `capture` (live capture), `symbol` (symbols,
//! unwinding), `analysis` (aggregation), `render` (what a person reads). The
//! binary in `src/main.rs` + `src/cli/` wires them, one file per subcommand.

pub mod analysis;
pub mod capture;
pub mod data;
pub mod event;
pub mod lang;
pub mod model;
pub mod render;
pub mod symbol;
pub mod sys;
