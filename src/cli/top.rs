//! `scry top`: perf top's live view. Every `-d` seconds the interval's
//! resolved samples join a decaying window (`analysis::decay`) whose
//! profile is drawn full-screen (ratatui) or, with `--stdio` or without a
//! terminal, printed as a table.
//!
//! The samples come counted in the kernel where BPF loads and the view
//! needs only stack counts (`cli::top_bpf`: the interval's counts taken at
//! each refresh, nothing streamed), else (`--no-bpf`, another event than
//! cpu-clock, `-s tid`, ...: the reason said with `-v`) from a capture
//! session (system-wide by default) whose records the symbol resolver
//! reads. Both feed the same window and view.

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use linux_perf_event_reader::{CommonData, CpuMode, ForkOrExitRecord, SampleRecord};
use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::widgets::TableState;

use scry::analysis::calltree::{GraphOrder, build_trees};
use scry::analysis::decay::DecayWindow;
use scry::analysis::profile::{Profile, ProfileOptions, SortKey};
use scry::analysis::sample::{FrameTable, ResolvedSample};
use scry::capture::live::{LiveConsumer, LiveSink, run_threaded};
use scry::capture::session::default_mmap_pages;
use scry::capture::{CallGraph, CaptureOptions, Sampling, Session, Target};
use scry::data::handler::{Comm, Lost, LostKind, Mmap, RecordHandler};
use scry::event::name;
use scry::render::report::{key_cell, write_tree};
use scry::render::top::{self, TopRow, TopStatus, TopView};
use scry::symbol::{ResolveOptions, Resolver};
use scry::sys::perf_event::attr_bytes;
use scry::sys::signal::{PollFd, STOP_SIGNALS, SignalPipe};

use super::target::{SamplingArgs, checked_mmap_pages, parse_cpus, parse_id_list};
use super::top_bpf::{self, KernelTop};

#[derive(Args, Debug)]
#[command(
    mut_arg("freq", |a| a.help("Sampling frequency in Hz. Default 4000")),
    mut_arg("callchain", |a| a.help("Record call chains and show Children/Self with expandable call graphs")),
    mut_arg("call_graph", |a| a.help("fp+stack[,SIZE] (the default of -g), fp or dwarf[,SIZE]")),
)]
pub(crate) struct TopArgs {
    /// Event to sample (default: cycles, or cpu-clock without a hardware PMU).
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    events: Vec<String>,
    #[command(flatten)]
    sampling: SamplingArgs,
    /// Watch these processes only: PID[,PID...].
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pid: Option<String>,
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

/// Where the samples are named: from streamed records, or from the
/// kernel's counts.
enum Names {
    Stream(Box<Resolver>),
    Kernel(Box<KernelTop>),
}

impl Names {
    fn take_samples(&mut self) -> Vec<ResolvedSample> {
        match self {
            Names::Stream(resolver) => resolver.take_samples(),
            Names::Kernel(kernel) => kernel.take_samples(),
        }
    }

    fn frames(&self) -> &FrameTable {
        match self {
            Names::Stream(resolver) => resolver.frames(),
            Names::Kernel(kernel) => kernel.frames(),
        }
    }

