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
    Endianness, EventRecord, PerfEventAttr, RawData, RawEventRecord, RecordParseInfo, RecordType,
};

use super::session::RecordSink;

/// Receives parsed live records in time order.
pub trait LiveConsumer {
    fn handle_record(&mut self, attr_index: usize, record: &EventRecord<'_>);
    /// See `RecordSink::tick_interval`.
    fn tick_interval(&self) -> Option<Duration> {
        None
    }
    /// See `RecordSink::tick`: false stops the capture.
    fn tick(&mut self) -> io::Result<bool> {
        Ok(true)
    }
}

/// The sink described in the module doc.
pub struct LiveSink<C> {
    /// Sample id → (attr index, how to parse its records).
    by_id: HashMap<u64, (usize, RecordParseInfo)>,
    /// Used for records without a known id (synthesized with id 0).
    fallback: (usize, RecordParseInfo),
    round: Vec<u8>,
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
            malformed: 0,
            consumer,
        })
    }

    fn flush_round(&mut self) {
        // (time, offset, len, attr index, parse info) of every record.
        let mut order: Vec<(u64, usize, usize, usize, RecordParseInfo)> = Vec::new();
        let mut at = 0usize;
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
                order.push((raw.timestamp().unwrap_or(0), at, size, index, info));
            }
            at += size;
        }
        order.sort_by_key(|&(time, at, ..)| (time, at));
        for (_, at, size, index, info) in order {
            let bytes = &self.round;
            let kind = u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
            let misc = u16::from_ne_bytes([bytes[at + 4], bytes[at + 5]]);
            let raw = RawEventRecord::new(
                RecordType(kind),
                misc,
                RawData::Single(&bytes[at + 8..at + size]),
                info,
            );
            match raw.parse() {
                Ok(record) => self.consumer.handle_record(index, &record),
                Err(_) => self.malformed += 1,
            }
        }
        self.round.clear();
    }
}

impl<C: LiveConsumer> RecordSink for LiveSink<C> {
    fn records(&mut self, _cpu: u32, bytes: &[u8]) -> io::Result<()> {
        self.round.extend_from_slice(bytes);
        Ok(())
    }

    fn round_done(&mut self) -> io::Result<()> {
        self.flush_round();
        Ok(())
    }

    fn tick_interval(&self) -> Option<Duration> {
        self.consumer.tick_interval()
    }

    fn tick(&mut self) -> io::Result<bool> {
        self.consumer.tick()
    }
}
