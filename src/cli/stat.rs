//! `scry stat`: perf stat's flags, into `capture::counting` (open, run,
//! read), `analysis::stat` (scale, average, derive) and `render::stat`
//! (perf's table, `-x` or `--json`). Output goes to stderr like perf's
//! (the workload keeps stdout), or to `-o FILE`.

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{ArgAction, Args};

use scry::analysis::stat::{
    self as stats, Aggregation, CounterReading, EventClass, RunAccumulator,
};
use scry::capture::counting::{CounterSet, CountingOptions, ToolTimes, Wake};
use scry::event::name::{self, ResolvedEvent};
use scry::render::stat::{EventLabel, StatFormat, StatPrinter, Subject};
use scry::sys::process::ExitStatus;
use scry::sys::signal::RunStop;

use super::target::TargetArgs;

#[derive(Args, Debug)]
// The shared target flags, worded for counting and listed -a first, as perf stat does.
#[command(
    mut_arg("all_cpus", |a| a.help("Count on every CPU (system-wide)").display_order(1)),
    mut_arg("pid", |a| a.help("Count these processes (all their threads): PID[,PID...]").display_order(2)),
    mut_arg("tid", |a| a.help("Count these threads: TID[,TID...]").display_order(3)),
    mut_arg("cpu", |a| a.help("Count on these CPUs only (0-3,5); implies system-wide").display_order(4)),
)]
pub(crate) struct StatArgs {
    /// Event(s) to count: task-clock, page-faults:u, sched:sched_switch, 'syscalls:sys_enter_*',
    /// 'block:*'... (repeatable, comma lists). Default: perf's set (task-clock or cpu-clock,
    /// context-switches, cpu-migrations, page-faults, cycles, instructions, branches, branch-misses).
    /// uprobe:BINARY:FUNC and uretprobe:BINARY:FUNC count calls of (returns from) a user
    /// function for this run only (the uprobe PMU: nothing is left behind, even if scry is
    /// killed); shown as probe_BINARY:FUNC. kprobe:FUNC[+OFF], kretprobe:FUNC: a kernel
    /// function (the kprobe PMU). Lasting probes: scry probe. Groups count together:
    /// '{task-clock,page-faults}:u'. PMU terms: cpu/event=0x3c,umask=0/, software/config=1,name=x/u
    /// (see /sys/bus/event_source/devices). Tool events: duration_time, user_time, system_time.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    events: Vec<String>,
    #[command(flatten)]
    target: TargetArgs,
    /// One line per CPU instead of a total (system-wide only).
    #[arg(short = 'A', long = "no-aggr")]
    no_aggr: bool,
    /// Run the command N times; print means and their standard deviation. Default 1.
    #[arg(short = 'r', long = "repeat", value_name = "N", default_value_t = 1)]
    repeat: usize,
    /// Print the counts every MS milliseconds (at least 10).
    #[arg(short = 'I', long = "interval-print", value_name = "MS")]
    interval: Option<u64>,
    /// Machine-readable output with this field separator (as perf -x).
    #[arg(
        short = 'x',
        long = "field-separator",
        value_name = "SEP",
        conflicts_with = "json"
    )]
    separator: Option<String>,
    /// Machine-readable output: one JSON object per line (as perf stat -j).
    #[arg(short = 'j', long = "json")]
    json: bool,
    /// Add detailed events (L1-dcache, LLC loads and misses); -dd and -ddd add more.
    #[arg(short = 'd', long = "detailed", action = ArgAction::Count)]
    detailed: u8,
    /// Count only tasks in this cgroup (a name under the perf_event or cgroup2 mount); needs -a or -C.
    #[arg(short = 'G', long = "cgroup", value_name = "CGROUP")]
    cgroup: Option<String>,
    /// Child processes of the target are not counted.
    #[arg(short = 'i', long = "no-inherit")]
    no_inherit: bool,
    /// Write the counts to FILE instead of stderr.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Say why unsupported events are unsupported.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// The command to run and count (`--` before it is optional, as with perf).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Validated `stat` settings.
