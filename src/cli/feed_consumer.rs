//! The live capture's consumer for the commands whose analysis is a feed
//! (`offcpu`, `sched`, `profile`): each record goes to the feed with its sample id, an
//! empty one when the record came without. The feeds keep no timer.

use linux_perf_event_reader::{CommonData, EventRecord};

use scry::analysis::offcpu_live::OffCpuFeed;
use scry::analysis::pairs_feed::PairsFeed;
use scry::analysis::sched_feed::SchedFeed;
use scry::capture::live::LiveConsumer;

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
