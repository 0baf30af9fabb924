//! `scry syscount` (bcc's syscount, libbpf-tools' flags and layout): system
//! calls counted in the kernel per call or per process (`-P`), with their
//! total latency (`-L`), failed ones only (`-x`; `-e ERRNO`: failing with
//! one error), one call only (`--syscall`), for one process (`-p`),
//! thread (`-t`), cgroup (`-c`) or the children of one process
//! (`--ppid`, bcc's `-c`: scry's `-c` is libbpf-tools' cgroup), printed every interval (`-i`) or once
//! at the end (Ctrl-C, `-d`, or when the `-p` process exits); `-l` lists
//! the calls it knows. Wiring only: `sys::bpf_syscount` → `analysis::syscount` →
//! `render::syscount`.

use std::io::{self, Write};

use anyhow::anyhow;
use clap::Args;

use super::target::PidArg;
use scry::analysis::syscount::{self, Interval, top_rows};
use scry::capture::bpf_run;
use scry::render::syscount::{SyscountLayout, write_json, write_table};
use scry::sys::bpf_syscount::{SyscountBpf, SyscountSettings};
use scry::sys::localtime::now_hms;

use super::bpf_tool;

#[derive(Args, Debug)]
pub(crate) struct SyscountArgs {
    #[command(flatten)]
    target: PidArg,
    #[command(flatten)]
    times: bpf_tool::TimedArgs,
    /// Print only the top TOP rows.
    #[arg(short = 'T', long = "top", value_name = "TOP", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    top: u64,
    /// Count only failed calls (a negative return).
    #[arg(short = 'x', long = "failures")]
    failures: bool,
    /// Count only calls that failed with this error (`EPERM`, or `1`).
    #[arg(short = 'e', long = "errno", value_name = "ERRNO")]
    errno: Option<String>,
    /// Count only this system call (`openat`).
    #[arg(long = "syscall", value_name = "SYSCALL")]
    syscall: Option<String>,
    /// Only the tasks under this cgroup v2 directory (/sys/fs/cgroup/...).
    #[arg(short = 'c', long = "cgroup", value_name = "CG")]
    cgroup: Option<std::path::PathBuf>,
    /// Only this thread.
    #[arg(short = 't', long = "tid", value_name = "TID", value_parser = clap::value_parser!(u32).range(1..))]
    tid: Option<u32>,
    /// Only the children of this process (bcc's -c/--ppid; -c is the
    /// cgroup here, as in libbpf-tools).
    #[arg(long = "ppid", value_name = "PPID", value_parser = clap::value_parser!(u32).range(1..))]
    ppid: Option<u32>,
    /// List the system calls known here and exit.
    #[arg(short = 'l', long = "list")]
    list: bool,
    /// Measure each call's latency and sort by the total.
    #[arg(short = 'L', long = "latency")]
    latency: bool,
    /// Latency in milliseconds (default: microseconds).
    #[arg(short = 'm', long = "milliseconds")]
    milliseconds: bool,
    /// Count per process, not per call.
    #[arg(short = 'P', long = "process")]
    process: bool,
    /// Say which kernel hooks the programs use.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// JSON lines instead of the table.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: SyscountArgs) -> anyhow::Result<()> {
    if args.list {
        return list();
    }
    let errno = args
        .errno
        .as_deref()
        .map(|e| {
            syscount::errno_number(e)
                .ok_or_else(|| anyhow!("syscount: -e {e}: not an error name or number"))
        })
        .transpose()?;
    let syscall = args
        .syscall
        .as_deref()
        .map(|s| {
            syscount::syscall_number(s)
                .ok_or_else(|| anyhow!("syscount: --syscall {s}: no such system call (see -l)"))
        })
        .transpose()?;
    let settings = SyscountSettings {
        failed_only: args.failures,
        latency: args.latency,
        by_process: args.process,
        pid: args.target.pid,
        tid: args.tid,
        ppid: args.ppid,
        errno,
        syscall,
        cgroup: args.cgroup.is_some(),
    };
    let run_opts = args.times.run_options(args.target.pid);
    let layout = SyscountLayout {
        by_process: args.process,
        latency: args.latency,
        milliseconds: args.milliseconds,
    };
    bpf_tool::check_pid_tid("syscount", args.target.pid, args.tid)?;
    bpf_tool::check_pid("syscount", "--ppid", args.ppid)?;
    let mut bpf = bpf_tool::load("syscount", || SyscountBpf::load(settings))?;
    if let Some(dir) = &args.cgroup {
        bpf.set_cgroup(dir).map_err(|e| anyhow!("syscount: {e}"))?;
    }
    bpf_tool::print_hooks("syscount", &bpf.hooks(), args.verbose);
    let mut out = io::stdout().lock();
    bpf_tool::write_banner(
        &mut out,
        args.json,
        format_args!(
            "Tracing syscalls, printing top {}... Ctrl+C to quit.",
            args.top
        ),
    )?;
    let mut interval = Interval::default();
    let top = usize::try_from(args.top).unwrap_or(usize::MAX);
    let mut print = |bpf: &mut SyscountBpf, last: bool| -> io::Result<()> {
        if last {
            bpf.detach();
        }
        let read = bpf.read()?;
        let rows = if args.process {
            read
        } else {
            interval.since_last(&read)
        };
        if rows.is_empty() {
            return Ok(());
        }
        let lines = top_rows(&rows, args.process, args.latency, top);
        if args.json {
            write_json(&mut out, &lines)?;
        } else {
            write_table(&mut out, now_hms(), &lines, layout)?;
        }
        out.flush()
    };
    bpf_run::run(&run_opts, |last| print(&mut bpf, last))?;
    Ok(())
}

/// bcc's `-l`: the names, four to a line.
fn list() -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    for row in syscount::syscall_names().chunks(4) {
        let cells: Vec<String> = row.iter().map(|n| format!("{n:<22}")).collect();
        writeln!(out, "{}", cells.join("   "))?;
    }
    Ok(())
}
