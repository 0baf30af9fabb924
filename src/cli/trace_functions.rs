//! `scry trace --function` / `--graph`: the kernel's function tracers
//! (`sys::ftrace`) on the traced tasks only (`set_ftrace_pid`, children
//! following), their lines printed after the run as perf ftrace and
//! trace-cmd show them (`--graph`: nested calls with their durations).
//!
//! The decision: the text is read from tracefs `trace` once the workload
//! is done, not streamed from `trace_pipe`: the tracer is the kernel's
//! global one (see `sys::ftrace`), its buffer (`buffer_size_kb` per CPU)
//! bounds what one run keeps, and the entries it overwrote are counted
//! from its header and said in one line. Where the tracer cannot run, one
//! line says why: the run stops there (exit 2) when nothing else was
//! asked, and goes on with the system calls and events otherwise.

use std::io::Write;
use std::path::Path;

use clap::Args;

use scry::analysis::funcgraph::trace_lines;
use scry::sys::ftrace::{FunctionTracer, TracerOptions};

#[derive(Args, Debug, Default)]
pub(crate) struct FunctionArgs {
    /// Show each kernel function the traced tasks call, with its caller
    /// (the kernel's function tracer, as perf ftrace -t function).
    #[arg(long, conflicts_with = "graph")]
    pub(crate) function: bool,
    /// Show the kernel functions the traced tasks call, nested, each with
    /// its duration (the function_graph tracer, as perf ftrace).
    #[arg(long)]
    pub(crate) graph: bool,
    /// With --function/--graph: only the kernel functions matching GLOB
    /// (set_ftrace_filter; repeatable). Default: every function.
    #[arg(short = 'l', long = "trace-funcs", value_name = "GLOB")]
    pub(crate) funcs: Vec<String>,
    /// With --function/--graph: not the kernel functions matching GLOB
    /// (set_ftrace_notrace; repeatable).
    #[arg(short = 'n', long = "notrace-funcs", value_name = "GLOB")]
    pub(crate) notrace: Vec<String>,
    /// With --graph: only FUNC and what it calls (set_graph_function;
    /// repeatable, globs allowed). Default: every function.
    #[arg(short = 'G', long = "graph-funcs", value_name = "FUNC")]
    pub(crate) graph_funcs: Vec<String>,
    /// With --graph: how deep calls nest (max_graph_depth); 0, the
    /// default, is no limit.
    #[arg(
        short = 'D',
        long = "graph-depth",
        value_name = "N",
        default_value_t = 0
    )]
    pub(crate) depth: u32,
}

impl FunctionArgs {
    /// The tracer asked for, if any; flags that need one are refused
    /// without it.
    pub(crate) fn tracer(&self) -> anyhow::Result<Option<&'static str>> {
        let tracer = match (self.function, self.graph) {
            (true, _) => Some("function"),
            (_, true) => Some("function_graph"),
            _ => None,
        };
        if tracer.is_none() && !(self.funcs.is_empty() && self.notrace.is_empty()) {
            anyhow::bail!("-l/-n choose the kernel functions of --function or --graph: give one");
        }
        if tracer != Some("function_graph") && (!self.graph_funcs.is_empty() || self.depth != 0) {
            anyhow::bail!("-G and -D apply to --graph");
        }
        Ok(tracer)
    }
}

/// Starts `tracer` on `pids` (empty: every task), or says in one line why
/// it cannot run here and returns None.
pub(crate) fn start(
    args: &FunctionArgs,
    tracer: &str,
    root: &Path,
    pids: Vec<i32>,
) -> Option<FunctionTracer> {
    let opts = TracerOptions {
        tracer: tracer.to_string(),
        depth: args.depth,
        filters: args.funcs.clone(),
        notrace: args.notrace.clone(),
        graph_functions: args.graph_funcs.clone(),
        pids,
    };
    match FunctionTracer::start(root, &opts, super::ftrace_watchdog(root)) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("scry: kernel functions not traced: {e}");
            None
        }
    }
}

/// Stops the tracer and writes its lines to `out`; one line on stderr when
/// the kernel's buffer overwrote some.
pub(crate) fn finish(tracer: FunctionTracer, out: &mut dyn Write) -> anyhow::Result<()> {
    use anyhow::Context;
    let text = tracer
        .finish()
        .context("reading the function tracer's trace")?;
    let trace = trace_lines(&text);
    for line in &trace.lines {
        writeln!(out, "{line}")?;
    }
    if trace.overwritten > 0 {
        eprintln!(
            "scry: the kernel's trace buffer overwrote {} entries of the function tracer (raise buffer_size_kb, or narrow with -l/-G)",
            trace.overwritten
        );
    }
    Ok(())
}
