//! Parsing live records for the commands that analyse as they capture
//! (`top`, `offcpu`, `sched`, `profile`): a `RecordSink` that walks each
//! ring's bytes (`data::raw`), puts the records in time order with the one
//! sorter (`data::order`: rings are per CPU and not ordered between each
//! other; a round is one drain of every ring), parses each with the
//! attribute it came from, and hands it to a `LiveConsumer`'s
//! `RecordHandler` through the one dispatcher (`data::handler::dispatch`):
//! the same typed records and the same calls the perf.data reader makes
//! (`PerfReader::feed`), so analysis code is shared between live and file
//! input. `run_threaded` drains on a thread of its own; `run_live` is the
//! whole live run of a consumer (`top`'s view, the feeds of `offcpu`,
//! `sched` and `profile`), a web viewer's too.

use std::io;
use std::time::Duration;

use super::session::RecordSink;
use linux_perf_event_reader::CommonData;

use crate::data::handler::{Lost, LostKind, RecordHandler};
use crate::data::order::RingOrder;
use crate::data::raw::{EventIds, RawRecords};
use crate::sys::signal::RunStop;

/// Receives parsed live records in time order, and the capture's ticks.
pub(crate) trait LiveConsumer {
    /// Where the records go.
    type Handler: RecordHandler;
    fn handler(&mut self) -> &mut Self::Handler;
    /// See `RecordSink::tick_interval`.
    fn tick_interval(&self) -> Option<Duration> {
        None
    }
    /// See `RecordSink::tick`: false stops the capture.
    fn tick(&mut self) -> io::Result<bool> {
        Ok(true)
    }
}

/// A `RecordHandler` as a consumer without ticks.
pub(crate) struct Untimed<H>(pub(crate) H);

impl<H: RecordHandler> LiveConsumer for Untimed<H> {
    type Handler = H;
    fn handler(&mut self) -> &mut H {
        &mut self.0
    }
}

/// The sink described in the module doc.
pub(crate) struct LiveSink<C> {
    ring: RingOrder,
    pub(crate) consumer: C,
}

impl<C: LiveConsumer> LiveSink<C> {
    /// `events`: each event's raw attr bytes (as opened) and its sample ids.
    pub(crate) fn new(events: &[(Vec<u8>, Vec<u64>)], consumer: C) -> io::Result<Self> {
        Ok(LiveSink {
            ring: RingOrder::new(EventIds::new(events)?),
            consumer,
        })
    }

    /// Hand out every record still held (the capture has ended).
    pub(crate) fn flush_all(&mut self) {
        self.ring.finish(self.consumer.handler());
    }

    /// A round of records was dropped before it reached here: the records
    /// held are handed out (they came before it), then the consumer hears
    /// of a loss on no CPU in particular, as of a ring's LOST record: what
    /// the missing records may have reached (an open start whose end was
    /// among them) is dropped, not paired across the gap.
    pub(crate) fn dropped(&mut self) {
        let handler = self.consumer.handler();
        self.ring.finish(handler);
        let lost = Lost {
            kind: LostKind::Records,
            count: 0,
        };
        handler.handle_lost(&lost, &CommonData::default());
    }
}

impl<C: LiveConsumer> RecordSink for LiveSink<C> {
    fn records(&mut self, _cpu: u32, bytes: &[u8]) -> io::Result<()> {
        self.ring.take(bytes, |_| false);
        Ok(())
    }

    fn round_done(&mut self) -> io::Result<()> {
        self.ring.finish_round(self.consumer.handler());
        Ok(())
    }

    fn tick_interval(&self) -> Option<Duration> {
        self.consumer.tick_interval()
    }

    fn tick(&mut self) -> io::Result<bool> {
        self.consumer.tick()
    }
}

/// What the draining thread sends the analysing one.
enum Round {
    /// A round's raw bytes.
    Bytes(Vec<u8>),
    /// One round or more dropped here (see `MAX_QUEUED_BYTES`).
    Dropped,
}

/// Copies each round's raw bytes to the analysing thread.
struct ChannelSink {
    tx: std::sync::mpsc::Sender<Round>,
    current: Vec<u8>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Bytes sent and not yet taken by the analysing thread.
    queued: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Rounds dropped because the analysing thread fell too far behind.
    dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The last round was dropped (and the analysing thread told).
    dropping: bool,
    per_cpu: std::collections::BTreeMap<u32, CpuBufferStats>,
}

/// What one CPU's ring delivered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuBufferStats {
    pub(crate) records: u64,
    pub(crate) bytes: u64,
    /// Records the kernel could not store (PERF_RECORD_LOST / LOST_SAMPLES).
    pub(crate) lost: u64,
}

