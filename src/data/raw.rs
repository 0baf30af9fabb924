//! The raw record: an 8-byte header's type and misc, and the body it frames,
//! borrowed from a ring buffer's drained bytes or a file's buffer; and
//! [`RawRecords`], the one walk over a stretch of ring bytes
//! (`next_record()?`). Nothing is parsed here: parsing is
//! linux-perf-event-reader's, with the parse info of the record's event
//! ([`EventIds`]).
//!
//! Ring bytes are in the host's byte order (files have their own framing,
//! `reader::framing`, which also recovers damaged data).

use std::collections::HashMap;
use std::io;

use linux_perf_event_reader::{
    Endianness, PerfEventAttr, RawData, RawEventRecord, RecordParseInfo, RecordType,
};

use crate::sys::perf_event::{PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES};

// perf's own record types (the tool's, numbered from 64: never from the
// kernel, so not in `sys::perf_event`), defined here once for the readers
// and the writers.
pub(crate) const PERF_RECORD_HEADER_ATTR: u32 = 64;
pub(crate) const PERF_RECORD_HEADER_TRACING_DATA: u32 = 66;
pub(crate) const PERF_RECORD_FINISHED_ROUND: u32 = 68;
pub(crate) const PERF_RECORD_AUXTRACE: u32 = 71;
pub(crate) const PERF_RECORD_HEADER_FEATURE: u32 = 80;
pub(crate) const PERF_RECORD_COMPRESSED: u32 = 81;
pub(crate) const PERF_RECORD_COMPRESSED2: u32 = 83;

/// See the module doc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawRecord<'a> {
    pub(crate) record_type: u32,
    pub(crate) misc: u16,
    /// The record without its header.
    pub(crate) body: &'a [u8],
}

impl<'a> RawRecord<'a> {
    /// The host-order u64 at `at` in the body.
    pub(crate) fn u64_at(&self, at: usize) -> Option<u64> {
        Some(u64::from_ne_bytes(
            self.body.get(at..at + 8)?.try_into().ok()?,
        ))
    }

    /// What a loss report (PERF_RECORD_LOST: id, count; LOST_SAMPLES:
    /// count) says was lost; `None` for other records. Read the same way
    /// wherever losses are counted.
    pub(crate) fn lost_count(&self) -> Option<u64> {
        match self.record_type {
            PERF_RECORD_LOST => Some(self.u64_at(8).unwrap_or(0)),
            PERF_RECORD_LOST_SAMPLES => Some(self.u64_at(0).unwrap_or(0)),
            _ => None,
        }
    }

    /// The record for the parser, with its event's parse info.
    pub(crate) fn event(&self, info: RecordParseInfo) -> RawEventRecord<'a> {
        RawEventRecord::new(
            RecordType(self.record_type),
            self.misc,
            RawData::Single(self.body),
            info,
        )
    }
}

/// A header that cannot frame a record: its size is below 8 or runs past
/// the bytes; nothing after it can be framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("record type {record_type} at byte {offset} has size {size}, but {left} bytes are left")]
pub(crate) struct Unframed {
    pub(crate) offset: usize,
    pub(crate) record_type: u32,
    pub(crate) size: usize,
    pub(crate) left: usize,
}

/// The records of a stretch of ring bytes, in ring order.
#[derive(Clone, Debug)]
pub(crate) struct RawRecords<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> RawRecords<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        RawRecords { bytes, at: 0 }
    }

    /// Where the next record starts.
    pub(crate) fn offset(&self) -> usize {
        self.at
    }

    /// The next record; `None` at the end; an error (and `None` from then
    /// on) when a header cannot frame a record, or only part of a header is
    /// left.
    pub(crate) fn next_record(&mut self) -> Result<Option<RawRecord<'a>>, Unframed> {
        let rest = self.bytes.get(self.at..).unwrap_or(&[]);
        if rest.is_empty() {
            return Ok(None);
        }
        let header = |i: usize| rest.get(i).copied().unwrap_or(0);
        let record_type = u32::from_ne_bytes([header(0), header(1), header(2), header(3)]);
        let misc = u16::from_ne_bytes([header(4), header(5)]);
        let size = usize::from(u16::from_ne_bytes([header(6), header(7)]));
        if rest.len() < 8 || size < 8 || size > rest.len() {
            let offset = self.at;
            self.at = self.bytes.len();
            return Err(Unframed {
                offset,
                record_type,
                size,
                left: rest.len(),
            });
        }
        self.at += size;
        Ok(Some(RawRecord {
            record_type,
            misc,
            body: &rest[8..size],
        }))
    }
}

