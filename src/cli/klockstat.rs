//! `scry klockstat`: kernel lock contention from the lock:contention_begin
//! and contention_end tracepoints, summed in the kernel, printed at the end
//! (Ctrl-C, the duration, or the `-p` process's exit) as `perf lock
//! contention -b` prints it (contended, total, max and average wait, lock
//! type, caller), or `--json`. libbpf-tools' klockstat needs fentry, which
//! this tool does without; it keeps its name and `-p`/`-t`. Wiring only:
//! `sys::bpf_klockstat` → `symbol::raw_stacks` → `analysis::klockstat` →
//! `render::klockstat`.

use std::io::{self, Write};

use clap::Args;

use super::target::PidArg;
use scry::analysis::klockstat::{lock_raw_stacks, lock_rows};
use scry::capture::bpf_run::{self};
use scry::render::klockstat::{write_lock_json, write_lock_table};
use scry::symbol::ResolveOptions;
use scry::symbol::raw_stacks::RawStackResolver;
use scry::sys::bpf_klockstat::{KlockstatBpf, KlockstatSettings};

use super::bpf_tool;
use super::offcputime::{finish_naming, until};

#[derive(Args, Debug)]
pub(crate) struct KlockstatArgs {
    #[command(flatten)]
    target: PidArg,
    /// Only this thread.
    #[arg(short = 't', long = "tid", value_name = "TID", value_parser = clap::value_parser!(u32).range(1..))]
    tid: Option<u32>,
    #[command(flatten)]
    run: bpf_tool::StacksUntilArgs,
}

pub(crate) fn run(args: KlockstatArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid_tid("klockstat", args.target.pid, args.tid)?;
    let settings = KlockstatSettings {
        pid: args.target.pid,
        tid: args.tid,
        stack_storage: args.run.stack_storage_size,
    };
    let mut bpf = bpf_tool::load("klockstat", || KlockstatBpf::load(settings))?;
    bpf_tool::print_hooks("klockstat", &bpf.hooks(), args.run.table.verbose);
    let mut out = io::stdout().lock();
    bpf_tool::write_banner(
        &mut out,
        args.run.table.json,
        format_args!("Tracing kernel lock contention{}", until(args.run.duration)),
    )?;
    let opts = args.target.run_until(args.run.duration);
    bpf_run::run(&opts, |last| {
        if !last {
            return Ok(());
        }
        bpf.detach();
        let waits = bpf.read()?;
        let mut resolver = RawStackResolver::new(&ResolveOptions::default());
        for stack in &lock_raw_stacks(&waits) {
            resolver.add(stack);
        }
        let rows = lock_rows(&waits, &finish_naming("klockstat", resolver));
        if args.run.table.json {
            write_lock_json(&mut out, &rows)?;
        } else {
            write_lock_table(&mut out, &rows)?;
        }
        out.flush()
    })?;
    Ok(())
}
