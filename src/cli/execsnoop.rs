//! `scry execsnoop` (bcc's execsnoop, libbpf-tools' flags and layout):
//! each execve(2) with its arguments and return code, streamed from the
//! kernel's ring buffer. As in bcc, failed calls show only with `-x`.
//! Wiring only: `sys::bpf_execsnoop` → `analysis::snoop` (filters) →
//! `render::snoop`.

use std::path::PathBuf;

use clap::Args;

use scry::analysis::snoop::ExecFilter;
use scry::render::snoop::ExecLayout;
use scry::sys::bpf_execsnoop::{self, ExecSettings, MAX_ARGS};

use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
pub(crate) struct ExecsnoopArgs {
    /// Include the time (HH:MM:SS).
    #[arg(short = 'T', long = "time")]
    time: bool,
    /// Include seconds since the start.
    #[arg(short = 't', long = "timestamp")]
    timestamp: bool,
    /// Include failed exec()s.
    #[arg(short = 'x', long = "fails")]
    fails: bool,
    /// Only this user.
    #[arg(short = 'u', long = "uid", value_name = "UID")]
    uid: Option<u32>,
    /// Print the user id.
    #[arg(short = 'U', long = "print-uid")]
    print_uid: bool,
    /// Arguments in double quotes.
    #[arg(short = 'q', long = "quote")]
    quote: bool,
    /// Only commands whose name contains NAME.
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    name: Option<String>,
    /// Only commands with an argument containing LINE.
    #[arg(short = 'l', long = "line", value_name = "LINE")]
    line: Option<String>,
    /// Only children of this process.
    #[arg(short = 'P', long = "ppid", value_name = "PPID")]
    ppid: Option<u32>,
    /// Only processes in this cgroup (a directory under /sys/fs/cgroup).
    #[arg(short = 'c', long = "cgroup", value_name = "PATH")]
    cgroup: Option<PathBuf>,
    /// Arguments shown per command (at most 60).
    #[arg(long = "max-args", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=MAX_ARGS as i64))]
    max_args: u32,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run(args: ExecsnoopArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("execsnoop", "--ppid", args.ppid)?;
    let settings = ExecSettings {
        include_failed: args.fails,
        uid: args.uid,
        cgroup: args.cgroup.clone(),
        max_args: args.max_args,
    };
    let filter = ExecFilter {
        name: args.name.clone(),
        line: args.line.clone(),
        ppid: args.ppid,
    };
    let layout = ExecLayout {
        time: args.time,
        timestamp: args.timestamp,
        uid: args.print_uid,
        quote: args.quote,
    };
    let bpf = bpf_tool::load("execsnoop", || bpf_execsnoop::load(&settings))?;
    let how = snoop::Stream {
        filters: filter_flags(&args),
        ..snoop::Stream::new("execsnoop", &args.common, None)
    };
    snoop::run(&how, &args.common, &bpf, &layout, |e| filter.keeps(e))
}

/// The user-space filters given, as typed.
fn filter_flags(args: &ExecsnoopArgs) -> Vec<String> {
    let mut flags = Vec::new();
    if let Some(name) = &args.name {
        flags.push(format!("-n {name}"));
    }
    if let Some(line) = &args.line {
        flags.push(format!("-l {line}"));
    }
    if let Some(ppid) = args.ppid {
        flags.push(format!("--ppid {ppid}"));
    }
    flags
}
