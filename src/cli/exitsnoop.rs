//! `scry exitsnoop` (bcc's exitsnoop, libbpf-tools' flags and layout):
//! each process exit with its age and exit code or signal, streamed from
//! the kernel's ring buffer. Wiring only: `sys::bpf_exitsnoop` →
//! `render::snoop`.

use std::io::{self, Write};
use std::time::Instant;

use clap::Args;

use scry::render::snoop::{exit_header, exit_json, exit_line};
use scry::sys::bpf_exitsnoop::{self, ExitSettings};

use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
pub struct ExitsnoopArgs {
    /// Include the time (HH:MM:SS).
    #[arg(short = 't', long = "timestamp")]
    timestamp: bool,
    /// Failed exits only (a non-zero code or a signal).
    #[arg(short = 'x', long = "failed")]
    failed: bool,
    /// Only this process.
    #[arg(short = 'p', long = "pid", value_name = "PID", value_parser = clap::value_parser!(u32).range(1..))]
    pid: Option<u32>,
    /// Each thread's exit, not only the process's.
    #[arg(short = 'T', long = "threaded")]
    threaded: bool,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub fn run(args: ExitsnoopArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("exitsnoop", "-p", args.pid)?;
    let settings = ExitSettings {
        pid: args.pid,
        failed_only: args.failed,
        threads: args.threaded,
    };
    let bpf = bpf_tool::load("exitsnoop", || bpf_exitsnoop::load(settings))?;
    bpf_tool::print_hooks("exitsnoop", &bpf.hooks(), args.common.verbose);
    let mut out = io::BufWriter::new(io::stdout().lock());
    if !args.common.json {
        exit_header(&mut out, args.timestamp)?;
    }
    out.flush()?;
    let start = Instant::now();
    let how = snoop::Stream {
        tool: "exitsnoop",
        duration: args.common.duration,
        pid: None,
        filters: Vec::new(),
    };
    snoop::stream(&how, &bpf, &mut out, |out, e| {
        let clock = snoop::clock(start);
        if args.common.json {
            exit_json(out, e, clock)?;
        } else {
            exit_line(out, e, args.timestamp, clock)?;
        }
        Ok(true)
    })
}