    /// The resolver of streamed records.
    fn stream(&mut self) -> Option<&mut Resolver> {
        match self {
            Names::Stream(resolver) => Some(resolver),
            Names::Kernel(_) => None,
        }
    }
}

enum Screen {
    Stdio(io::BufWriter<io::Stdout>),
    Terminal(Box<TerminalScreen>),
}

struct TerminalScreen {
    terminal: DefaultTerminal,
    table: TableState,
    searching: bool,
    show_graph: bool,
}

struct TopConsumer {
    names: Names,
    window: DecayWindow,
    profile_options: ProfileOptions,
    interval: Duration,
    last_refresh: Instant,
    interval_samples: u64,
    interval_kernel: u64,
    /// Sample timestamps (ns) seen in the interval, to rate by the kernel's
    /// clock: analysis may lag the capture, so wall time would mislead.
    interval_times: Option<(u64, u64)>,
    lost: u64,
    status: TopStatus,
    view: TopView,
    iterations_left: Option<u64>,
    screen: Screen,
    rows: usize,
    /// The last refresh's profile, for call graphs.
    last: Option<Profile>,
}

impl TopConsumer {
    fn refresh(&mut self) -> io::Result<()> {
        if let Names::Kernel(kernel) = &mut self.names {
            let interval = kernel.take_interval()?;
            self.interval_samples += interval.samples;
            self.interval_kernel += interval.kernel;
            self.lost = interval.dropped;
        }
        let wall = self.last_refresh.elapsed().as_secs_f64().max(1e-3);
        self.last_refresh = Instant::now();
        let elapsed = match self.interval_times.take() {
            Some((first, last)) if last > first => {
                ((last - first) as f64 / 1e9).max(self.interval.as_secs_f64().min(wall))
            }
            _ => wall,
        };
        self.window.push(self.names.take_samples());
        let weighted = self.window.weighted();
        let profile = Profile::build(&weighted, self.names.frames(), &self.profile_options);
        self.status.samples_per_sec = self.interval_samples as f64 / elapsed;
        self.status.kernel_pct = if self.interval_samples > 0 {
            self.interval_kernel as f64 * 100.0 / self.interval_samples as f64
        } else {
            0.0
        };
        self.status.lost = self.lost;
        self.interval_samples = 0;
        self.interval_kernel = 0;
        let frames = self.names.frames();
        let mut rows = Vec::new();
        if let Some(section) = profile.events.first() {
            let total = section.total_period.max(1) as f64;
            for entry in section.entries.iter().take(500) {
                let (pct, self_pct) = if profile.children {
                    (
                        entry.children_period as f64 * 100.0 / total,
                        Some(entry.self_period as f64 * 100.0 / total),
                    )
                } else {
                    (entry.self_period as f64 * 100.0 / total, None)
                };
                rows.push(TopRow {
                    percent: pct,
                    self_percent: self_pct,
                    samples: if profile.children {
                        entry.children_samples
                    } else {
                        entry.self_samples
                    },
                    cells: self
                        .profile_options
                        .sort
                        .iter()
                        .map(|&k| key_cell(k, entry, frames))
                        .collect(),
                });
            }
        }
        self.view.status = self.status.clone();
        self.view.rows = rows;
        self.last = Some(profile);
        self.update_graph();
        Ok(())
    }

    /// The call graph of the selected row, in the terminal view.
    fn update_graph(&mut self) {
        self.view.detail.clear();
        let Screen::Terminal(screen) = &self.screen else {
            return;
        };
        let (Some(profile), true) = (&self.last, screen.show_graph) else {
            return;
        };
        let visible = top::visible_rows(&self.view);
        let Some(&entry) = screen.table.selected().and_then(|s| visible.get(s)) else {
            return;
        };
        let trees = build_trees(profile, 0, &[entry], GraphOrder::Callee);
        let total = profile.events.first().map_or(0, |e| e.total_period);
        let mut text = Vec::new();
        if let Some(tree) = trees.first()
            && write_tree(&mut text, tree, self.names.frames(), total, 0.5).is_ok()
        {
            self.view.detail = String::from_utf8_lossy(&text)
                .lines()
                .map(str::to_string)
                .collect();
        }
        if self.view.detail.is_empty() {
            self.view
                .detail
                .push("(no call graph: record with -g)".to_string());
        }
    }

