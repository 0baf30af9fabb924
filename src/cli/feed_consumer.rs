//! Runs an analysis feed (`offcpu`, `sched`, `profile`) live: its records
//! come through the same dispatcher as a file's (`RecordHandler`), from a
//! `LiveSink`. The feeds keep no timer. `capture_feed` is the one run of
//! the three: signals caught before the workload starts, the session, the
//! workload's pid handed to the feed, the rings drained to the end.

use anyhow::Context;
use scry::capture::live::{LiveOutcome, LiveSink, Untimed, run_threaded};
use scry::capture::{CaptureOptions, RecordSink, Session};
use scry::data::handler::RecordHandler;
use scry::sys::perf_event::attr_bytes;
use scry::sys::signal::{STOP_SIGNALS, SignalPipe};

/// Opens the capture `opts` with the stop signals caught, builds the feed
/// once the workload exists (`build` gets its pid, if a command was
/// given), and runs it live (`run_feed`).
pub(crate) fn capture_feed<F: RecordHandler>(
    opts: &CaptureOptions,
    all_processes: bool,
    build: impl FnOnce(Option<i32>) -> anyhow::Result<F>,
) -> anyhow::Result<(F, LiveOutcome)> {
    let signals = SignalPipe::install(&STOP_SIGNALS).context("installing signal handlers")?;
    let session = Session::open(opts)?;
    let feed = build(session.workload_pid())?;
    run_feed(session, signals, feed, all_processes)
}

/// Runs a feed live over `session`: the attributes and sample ids to a
/// `LiveSink`, the state in /proc first (every process with
/// `all_processes`), then the counters on and the rings drained until the
/// target exits or a signal comes. Returns the feed and the outcome.
fn run_feed<F: RecordHandler>(
    mut session: Session,
    signals: SignalPipe,
    feed: F,
    all_processes: bool,
) -> anyhow::Result<(F, LiveOutcome)> {
    let ids = session.ids().context("reading sample ids")?;
    let attrs: Vec<(Vec<u8>, Vec<u64>)> = session.attrs.iter().map(attr_bytes).zip(ids).collect();
    let mut sink = LiveSink::new(&attrs, Untimed(feed)).context("parsing the event attributes")?;
    let mut synthesized = Vec::new();
    session.synthesize(all_processes, &mut synthesized);
    RecordSink::records(&mut sink, 0, &synthesized)?;
    RecordSink::round_done(&mut sink)?;
    session.start()?;
    let outcome = run_threaded(session, signals, &mut sink)?;
    let Untimed(feed) = sink.consumer;
    Ok((feed, outcome))
}
