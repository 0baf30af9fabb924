//! The typed event model: event-name parsing (`cpu-clock`, `sched:sched_switch`,
//! `r1a8:u`) into attributes the kernel understands. Parsed records are
//! linux-perf-event-reader's `EventRecord`s, the same for live rings and files.

pub mod name;
