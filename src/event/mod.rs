//! The typed event model: event-name parsing (`cpu-clock`, `sched:sched_switch`,
//! `r1a8:u`, `{a,b}` groups, `PMU/terms/`) into attributes the kernel
//! understands (`name`, `group`, `pmu`, `resolve`). Parsed records are
//! linux-perf-event-reader's `EventRecord`s, the same for live rings and files.
//! Tracepoints: `format` files (`format`, `tracing_data_parse`), their print
//! fmt (`print_fmt` parses, `print_render` evaluates) and `format_cache`,
//! the one entry point consumers render raw tracepoint bytes with;
//! `ftrace_page` splits tracefs ring-buffer pages into records.

pub(crate) mod btf;
pub mod btf_enums;
pub mod format;
pub mod format_cache;
pub mod ftrace_page;
pub(crate) mod group;
pub(crate) mod hook_events;
pub(crate) mod listing;
pub(crate) mod name;
pub(crate) mod pmu;
pub(crate) mod print_eval;
pub mod print_fmt;
pub(crate) mod print_render;
pub(crate) mod printf;
pub(crate) mod resolve;
pub(crate) mod syscall;
pub mod tracing_data_parse;
