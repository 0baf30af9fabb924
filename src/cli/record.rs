//! `scry record`: perf record's flags, into `capture::to_file`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use scry::capture::session::{StopReason, default_mmap_pages, fall_back_from_cycles};
use scry::capture::{CallGraph, CaptureOptions};
use scry::event::name;

use super::profile::{FunctionTracerArgs, record_functions};
use super::target::{SamplingArgs, TargetArgs, checked_mmap_pages};

#[derive(Args, Debug)]
pub(crate) struct RecordArgs {
    /// Event(s) to sample: cpu-clock, page-faults:u, sched:sched_switch, 'syscalls:sys_enter_*', r1a8...
    /// (repeatable, comma lists). Default: cycles, or cpu-clock without a hardware PMU.
    /// uprobe:BINARY:FUNC and uretprobe:BINARY:FUNC probe a user function for this run only
    /// (the uprobe PMU: nothing is left behind, even if scry is killed); recorded as
    /// probe_BINARY:FUNC. kprobe:FUNC[+OFF] and kretprobe:FUNC: a kernel function, the same
    /// way (the kprobe PMU). Lasting probes: scry probe. Groups open together: '{cpu-clock,page-faults}'.
    /// PMU terms: cpu/event=0x3c,umask=0,period=100000/u. Without a PMU, cycles records as cpu-clock.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    events: Vec<String>,
    /// Tracepoint filter (ftrace syntax) for the event before it on the command line.
    #[arg(long)]
    filter: Vec<String>,
    #[command(flatten)]
    sampling: SamplingArgs,
    #[command(flatten)]
    target: TargetArgs,
    /// Output file (an existing one is moved to FILE.old).
    #[arg(short = 'o', long = "output", default_value = "perf.data")]
    output: PathBuf,
    /// Ring buffer size per CPU in pages (a power of two). Default 1024 (4 MiB),
    /// 4096 when tracepoints are recorded.
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES")]
    mmap_pages: Option<usize>,
    /// Stamp events with this clock: monotonic, monotonic_raw, realtime, boottime, tai
    /// (CLOCK_ and perf's short names mono, raw, real, boot too) or a clock number.
    /// `perf inject --jit` wants -k monotonic (1), the clock JIT dumps use.
    #[arg(short = 'k', long = "clockid", value_name = "CLOCKID")]
    clockid: Option<String>,
    /// Print nothing but errors.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Record what `scry profile`'s default hooks need (sched, syscalls, irq,
    /// page-fault tracepoints, stacks on sched_switch, context switches),
    /// system-wide, for `scry report --profile`.
    /// The kernel's function tracer runs beside it (function_graph at depth
    /// 1 on the command, as `scry profile`; -l, -n, --tracer or `-p
    /// TRACER`, --graph-depth pick it) and its rows are kept in the file.
    #[arg(long, conflicts_with_all = ["events", "filter", "freq", "count", "callchain", "call_graph"])]
    profile: bool,
    /// A profile hook, as `scry profile -H` takes it (START[,MATCH[,PID]]/END[,MATCH][,FLAGS]):
    /// records its two events beside --profile's (which it implies), and `scry report
    /// --profile` reads it back from the file's command line, as trace-cmd record -H does.
    #[arg(short = 'H', long = "hook", value_name = "HOOK", conflicts_with_all = ["events", "filter", "freq", "count", "callchain", "call_graph"])]
    hooks: Vec<String>,
    /// With --profile: the kernel function tracer's flags, as `scry profile` takes them.
    #[command(flatten)]
    functions: FunctionTracerArgs,
    /// The command to run and record (`--` before it is optional, as with perf).
    // No allow_hyphen_values: an unknown flag before the command is an
    // error, not a program to run; after it, everything is the command's.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

impl RecordArgs {
    /// Flags into capture options; resolves event names (tracefs for tracepoints).
    pub(crate) fn to_options(&self) -> anyhow::Result<CaptureOptions> {
        let mut specs = Vec::new();
        let mut filters = Vec::new();
        for text in &self.events {
            specs.extend(name::parse_list(text)?);
        }
        if specs.is_empty() {
            specs.push(name::parse("cycles")?);
        }
        let mut events = super::probe::resolve_events(&specs)?;
        // Without a hardware PMU, cycles (asked for or the default) becomes
        // cpu-clock with the same modifiers, as perf record does.
        fall_back_from_cycles(&mut events);
        // `--filter` applies to the last event given before it; clap loses
        // that order, so a filter applies to the last event (perf's common use).
        for filter in &self.filter {
            let Some(last) = events.len().checked_sub(1) else {
                anyhow::bail!("--filter needs an -e event before it");
            };
            // A kprobe PMU event is a trace event too (its fields: none).
            let kprobe = events[last].uprobe.as_ref().is_some_and(|u| u.kernel);
            if !events[last].is_tracepoint() && !kprobe {
                anyhow::bail!(
                    "--filter only works with tracepoint and kprobe events, not '{}'",
                    events[last].name
                );
            }
            filters.push((last, filter.clone()));
        }
        let sampling = self.sampling.sampling()?;
        let target = self.target.to_target("record", &self.command)?;
        if target.command.is_empty()
            && target.pids.is_empty()
            && target.tids.is_empty()
            && !target.system_wide
            && target.cpus.is_none()
        {
            anyhow::bail!(
                "nothing to record: give a command after --, or -p PID, -t TID, -a or -C CPUS"
            );
        }
        let clockid = self.clockid.as_deref().map(parse_clockid).transpose()?;
        if self.profile || !self.hooks.is_empty() {
            let mut options =
                super::profile::record_options(&target, &self.hooks, self.mmap_pages)?;
            options.clockid = clockid;
            return Ok(options);
        }
        let cpu_count = match &target.cpus {
            Some(list) => list.len(),
            None => scry::sys::proc::online_cpus().map_or(1, |c| c.len()),
        };
        let call_graph = self.sampling.call_graph()?;
        // A DWARF sample carries its stack copy (8-64 KiB): give the rings
        // four times the room, or a 4 MiB ring holds only ~250 samples.
        let mmap_pages = self.mmap_pages.unwrap_or_else(|| {
            let pages = default_mmap_pages(&events, cpu_count);
            match call_graph {
                CallGraph::Dwarf { .. } => pages.saturating_mul(4).min(16384),
                _ => pages,
            }
        });
        Ok(CaptureOptions {
            events,
            target,
            sampling,
            call_graph,
            mmap_pages: checked_mmap_pages(mmap_pages)?,
            filters,
            no_callchain: Vec::new(),
            context_switch: false,
            clockid,
        })
    }
}

/// perf record's clock names (`parse_clockid`): with or without `CLOCK_`,
/// in any case, and the short names perf keeps "for the lazy".
const CLOCK_NAMES: [(&str, i32); 9] = [
    ("monotonic", libc::CLOCK_MONOTONIC),
    ("monotonic_raw", libc::CLOCK_MONOTONIC_RAW),
    ("realtime", libc::CLOCK_REALTIME),
    ("boottime", libc::CLOCK_BOOTTIME),
    ("tai", libc::CLOCK_TAI),
    ("mono", libc::CLOCK_MONOTONIC),
    ("raw", libc::CLOCK_MONOTONIC_RAW),
    ("real", libc::CLOCK_REALTIME),
    ("boot", libc::CLOCK_BOOTTIME),
];

/// `-k CLOCKID`: a name of [`CLOCK_NAMES`] or a number, checked to be a
/// clock this kernel has (`clock_getres`), so a bad one is a usage error
/// here rather than perf_event_open's EINVAL later.
fn parse_clockid(text: &str) -> anyhow::Result<i32> {
    let bare = match text.get(..6) {
        Some(prefix) if prefix.eq_ignore_ascii_case("clock_") => &text[6..],
        _ => text,
    };
    let id = match text.parse::<i32>() {
        Ok(id) => id,
        Err(_) => CLOCK_NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(bare))
            .map(|&(_, id)| id)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "-k {text}: unknown clock (monotonic, monotonic_raw, realtime, boottime, tai or a number)"
                )
            })?,
    };
    scry::sys::localtime::clock_res_ns(id)
        .map_err(|err| anyhow::anyhow!("-k {text}: no such clock here ({err})"))?;
    Ok(id)
}

