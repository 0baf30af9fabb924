//! `scry futexctn` (libbpf-tools' futexctn, its flags and layout): user
//! lock contention, the time threads wait in futex(FUTEX_WAIT), summed in
//! the kernel per thread, lock address and user stack (count, total, max,
//! min, histogram), printed at the end (Ctrl-C, the duration, or the `-p`
//! process's exit) as libbpf-tools' blocks, then one line per lock (its
//! threads and the functions that took it); or `--json`. `-p`/`-t` one
//! process or thread, `-l` one lock address. The first user frames of each
//! stack are unwound from the registers and stack top the program kept
//! (a frame-pointer walk skips the caller of libc's lock). Wiring only:
//! `sys::bpf_futexctn` → `symbol::raw_stacks` → `analysis::futexctn` →
//! `render::futexctn`.

use std::io::{self, Write};

use clap::Args;

use super::target::PidArg;
use scry::analysis::futexctn::{by_lock, futex_entries, futex_raw_stacks};
use scry::capture::bpf_run::RunOptions;
use scry::render::futexctn::{write_futex_json, write_futex_text};
use scry::sys::bpf_futexctn::{FutexctnBpf, FutexctnSettings};

use super::bpf_tool;
use super::offcputime::{SEE_EVERY, finish_naming, run_seeing, until};

#[derive(Args, Debug)]
pub(crate) struct FutexctnArgs {
    #[command(flatten)]
    target: PidArg,
    /// Only this thread.
    #[arg(short = 't', long = "tid", value_name = "TID", value_parser = clap::value_parser!(u32).range(1..))]
    tid: Option<u32>,
    /// Only this lock (the futex's address, hex with or without 0x).
    #[arg(short = 'l', long = "lock", value_name = "LOCK", value_parser = parse_lock)]
    lock: Option<u64>,
    #[command(flatten)]
    run: bpf_tool::StacksUntilArgs,
}

/// A `-l` that is no lock address.
#[derive(Debug, thiserror::Error)]
#[error("not a lock address (hex): {0}")]
struct NotALock(String);

fn parse_lock(text: &str) -> Result<u64, NotALock> {
    let hex = text.strip_prefix("0x").unwrap_or(text);
    u64::from_str_radix(hex, 16)
        .ok()
        .filter(|&a| a != 0)
        .ok_or_else(|| NotALock(text.to_owned()))
}

pub(crate) fn run(args: FutexctnArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid_tid("futexctn", args.target.pid, args.tid)?;
    let settings = FutexctnSettings {
        pid: args.target.pid,
        tid: args.tid,
        lock: args.lock,
        stack_storage: args.run.stack_storage_size,
    };
    let mut bpf = bpf_tool::load("futexctn", || FutexctnBpf::load(settings))?;
    bpf_tool::print_hooks("futexctn", &bpf.hooks(), args.run.table.verbose);
    let mut out = io::stdout().lock();
    bpf_tool::write_banner(
        &mut out,
        args.run.table.json,
        format_args!(
            "Tracing futex contention latency (us){}",
            until(args.run.duration)
        ),
    )?;
    let opts = RunOptions {
        interval: Some(SEE_EVERY),
        ..args.target.run_until(args.run.duration)
    };
    run_seeing(&opts, &mut bpf, FutexctnBpf::tgids, |bpf, mut resolver| {
        bpf.detach();
        let waits = bpf.read()?;
        let stacks = futex_raw_stacks(&waits);
        resolver.see(stacks.iter().map(|s| s.pid));
        for stack in &stacks {
            resolver.add(stack);
        }
        let named = finish_naming("futexctn", resolver);
        let entries = futex_entries(&waits, &named);
        let locks = by_lock(&entries);
        if args.run.table.json {
            write_futex_json(&mut out, &entries, &locks)?;
        } else {
            write_futex_text(&mut out, &entries, &locks)?;
        }
        out.flush()
    })
}