#[derive(Debug)]
pub(crate) struct StatOptions {
    pub(crate) counting: CountingOptions,
    pub(crate) aggregation: Aggregation,
    pub(crate) repeat: usize,
    pub(crate) interval: Option<Duration>,
    pub(crate) format: StatFormat,
    pub(crate) subject: Subject,
    pub(crate) output: Option<PathBuf>,
    pub(crate) verbose: bool,
    /// Print the command's user and system time (a command, not -a/-p/-t/-C).
    pub(crate) rusage: bool,
}

const DETAILED: &[&[&str]] = &[
    &[
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "LLC-loads",
        "LLC-load-misses",
    ],
    &[
        "L1-icache-loads",
        "L1-icache-load-misses",
        "dTLB-loads",
        "dTLB-load-misses",
        "iTLB-loads",
        "iTLB-load-misses",
    ],
    &["L1-dcache-prefetches", "L1-dcache-prefetch-misses"],
];

impl StatArgs {
    pub(crate) fn to_options(&self) -> anyhow::Result<StatOptions> {
        if self.repeat == 0 {
            anyhow::bail!("-r: the number of runs must be at least 1");
        }
        let interval = match self.interval {
            Some(ms) if ms < 10 => {
                anyhow::bail!("-I: the interval must be at least 10 ms, got {ms}")
            }
            Some(_) if self.repeat > 1 => anyhow::bail!("-I cannot be combined with -r"),
            Some(ms) => Some(Duration::from_millis(ms)),
            None => None,
        };
        let target = self.target.to_target("stat", &self.command)?;
        let system_wide = target.system_wide || target.cpus.is_some();
        let has_task = !target.pids.is_empty() || !target.tids.is_empty();
        if self.command.is_empty() && !system_wide && !has_task {
            anyhow::bail!(
                "nothing to count: give a command after --, or -a, -C CPUS, -p PID or -t TID"
            );
        }
        if self.no_aggr && !system_wide {
            anyhow::bail!("-A/--no-aggr needs a system-wide target (-a or -C)");
        }
        if self.cgroup.is_some() && !system_wide {
            anyhow::bail!("-G: cgroup counting needs a system-wide target (-a or -C)");
        }
        if self.repeat > 1 && self.command.is_empty() {
            anyhow::bail!("-r needs a command to repeat");
        }

        let mut specs = Vec::new();
        for text in &self.events {
            specs.extend(name::parse_list(text)?);
        }
        if specs.is_empty() {
            let clock = if system_wide {
                "cpu-clock"
            } else {
                "task-clock"
            };
            for n in [
                clock,
                "context-switches",
                "cpu-migrations",
                "page-faults",
                "cycles",
                "instructions",
                "branches",
                "branch-misses",
            ] {
                specs.push(name::parse(n)?);
            }
        }
        for level in DETAILED.iter().take(usize::from(self.detailed)) {
            for n in *level {
                specs.push(name::parse(n)?);
            }
        }
        let events: Vec<ResolvedEvent> = super::probe::resolve_events(&specs)?;

        let format = match (&self.separator, self.json) {
            (_, true) => StatFormat::Json,
            (Some(sep), false) => StatFormat::Separated(sep.clone()),
            (None, false) => StatFormat::Text,
        };
        let subject = if self.target.all_cpus {
            Subject::SystemWide
        } else if let Some(list) = &self.target.cpu {
            Subject::Cpus(list.clone())
        } else if let Some(p) = &self.target.pid.pid {
            Subject::Pid(p.clone())
        } else if let Some(t) = &self.target.tid {
            Subject::Tid(t.clone())
        } else {
            Subject::Command(
                self.command
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect(),
            )
        };
        Ok(StatOptions {
            counting: CountingOptions {
                events,
                target,
                cgroup: self.cgroup.clone(),
                inherit: !self.no_inherit,
            },
            aggregation: if self.no_aggr {
                Aggregation::PerCpu
            } else {
                Aggregation::Global
            },
            repeat: self.repeat,
            interval,
            format,
            subject,
            output: self.output.clone(),
            verbose: self.verbose,
            rusage: !self.command.is_empty() && !system_wide && !has_task,
        })
    }
}

