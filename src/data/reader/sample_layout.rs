//! A sample of a known event read straight from its record's bytes: the
//! direct path's parse of nearly every record of a big file.
//!
//! linux-perf-event-reader reads each field through a cursor that may
//! straddle two slices, returns an `io::Result` at each step, and its record
//! is moved through three wrappers on its way out; with `Regs::get` after
//! it, a third of the unwinding thread's time on the bench's shallow file.
//! Here the event's fields are taken from its attribute once, and a sample
//! is read with bounded slice reads into the `SampleRecord` the crate would
//! make, with its callchain and user registers in place (`InPlace`).
//!
//! The decision: this path agrees with the crate or declines, never
//! differs. It takes only events whose samples hold fields it reads (not
//! read values, a branch stack, interrupt registers, aux data or bits the
//! crate does not know) in the host's byte order, reads them in the crate's
//! order and sizes (the crate's leniency included: bytes past the last
//! field are ignored), and declines a record whose sizes run past its end
//! or overflow: that record goes through the crate, whose error (or
//! reading) is the one given.

use byteorder::NativeEndian;
use linux_perf_data::linux_perf_event_reader::{
    CpuMode, Endianness, RawData, RawDataU64, RecordParseInfo, Regs, SampleFormat, SampleRecord,
};

use crate::data::handler::{ChainWords, InPlace, RegWords};

/// The fields this path reads, in the kernel's (and the crate's) order.
const KNOWN: SampleFormat = SampleFormat::IDENTIFIER
    .union(SampleFormat::IP)
    .union(SampleFormat::TID)
    .union(SampleFormat::TIME)
    .union(SampleFormat::ADDR)
    .union(SampleFormat::ID)
    .union(SampleFormat::STREAM_ID)
    .union(SampleFormat::CPU)
    .union(SampleFormat::PERIOD)
    .union(SampleFormat::CALLCHAIN)
    .union(SampleFormat::RAW)
    .union(SampleFormat::REGS_USER)
    .union(SampleFormat::STACK_USER)
    .union(SampleFormat::WEIGHT)
    .union(SampleFormat::DATA_SRC)
    .union(SampleFormat::TRANSACTION)
    .union(SampleFormat::PHYS_ADDR)
    .union(SampleFormat::DATA_PAGE_SIZE)
    .union(SampleFormat::CODE_PAGE_SIZE);

/// How one event's samples are laid out; see the module doc.
#[derive(Clone, Copy, Debug)]
pub(super) struct SampleLayout {
    format: SampleFormat,
    regs_mask: u64,
    /// Bytes of the user registers (a word per bit of `regs_mask`).
    regs_len: usize,
}

impl SampleLayout {
    /// The layout of the samples of the event `info` describes; `None`
    /// when this path does not read them (the crate does).
    pub(super) fn new(info: &RecordParseInfo) -> Option<Self> {
        let native = if cfg!(target_endian = "little") {
            Endianness::LittleEndian
        } else {
            Endianness::BigEndian
        };
        if info.endian != native || !KNOWN.contains(info.sample_format) {
            return None;
        }
        Some(SampleLayout {
            format: info.sample_format,
            regs_mask: info.sample_regs_user,
            regs_len: 8 * usize::from(info.user_regs_count),
        })
    }

