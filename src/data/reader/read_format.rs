//! Samples that carry counter values (`PERF_SAMPLE_READ`: `perf record -s`,
//! event groups sampled on a leader, `{cycles,instructions}:S`), made
//! readable by the crate.
//!
//! linux-perf-event-reader 0.10 lays out the read values wrong: it takes
//! the group layout (`nr`, then a value per member) for a single counter
//! and the other way round, and drops `PERF_FORMAT_LOST` (Linux 6.0, which
//! perf sets when the kernel has it). Every such sample then fails to parse
//! ("unexpected end of file"), and hotspot's `perf.data.PerfFormatLost` read
//! as nothing. scry uses none of the values, so the fix is to cut them
//! out: the block is measured with the kernel's layout and the raw
//! `read_format` bits, and the rest of the sample is parsed as if the event
//! had no `PERF_SAMPLE_READ`.

use linux_perf_data::linux_perf_event_reader::{
    Endianness, PerfEventAttr, RecordParseInfo, SampleFormat,
};

use super::layout::Endian;
use crate::sys::perf_event::{
    PERF_FORMAT_GROUP, PERF_FORMAT_ID, PERF_FORMAT_LOST, PERF_FORMAT_TOTAL_TIME_ENABLED,
    PERF_FORMAT_TOTAL_TIME_RUNNING,
};

/// How to cut the read values out of one event's samples.
#[derive(Clone, Copy, Debug)]
pub(super) struct ReadFix {
    /// Bytes of the sample before the read values.
    before: usize,
    read_format: u64,
    /// The event's parse info without `PERF_SAMPLE_READ`.
    pub(super) parse_info: RecordParseInfo,
}

impl ReadFix {
    /// For an event whose samples have read values; `raw_read_format` is
    /// the attr's own field when known (the crate's drops unknown bits).
    pub(super) fn new(
        attr: &PerfEventAttr,
        raw_read_format: Option<u64>,
        endian: Endianness,
    ) -> Option<Self> {
        let st = attr.sample_format;
        if !st.contains(SampleFormat::READ) {
            return None;
        }
        let before = fixed_words(st) * 8;
        let mut without = *attr;
        without.sample_format.remove(SampleFormat::READ);
        Some(ReadFix {
            before,
            read_format: raw_read_format.unwrap_or(attr.read_format.bits()),
            parse_info: RecordParseInfo::new(&without, endian),
        })
    }

    /// Writes `body` without its read values into `out`; `None` if they
    /// run past the record.
    pub(super) fn strip(&self, body: &[u8], endian: Endian, out: &mut Vec<u8>) -> Option<()> {
        let rf = self.read_format;
        let rest = body.get(self.before..)?;
        let has = |bit: u64| usize::from(rf & bit != 0);
        let times = has(PERF_FORMAT_TOTAL_TIME_ENABLED) + has(PERF_FORMAT_TOTAL_TIME_RUNNING);
        // Per counter: its value, then its id and lost count if asked.
        let per_counter = 1 + has(PERF_FORMAT_ID) + has(PERF_FORMAT_LOST);
        let words = if rf & PERF_FORMAT_GROUP != 0 {
            let nr = usize::try_from(endian.u64(rest, 0)?).ok()?;
            nr.checked_mul(per_counter)?.checked_add(1 + times)?
        } else {
            times + per_counter
        };
        let len = words.checked_mul(8)?;
        let after = rest.get(len..)?;
        out.clear();
        out.extend_from_slice(&body[..self.before]);
        out.extend_from_slice(after);
        Some(())
    }
}

/// The one-word fields a sample record holds before its read values (and,
/// without them, before its callchain): `perf_event_open(2)`'s
/// PERF_RECORD_SAMPLE, which lays them out in this order.
pub(super) fn fixed_words(format: SampleFormat) -> usize {
    [
        SampleFormat::IDENTIFIER,
        SampleFormat::IP,
        SampleFormat::TID,
        SampleFormat::TIME,
        SampleFormat::ADDR,
        SampleFormat::ID,
        SampleFormat::STREAM_ID,
        SampleFormat::CPU,
        SampleFormat::PERIOD,
    ]
    .iter()
    .filter(|&&f| format.contains(f))
    .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(sample_type: u64, read_format: u64) -> PerfEventAttr {
        let mut raw = [0u8; 128];
        raw[4..8].copy_from_slice(&128u32.to_le_bytes());
        raw[24..32].copy_from_slice(&sample_type.to_le_bytes());
        raw[32..40].copy_from_slice(&read_format.to_le_bytes());
        PerfEventAttr::parse::<_, byteorder::LittleEndian>(&raw[..])
            .unwrap()
            .0
    }

    #[test]
    fn group_read_values_with_lost_are_cut_out() {
        // IP | TID | READ | CALLCHAIN; GROUP | ID | LOST, two counters.
        let st = 1 | 2 | (1 << 4) | (1 << 5);
        let rf = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_LOST;
        let a = attr(st, rf);
        let fix = ReadFix::new(&a, Some(rf), Endianness::LittleEndian).unwrap();
        let mut body = Vec::new();
        for w in [
            0x1000u64,
            0x0000_0007_0000_0007,
            2,
            10,
            100,
            0,
            20,
            101,
            0,
            1,
            0xabc,
        ] {
            body.extend(w.to_le_bytes());
        }
        let mut out = Vec::new();
        fix.strip(&body, Endian::Little, &mut out).unwrap();
        let words: Vec<u64> = out
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(words, [0x1000, 0x0000_0007_0000_0007, 1, 0xabc]);
        // A count that runs past the record.
        body[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(fix.strip(&body, Endian::Little, &mut out).is_none());
        // One counter: value, enabled, running.
        let rf = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        let fix = ReadFix::new(&attr(st, rf), None, Endianness::LittleEndian).unwrap();
        let mut one = vec![0u8; 16];
        one.extend([5u8; 24]);
        one.extend(0u64.to_le_bytes());
        fix.strip(&one, Endian::Little, &mut out).unwrap();
        assert_eq!(out.len(), 24);
        assert!(ReadFix::new(&attr(1, rf), None, Endianness::LittleEndian).is_none());
    }
}
