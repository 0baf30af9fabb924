//! The live capture's consumer for the commands whose analysis is a feed
//! (`offcpu`, `sched`, `profile`): each record goes to the feed with its sample id, an
//! empty one when the record came without. The feeds keep no timer.

use linux_perf_event_reader::{CommonData, EventRecord};

use anyhow::Context;
use scry::analysis::offcpu_live::OffCpuFeed;
use scry::analysis::pairs_feed::PairsFeed;
use scry::analysis::sched_feed::SchedFeed;
use scry::capture::live::{LiveConsumer, LiveOutcome, LiveSink, run_threaded};
use scry::capture::{RecordSink, Session};
use scry::sys::perf_event::attr_bytes;
use scry::sys::signal::SignalPipe;

/// An analysis feed: takes each record with its sample id.
pub trait Feed {
    fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>, id: &CommonData);
}

impl Feed for OffCpuFeed {
    fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>, id: &CommonData) {
        OffCpuFeed::handle_record(self, attr_index, record, id);
    }
}

impl Feed for SchedFeed {
    fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>, id: &CommonData) {
        SchedFeed::handle_record(self, attr_index, record, id);
    }
}

impl Feed for PairsFeed {
    fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>, id: &CommonData) {
        PairsFeed::handle_record(self, attr_index, record, id);
    }
}

/// A [`Feed`] as the live capture's consumer.
pub struct FeedConsumer<F>(pub F);

impl<F: Feed> LiveConsumer for FeedConsumer<F> {
    fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>) {
        self.0
            .handle_record(attr_index, record, &CommonData::default());
    }
    fn handle_record_with_id(
        &mut self,
        attr_index: usize,
        record: &EventRecord<'_>,
        id: &CommonData,
    ) {
        self.0.handle_record(attr_index, record, id);
    }
}

/// Runs a feed live over `session`: the attributes and sample ids to a
/// `LiveSink`, the state in /proc first (every process with
/// `all_processes`), then the counters on and the rings drained until the
/// target exits or a signal comes. Returns the feed and the outcome.
pub fn run_feed<F: Feed>(
    mut session: Session,
    signals: SignalPipe,
    feed: F,
    all_processes: bool,
) -> anyhow::Result<(F, LiveOutcome)> {
    let ids = session.ids().context("reading sample ids")?;
    let attrs: Vec<(Vec<u8>, Vec<u64>)> = session.attrs.iter().map(attr_bytes).zip(ids).collect();
    let mut sink =
        LiveSink::new(&attrs, FeedConsumer(feed)).context("parsing the event attributes")?;
    let mut synthesized = Vec::new();
    session.synthesize(all_processes, &mut synthesized);
    RecordSink::records(&mut sink, 0, &synthesized)?;
    RecordSink::round_done(&mut sink)?;
    session.start()?;
    let outcome = run_threaded(session, signals, &mut sink)?;
    let FeedConsumer(feed) = sink.consumer;
    Ok((feed, outcome))
}
