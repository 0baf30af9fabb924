//! Where the functions of a stripped binary start and end, from its unwind
//! tables: every `.eh_frame` FDE covers one function (or one cold part of
//! one), and `strip` keeps `.eh_frame` because exceptions and unwinders need
//! it at run time.
//!
//! A stripped file's code then still falls into functions, each named by
//! its binary and start (`gzip+0x4290`): one report entry per function
//! instead of one `[unknown]` bucket per binary (perf keeps each address
//! apart, which splits a hot function into dozens of lines). Addresses
//! outside every FDE stay unnamed.
//!
//! Parsed with gimli from bytes (`parse`); the section is bounded before it
//! is read (`MAX_EH_FRAME`). Overlapping FDEs (not produced by linkers, but
//! the bytes are outside data) are kept sorted by start: the last one that
//! starts at or before an address and still covers it wins.

use gimli::{BaseAddresses, CieOrFde, EhFrame, LittleEndian, UnwindSection};

/// Larger `.eh_frame` sections are not read (the biggest libraries here
/// have a few MB).
pub(crate) const MAX_EH_FRAME: u64 = 64 << 20;

/// Function ranges (svmas) of one binary, sorted by start.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct FunctionRanges {
    ranges: Vec<(u64, u64)>,
}

impl FunctionRanges {
    /// The FDEs of `eh_frame` (little-endian, as on x86_64), whose first
    /// byte is at `eh_frame_svma`; `text_svma` for pointer encodings
    /// relative to `.text`. Malformed entries end the walk: what was read
    /// before them is kept.
    pub(crate) fn parse(eh_frame: &[u8], eh_frame_svma: u64, text_svma: u64) -> Self {
        let section = EhFrame::new(eh_frame, LittleEndian);
        let bases = BaseAddresses::default()
            .set_eh_frame(eh_frame_svma)
            .set_text(text_svma);
        let mut ranges = Vec::new();
        let mut entries = section.entries(&bases);
        while let Ok(Some(entry)) = entries.next() {
            let CieOrFde::Fde(partial) = entry else {
                continue;
            };
            let Ok(fde) = partial.parse(EhFrame::cie_from_offset) else {
                continue;
            };
            let start = fde.initial_address();
            if let Some(end) = start.checked_add(fde.len()).filter(|&e| e > start) {
                ranges.push((start, end));
            }
        }
        ranges.sort_unstable();
        ranges.dedup();
        FunctionRanges { ranges }
    }

    /// The start of the function holding `svma`.
    pub(crate) fn find(&self, svma: u64) -> Option<u64> {
        let idx = self.ranges.partition_point(|r| r.0 <= svma);
        let (start, end) = *self.ranges.get(idx.checked_sub(1)?)?;
        (svma < end).then_some(start)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ranges.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// The name a function without a symbol gets: its binary's base name and
/// its start (`gzip+0x4290`).
pub(crate) fn range_name(dso: &str, start: u64) -> String {
    format!("{}+{start:#x}", super::dso_short_name(dso))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test binary's own `.eh_frame`, through object.
    fn own_ranges() -> (FunctionRanges, u64) {
        use object::{Object, ObjectSection, ObjectSymbol};
        let exe = std::env::current_exe().unwrap();
        let bytes = std::fs::read(exe).unwrap();
        let obj = object::File::parse(&*bytes).unwrap();
        let eh = obj.section_by_name(".eh_frame").unwrap();
        let text = obj.section_by_name(".text").unwrap();
        let ranges = FunctionRanges::parse(eh.data().unwrap(), eh.address(), text.address());
        let main = obj
            .symbols()
            .find(|s| s.name() == Ok("main") && s.address() != 0)
            .map(|s| s.address())
            .unwrap();
        (ranges, main)
    }

    #[test]
    fn fdes_cover_functions_from_their_start() {
        let (ranges, main) = own_ranges();
        assert!(ranges.len() > 100, "{} FDEs", ranges.len());
        assert_eq!(ranges.find(main), Some(main));
        assert_eq!(ranges.find(main + 1), Some(main));
        assert_eq!(ranges.find(0), None);
        assert_eq!(range_name("/usr/bin/gzip", 0x4290), "gzip+0x4290");
    }

    #[test]
    fn garbage_is_no_ranges() {
        assert!(FunctionRanges::parse(&[0xff; 64], 0x1000, 0x2000).is_empty());
        assert!(FunctionRanges::parse(&[], 0, 0).is_empty());
    }
}
