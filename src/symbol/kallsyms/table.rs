//! The symbols behind a `Kallsyms`: owned (parsed from the kernel's text)
//! or in place (the cache file's bytes, mapped).
//!
//! A cached table is used where it lies: copying and checking its ~150k
//! records and 3 MB of names cost a small report most of its time (8 of
//! 13 ms of CPU, 3,000 page faults), while a report names a few hundred
//! kernel addresses. So a mapped table is checked as it is used: each
//! record found is decoded with its bounds checked (name inside the text
//! and UTF-8, module in the table, type byte 0 or 1), and one that does
//! not fit names nothing. The order is the file's: it is scry's own (0600,
//! replaced whole by a rename), written from a sorted table.

use std::ops::Range;

use crate::sys::mapped::MappedFile;

/// Bytes of one cached record: address (u64), name start and end (u32
/// each), module (u32, `u32::MAX` for the core kernel), data (u8).
pub(super) const RECORD_BYTES: usize = 21;

#[derive(Debug, Clone)]
pub(super) struct KSym {
    pub(super) addr: u64,
    /// Range of the name in the table's text (one string for all: the
    /// table has ~120k symbols, and a `String` each doubled its memory).
    pub(super) name: (u32, u32),
    /// Index into `Kallsyms::modules`, or `None` for the core kernel. Code
    /// the kernel lists as `[__builtin__ftrace]` and the like has its
    /// module here too, but is named as the core kernel's
    /// (`Kallsyms::dso_of`).
    pub(super) module: Option<u32>,
    /// A data or bss symbol (D, d, B, b), not code.
    pub(super) data: bool,
}

/// Where a cached table's parts lie in its bytes.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    /// The names' text.
    pub(super) names: Range<usize>,
    /// The first record.
    pub(super) records: usize,
    /// How many records (they fill the bytes to the end).
    pub(super) count: usize,
}

/// The bytes a cached table lies in.
#[derive(Debug)]
pub(super) enum Backing {
    File(MappedFile),
    Bytes(Vec<u8>),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::File(f) => f,
            Backing::Bytes(b) => b,
        }
    }
}

/// The sorted symbols, one per address; see the module doc.
#[derive(Debug)]
pub(super) enum SymTable {
    Owned { syms: Vec<KSym>, names: String },
    InPlace { backing: Backing, layout: Layout },
}

impl Default for SymTable {
    fn default() -> Self {
        SymTable::Owned {
            syms: Vec::new(),
            names: String::new(),
        }
    }
}

impl SymTable {
    pub(super) fn len(&self) -> usize {
        match self {
            SymTable::Owned { syms, .. } => syms.len(),
            SymTable::InPlace { layout, .. } => layout.count,
        }
    }

    fn record(&self, i: usize) -> Option<&[u8]> {
        let SymTable::InPlace { backing, layout } = self else {
            return None;
        };
        let at = layout.records.checked_add(i.checked_mul(RECORD_BYTES)?)?;
        backing.bytes().get(at..at.checked_add(RECORD_BYTES)?)
    }

    /// The address of symbol `i`.
    pub(super) fn addr(&self, i: usize) -> Option<u64> {
        match self {
            SymTable::Owned { syms, .. } => syms.get(i).map(|s| s.addr),
            SymTable::InPlace { .. } => Some(u64::from_le_bytes(
                self.record(i)?.get(..8)?.try_into().ok()?,
            )),
        }
    }

    /// Symbol `i`, `None` past the end or for a record that does not fit.
    pub(super) fn get(&self, i: usize) -> Option<KSym> {
        match self {
            SymTable::Owned { syms, .. } => syms.get(i).cloned(),
            SymTable::InPlace { .. } => {
                let r = self.record(i)?;
                let u32_at = |at: usize| -> Option<u32> {
                    Some(u32::from_le_bytes(r.get(at..at + 4)?.try_into().ok()?))
                };
                let module = u32_at(16)?;
                let data = *r.get(20)?;
                (data <= 1).then_some(KSym {
                    addr: self.addr(i)?,
                    name: (u32_at(8)?, u32_at(12)?),
                    module: (module != u32::MAX).then_some(module),
                    data: data == 1,
                })
            }
        }
    }

    /// The name of `sym`, `None` when its range is not text of the table.
    pub(super) fn name(&self, sym: &KSym) -> Option<&str> {
        let (start, end) = (sym.name.0 as usize, sym.name.1 as usize);
        match self {
            SymTable::Owned { names, .. } => names.get(start..end),
            SymTable::InPlace { backing, layout } => {
                let text = backing.bytes().get(layout.names.clone())?;
                std::str::from_utf8(text.get(start..end)?).ok()
            }
        }
    }

    /// How many symbols start at or before `addr` (the table is sorted).
    pub(super) fn partition_point(&self, addr: u64) -> usize {
        match self {
            SymTable::Owned { syms, .. } => syms.partition_point(|s| s.addr <= addr),
            SymTable::InPlace { .. } => {
                let (mut lo, mut hi) = (0, self.len());
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if self.addr(mid).is_some_and(|a| a <= addr) {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                lo
            }
        }
    }

    /// Every symbol, in order (those that do not fit left out).
    pub(super) fn iter(&self) -> impl Iterator<Item = KSym> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// The whole names' text (a table in place: its bytes, checked now).
    pub(super) fn names(&self) -> &str {
        match self {
            SymTable::Owned { names, .. } => names,
            SymTable::InPlace { backing, layout } => backing
                .bytes()
                .get(layout.names.clone())
                .and_then(|t| std::str::from_utf8(t).ok())
                .unwrap_or_default(),
        }
    }
}