    /// Sample record `body` (without its header) with `misc`, as the crate
    /// would parse it, and its callchain and registers in place, given to
    /// `then`; `None` (and `then` not called) when its sizes do not add up.
    /// The record is lent, not returned: it is a few hundred bytes, and
    /// returning it through an `Option` copied it twice (a tenth of the
    /// cost of reading it).
    #[inline]
    pub(super) fn read<'a, T>(
        &self,
        body: &'a [u8],
        misc: u16,
        then: impl FnOnce(&SampleRecord<'a>, InPlace<'a>) -> T,
    ) -> Option<T> {
        let f = self.format;
        let has = |field| f.contains(field);
        let mut c = Cursor(body);
        let identifier = c.word_if(has(SampleFormat::IDENTIFIER))?;
        let ip = c.word_if(has(SampleFormat::IP))?;
        let (pid, tid) = match has(SampleFormat::TID) {
            true => {
                let (pid, tid) = c.halves()?;
                (Some(pid as i32), Some(tid as i32))
            }
            false => (None, None),
        };
        let timestamp = c.word_if(has(SampleFormat::TIME))?;
        let addr = c.word_if(has(SampleFormat::ADDR))?;
        let id = c.word_if(has(SampleFormat::ID))?;
        let stream_id = c.word_if(has(SampleFormat::STREAM_ID))?;
        let cpu = match has(SampleFormat::CPU) {
            true => Some(c.halves()?.0),
            false => None,
        };
        let period = c.word_if(has(SampleFormat::PERIOD))?;
        let mut place = InPlace::default();
        let callchain = match has(SampleFormat::CALLCHAIN) {
            true => {
                let nr = usize::try_from(c.word()?).ok()?;
                let words = c.take(nr.checked_mul(8)?)?;
                place.chain = ChainWords::new(words);
                Some(RawDataU64::from_raw_data::<NativeEndian>(RawData::Single(
                    words,
                )))
            }
            false => None,
        };
        let raw = match has(SampleFormat::RAW) {
            true => {
                let size = c.take(4)?.try_into().ok().map(u32::from_ne_bytes)?;
                Some(RawData::Single(c.take(usize::try_from(size).ok()?)?))
            }
            false => None,
        };
        let user_regs = match has(SampleFormat::REGS_USER) && c.word()? != 0 {
            true => {
                let words = c.take(self.regs_len)?;
                place.user_regs = RegWords::new(self.regs_mask, words);
                let raw = RawDataU64::from_raw_data::<NativeEndian>(RawData::Single(words));
                Some(Regs::new(self.regs_mask, raw))
            }
            false => None,
        };
        let user_stack = match has(SampleFormat::STACK_USER) {
            true => {
                let size = c.word()?;
                let stack = c.take(usize::try_from(size).ok()?)?;
                let dyn_size = if size != 0 { c.word()? } else { 0 };
                Some((RawData::Single(stack), dyn_size))
            }
            false => None,
        };
        for skipped in [
            SampleFormat::WEIGHT,
            SampleFormat::DATA_SRC,
            SampleFormat::TRANSACTION,
        ] {
            c.word_if(has(skipped))?;
        }
        let phys_addr = c.word_if(has(SampleFormat::PHYS_ADDR))?;
        let data_page_size = c.word_if(has(SampleFormat::DATA_PAGE_SIZE))?;
        let code_page_size = c.word_if(has(SampleFormat::CODE_PAGE_SIZE))?;
        let sample = SampleRecord {
            id: identifier.or(id),
            addr,
            stream_id,
            raw,
            ip,
            timestamp,
            pid,
            tid,
            cpu,
            period,
            user_regs,
            user_stack,
            callchain,
            phys_addr,
            data_page_size,
            code_page_size,
            intr_regs: None,
            cpu_mode: CpuMode::from_misc(misc),
        };
        Some(then(&sample, place))
    }
}