/// How the runs ended.
struct Outcome {
    /// How the command failed (the last run that did), if it did.
    failure: Option<ExitStatus>,
}

pub(crate) fn run(args: StatArgs) -> anyhow::Result<()> {
    let opts = args.to_options()?;
    let outcome = match &opts.output {
        Some(path) => {
            let file = super::create_private(path)?;
            let mut out = BufWriter::new(file);
            let outcome = count(&opts, &mut out)?;
            out.flush()
                .with_context(|| format!("writing {}", path.display()))?;
            outcome
        }
        None => {
            let stderr = io::stderr();
            let mut out = BufWriter::new(stderr.lock());
            let outcome = count(&opts, &mut out)?;
            out.flush()?;
            outcome
        }
    };
    super::workload_exit(outcome.failure, &args.command)?;
    Ok(())
}

fn classes(events: &[ResolvedEvent]) -> Vec<EventClass> {
    events
        .iter()
        .map(|e| EventClass {
            type_: e.type_,
            config: e.config,
        })
        .collect()
}

fn labels(events: &[ResolvedEvent], classes: &[EventClass]) -> Vec<EventLabel> {
    events
        .iter()
        .zip(classes)
        .map(|(e, c)| match &e.unit {
            Some(u) => EventLabel::with_unit(&e.name, &u.unit, u.scale),
            None => EventLabel::new(&e.name, c.is_clock()),
        })
        .collect()
}

fn count(opts: &StatOptions, out: &mut impl Write) -> anyhow::Result<Outcome> {
    let events = &opts.counting.events;
    let classes = classes(events);
    let mut printer = StatPrinter::new(
        opts.format.clone(),
        labels(events, &classes),
        opts.aggregation == Aggregation::PerCpu,
        opts.repeat,
    );
    printer.cgroup = opts.counting.cgroup.clone();
    let run_stop = RunStop::install().context("cannot install the SIGINT/SIGTERM handler")?;

    let mut acc = RunAccumulator::new();
    // The last run's counters stay open until the counts are printed:
    // closing tracepoint counters can take seconds (see capture::counting).
    let mut last_set: Option<CounterSet> = None;
    let mut failure = None;
    let mut rusage = None;
    let mut supported = vec![true; events.len()];
    let mut cpus = Vec::new();
    for _ in 0..opts.repeat {
        let before = scry::sys::process::children_cpu_time().ok();
        drop(last_set.take());
        if run_stop.caught().is_some() {
            // Ctrl-C between runs: print the runs so far.
            break;
        }
        let mut set = CounterSet::open(&opts.counting)?;
        if opts.verbose {
            for (e, reason) in events.iter().zip(&set.unsupported_reason) {
                if let Some(reason) = reason {
                    eprintln!("scry: event '{}' is not supported here: {reason}", e.name);
                }
            }
        }
        // Names may have changed (`:u` when the kernel is off limits).
        printer.labels = labels(&set.events, &classes);
        supported.clone_from(&set.supported);
        cpus.clone_from(&set.cpus);
        set.start()?;
        let start = set.started().unwrap_or_else(Instant::now);
        let stop = match opts.interval {
            Some(every) => {
                let p = IntervalPrint {
                    every,
                    start,
                    classes: &classes,
                    aggregation: opts.aggregation,
                    printer: &mut printer,
                };
                run_intervals(&mut set, &run_stop, p, out)?
            }
            None => wait_for_end(&mut set, &run_stop, None)?,
        };
        let (status, by_signal) = match stop {
            Stop::Ended { status, by_signal } => (status, by_signal),
            Stop::TimedOut => (None, false),
        };
        let elapsed = start.elapsed();
        set.disable();
        let mut tools = ToolTimes {
            duration_ns: u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
            ..ToolTimes::default()
        };
        if let (Some((u0, s0)), Ok((u1, s1))) = (before, scry::sys::process::children_cpu_time()) {
            let (user, system) = (u1.saturating_sub(u0), s1.saturating_sub(s0));
            rusage = Some((user.as_secs_f64(), system.as_secs_f64()));
            tools.user_ns = u64::try_from(user.as_nanos()).ok();
            tools.system_ns = u64::try_from(system.as_nanos()).ok();
        }
        let readings = set.read_with(tools)?;
        if let Some(status) = status
            && !status.success()
            && !by_signal
        {
            failure = Some(status);
        }
        if opts.interval.is_none() {
            let sums = stats::sum_readings(&readings, &supported, &cpus, opts.aggregation);
            acc.add_run(&sums, elapsed.as_nanos() as f64);
        }
        last_set = Some(set);
        if by_signal || failure.is_some() && opts.repeat > 1 {
            break;
        }
    }
    if opts.interval.is_some() {
        out.flush()?;
        return Ok(Outcome { failure });
    }
    if acc.walltime().count() == 0 {
        return Ok(Outcome { failure });
    }
    let rows = acc.rows(&classes);
    printer.header(out, &opts.subject)?;
    printer.rows(out, &rows, None)?;
    let rusage = if opts.rusage && opts.repeat == 1 {
        rusage
    } else {
        None
    };
    printer.footer(out, &acc.walltime(), rusage)?;
    out.flush()?;
    drop(last_set);
    Ok(Outcome { failure })
}