    /// Handle pending keys; false when the user quits.
    fn keys(&mut self) -> io::Result<bool> {
        let Screen::Terminal(screen) = &mut self.screen else {
            return Ok(true);
        };
        let mut changed = false;
        while event::poll(Duration::ZERO)? {
            let Event::Key(key) = event::read()? else {
                continue;
            };
            if key.kind != KeyEventKind::Press {
                continue;
            }
            if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
                return Ok(false);
            }
            if screen.searching {
                match key.code {
                    KeyCode::Enter => screen.searching = false,
                    KeyCode::Esc => {
                        screen.searching = false;
                        self.view.search = None;
                    }
                    KeyCode::Backspace => {
                        if let Some(s) = &mut self.view.search {
                            s.pop();
                        }
                    }
                    KeyCode::Char(c) => self.view.search.get_or_insert_with(String::new).push(c),
                    _ => {}
                }
                screen.table.select(Some(0));
                changed = true;
                continue;
            }
            match key.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(false),
                KeyCode::Down | KeyCode::Char('j') => screen.table.select_next(),
                KeyCode::Up | KeyCode::Char('k') => screen.table.select_previous(),
                KeyCode::PageDown => screen.table.scroll_down_by(10),
                KeyCode::PageUp => screen.table.scroll_up_by(10),
                KeyCode::Enter | KeyCode::Char('+') => screen.show_graph = !screen.show_graph,
                KeyCode::Char('/') => {
                    screen.searching = true;
                    self.view.search = Some(String::new());
                }
                _ => {}
            }
            changed = true;
        }
        if changed {
            self.update_graph();
        }
        Ok(true)
    }

    fn draw(&mut self) -> io::Result<()> {
        match &mut self.screen {
            Screen::Stdio(out) => {
                top::write_stdio(out, &self.view, self.rows)?;
                out.flush()
            }
            Screen::Terminal(screen) => {
                let view = &self.view;
                let table = &mut screen.table;
                screen.terminal.draw(|f| top::draw(f, view, table))?;
                Ok(())
            }
        }
    }
}

/// Samples counted for the status line, losses too; the records to the
/// resolver.
impl RecordHandler for TopConsumer {
    fn handle_sample(&mut self, attr_index: usize, s: &SampleRecord<'_>) {
        self.interval_samples += 1;
        if let Some(t) = s.timestamp {
            let (first, last) = self.interval_times.get_or_insert((t, t));
            *first = (*first).min(t);
            *last = (*last).max(t);
        }
        if matches!(s.cpu_mode, CpuMode::Kernel | CpuMode::GuestKernel) {
            self.interval_kernel += 1;
        }
        if let Some(resolver) = self.names.stream() {
            resolver.handle_sample(attr_index, s);
        }
    }

    fn handle_mmap(&mut self, attr_index: usize, mmap: &Mmap<'_>, id: &CommonData) {
        if let Some(resolver) = self.names.stream() {
            resolver.handle_mmap(attr_index, mmap, id);
        }
    }

    fn handle_comm(&mut self, attr_index: usize, comm: &Comm<'_>, id: &CommonData) {
        if let Some(resolver) = self.names.stream() {
            resolver.handle_comm(attr_index, comm, id);
        }
    }

    fn handle_fork(&mut self, attr_index: usize, fork: &ForkOrExitRecord, id: &CommonData) {
        if let Some(resolver) = self.names.stream() {
            resolver.handle_fork(attr_index, fork, id);
        }
    }

    fn handle_lost(&mut self, lost: &Lost, id: &CommonData) {
        if lost.kind == LostKind::Records {
            self.lost += lost.count;
        }
        if let Some(resolver) = self.names.stream() {
            resolver.handle_lost(lost, id);
        }
    }
}

impl LiveConsumer for TopConsumer {
    type Handler = Self;

    fn handler(&mut self) -> &mut Self {
        self
    }

    fn tick_interval(&self) -> Option<Duration> {
        match self.screen {
            Screen::Stdio(_) => Some(self.interval),
            Screen::Terminal(_) => Some(Duration::from_millis(100)),
        }
    }

    fn tick(&mut self) -> io::Result<bool> {
        if !self.keys()? {
            return Ok(false);
        }
        let due = self.last_refresh.elapsed() >= self.interval;
        if due {
            self.refresh()?;
        }
        if due || matches!(self.screen, Screen::Terminal(_)) {
            self.draw()?;
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
        let pids = parse_id_list(self.pid.as_deref(), "-p")?;
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
        })
    }
}