/// Which event a ring's record belongs to (by its sample id), and how to
/// parse it. A record without a known id belongs to the first event (the
/// synthesized ones have id 0), as the crates do for files.
#[derive(Clone, Debug)]
pub(crate) struct EventIds {
    infos: Vec<RecordParseInfo>,
    by_id: HashMap<u64, usize>,
}

impl EventIds {
    /// `events`: each event's raw attr bytes (host order, as opened) and
    /// its sample ids.
    pub(crate) fn new(events: &[(Vec<u8>, Vec<u64>)]) -> io::Result<Self> {
        let mut ids = EventIds {
            infos: Vec::new(),
            by_id: HashMap::new(),
        };
        for (attr, event_ids) in events {
            let index = ids.add(attr)?;
            for &id in event_ids {
                ids.by_id.insert(id, index);
            }
        }
        if ids.infos.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no events"));
        }
        Ok(ids)
    }

    /// Adds an event with attribute `attr` (host order); returns its index.
    pub(crate) fn add(&mut self, attr: &[u8]) -> io::Result<usize> {
        let (attr, _) = PerfEventAttr::parse::<_, byteorder::NativeEndian>(attr)?;
        self.infos
            .push(RecordParseInfo::new(&attr, Endianness::NATIVE));
        Ok(self.infos.len() - 1)
    }

    /// Records with sample id `id` belong to event `index`.
    pub(crate) fn insert(&mut self, id: u64, index: usize) {
        self.by_id.insert(id, index);
    }

    /// The parse info of event `index`.
    pub(crate) fn info(&self, index: usize) -> Option<RecordParseInfo> {
        self.infos.get(index).copied()
    }

    /// The event of a kernel record and the record for the parser; `None`
    /// for perf's own record types.
    pub(crate) fn event_of<'a>(&self, raw: &RawRecord<'a>) -> Option<(usize, RawEventRecord<'a>)> {
        if !RecordType(raw.record_type).is_builtin_type() {
            return None;
        }
        let first = *self.infos.first()?;
        let index = raw
            .event(first)
            .id()
            .and_then(|id| self.by_id.get(&id).copied())
            .unwrap_or(0);
        Some((index, raw.event(self.info(index)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u32, body: &[u8]) -> Vec<u8> {
        let mut out = kind.to_ne_bytes().to_vec();
        out.extend_from_slice(&0u16.to_ne_bytes());
        out.extend_from_slice(&((8 + body.len()) as u16).to_ne_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn records_are_framed_and_a_bad_header_ends_the_walk() {
        let lost = [1u64.to_ne_bytes(), 7u64.to_ne_bytes()].concat();
        let mut bytes = record(PERF_RECORD_LOST, &lost);
        bytes.extend(record(PERF_RECORD_LOST_SAMPLES, &5u64.to_ne_bytes()));
        bytes.extend(record(9, &[0; 8]));
        bytes.extend_from_slice(&[1, 0, 0, 0, 0, 0, 4, 0]);
        let mut records = RawRecords::new(&bytes);
        let counts: Vec<Option<u64>> = std::iter::from_fn(|| records.next_record().ok()?)
            .map(|r| r.lost_count())
            .collect();
        assert_eq!(counts, [Some(7), Some(5), None]);
        let mut records = RawRecords::new(&bytes);
        for _ in 0..3 {
            assert!(records.next_record().unwrap().is_some());
        }
        let bad = records.next_record().unwrap_err();
        assert_eq!((bad.offset, bad.size, bad.left), (56, 4, 8));
        assert_eq!(records.next_record(), Ok(None));
    }
}
