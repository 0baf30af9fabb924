//! `scry wakeuptime` (bcc's wakeuptime, its flags and layout): the time
//! tasks spent blocked, summed in the kernel per waker, target and the
//! waker's kernel stack, printed at the end (Ctrl-C, the duration, or the
//! `-p` process's exit) as bcc's stacks or folded (`-f`). `-p` the
//! targets of one process, `-u` user threads only, `-m`/`-M` the blocks'
//! bounds in µs. Wiring only: `sys::bpf_wakeuptime` →
//! `symbol::raw_stacks` → `analysis::offcputime` → `render::offcputime`.

use std::io::{self, Write};

use clap::Args;

use super::target::PidArg;
use scry::analysis::offcputime::wakeup_entries;
use scry::capture::bpf_run::{self};
use scry::render::offcputime::{write_wakeup_folded, write_wakeup_stacks};
use scry::symbol::ResolveOptions;
use scry::symbol::raw_stacks::{RawStack, RawStackResolver};
use scry::sys::bpf_wakeuptime::{WakeuptimeBpf, WakeuptimeSettings};

use super::bpf_tool;
use super::offcputime::{BlockArgs, SeeArgs, export_blocked, finish_naming};

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only targets of this process")))]
pub(crate) struct WakeuptimeArgs {
    #[command(flatten)]
    target: PidArg,
    /// User threads only (no kernel threads).
    #[arg(short = 'u', long = "user-threads-only")]
    user_threads_only: bool,
    /// Folded stacks, one line each (for flame graphs).
    #[arg(short = 'f', long = "folded")]
    folded: bool,
    #[command(flatten)]
    blocks: BlockArgs,
    #[command(flatten)]
    run: SeeArgs,
}

pub(crate) fn run(args: WakeuptimeArgs) -> anyhow::Result<()> {
    args.blocks.check("wakeuptime")?;
    let settings = WakeuptimeSettings {
        pid: args.target.pid,
        user_threads_only: args.user_threads_only,
        min_us: args.blocks.min_block_time,
        max_us: args.blocks.max_block_time,
        stack_storage: args.blocks.stack_storage_size,
    };
    let run_opts = args.target.run_until(args.run.duration);
    bpf_tool::check_pid("wakeuptime", "-p", args.target.pid)?;
    let mut bpf = bpf_tool::load("wakeuptime", || WakeuptimeBpf::load(settings))?;
    bpf_tool::print_hooks("wakeuptime", &bpf.hooks(), args.run.verbose);
    let mut out = io::stdout().lock();
    if !args.folded && args.run.export.to.is_none() {
        let until = match args.run.duration {
            Some(secs) => format!(" for {secs} secs."),
            None => "... Hit Ctrl-C to end.".to_string(),
        };
        writeln!(out, "Tracing blocked time (us) by kernel stack{until}")?;
    }
    out.flush()?;
    let mut exported = None;
    bpf_run::run(&run_opts, |last| {
        if !last {
            return Ok(());
        }
        bpf.detach();
        let sums = bpf.read()?;
        let mut resolver = RawStackResolver::new(&ResolveOptions::default());
        for s in &sums {
            resolver.add(&RawStack {
                pid: -1,
                tid: -1,
                comm: &s.waker,
                kernel: s.stack.as_deref().unwrap_or_default(),
                user: &[],
                weight: s.us,
                top: None,
            });
        }
        let named = finish_naming("wakeuptime", resolver);
        if args.run.export.to.is_some() {
            exported = Some(named);
            return Ok(());
        }
        let entries = wakeup_entries(&sums, &named);
        if args.folded {
            write_wakeup_folded(&mut out, &entries)?;
        } else {
            write_wakeup_stacks(&mut out, &entries)?;
        }
        out.flush()
    })?;
    export_blocked(&args.run.export, exported, "wakeup", "wakeuptime")
}
