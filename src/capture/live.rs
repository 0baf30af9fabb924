//! Parsing live records for the commands that analyse as they capture
//! (`top`, `trace`): a `RecordSink` that keeps one round of raw records from
//! every ring, orders them by time when the round is done (rings are per CPU
//! and not ordered between each other), parses each with the attribute it
//! came from, and hands `(attr index, EventRecord)` to a `LiveConsumer` —
//! the same typed records the perf.data reader yields, so analysis code is
//! shared between live and file input.

use std::collections::HashMap;
use std::io;
use std::time::Duration;

use linux_perf_event_reader::{
    CommonData, Endianness, EventRecord, PerfEventAttr, RawData, RawEventRecord, RecordParseInfo,
    RecordType,
};

use super::session::RecordSink;
use crate::data::handler::{RecordHandler, dispatch};

/// Receives parsed live records in time order, and the capture's ticks.
pub trait LiveConsumer {
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
pub struct Untimed<H>(pub H);

impl<H: RecordHandler> LiveConsumer for Untimed<H> {
    type Handler = H;
    fn handler(&mut self) -> &mut H {
        &mut self.0
    }
}

/// The sink described in the module doc.
pub struct LiveSink<C> {
    /// Sample id → (attr index, how to parse its records).
    by_id: HashMap<u64, (usize, RecordParseInfo)>,
    /// Used for records without a known id (synthesized with id 0).
    fallback: (usize, RecordParseInfo),
    round: Vec<u8>,
    /// Records taken in but not yet handed out, and where each one is:
    /// (time, offset in `held`, size, attr index, parse info).
    held: Vec<u8>,
    held_entries: Vec<(u64, usize, usize, usize, RecordParseInfo)>,
    /// The newest timestamp of the rounds taken in so far.
    prev_round_max: u64,
    /// Records that could not be parsed (a kernel/ABI mismatch, not expected).
    pub malformed: u64,
    pub consumer: C,
}

const ENDIAN: Endianness = if cfg!(target_endian = "little") {
    Endianness::LittleEndian
} else {
    Endianness::BigEndian
};

impl<C: LiveConsumer> LiveSink<C> {
    /// `events`: each event's raw attr bytes (as opened) and its sample ids.
    pub fn new(events: &[(Vec<u8>, Vec<u64>)], consumer: C) -> io::Result<Self> {
        let mut by_id = HashMap::new();
        let mut fallback = None;
        for (index, (attr_bytes, ids)) in events.iter().enumerate() {
            let (attr, _) = if cfg!(target_endian = "little") {
                PerfEventAttr::parse::<_, byteorder::LittleEndian>(attr_bytes.as_slice())?
            } else {
                PerfEventAttr::parse::<_, byteorder::BigEndian>(attr_bytes.as_slice())?
            };
            let info = RecordParseInfo::new(&attr, ENDIAN);
            if fallback.is_none() {
                fallback = Some((index, info));
            }
            for &id in ids {
                by_id.insert(id, (index, info));
            }
        }
        let fallback =
            fallback.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no events"))?;
        Ok(LiveSink {
            by_id,
            fallback,
            round: Vec::new(),
            held: Vec::new(),
            held_entries: Vec::new(),
            prev_round_max: 0,
            malformed: 0,
            consumer,
        })
    }

    /// Take in the round's bytes, then hand out, in time order, every held
    /// record not newer than the newest record of the *previous* round (or
    /// all of them with `all`). Rings are drained one after the other, so a
    /// record of one CPU may arrive a round later than a newer record of
    /// another CPU; anything older than the previous round's newest record
    /// has surely arrived (perf's FINISHED_ROUND rule).
    fn flush_round(&mut self, all: bool) {
        let base = self.held.len();
        let mut at = 0usize;
        let mut round_max = 0u64;
        let bytes = &self.round;
        while at + 8 <= bytes.len() {
            let size = u16::from_ne_bytes([bytes[at + 6], bytes[at + 7]]) as usize;
            if size < 8 || at + size > bytes.len() {
                self.malformed += 1;
                break;
            }
            let kind = u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
            let misc = u16::from_ne_bytes([bytes[at + 4], bytes[at + 5]]);
            let record_type = RecordType(kind);
            if record_type.is_builtin_type() {
                let body = RawData::Single(&bytes[at + 8..at + size]);
                let (index, info) = self.fallback;
                let raw = RawEventRecord::new(record_type, misc, body, info);
                let (index, info) = raw
                    .id()
                    .and_then(|id| self.by_id.get(&id).copied())
                    .unwrap_or((index, info));
                let raw = RawEventRecord::new(record_type, misc, body, info);
                let time = raw.timestamp().unwrap_or(0);
                round_max = round_max.max(time);
                self.held_entries.push((time, base + at, size, index, info));
            }
            at += size;
        }
        self.held
            .extend_from_slice(&self.round[..at.min(self.round.len())]);
        self.round.clear();
        self.held_entries.sort_by_key(|&(time, at, ..)| (time, at));
        let limit = self.prev_round_max;
        let split = if all {
            self.held_entries.len()
        } else {
            self.held_entries
                .partition_point(|&(time, ..)| time <= limit)
        };
        let ready: Vec<_> = self.held_entries.drain(..split).collect();
        for (_, at, size, index, info) in ready {
            let bytes = &self.held;
            let kind = u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
            let misc = u16::from_ne_bytes([bytes[at + 4], bytes[at + 5]]);
            let raw = RawEventRecord::new(
                RecordType(kind),
                misc,
                RawData::Single(&bytes[at + 8..at + size]),
                info,
            );
            match raw.parse() {
                Ok(record) => {
                    let id = match record {
                        EventRecord::Sample(_) => CommonData::default(),
                        _ => raw.common_data().unwrap_or_default(),
                    };
                    dispatch(self.consumer.handler(), index, &record, &id);
                }
                Err(_) => self.malformed += 1,
            }
        }
        // Keep only the bytes of the records still held.
        let mut kept = Vec::with_capacity(self.held_entries.iter().map(|e| e.2).sum());
        for entry in &mut self.held_entries {
            let start = kept.len();
            kept.extend_from_slice(&self.held[entry.1..entry.1 + entry.2]);
            entry.1 = start;
        }
        self.held = kept;
        self.prev_round_max = self.prev_round_max.max(round_max);
    }

