//! scry: a Linux tracing and profiling toolkit.
//!
//! The library holds the stages of the pipe; `ARCHITECTURE.md` at the
//! repository's root is the map (the flow, each module's job, and who may
//! use whom, checked by `tests/suite/architecture.rs`): `sys` (kernel interfaces,
//! the only `unsafe`), `event` (event model), `data` (perf.data codec),
//! `model` (resolved samples), `capture` (live capture), `symbol` (symbols,
//! unwinding), `analysis` (aggregation), `render` (what a person reads),
//! and `cli`, which wires them, one file per subcommand; the binary in
//! `src/main.rs` only calls `cli::main`.
//!
//! `cli` names the stages as `scry::...`, as a program using the library
//! would (`extern crate self as scry` makes that path work inside it), so
//! it stays a client of the stages' public items.

extern crate self as scry;

pub mod analysis;
pub(crate) mod capture;
pub mod cli;
pub mod data;
pub mod event;
pub(crate) mod lang;
pub(crate) mod model;
pub mod render;
pub mod symbol;
#[allow(unsafe_code)]
pub mod sys;