pub(crate) fn run(mut args: RecordArgs) -> anyhow::Result<()> {
    let functions = if args.profile || !args.hooks.is_empty() {
        // trace-cmd record --profile's `-p TRACER`.
        args.functions.take_tracer_from(&mut args.target.pid.pid);
        record_functions(&args.functions)?
    } else if args.functions.given() {
        anyhow::bail!("-l, -n, --tracer and --graph-depth need --profile");
    } else {
        None
    };
    let opts = args.to_options()?;
    let cmdline: Vec<String> = std::env::args().collect();
    let summary = scry::capture::to_file::record_to_file(&opts, &args.output, cmdline, functions)?;
    if !args.quiet {
        // Said after the fact, so that an error stays the only line.
        if args.events.is_empty() && opts.events.first().is_some_and(|e| e.name == "cpu-clock") {
            eprintln!(
                "scry: cycles is not supported here (no hardware PMU); sampled cpu-clock instead"
            );
        }
        for note in &summary.notes {
            eprintln!("scry: {note}");
        }
        eprintln!(
            "[ scry record: {} samples, {} lost, {:.3} MB written to {} ]",
            summary.samples,
            summary.lost(),
            summary.bytes as f64 / 1e6,
            summary.path.display()
        );
        for (cpu, lost) in &summary.lost_per_cpu {
            eprintln!(
                "[ scry record: cpu {cpu} lost {lost} events: try a bigger -m or a lower -F ]"
            );
        }
    }
    match summary.stop {
        StopReason::TargetExited(status) => super::workload_exit(status, &args.command),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_clockid;

    #[test]
    fn clock_names_are_perfs() {
        assert_eq!(parse_clockid("1").unwrap(), libc::CLOCK_MONOTONIC);
        assert_eq!(parse_clockid("monotonic").unwrap(), libc::CLOCK_MONOTONIC);
        assert_eq!(
            parse_clockid("CLOCK_MONOTONIC_RAW").unwrap(),
            libc::CLOCK_MONOTONIC_RAW
        );
        assert_eq!(parse_clockid("boot").unwrap(), libc::CLOCK_BOOTTIME);
        assert_eq!(parse_clockid("Tai").unwrap(), libc::CLOCK_TAI);
        for bad in ["", "clock_", "monotonicx", "-1", "999"] {
            let err = parse_clockid(bad).unwrap_err().to_string();
            assert!(err.starts_with(&format!("-k {bad}: ")), "{err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }
}