fn scan_cpu(stats: &mut CpuBufferStats, bytes: &[u8]) {
    let mut records = RawRecords::new(bytes);
    while let Ok(Some(raw)) = records.next_record() {
        match raw.lost_count() {
            Some(count) => stats.lost += count,
            None => stats.records += 1,
        }
    }
    stats.bytes += bytes.len() as u64;
}

/// How far the analysing thread may fall behind before rounds are dropped
/// (and counted) rather than queued without bound.
const MAX_QUEUED_BYTES: u64 = 256 << 20;

impl RecordSink for ChannelSink {
    fn records(&mut self, cpu: u32, bytes: &[u8]) -> io::Result<()> {
        scan_cpu(self.per_cpu.entry(cpu).or_default(), bytes);
        self.current.extend_from_slice(bytes);
        Ok(())
    }

    fn round_done(&mut self) -> io::Result<()> {
        use std::sync::atomic::Ordering;
        let round = std::mem::take(&mut self.current);
        let len = round.len() as u64;
        if self.queued.load(Ordering::Relaxed) + len > MAX_QUEUED_BYTES {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            if !self.dropping {
                self.dropping = true;
                let _ = self.tx.send(Round::Dropped);
            }
            return Ok(());
        }
        self.dropping = false;
        self.queued.fetch_add(len, Ordering::Relaxed);
        // A closed receiver means the view is gone; `tick` stops the capture.
        let _ = self.tx.send(Round::Bytes(round));
        Ok(())
    }

    fn tick_interval(&self) -> Option<Duration> {
        Some(Duration::from_millis(100))
    }

