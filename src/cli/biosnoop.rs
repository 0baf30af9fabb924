//! `scry biosnoop` (bcc's biosnoop, libbpf-tools' flags and layout): each
//! block I/O request at its completion, with the process that started it,
//! its disk, rwbs, sector, bytes and latency (`-Q`: and the time queued;
//! `-c`: only I/O started under a cgroup; `-P`: bcc's sequential or
//! random pattern), from the block tracepoints (libbpf-tools' own needs a kprobe on
//! blk_account_io_start). Wiring only: `sys::bpf_bio` → `render::bio`
//! through the streaming tools' run.

use clap::Args;

use scry::render::bio::BioTable;
use scry::sys::bpf_bio::{self, BioSettings};

use super::biolatency::disk_filter;
use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
#[command(mut_arg("cgroup", |a| a.help("Only I/O started by tasks under this cgroup v2 directory (/sys/fs/cgroup/...)")))]
pub(crate) struct BiosnoopArgs {
    /// Only this disk (a name of /proc/partitions).
    #[arg(short = 'd', long = "disk", value_name = "DISK")]
    disk: Option<String>,
    /// Include the time queued in the kernel (QUE(ms)).
    #[arg(short = 'Q', long = "queued", visible_alias = "queue")]
    queued: bool,
    /// The P column: S when a request starts where its disk's last one
    /// ended, R elsewhere, ? for a disk's first (bcc's pattern).
    #[arg(short = 'P', long = "pattern")]
    pattern: bool,
    #[command(flatten)]
    cgroup: bpf_tool::CgroupArg,
    /// Say which kernel hooks the programs use.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// One JSON object per request instead of the table.
    #[arg(long)]
    json: bool,
    /// Stop after DURATION seconds.
    #[arg(value_name = "DURATION", value_parser = clap::value_parser!(u64).range(1..))]
    duration: Option<u64>,
}

pub(crate) fn run(args: BiosnoopArgs) -> anyhow::Result<()> {
    let (disks, dev) = disk_filter("biosnoop", args.disk.as_deref())?;
    let settings = BioSettings {
        queued: args.queued,
        dev,
        ..BioSettings::default()
    };
    let cgroup = args.cgroup.open("biosnoop")?;
    let bpf = bpf_tool::load("biosnoop", || {
        bpf_bio::load_snoop(settings, cgroup.as_ref())
    })?;
    let flags = snoop::StreamFlags {
        duration: args.duration,
        verbose: args.verbose,
        json: args.json,
    };
    let how = snoop::Stream {
        tool: "biosnoop",
        duration: args.duration,
        pid: None,
        filters: Vec::new(),
    };
    let table = BioTable {
        queued: args.queued,
        pattern: args.pattern.then(Default::default),
        disks,
    };
    snoop::run(&how, &flags, &bpf, &table, |_| true)
}
