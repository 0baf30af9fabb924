//! The integration suite: one test binary (the library is linked once, not
//! once per file), one module per command or concern. Run one module with
//! `cargo test --test suite MODULE::`. Shared helpers live in `common`.

#[macro_use]
mod common;

mod annotate;
mod architecture;
mod bio;
mod blocked;
mod bpf_tools;
mod command_line;
mod containers;
mod corrupt;
mod data_writer;
mod error_messages;
mod export;
mod export_live;
mod file_goldens;
mod files;
mod flamegraph;
mod flamegraph_live;
mod funcs;
mod heatmap;
mod incident;
mod jit_runtimes;
mod kallsyms_cache;
mod kernel_matrix;
mod lang;
mod lang_builtins;
mod lang_cli;
mod lang_corpus;
mod lang_errors;
mod lang_tools;
mod lang_types;
mod lifecycle;
mod list;
mod mem;
mod net;
mod offcpu;
mod oncpu;
mod oneliners;
mod oneliners_events;
mod oneliners_tools;
mod perf_spellings;
mod pipe_output;
mod probe;
mod profile;
mod python_jit;
mod record;
mod record_privileges;
mod recovery;
mod report;
mod sched;
mod script;
mod self_exclusion;
mod serve;
mod snoop;
mod stack_join;
mod stat;
mod stat_events;
mod stripped;
mod symbol;
mod targets;
mod top;
mod trace;
mod tracepoint_format;
