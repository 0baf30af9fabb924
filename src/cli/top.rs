//! `scry top`: perf top's live view. Every `-d` seconds the interval's
//! resolved samples join a decaying window whose profile
//! (`analysis::top::LiveTop`) is drawn full-screen or, with `--stdio` or
//! without a terminal, printed as a table (`render::top_screen`). This file
//! holds the flags, the choice of where samples come from and the wiring.
//!
//! The samples come counted in the kernel where BPF loads and the view
//! needs only stack counts (`analysis::kernel_top`: the interval's counts
//! taken at each refresh, nothing streamed), else (`--no-bpf`, another
//! event than cpu-clock, `-s tid`, ...: the reason said with `-v`) from a
//! capture session (system-wide by default) whose records the symbol
//! resolver reads. Both feed the same window and view. The kernel path is
//! taken only where it gives what the streamed one would
//! (`kernel_settings`): the idle task counts when every CPU (or `-C`) is
//! watched, as perf top shows it; what the kernel cannot give (another
//! event than cpu-clock, `-c`, a DWARF call graph, `-s tid`, `cpu` or
//! `socket`: the counts are per process, not CPU) streams instead.

use std::io;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use scry::analysis::kernel_top::{KernelTop, STACK_STORAGE};
use scry::analysis::profile::{ProfileOptions, SortKey};
use scry::analysis::top::{LiveTop, TopNames};
use scry::capture::live::{LiveConsumer, run_live, run_ticks};
use scry::capture::session::default_mmap_pages;
use scry::capture::{CallGraph, CaptureOptions, Sampling, Session, Target};
use scry::event::name;
use scry::render::top::{TopStatus, TopView};
use scry::render::top_screen::TopScreen;
use scry::symbol::{ResolveOptions, Resolver};
use scry::sys::bpf_oncpu::OncpuSettings;
use scry::sys::signal::RunStop;

use super::target::{PidsArg, SamplingArgs, checked_mmap_pages, parse_cpus};

#[derive(Args, Debug)]
#[command(
    mut_arg("freq", |a| a.help("Sampling frequency in Hz. Default 4000")),
    mut_arg("callchain", |a| a.help("Record call chains and show Children/Self with expandable call graphs")),
    mut_arg("call_graph", |a| a.help("fp+stack[,SIZE] (the default of -g), fp or dwarf[,SIZE]")),
    mut_arg("pid", |a| a.help("Watch these processes only: PID[,PID...]")),
)]
pub(crate) struct TopArgs {
    /// Event to sample (default: cycles, or cpu-clock without a hardware PMU).
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    events: Vec<String>,
    #[command(flatten)]
    sampling: SamplingArgs,
    #[command(flatten)]
    pid: PidsArg,
    /// Watch every CPU (the default without -p).
    #[arg(short = 'a', long = "all-cpus")]
    all_cpus: bool,
    /// Watch these CPUs only (0-3,5).
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    cpu: Option<String>,
    /// Seconds between refreshes. Default 2.
    #[arg(
        short = 'd',
        long = "delay",
        value_name = "SECS",
        default_value_t = 2.0
    )]
    delay: f64,
    /// Sort keys (comm, pid, tid, dso, sym). Default dso,sym.
    #[arg(
        short = 's',
        long = "sort",
        value_name = "KEYS",
        default_value = "dso,sym"
    )]
    sort: String,
    /// Show the number of samples of each entry (a Samples column).
    #[arg(short = 'n', long = "show-nr-samples")]
    show_nr_samples: bool,
    /// Print a table per refresh instead of the full-screen view.
    #[arg(long)]
    stdio: bool,
    /// Stop after this many refreshes (default: until q or Ctrl-C).
    #[arg(long, value_name = "N")]
    iterations: Option<u64>,
    /// Rows printed per refresh with --stdio. Default 30.
    #[arg(long, value_name = "N", default_value_t = 30)]
    rows: usize,
    /// Ring buffer pages per CPU (a power of two).
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES")]
    mmap_pages: Option<usize>,
    /// Stream every sample through the perf rings instead of counting
    /// stacks in the kernel with BPF (default: BPF where it loads and the
    /// view needs only stack counts of cpu-clock).
    #[arg(long = "no-bpf")]
    no_bpf: bool,
    /// Say how the samples are taken (BPF's hooks, or why they are streamed).
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
}

/// The live profile and its screen: the records to the profile, a
/// refresh and a redraw at each interval, keys in between.
struct TopConsumer {
    top: LiveTop,
    screen: TopScreen,
    iterations_left: Option<u64>,
}

impl LiveConsumer for TopConsumer {
    type Handler = LiveTop;

    fn handler(&mut self) -> &mut LiveTop {
        &mut self.top
    }