/// How a wait ended.
enum Stop {
    /// The timeout passed first.
    TimedOut,
    /// The target ended (the command's status, if we started one), or a
    /// signal ended the run (`by_signal`).
    Ended {
        status: Option<ExitStatus>,
        by_signal: bool,
    },
}

/// Waits until the target ends, a signal arrives (forwarded to the
/// command, which is then reaped) or `timeout` passes.
fn wait_for_end(
    set: &mut CounterSet,
    run_stop: &RunStop,
    timeout: Option<Duration>,
) -> anyhow::Result<Stop> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        match set.wait(run_stop, left)? {
            Wake::Timeout => {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok(Stop::TimedOut);
                }
            }
            Wake::TargetExited(status) => {
                return Ok(Stop::Ended {
                    status,
                    by_signal: false,
                });
            }
            Wake::Signal(sig) => {
                set.signal_child(sig);
                let status = set.wait_child()?;
                return Ok(Stop::Ended {
                    status,
                    by_signal: true,
                });
            }
        }
    }
}

/// What the `-I` loop prints with.
struct IntervalPrint<'a> {
    every: Duration,
    start: Instant,
    classes: &'a [EventClass],
    aggregation: Aggregation,
    printer: &'a mut StatPrinter,
}

/// `-I`: prints the deltas every `every` until the target ends; the last,
/// partial interval too.
fn run_intervals(
    set: &mut CounterSet,
    run_stop: &RunStop,
    p: IntervalPrint<'_>,
    out: &mut impl Write,
) -> anyhow::Result<Stop> {
    let mut previous: Vec<CounterReading> = Vec::new();
    let mut last_print = p.start;
    let mut tick: u32 = 1;
    loop {
        let deadline = p.start + p.every * tick;
        let left = deadline.saturating_duration_since(Instant::now());
        let stop = wait_for_end(set, run_stop, Some(left))?;
        let now = Instant::now();
        let readings = set.read()?;
        let delta: Vec<CounterReading> = readings
            .iter()
            .enumerate()
            .map(|(i, r)| CounterReading {
                reading: r
                    .reading
                    .since(previous.get(i).map(|p| p.reading).unwrap_or_default()),
                ..*r
            })
            .collect();
        let sums = stats::sum_readings(&delta, &set.supported, &set.cpus, p.aggregation);
        let rows = stats::rows_of(&sums, p.classes, (now - last_print).as_nanos() as f64);
        p.printer.rows(out, &rows, Some(now - p.start))?;
        out.flush()?;
        previous = readings;
        last_print = now;
        if let Stop::Ended { .. } = stop {
            return Ok(stop);
        }
        tick += 1;
    }
}
