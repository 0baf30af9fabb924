//! `scry runqslower` (bcc's runqslower, libbpf-tools' flags and layout):
//! each run-queue wait longer than `min_us` (default 10000), streamed from
//! the kernel through a BPF ring buffer as it happens; `-p`/`-t` one
//! process or thread, `-P` the task it replaced. Ends on Ctrl-C, or when
//! the `-p` process exits; events the ring could not hold are counted and
//! said at the end. Wiring only: `sys::bpf_runqslower` → stdout.

use std::cell::Cell;
use std::io::{self, Write};

use clap::Args;

use super::target::PidArg;
use scry::capture::bpf_run::{self, Wake};
use scry::sys::bpf_runqslower::{RunqslowerBpf, RunqslowerSettings, SlowWait};
use scry::sys::localtime::now_hms;

use super::bpf_tool;

#[derive(Args, Debug)]
pub(crate) struct RunqslowerArgs {
    #[command(flatten)]
    target: PidArg,
    /// Only this thread.
    #[arg(short = 't', long = "tid", value_name = "TID", value_parser = clap::value_parser!(u32).range(1..))]
    tid: Option<u32>,
    /// Also show the previous task's name and TID.
    #[arg(short = 'P', long = "previous")]
    previous: bool,
    /// Say which kernel hooks the programs use.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// Report waits longer than this many microseconds.
    #[arg(value_name = "MIN_US", default_value_t = 10000)]
    min_us: u64,
}

fn write_wait(w: &mut impl Write, wait: &SlowWait, previous: bool) -> io::Result<()> {
    let (h, m, s) = now_hms();
    let time = format!("{h:02}:{m:02}:{s:02}");
    write!(
        w,
        "{time:<8} {:<16} {:<6} {:>14}",
        wait.comm, wait.tid, wait.delta_us
    )?;
    if previous {
        write!(w, " {:<16} {:<6}", wait.prev_comm, wait.prev_tid)?;
    }
    writeln!(w)
}

pub(crate) fn run(args: RunqslowerArgs) -> anyhow::Result<()> {
    let settings = RunqslowerSettings {
        min_us: args.min_us,
        pid: args.target.pid,
        tid: args.tid,
    };
    bpf_tool::check_pid("runqslower", "-p", args.target.pid)?;
    bpf_tool::check_pid("runqslower", "-t", args.tid)?;
    let bpf = bpf_tool::load("runqslower", || RunqslowerBpf::load(settings))?;
    bpf_tool::print_hooks("runqslower", &bpf.hooks(), args.verbose);
    {
        let mut out = io::stdout().lock();
        writeln!(
            out,
            "Tracing run queue latency higher than {} us",
            args.min_us
        )?;
        write!(
            out,
            "{:<8} {:<16} {:<6} {:>14}",
            "TIME", "COMM", "TID", "LAT(us)"
        )?;
        if args.previous {
            write!(out, " {:<16} {:<6}", "PREV COMM", "PREV TID")?;
        }
        writeln!(out)?;
        out.flush()?;
    }
    // A failed write (a closed pipe) ends the run at the next wake-up.
    let failed: Cell<Option<io::Error>> = Cell::new(None);
    let previous = args.previous;
    let ring = bpf.events(|wait| {
        if let Err(e) = write_wait(&mut io::stdout().lock(), &wait, previous) {
            failed.set(Some(e));
        }
    })?;
    let run_opts = args.target.run_until(None);
    bpf_run::run_events(&run_opts, &[ring.fd()], |wake| {
        if matches!(wake, Wake::Ready | Wake::Last) {
            ring.consume()?;
        }
        match failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    })?;
    let dropped = bpf.dropped()?;
    if dropped > 0 {
        eprintln!("runqslower: {dropped} events dropped (the BPF ring buffer was full)");
    }
    Ok(())
}
