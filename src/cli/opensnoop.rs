//! `scry opensnoop` (bcc's opensnoop, libbpf-tools' flags and layout):
//! each open(2) and openat(2) with its descriptor or errno, streamed from
//! the kernel's ring buffer. Wiring only: `sys::bpf_opensnoop` →
//! `analysis::snoop` (the -n filter) → `render::snoop`.

use clap::Args;

use super::target::PidArg;
use scry::analysis::snoop::open_kept;
use scry::render::snoop::OpenLayout;
use scry::sys::bpf_opensnoop::{self, OpenSettings};

use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only this process (ends when it exits)")))]
pub(crate) struct OpensnoopArgs {
    /// Include the time (HH:MM:SS).
    #[arg(short = 'T', long = "timestamp")]
    timestamp: bool,
    /// Print the user id.
    #[arg(short = 'U', long = "print-uid")]
    print_uid: bool,
    /// Failed opens only.
    #[arg(short = 'x', long = "failed")]
    failed: bool,
    #[command(flatten)]
    target: PidArg,
    /// Only this thread.
    #[arg(short = 't', long = "tid", value_name = "TID", value_parser = clap::value_parser!(u32).range(1..))]
    tid: Option<u32>,
    /// Only this user.
    #[arg(short = 'u', long = "uid", value_name = "UID")]
    uid: Option<u32>,
    /// Only process names containing NAME.
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    name: Option<String>,
    /// Show the open flags (octal).
    #[arg(short = 'e', long = "extended-fields")]
    extended: bool,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run(args: OpensnoopArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("opensnoop", "-p", args.target.pid)?;
    bpf_tool::check_pid("opensnoop", "-t", args.tid)?;
    let settings = OpenSettings {
        pid: args.target.pid,
        tid: args.tid,
        uid: args.uid,
        failed_only: args.failed,
    };
    let layout = OpenLayout {
        time: args.timestamp,
        uid: args.print_uid,
        extended: args.extended,
    };
    let bpf = bpf_tool::load("opensnoop", || bpf_opensnoop::load(settings))?;
    let how = snoop::Stream {
        filters: args.name.iter().map(|n| format!("-n {n}")).collect(),
        ..snoop::Stream::new("opensnoop", &args.common, args.target.pid)
    };
    snoop::run(&how, &args.common, &bpf, &layout, |e| {
        open_kept(args.name.as_deref(), e)
    })
}
