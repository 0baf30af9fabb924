//! Runs an analysis feed (`offcpu`, `sched`, `profile`) live: its records
//! come through the same dispatcher as a file's (`RecordHandler`), from a
//! `LiveSink`. The feeds keep no timer. `capture_feed` is the one run of
//! the three: signals caught before the workload starts, the session, the
//! workload's pid handed to the feed, the rings drained to the end
//! (`capture::live::run_live`, which `top` runs too).

use anyhow::Context;
use scry::capture::live::{LiveOutcome, Untimed, run_live};
use scry::capture::{CaptureOptions, Session};
use scry::data::handler::RecordHandler;
use scry::sys::signal::RunStop;

/// Opens the capture `opts` with the stop signals caught, builds the feed
/// once the workload exists (`build` gets its pid, if a command was
/// given), and runs it live (`run_live`).
pub(crate) fn capture_feed<F: RecordHandler>(
    opts: &CaptureOptions,
    all_processes: bool,
    build: impl FnOnce(Option<i32>) -> anyhow::Result<F>,
) -> anyhow::Result<(F, LiveOutcome)> {
    let stop = RunStop::install().context("installing signal handlers")?;
    let session = Session::open(opts)?;
    let feed = build(session.workload_pid())?;
    let (Untimed(feed), outcome) = run_live(session, stop, Untimed(feed), all_processes)?;
    // Rounds the capture thread dropped never reached the feed, and no
    // loss record says where: the counts miss them, said here (as `top`).
    if outcome.dropped_rounds > 0 {
        eprintln!(
            "scry: the analysis fell behind and dropped {} rounds of records: the counts miss them",
            outcome.dropped_rounds
        );
    }
    Ok((feed, outcome))
}