    /// Hand out every record still held (the capture has ended).
    pub fn flush_all(&mut self) {
        self.flush_round(true);
    }
}

impl<C: LiveConsumer> RecordSink for LiveSink<C> {
    fn records(&mut self, _cpu: u32, bytes: &[u8]) -> io::Result<()> {
        self.round.extend_from_slice(bytes);
        Ok(())
    }

    fn round_done(&mut self) -> io::Result<()> {
        self.flush_round(false);
        Ok(())
    }

    fn tick_interval(&self) -> Option<Duration> {
        self.consumer.tick_interval()
    }

    fn tick(&mut self) -> io::Result<bool> {
        self.consumer.tick()
    }
}

/// Copies each round's raw bytes to the analysing thread.
struct ChannelSink {
    tx: std::sync::mpsc::Sender<Vec<u8>>,
    current: Vec<u8>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Bytes sent and not yet taken by the analysing thread.
    queued: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Rounds dropped because the analysing thread fell too far behind.
    dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
    per_cpu: std::collections::BTreeMap<u32, CpuBufferStats>,
}

/// What one CPU's ring delivered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuBufferStats {
    pub records: u64,
    pub bytes: u64,
    /// Records the kernel could not store (PERF_RECORD_LOST / LOST_SAMPLES).
    pub lost: u64,
}

fn scan_cpu(stats: &mut CpuBufferStats, bytes: &[u8]) {
    use crate::sys::perf_event::{PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES};
    let mut at = 0usize;
    while at + 8 <= bytes.len() {
        let kind = u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let size = u16::from_ne_bytes([bytes[at + 6], bytes[at + 7]]) as usize;
        if size < 8 || at + size > bytes.len() {
            break;
        }
        let u64_at = |off: usize| {
            bytes
                .get(at + off..at + off + 8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_ne_bytes)
        };
        match kind {
            PERF_RECORD_LOST => stats.lost += u64_at(16),
            PERF_RECORD_LOST_SAMPLES => stats.lost += u64_at(8),
            _ => stats.records += 1,
        }
        at += size;
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
            return Ok(());
        }
        self.queued.fetch_add(len, Ordering::Relaxed);
        // A closed receiver means the view is gone; `tick` stops the capture.
        let _ = self.tx.send(round);
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
pub struct LiveOutcome {
    pub stop: super::StopReason,
    /// Rounds of records dropped in user space because analysis fell behind
    /// by more than 256 MiB (the kernel's own losses arrive as LOST records).
    pub dropped_rounds: u64,
    /// Per CPU: records, bytes and kernel-side losses of its ring.
    pub per_cpu: std::collections::BTreeMap<u32, CpuBufferStats>,
}

/// Run `session` on a thread of its own that only drains the rings, while
/// this thread parses, resolves and draws. Slow analysis (symbolizing a big
/// binary for the first time) then delays the view, not the draining, so the
/// kernel does not lose records meanwhile. The consumer's `tick` returning
/// false stops the capture.
pub fn run_threaded<C: LiveConsumer>(
    mut session: super::Session,
    signals: crate::sys::signal::SignalPipe,
    sink: &mut LiveSink<C>,
) -> Result<LiveOutcome, super::CaptureError> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let stop = Arc::new(AtomicBool::new(false));
    let queued = Arc::new(AtomicU64::new(0));
    let dropped = Arc::new(AtomicU64::new(0));
    let mut channel = ChannelSink {
        tx,
        current: Vec::new(),
        stop: Arc::clone(&stop),
        queued: Arc::clone(&queued),
        dropped: Arc::clone(&dropped),
        per_cpu: Default::default(),
    };
    let capture = std::thread::Builder::new()
        .name("scry-capture".into())
        .spawn(move || {
            let result = session.run(&mut channel, &signals);
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
            Ok(round) => {
                queued.fetch_sub(round.len() as u64, Ordering::Relaxed);
                sink.records(0, &round)
                    .map_err(super::CaptureError::Write)?;
                sink.round_done().map_err(super::CaptureError::Write)?;
            }
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