    fn tick(&mut self) -> io::Result<bool> {
        Ok(!self.stop.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// What a threaded live capture ended with.
#[derive(Debug)]
pub(crate) struct LiveOutcome {
    pub(crate) stop: super::StopReason,
    /// Rounds of records dropped in user space because analysis fell behind
    /// by more than 256 MiB (the kernel's own losses arrive as LOST records).
    pub(crate) dropped_rounds: u64,
    /// Per CPU: records, bytes and kernel-side losses of its ring.
    pub(crate) per_cpu: std::collections::BTreeMap<u32, CpuBufferStats>,
}

/// Run `session` on a thread of its own that only drains the rings, while
/// this thread parses, resolves and draws. Slow analysis (symbolizing a big
/// binary for the first time) then delays the view, not the draining, so the
/// kernel does not lose records meanwhile. The consumer's `tick` returning
/// false stops the capture.
pub(crate) fn run_threaded<C: LiveConsumer>(
    mut session: super::Session,
    stop_run: RunStop,
    sink: &mut LiveSink<C>,
) -> Result<LiveOutcome, super::CaptureError> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    let (tx, rx) = std::sync::mpsc::channel::<Round>();
    let stop = Arc::new(AtomicBool::new(false));
    let queued = Arc::new(AtomicU64::new(0));
    let dropped = Arc::new(AtomicU64::new(0));
    let mut channel = ChannelSink {
        tx,
        current: Vec::new(),
        stop: Arc::clone(&stop),
        queued: Arc::clone(&queued),
        dropped: Arc::clone(&dropped),
        dropping: false,
        per_cpu: Default::default(),
    };
    let capture = std::thread::Builder::new()
        .name("scry-capture".into())
        .spawn(move || {
            let result = session.run(&mut channel, &stop_run);
            let per_cpu = std::mem::take(&mut channel.per_cpu);
            drop(channel);
            result.map(|stop| (stop, per_cpu))
        })
        .map_err(super::CaptureError::System)?;

    let tick = sink.tick_interval().unwrap_or(Duration::from_millis(200));
    let mut last_tick = std::time::Instant::now();
    let mut failure = None;
    loop {
        match rx.recv_timeout(tick) {
            Ok(Round::Bytes(round)) => {
                queued.fetch_sub(round.len() as u64, Ordering::Relaxed);
                sink.records(0, &round)
                    .map_err(super::CaptureError::Write)?;
                sink.round_done().map_err(super::CaptureError::Write)?;
            }
            Ok(Round::Dropped) => sink.dropped(),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if last_tick.elapsed() >= tick && !stop.load(Ordering::Relaxed) {
            last_tick = std::time::Instant::now();
            match sink.tick() {
                Ok(true) => {}
                Ok(false) => stop.store(true, Ordering::Relaxed),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    failure = Some(e);
                }
            }
        }
    }
    sink.flush_all();
    let (stop_reason, per_cpu) = capture.join().map_err(|_| {
        super::CaptureError::System(io::Error::other("the capture thread panicked"))
    })??;
    if let Some(e) = failure {
        return Err(super::CaptureError::Write(e));
    }
    Ok(LiveOutcome {
        stop: stop_reason,
        dropped_rounds: dropped.load(Ordering::Relaxed),
        per_cpu,
    })
}

/// Runs `consumer` live over `session`: the attributes and sample ids to a
/// `LiveSink`, the state in /proc first (every process with
/// `all_processes`), then the counters on and the rings drained
/// (`run_threaded`) until the target exits, a signal comes or the
/// consumer's `tick` says stop. Returns the consumer and the outcome.
pub(crate) fn run_live<C: LiveConsumer>(
    mut session: super::Session,
    stop: RunStop,
    consumer: C,
    all_processes: bool,
) -> Result<(C, LiveOutcome), super::CaptureError> {
    let context = |what: &str, e: io::Error| {
        super::CaptureError::System(io::Error::new(e.kind(), format!("{what}: {e}")))
    };
    let ids = session
        .ids()
        .map_err(|e| context("reading sample ids", e))?;
    let attrs: Vec<(Vec<u8>, Vec<u64>)> = session
        .attrs
        .iter()
        .map(crate::sys::perf_event::attr_bytes)
        .zip(ids)
        .collect();
    let mut sink =
        LiveSink::new(&attrs, consumer).map_err(|e| context("parsing the event attributes", e))?;
    let mut synthesized = Vec::new();
    session.synthesize(all_processes, &mut synthesized);
    sink.records(0, &synthesized)
        .and_then(|()| sink.round_done())
        .map_err(super::CaptureError::System)?;
    session.start()?;
    let outcome = run_threaded(session, stop, &mut sink)?;
    Ok((sink.consumer, outcome))
}

/// Runs `consumer`'s ticks alone, no session: its records come from
/// elsewhere (top's counts in the kernel, read at each tick). A tick at
/// each `tick_interval` (200 ms without one), until a stop signal or the
/// tick says stop.
pub(crate) fn run_ticks<C: LiveConsumer>(stop: &RunStop, consumer: &mut C) -> io::Result<()> {
    let every = consumer
        .tick_interval()
        .unwrap_or(Duration::from_millis(200));
    let timeout_ms = every.as_millis().clamp(1, i32::MAX as u128) as i32;
    loop {
        stop.wait(&mut [], timeout_ms)?;
        if stop.caught().is_some() || !consumer.tick()? {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::handler::Comm;
    use crate::sys::perf_event::{attr_bytes, new_attr};
    use perf_event_open_sys::bindings::{PERF_SAMPLE_TID, PERF_SAMPLE_TIME};

    /// What the consumer heard, in order.
    #[derive(Default)]
    struct Heard(Vec<String>);

    impl RecordHandler for Heard {
        fn handle_comm(&mut self, _: usize, c: &Comm<'_>, id: &CommonData) {
            self.0.push(format!("comm {} at {:?}", c.tid, id.timestamp));
        }
        fn handle_lost(&mut self, lost: &Lost, id: &CommonData) {
            self.0.push(format!("lost {} on {:?}", lost.count, id.cpu));
        }
    }

    /// A COMM record of `tid` at `time`, with the sample id fields of
    /// `TID | TIME` after it (sample_id_all).
    fn comm(tid: u32, time: u64) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&tid.to_ne_bytes());
        body.extend_from_slice(&tid.to_ne_bytes());
        body.extend_from_slice(b"worker\0\0");
        body.extend_from_slice(&tid.to_ne_bytes());
        body.extend_from_slice(&tid.to_ne_bytes());
        body.extend_from_slice(&time.to_ne_bytes());
        let mut out = 3u32.to_ne_bytes().to_vec();
        out.extend_from_slice(&0u16.to_ne_bytes());
        out.extend_from_slice(&((8 + body.len()) as u16).to_ne_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// A dropped round: the records held (not yet handed out: a round's
    /// records wait for the next one) go first, then a loss on no CPU in
    /// particular, so a pair is never made across the gap; and the records
    /// after it are handed out as usual.
    #[test]
    fn a_dropped_round_is_a_loss_after_the_records_before_it() {
        let mut attr = new_attr();
        attr.sample_type = u64::from(PERF_SAMPLE_TID | PERF_SAMPLE_TIME);
        attr.set_sample_id_all(1);
        let events = vec![(attr_bytes(&attr), vec![])];
        let mut sink = LiveSink::new(&events, Untimed(Heard::default())).unwrap();
        sink.records(0, &comm(7, 100)).unwrap();
        sink.round_done().unwrap();
        assert!(sink.consumer.0.0.is_empty(), "held for the next round");
        sink.dropped();
        sink.records(0, &comm(8, 300)).unwrap();
        sink.round_done().unwrap();
        sink.flush_all();
        assert_eq!(
            sink.consumer.0.0,
            [
                "comm 7 at Some(100)",
                "lost 0 on None",
                "comm 8 at Some(300)"
            ]
        );
    }
}