    fn tick_interval(&self) -> Option<Duration> {
        match self.screen.is_terminal() {
            false => Some(self.top.interval()),
            true => Some(Duration::from_millis(100)),
        }
    }

    fn tick(&mut self) -> io::Result<bool> {
        if !self.screen.keys(&self.top)? {
            return Ok(false);
        }
        let due = self.top.due();
        if due {
            self.top.refresh()?;
            self.screen.show(&self.top);
        }
        if due || self.screen.is_terminal() {
            self.screen.draw()?;
        }
        if due && let Some(left) = &mut self.iterations_left {
            *left = left.saturating_sub(1);
            if *left == 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl TopArgs {
    fn to_options(&self) -> anyhow::Result<CaptureOptions> {
        let mut specs = Vec::new();
        for text in &self.events {
            specs.extend(name::parse_list(text)?);
        }
        if specs.is_empty() {
            specs.push(name::parse("cpu-clock")?);
        }
        let mut events = name::resolve(&specs)?;
        scry::capture::session::fall_back_from_cycles(&mut events);
        let pids = self.pid.pids()?;
        let cpus = parse_cpus(self.cpu.as_deref())?;
        let target = Target {
            command: Vec::new(),
            system_wide: pids.is_empty() && (self.all_cpus || cpus.is_none()),
            pids,
            tids: Vec::new(),
            cpus,
        };
        // None: the session's defaults, perf's (4000 Hz, but every event
        // of a tracepoint: a frequency would weigh each by a guessed period).
        let sampling = self.sampling.sampling()?;
        let cpu_count = scry::sys::proc::online_cpus().map_or(1, |c| c.len());
        let mmap_pages = self
            .mmap_pages
            .unwrap_or_else(|| default_mmap_pages(&events, cpu_count) / 4);
        Ok(CaptureOptions {
            events,
            target,
            sampling,
            call_graph: self.sampling.call_graph()?,
            mmap_pages: checked_mmap_pages(mmap_pages)?,
            filters: Vec::new(),
            no_callchain: Vec::new(),
            context_switch: false,
            clockid: None,
        })
    }
}

/// top's frequency when `-F` is not given (perf top's).
const DEFAULT_HZ: u64 = 4000;

/// Why top streams its samples instead of counting them in the kernel.
#[derive(Debug, thiserror::Error)]
enum NeedsStream {
    /// An event other than cpu-clock.
    #[error("-e {0}: only cpu-clock samples are counted in the kernel")]
    OtherEvent(String),
    /// More than one event.
    #[error("several events: only cpu-clock is counted in the kernel")]
    SeveralEvents,
    /// `-c`: a period instead of a frequency.
    #[error("-c: the kernel counts samples taken at a frequency")]
    Period,
    /// `--call-graph dwarf`.
    #[error("--call-graph dwarf needs each sample's stack copy")]
    Dwarf,
    /// `-s tid`.
    #[error("-s tid: the kernel counts per process, not per thread")]
    PerThread,
    /// `-s cpu` or `-s socket` (the key's name).
    #[error("-s {0}: the kernel's counts do not keep the CPU")]
    PerCpu(String),
}

/// Why `opts` (and `-s`) need the streamed samples, or the program's
/// settings.
fn kernel_settings(opts: &CaptureOptions, sort: &[SortKey]) -> Result<OncpuSettings, NeedsStream> {
    if let [event] = opts.events.as_slice() {
        if event.name != "cpu-clock" {
            return Err(NeedsStream::OtherEvent(event.name.clone()));
        }
    } else {
        return Err(NeedsStream::SeveralEvents);
    }
    let frequency = match opts.sampling {
        Some(Sampling::Frequency(hz)) => hz,
        None => DEFAULT_HZ,
        Some(_) => return Err(NeedsStream::Period),
    };
    if matches!(opts.call_graph, CallGraph::Dwarf { .. }) {
        return Err(NeedsStream::Dwarf);
    }
    if sort.contains(&SortKey::Tid) {
        return Err(NeedsStream::PerThread);
    }
    if let Some(key) = sort
        .iter()
        .find(|k| matches!(k, SortKey::Cpu | SortKey::Socket))
    {
        return Err(NeedsStream::PerCpu(key.header().to_lowercase()));
    }
    let target = &opts.target;
    Ok(OncpuSettings {
        frequency,
        cpus: target.cpus.clone(),
        pid: None,
        tid: None,
        targets: !target.pids.is_empty(),
        include_idle: target.pids.is_empty(),
        user_stacks: true,
        kernel_stacks: true,
        stack_storage: STACK_STORAGE,
        hash_storage: 40960,
    })
}

/// The samples counted in the kernel, or `None` (why said with `-v`):
/// the view needs what only streamed samples hold, or BPF does not load.
fn kernel_top(
    args: &TopArgs,
    opts: &CaptureOptions,
    sort: &[SortKey],
    resolve: &ResolveOptions,
) -> Option<KernelTop> {
    let why = match kernel_settings(opts, sort) {
        Ok(settings) => match scry::sys::bpf_engine::preflight() {
            Ok(()) => {
                let call_graph = opts.call_graph != CallGraph::None;
                match KernelTop::load(&settings, &opts.target.pids, call_graph, resolve) {
                    Ok(kernel) => {
                        super::bpf_tool::print_hooks("top", &kernel.hooks(), args.verbose);
                        return Some(kernel);
                    }
                    Err(err) => format!("the BPF program did not load ({err})"),
                }
            }
            Err(why) => why.to_string(),
        },
        Err(why) => why.to_string(),
    };
    if args.verbose {
        eprintln!("top: streaming every sample: {why}");
    }
    None
}

pub(crate) fn run(args: TopArgs) -> anyhow::Result<()> {
    if !(args.delay > 0.0 && args.delay <= 3600.0) {
        anyhow::bail!(
            "-d: refresh delay must be between 0 and 3600 seconds, got {}",
            args.delay
        );
    }
    let sort = SortKey::parse_list(&args.sort).context("-s")?;
    let opts = args.to_options()?;
    if let Some(pid) = opts
        .target
        .pids
        .iter()
        .find(|&&pid| !scry::sys::proc::exists(pid))
    {
        anyhow::bail!("-p: no such process: {pid}");
    }
    let stop = RunStop::install().context("installing signal handlers")?;
    let resolve = ResolveOptions {
        srcline: sort.contains(&SortKey::Srcline),
        ..ResolveOptions::default()
    };
    let kernel = match args.no_bpf {
        true => None,
        false => kernel_top(&args, &opts, &sort, &resolve),
    };
    let (names, session) = match kernel {
        Some(kernel) => (TopNames::Kernel(Box::new(kernel)), None),
        None => (
            TopNames::Stream(Box::new(Resolver::new(&resolve))),
            Some(Session::open(&opts)?),
        ),
    };
    // perf's status: the attribute's period or frequency, "Hz" in
    // frequency mode (`[1Hz raw_syscalls:sys_enter]` for a tracepoint).
    let freq = match opts.sampling {
        Some(Sampling::Frequency(hz)) => format!("{hz}Hz "),
        Some(_) => String::new(),
        // Tracepoints and probes: every hit (period 1), as the session opens them.
        None if opts
            .events
            .first()
            .is_some_and(|e| e.is_tracepoint() || e.uprobe.is_some()) =>
        {
            "1Hz ".to_string()
        }
        None => "4000Hz ".to_string(),
    };
    let event = match &session {
        Some(session) => session.events.first().map(|e| e.name.clone()),
        None => opts.events.first().map(|e| e.name.clone()),
    };
    let scope = if opts.target.system_wide {
        format!(
            "all, {} CPUs",
            scry::sys::proc::online_cpus().map_or(0, |c| c.len())
        )
    } else if let Some(cpus) = &opts.target.cpus {
        format!("CPUs {cpus:?}")
    } else {
        format!("pid {:?}", opts.target.pids)
    };
    let view = TopView {
        status: TopStatus {
            event: format!("{freq}{}", event.as_deref().unwrap_or("?")),
            scope,
            ..Default::default()
        },
        headers: sort.iter().map(|k| k.header().to_string()).collect(),
        show_samples: args.show_nr_samples,
        ..Default::default()
    };
    let screen = TopScreen::open(args.stdio, args.rows, view)
        .context("cannot set up the terminal (use --stdio)")?;
    let options = ProfileOptions {
        sort,
        children: opts.call_graph != CallGraph::None,
        ..ProfileOptions::default()
    };
    let mut consumer = TopConsumer {
        top: LiveTop::new(names, options, Duration::from_secs_f64(args.delay)),
        screen,
        iterations_left: args.iterations,
    };
    let result = match session {
        // perf top synthesizes every process's maps when it watches CPUs.
        Some(session) => {
            let all = opts.target.system_wide || opts.target.cpus.is_some();
            run_live(session, stop, consumer, all)
                .map(|(_consumer, outcome)| outcome.dropped_rounds)
                .map_err(anyhow::Error::from)
        }
        // The kernel's counts: a refresh at each interval, keys read in
        // between in the terminal, until q, Ctrl-C or the iterations.
        None => run_ticks(&stop, &mut consumer)
            .map(|()| 0)
            .map_err(anyhow::Error::from),
    };
    // The screen is gone (the terminal given back) before this line.
    let dropped_rounds = result?;
    if dropped_rounds > 0 {
        eprintln!("scry: the view fell behind and dropped {dropped_rounds} rounds of records");
    }
    Ok(())
}
