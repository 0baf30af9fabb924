//! `scry oomkill`, `scry drsnoop` and `scry capable` (bcc's tools, their
//! flags and libbpf-tools' layouts): OOM kills, direct reclaims and
//! capability checks, each streamed from the kernel's ring buffer. Wiring
//! only: `sys::bpf_oomkill` / `bpf_drsnoop` / `bpf_capable` →
//! `render::memsnoop`. Where a tracepoint shows less than bcc's kernel
//! function probe, one note on stderr says what (oomkill's pages,
//! capable's AUDIT column, drsnoop -e's FREE(KB) read in user space where
//! /proc/kallsyms does not list vm_zone_stat).

use std::cell::RefCell;

use clap::Args;

use super::target::PidArg;
use scry::analysis::offcputime::frame_names_in;
use scry::analysis::snoop::{CapEvent, CapUnique, UniqueBy};
use scry::render::memsnoop::{CapLayout, CapStacks, FreeKb, OomLayout, ReclaimLayout, StackNamer};
use scry::symbol::ResolveOptions;
use scry::symbol::raw_stacks::{RawStack, RawStackResolver};
use scry::sys::bpf_drsnoop::ReclaimSettings;
use scry::sys::{bpf_capable, bpf_drsnoop, bpf_oomkill};

use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
pub(crate) struct OomkillArgs {
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run_oomkill(args: OomkillArgs) -> anyhow::Result<()> {
    let bpf = bpf_tool::load("oomkill", bpf_oomkill::load)?;
    eprintln!(
        "oomkill: from oom:mark_victim: PAGES is the victim's address-space size (bcc's \
         OOM-control total pages is not in the tracepoint)"
    );
    let layout = OomLayout {
        loadavg: || {
            std::fs::read_to_string("/proc/loadavg")
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        },
    };
    let how = snoop::Stream::new("oomkill", &args.common, None);
    snoop::run(&how, &args.common, &bpf, &layout, |_| true)
}

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only this process (ends when it exits)")))]
pub(crate) struct DrsnoopArgs {
    #[command(flatten)]
    target: PidArg,
    /// Only this thread.
    #[arg(short = 't', long = "tid", value_name = "TID", value_parser = clap::value_parser!(u32).range(1..))]
    tid: Option<u32>,
    /// Also the reclaims of a memory cgroup at its limit (scry's
    /// addition; a KIND column says which).
    #[arg(long)]
    memcg: bool,
    /// Extended fields: the system's free memory when each reclaim began
    /// (FREE(KB), from the kernel's vm_zone_stat).
    #[arg(short = 'e', long = "extended")]
    extended: bool,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run_drsnoop(args: DrsnoopArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("drsnoop", "-p", args.target.pid)?;
    bpf_tool::check_pid("drsnoop", "-t", args.tid)?;
    // -e: the free pages read in the kernel when vm_zone_stat's address
    // is known, else /proc/meminfo's MemFree when the events arrive (read
    // once for the events of one drain of the ring).
    let vm_zone_stat = match args.extended {
        true => match bpf_drsnoop::vm_zone_stat() {
            Ok(addr) => Some(addr),
            Err(why) => {
                eprintln!(
                    "drsnoop: -e: {why}: FREE(KB) is /proc/meminfo's MemFree when each event \
                     arrives, not when the reclaim began"
                );
                None
            }
        },
        false => None,
    };
    let settings = ReclaimSettings {
        pid: args.target.pid,
        tid: args.tid,
        memcg: args.memcg,
        vm_zone_stat,
    };
    let bpf = bpf_tool::load("drsnoop", || bpf_drsnoop::load(settings))?;
    let how = snoop::Stream::new("drsnoop", &args.common, args.target.pid);
    let page_kb = scry::sys::ring::page_size() as u64 / 1024;
    let free_kb = match (args.extended, vm_zone_stat) {
        (false, _) => None,
        (true, Some(_)) => Some(FreeKb::Pages { page_kb }),
        (true, None) => Some(FreeKb::on_arrival(mem_free_kb)),
    };
    let layout = ReclaimLayout {
        kind: args.memcg,
        free_kb,
    };
    snoop::run(&how, &args.common, &bpf, &layout, |_| true)
}

/// /proc/meminfo's MemFree, KB (0 when unreadable).
fn mem_free_kb() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemFree:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// capable's `--unique BY`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum UniqueArg {
    Pid,
    Cgroup,
}

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only this process (ends when it exits)")))]
pub(crate) struct CapableArgs {
    #[command(flatten)]
    target: PidArg,
    /// Extra column: the thread id (bcc's -x; INSETID is not visible).
    #[arg(short = 'x', long = "extra")]
    extra: bool,
    #[command(flatten)]
    cgroup: bpf_tool::CgroupArg,
    /// Each capability once per process (pid, the default) or per cgroup
    /// (cgroup): its first check only.
    #[arg(short = 'u', long = "unique", value_name = "BY", num_args = 0..=1,
          default_missing_value = "pid", value_enum)]
    unique: Option<UniqueArg>,
    /// Each check's kernel stack under its line (bcc's -K).
    #[arg(short = 'K', long = "kernel-stack")]
    kernel_stack: bool,
    /// Each check's user stack under its line (bcc's -U).
    #[arg(short = 'U', long = "user-stack")]
    user_stack: bool,
    /// Frames shown of each stack at most (bcc's --perf-max-stack-depth).
    #[arg(long = "perf-max-stack-depth", value_name = "N", default_value_t = 127,
          value_parser = clap::value_parser!(u32).range(1..=127))]
    perf_max_stack_depth: u32,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run_capable(args: CapableArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("capable", "-p", args.target.pid)?;
    let cgroup = args.cgroup.open("capable")?;
    let bpf = bpf_tool::load("capable", || {
        bpf_capable::load(
            args.target.pid,
            cgroup.as_ref(),
            (args.kernel_stack, args.user_stack),
        )
    })?;
    eprintln!(
        "capable: from capability:cap_capable: AUDIT and INSETID (the check's options) are not \
         in the tracepoint: AUDIT shows -"
    );
    let how = snoop::Stream::new("capable", &args.common, args.target.pid);
    let mut resolver = RawStackResolver::new(&ResolveOptions::default());
    if args.user_stack {
        // -p's maps read now: a short process may be gone when its
        // first check is read.
        resolver.see(args.target.pid.map(|p| p as i32));
    }
    let resolver = RefCell::new(resolver);
    let depth = args.perf_max_stack_depth as usize;
    let name = |e: &CapEvent| name_stacks(&mut resolver.borrow_mut(), e, depth);
    let which = CapStacks {
        kernel: args.kernel_stack,
        user: args.user_stack,
    };
    let layout = CapLayout {
        tid: args.extra,
        stacks: (which.kernel || which.user).then_some((which, &name as StackNamer<'_>)),
    };
    let unique = args.unique.map(|by| {
        CapUnique::new(match by {
            UniqueArg::Pid => UniqueBy::Pid,
            UniqueArg::Cgroup => UniqueBy::Cgroup,
        })
    });
    snoop::run(&how, &args.common, &bpf, &layout, |e| {
        unique.as_ref().is_none_or(|u| u.keeps(e))
    })
}

/// A check's (kernel, user) stacks named, at most `depth` frames each
/// (its process's maps read the first time it has a user stack).
fn name_stacks(
    resolver: &mut RawStackResolver,
    e: &CapEvent,
    depth: usize,
) -> (Vec<String>, Vec<String>) {
    let pid = e.pid as i32;
    if !e.user.is_empty() {
        resolver.see([pid]);
    }
    resolver.add(&RawStack {
        pid,
        tid: e.tid as i32,
        comm: &e.comm,
        kernel: &e.kernel,
        user: &e.user,
        weight: 1,
        top: None,
    });
    let samples = resolver.take_samples();
    let (mut kernel, mut user) = samples
        .first()
        .map(|s| frame_names_in(s, resolver.frames()))
        .unwrap_or_default();
    kernel.truncate(depth);
    user.truncate(depth);
    (kernel, user)
}
