//! Pages of the kernel's ftrace ring buffer, as tracefs hands them out in
//! `per_cpu/cpuN/trace_pipe_raw`, split into records: each a timestamp and
//! the record bytes (starting at `common_type`) that `FormatCache` renders.
//!
//! Layout (`events/header_page` and `events/header_event` describe it):
//!
//! ```text
//! page:  u64 timestamp | local_t commit (8 bytes; low 27+ bits: data bytes,
//!        bit 31: events were lost before this page) | data...
//! event: u32 { type_len: 5 bits (low), time_delta: 27 bits } then
//!        type_len 1..=28: type_len * 4 bytes of record
//!        type_len 0:      u32 length (record bytes + 4), then the record
//!        29 padding (time_delta 0: rest of the page), u32 length follows
//!        30 time extend: u32 high bits of the delta (delta = hi << 27 | lo)
//!        31 absolute time stamp: u32 high bits likewise
//! ```
//!
//! Decision: only little-endian 64-bit layouts are read (what tracefs of
//! this host produces); the page is given as bytes, so the parser is
//! fuzzable and never panics.

use super::format::Endian;

/// One record of a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRecord<'a> {
    /// Ring-buffer clock (the instance's `trace_clock`), nanoseconds.
    pub(crate) timestamp: u64,
    /// The record, starting at `common_type` (may carry up to 3 padding bytes).
    pub data: &'a [u8],
}

/// What a page says besides its records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Page<'a> {
    /// The page's event records in the order written.
    pub records: Vec<PageRecord<'a>>,
    /// The kernel dropped events before this page (overwritten or full).
    pub missed_events: bool,
}

const COMMIT_MISSED_EVENTS: u64 = 1 << 31;
const COMMIT_MISSED_STORED: u64 = 1 << 30;

/// Splits one page into records. A malformed page yields the records read
/// before the damage.
pub fn parse_page(page: &[u8], endian: Endian) -> Page<'_> {
    let mut out = Page::default();
    let (Some(mut time), Some(commit)) =
        (endian.read_uint(page, 0, 8), endian.read_uint(page, 8, 8))
    else {
        return out;
    };
    out.missed_events = commit & COMMIT_MISSED_EVENTS != 0;
    let size = (commit & !(COMMIT_MISSED_EVENTS | COMMIT_MISSED_STORED)) as usize;
    let data = page
        .get(16..16 + size.min(page.len().saturating_sub(16)))
        .unwrap_or(&[]);
    let mut pos = 0usize;
    while let Some(header) = endian.read_uint(data, pos, 4) {
        let type_len = header & 0x1f;
        let delta = header >> 5;
        let array0 = endian.read_uint(data, pos + 4, 4);
        match type_len {
            29 => {
                // Padding: a null event ends the page; else skip its length.
                let Some(len) = array0.filter(|_| delta != 0) else {
                    break;
                };
                pos = pos.saturating_add(len as usize + 4);
            }
            30 => {
                let Some(hi) = array0 else { break };
                time = time.wrapping_add(hi << 27 | delta);
                pos += 8;
            }
            31 => {
                let Some(hi) = array0 else { break };
                time = hi << 27 | delta;
                pos += 8;
            }
            0 => {
                let Some(len) = array0.filter(|&l| l >= 4) else {
                    break;
                };
                time = time.wrapping_add(delta);
                let start = pos + 8;
                let Some(record) = data.get(start..start + len as usize - 4) else {
                    break;
                };
                out.records.push(PageRecord {
                    timestamp: time,
                    data: record,
                });
                pos = start + len as usize - 4;
            }
            n => {
                time = time.wrapping_add(delta);
                let start = pos + 4;
                let Some(record) = data.get(start..start + n as usize * 4) else {
                    break;
                };
                out.records.push(PageRecord {
                    timestamp: time,
                    data: record,
                });
                pos = start + n as usize * 4;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event_header(type_len: u32, delta: u32) -> [u8; 4] {
        (type_len | delta << 5).to_le_bytes()
    }

    #[test]
    fn small_big_extended_and_padding() {
        let mut data = Vec::new();
        data.extend_from_slice(&event_header(2, 10)); // 8 bytes of record at t=1010
        data.extend_from_slice(&[1, 0, 0, 0, 7, 0, 0, 0]);
        data.extend_from_slice(&event_header(30, 5)); // time extend: +(1 << 27 | 5)
        data.extend_from_slice(&1u32.to_le_bytes());
        data.extend_from_slice(&event_header(0, 1)); // big record: 12 bytes
        data.extend_from_slice(&16u32.to_le_bytes());
        data.extend_from_slice(&[2u8; 12]);
        data.extend_from_slice(&event_header(29, 0)); // end of page
        let mut page = 1000u64.to_le_bytes().to_vec();
        page.extend_from_slice(&((data.len() as u64) | COMMIT_MISSED_EVENTS).to_le_bytes());
        page.extend_from_slice(&data);
        page.resize(4096, 0);
        let p = parse_page(&page, Endian::Little);
        assert!(p.missed_events);
        assert_eq!(p.records.len(), 2);
        assert_eq!(p.records[0].timestamp, 1010);
        assert_eq!(p.records[0].data, &[1, 0, 0, 0, 7, 0, 0, 0]);
        assert_eq!(p.records[1].timestamp, 1010 + (1 << 27 | 5) + 1);
        assert_eq!(p.records[1].data, &[2u8; 12]);
    }

    #[test]
    fn damaged_pages_do_not_panic() {
        let mut page = 0u64.to_le_bytes().to_vec();
        page.extend_from_slice(&u64::MAX.to_le_bytes());
        page.extend_from_slice(&event_header(0, 1));
        page.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse_page(&page, Endian::Little).records.is_empty());
        for len in 0..page.len() {
            let _ = parse_page(&page[..len], Endian::Little);
        }
        let mut page = vec![0u8; 16];
        page[8] = 8;
        page.extend_from_slice(&event_header(28, 0));
        page.extend_from_slice(&[0; 4]);
        assert!(parse_page(&page, Endian::Little).records.is_empty());
    }
}
