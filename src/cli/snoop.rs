//! What the streaming tools' commands share (execsnoop, opensnoop,
//! exitsnoop, killsnoop, sigsnoop, statsnoop, threadsnoop): [`run`], a
//! tool from its loaded programs to the end, the table or `--json` from
//! the tool's `SnoopFormat`; under it [`stream`], the loop that prints
//! events as the ring buffer hands them over (one flush per batch, not per
//! line) and once more at the end, so nothing that reached the ring is
//! lost; the clock columns; and at the end, the drop count and a note when
//! the user-space filters matched nothing.

use std::cell::RefCell;
use std::io::{self, Write};
use std::time::{Duration, Instant};

use super::target::PidArg;
use scry::capture::bpf_run::{self, RunOptions, Wake};
use scry::render::snoop::{Clock, SnoopFormat, json_line};
use scry::sys::bpf_events::EventStream;
use scry::sys::localtime::now_hms;

/// The flags every streaming tool takes.
#[derive(clap::Args, Debug)]
pub(crate) struct StreamFlags {
    /// Stop after DURATION seconds.
    #[arg(short = 'd', long = "duration", value_name = "DURATION", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) duration: Option<u64>,
    /// Say which kernel hooks the programs use.
    #[arg(short = 'v', long = "verbose")]
    pub(crate) verbose: bool,
    /// One JSON object per event instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `-x` and `-p` as most streaming tools take them.
#[derive(clap::Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only this process (ends when it exits)")))]
pub(crate) struct FailedPidFlags {
    /// Failed ones only.
    #[arg(short = 'x', long = "failed")]
    pub(crate) failed: bool,
    #[command(flatten)]
    pub(crate) target: PidArg,
}

/// How a streaming tool runs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stream<'a> {
    pub(crate) tool: &'a str,
    /// Stop after this many seconds.
    pub(crate) duration: Option<u64>,
    /// Stop when this process exits.
    pub(crate) pid: Option<u32>,
    /// The user-space filters given, as typed (for the note).
    pub(crate) filters: Vec<String>,
}

impl<'a> Stream<'a> {
    /// `tool` for `-d`'s duration, ending when `pid` exits (if given).
    pub(crate) fn new(tool: &'a str, flags: &StreamFlags, pid: Option<u32>) -> Stream<'a> {
        Stream {
            tool,
            duration: flags.duration,
            pid,
            filters: Vec::new(),
        }
    }
}

/// Runs a streaming tool whose programs are loaded: `-v`'s hook lines,
/// the header (not with `--json`), then each event `keep` passes, as a
/// line of `format`'s table or one JSON object, until [`stream`] ends.
pub(crate) fn run<F: SnoopFormat>(
    how: &Stream<'_>,
    flags: &StreamFlags,
    bpf: &EventStream<F::Event>,
    format: &F,
    keep: impl Fn(&F::Event) -> bool,
) -> anyhow::Result<()> {
    super::bpf_tool::print_hooks(how.tool, &bpf.hooks(), flags.verbose);
    let mut out = io::BufWriter::new(io::stdout().lock());
    if !flags.json {
        format.header(&mut out)?;
    }
    out.flush()?;
    let start = Instant::now();
    stream(
        how,
        bpf,
        &mut out,
        || format.arrived(),
        |out, e| {
            if !keep(e) {
                return Ok(false);
            }
            let clock = clock(start);
            if flags.json {
                json_line(out, format.fields(e), clock)?;
            } else {
                format.line(out, e, clock)?;
            }
            Ok(true)
        },
    )
}

/// Runs until Ctrl-C, the duration or the `pid`'s exit; `arrived` is
/// called once before the events of each drain of the ring, `print`
/// writes one event and says whether it passed the filters.
pub(crate) fn stream<E, W: Write>(
    how: &Stream<'_>,
    bpf: &EventStream<E>,
    out: &mut W,
    mut arrived: impl FnMut(),
    mut print: impl FnMut(&mut W, &E) -> io::Result<bool>,
) -> anyhow::Result<()> {
    let opts = RunOptions {
        interval: None,
        count: None,
        duration: how.duration.map(Duration::from_secs),
        pid: how.pid.map(|p| p as i32),
    };
    let pending: RefCell<Vec<E>> = RefCell::default();
    let ring = bpf.reader(|e| pending.borrow_mut().push(e))?;
    let (mut seen, mut kept) = (0u64, 0u64);
    bpf_run::run_events(&opts, &[ring.fd()], |wake| {
        if wake == Wake::Tick {
            return Ok(());
        }
        ring.consume()?;
        let events = pending.take();
        if !events.is_empty() {
            arrived();
        }
        for e in events {
            seen += 1;
            kept += u64::from(print(out, &e)?);
        }
        out.flush()
    })?;
    drop(ring);
    let dropped = bpf.dropped()?;
    if dropped > 0 {
        eprintln!(
            "{}: {dropped} events lost (the BPF ring buffer was full)",
            how.tool
        );
    }
    if kept == 0 && seen > 0 && !how.filters.is_empty() {
        eprintln!(
            "{}: none of the {seen} events seen matched {}",
            how.tool,
            how.filters.join(" ")
        );
    }
    Ok(())
}

/// The time columns: wall clock now, seconds since `start`.
pub(crate) fn clock(start: Instant) -> Clock {
    Clock {
        hms: now_hms(),
        secs: start.elapsed().as_secs_f64(),
    }
}
