//! What a compiled program needs besides its code, shared by every
//! probe's compilation and read back while it runs: the maps, printf and
//! time formats, join delimiters, probe names, tuple types
//! ([`Registry`]), and the kinds of the records its event ring carries
//! ([`event_kind`]).
//!
//! Formats and delimiters are interned, so that compiling the same block
//! for several functions (a kprobe.multi link) yields the same code.

use super::types::{MapInfo, Ty};

/// What an event record starts with (a u64), after which come its fields.
pub(crate) mod event_kind {
    pub(crate) const PRINTF: u64 = 1;
    pub(crate) const EXIT: u64 = 2;
    pub(crate) const PRINT: u64 = 3;
    pub(crate) const CLEAR: u64 = 4;
    pub(crate) const ZERO: u64 = 5;
    pub(crate) const TIME: u64 = 6;
    pub(crate) const JOIN: u64 = 7;
}

/// A `printf` call: its format and the types of its arguments, in the
/// order they follow the event header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PrintfSpec {
    pub(crate) format: String,
    pub(crate) args: Vec<Ty>,
    /// `cat()`: the formatted text is a file name whose contents are
    /// printed.
    pub(crate) cat: bool,
}

/// What the program needs besides its code: maps, printf formats, probe
/// names (for `probe`), time formats.
#[derive(Clone, Debug, Default)]
pub(crate) struct Registry {
    pub(crate) maps: Vec<MapInfo>,
    pub(crate) printfs: Vec<PrintfSpec>,
    pub(crate) probe_names: Vec<String>,
    pub(crate) time_formats: Vec<String>,
    /// The delimiter of each `join()`.
    pub(crate) join_delims: Vec<String>,
    /// The element types of each tuple type (`Ty::Tuple`'s id).
    pub(crate) tuples: Vec<Vec<Ty>>,
    /// Whether some probe uses `kstack`/`ustack` (a stack map is needed).
    pub(crate) uses_stacks: bool,
}

impl Registry {
    pub(crate) fn map_index(&self, name: &str) -> Option<usize> {
        self.maps.iter().position(|m| m.name == name)
    }
}

/// The index of `item` in `list`, added if new: equal printf formats,
/// time formats and join delimiters share one index, so the programs of
/// a kprobe.multi link's functions come out the same.
pub(crate) fn intern<T: PartialEq>(list: &mut Vec<T>, item: T) -> usize {
    match list.iter().position(|x| *x == item) {
        Some(i) => i,
        None => {
            list.push(item);
            list.len() - 1
        }
    }
}