/// The samples counted in the kernel, or `None` (why said with `-v`):
/// the view needs what only streamed samples hold, or BPF does not load.
fn kernel_top(
    args: &TopArgs,
    opts: &CaptureOptions,
    sort: &[SortKey],
    resolve: &ResolveOptions,
) -> Option<KernelTop> {
    let why = match top_bpf::kernel_settings(opts, sort) {
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

/// The kernel's counts' run: a refresh (in `tick`) at each interval, keys
/// read in between in the terminal, until q, Ctrl-C or the iterations.
fn run_kernel(signals: &SignalPipe, consumer: &mut TopConsumer) -> io::Result<()> {
    let every = consumer.tick_interval().unwrap_or(consumer.interval);
    let timeout_ms = every.as_millis().clamp(1, i32::MAX as u128) as i32;
    loop {
        let mut polled = [PollFd {
            fd: signals.fd(),
            revents: 0,
        }];
        scry::sys::signal::poll(&mut polled, timeout_ms)?;
        if signals.received().is_some() || !consumer.tick()? {
            return Ok(());
        }
    }
}

/// The streamed run: the session's records into the consumer; the rounds
/// of records the view dropped.
fn run_stream(
    mut session: Session,
    opts: &CaptureOptions,
    signals: SignalPipe,
    consumer: TopConsumer,
) -> anyhow::Result<u64> {
    let ids = session.ids().context("reading sample ids")?;
    let events: Vec<(Vec<u8>, Vec<u64>)> = session.attrs.iter().map(attr_bytes).zip(ids).collect();
    let mut sink = LiveSink::new(&events, consumer).context("parsing the event attributes")?;
    let mut synthesized = Vec::new();
    session.synthesize(
        opts.target.system_wide || opts.target.cpus.is_some(),
        &mut synthesized,
    );
    scry::capture::RecordSink::records(&mut sink, 0, &synthesized)?;
    scry::capture::RecordSink::round_done(&mut sink)?;
    session.start()?;
    Ok(run_threaded(session, signals, &mut sink)?.dropped_rounds)
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
    let signals = SignalPipe::install(&STOP_SIGNALS).context("installing signal handlers")?;
    let resolve = ResolveOptions {
        srcline: sort.contains(&SortKey::Srcline),
        ..ResolveOptions::default()
    };
    let kernel = match args.no_bpf {
        true => None,
        false => kernel_top(&args, &opts, &sort, &resolve),
    };
    let (names, session) = match kernel {
        Some(kernel) => (Names::Kernel(Box::new(kernel)), None),
        None => (
            Names::Stream(Box::new(Resolver::new(&resolve))),
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
    let use_terminal = !args.stdio && io::stdout().is_terminal();
    let screen = if use_terminal {
        let terminal = ratatui::try_init().context("cannot set up the terminal (use --stdio)")?;
        Screen::Terminal(Box::new(TerminalScreen {
            terminal,
            table: TableState::default().with_selected(Some(0)),
            searching: false,
            show_graph: false,
        }))
    } else {
        Screen::Stdio(io::BufWriter::new(io::stdout()))
    };
    let mut consumer = TopConsumer {
        names,
        window: DecayWindow::new(8, 0.875),
        profile_options: ProfileOptions {
            sort: sort.clone(),
            children: opts.call_graph != CallGraph::None,
            ..ProfileOptions::default()
        },
        interval: Duration::from_secs_f64(args.delay),
        last_refresh: Instant::now(),
        interval_samples: 0,
        interval_kernel: 0,
        interval_times: None,
        lost: 0,
        status: TopStatus {
            event: format!("{freq}{}", event.as_deref().unwrap_or("?")),
            scope,
            ..Default::default()
        },
        view: TopView {
            headers: sort.iter().map(|k| k.header().to_string()).collect(),
            show_samples: args.show_nr_samples,
            ..Default::default()
        },
        iterations_left: args.iterations,
        screen,
        rows: args.rows,
        last: None,
    };
    let result = match session {
        Some(session) => run_stream(session, &opts, signals, consumer),
        None => run_kernel(&signals, &mut consumer)
            .map(|()| 0)
            .map_err(anyhow::Error::from),
    };
    if use_terminal {
        ratatui::restore();
    }
    let dropped_rounds = result?;
    if dropped_rounds > 0 {
        eprintln!("scry: the view fell behind and dropped {dropped_rounds} rounds of records");
    }
    Ok(())
}