/// The unread rest of a record.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    #[inline]
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    #[inline]
    fn word(&mut self) -> Option<u64> {
        self.take(8)?.try_into().ok().map(u64::from_ne_bytes)
    }

    /// The next word if the record has the field (`Some(None)` if not);
    /// `None` past the end.
    #[inline]
    fn word_if(&mut self, on: bool) -> Option<Option<u64>> {
        match on {
            true => self.word().map(Some),
            false => Some(None),
        }
    }

    /// The next word as its two 32-bit halves, in record order.
    #[inline]
    fn halves(&mut self) -> Option<(u32, u32)> {
        let (a, b) = self.take(8)?.split_at(4);
        Some((
            u32::from_ne_bytes(a.try_into().ok()?),
            u32::from_ne_bytes(b.try_into().ok()?),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linux_perf_data::linux_perf_event_reader::{PerfEventAttr, RawEventRecord, RecordType};

    /// An attribute with `sample_type` and user registers `regs`.
    fn info(sample_type: u64, regs: u64) -> RecordParseInfo {
        let mut raw = [0u8; 128];
        raw[4..8].copy_from_slice(&128u32.to_le_bytes());
        raw[24..32].copy_from_slice(&sample_type.to_le_bytes());
        raw[40..48].copy_from_slice(&(1u64 << 18).to_le_bytes()); // sample_id_all
        raw[80..88].copy_from_slice(&regs.to_le_bytes()); // sample_regs_user
        raw[88..92].copy_from_slice(&64u32.to_le_bytes()); // sample_stack_user
        let attr = PerfEventAttr::parse::<_, byteorder::LittleEndian>(&raw[..])
            .unwrap()
            .0;
        RecordParseInfo::new(&attr, Endianness::LittleEndian)
    }

    /// What `layout` reads of `body`, kept.
    fn parse<'a>(
        layout: &SampleLayout,
        body: &'a [u8],
        misc: u16,
    ) -> Option<(SampleRecord<'a>, InPlace<'a>)> {
        layout.read(body, misc, |sample, place| (sample.clone(), place))
    }

    fn words(ws: &[u64]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    /// The crate's parse of `body`, for comparison.
    fn crates(body: &[u8], misc: u16, info: RecordParseInfo) -> Option<SampleRecord<'_>> {
        let raw = RawEventRecord::new(RecordType::SAMPLE, misc, RawData::Single(body), info);
        match raw.parse() {
            Ok(linux_perf_data::linux_perf_event_reader::EventRecord::Sample(s)) => Some(s),
            _ => None,
        }
    }

    /// scry's `-g`: IDENTIFIER IP TID TIME CPU PERIOD CALLCHAIN REGS_USER
    /// STACK_USER, %bp %sp %ip.
    const G: u64 = (1 << 16) | 1 | 2 | 4 | (1 << 7) | (1 << 8) | (1 << 5) | (1 << 12) | (1 << 13);

    fn g_sample(stack: &[u8], dyn_size: u64) -> Vec<u8> {
        let mut b = words(&[7, 0x40_1000, (42 << 32) | 41, 1_000, 1, 10_000]);
        b.extend(words(&[3, u64::MAX - 127, 0x40_1000, 0x40_2000]));
        b.extend(words(&[2, 0x7ff0_0100, 0x7ff0_0000, 0x40_1000]));
        b.extend(words(&[stack.len() as u64]));
        b.extend(stack);
        if !stack.is_empty() {
            b.extend(words(&[dyn_size]));
        }
        b
    }

    #[test]
    fn a_g_sample_reads_as_the_crate_reads_it() {
        let info = info(G, 0x1c0);
        let layout = SampleLayout::new(&info).unwrap();
        let body = g_sample(&[9u8; 32], 16);
        let (sample, place) = parse(&layout, &body, 2).unwrap();
        assert_eq!(Some(&sample), crates(&body, 2, info).as_ref());
        assert_eq!(sample.pid, Some(41));
        assert_eq!(sample.tid, Some(42));
        assert_eq!(sample.cpu, Some(1));
        let chain: Vec<u64> = place.chain.unwrap().iter().collect();
        assert_eq!(chain, [u64::MAX - 127, 0x40_1000, 0x40_2000]);
        let regs = place.user_regs.unwrap();
        let user = sample.user_regs.as_ref().unwrap();
        for reg in 0..64 {
            assert_eq!(regs.get(reg), user.get(reg), "register {reg}");
        }
        assert_eq!(regs.get(8), Some(0x40_1000));
        // Bytes past the last field are ignored, as the crate ignores them.
        let mut longer = body.clone();
        longer.extend([0u8; 8]);
        let (sample, _) = parse(&layout, &longer, 2).unwrap();
        assert_eq!(Some(sample), crates(&longer, 2, info));
        // An empty stack copy has no dynamic size.
        let empty = g_sample(&[], 0);
        assert_eq!(
            parse(&layout, &empty, 2).map(|s| s.0),
            crates(&empty, 2, info)
        );
    }

    #[test]
    fn a_sample_cut_short_anywhere_is_declined_as_the_crate_fails_it() {
        let info = info(G, 0x1c0);
        let layout = SampleLayout::new(&info).unwrap();
        let body = g_sample(&[9u8; 32], 16);
        for len in 0..body.len() {
            let cut = &body[..len];
            assert!(parse(&layout, cut, 2).is_none(), "length {len}");
            assert!(crates(cut, 2, info).is_none(), "length {len}");
        }
        // A callchain length whose bytes overflow: declined (the crate's
        // reading of it is the one that counts).
        let mut huge = body.clone();
        huge[48..56].copy_from_slice(&(1u64 << 61).to_ne_bytes());
        assert!(parse(&layout, &huge, 2).is_none());
    }

    #[test]
    fn other_fields_read_as_the_crate_reads_them() {
        // IP TID ADDR ID STREAM_ID RAW WEIGHT DATA_SRC PHYS_ADDR
        // CODE_PAGE_SIZE, and REGS_USER with an ABI of 0.
        let st = 1 | 2 | 8 | 64 | 512 | 1024 | (1 << 12) | (1 << 14) | (1 << 15) | (1 << 19);
        let st = st | (1 << 23);
        let info = info(st, 0x3);
        let layout = SampleLayout::new(&info).unwrap();
        let mut body = words(&[0x1000, 5 | (6 << 32), 0xdead, 11, 12]);
        body.extend(12u32.to_ne_bytes());
        body.extend([1u8; 12]);
        body.extend(words(&[0, 100, 200, 0xbeef, 4096]));
        let (sample, place) = parse(&layout, &body, 1).unwrap();
        assert_eq!(Some(&sample), crates(&body, 1, info).as_ref());
        assert_eq!(sample.code_page_size, Some(4096));
        assert!(place.user_regs.is_none() && place.chain.is_none());
    }

    #[test]
    fn fields_it_does_not_read_are_left_to_the_crate() {
        // READ, BRANCH_STACK, REGS_INTR, AUX, WEIGHT_STRUCT.
        for bit in [4, 11, 18, 20, 24] {
            assert!(SampleLayout::new(&info(1 | 2 | (1 << bit), 0)).is_none());
        }
        let mut big = info(G, 0x1c0);
        big.endian = match big.endian {
            Endianness::LittleEndian => Endianness::BigEndian,
            Endianness::BigEndian => Endianness::LittleEndian,
        };
        assert!(SampleLayout::new(&big).is_none());
    }
}
