//! Reading the histograms of `src/bpf/hist.bpf.h` (a hash map of log2
//! slots and a task name per u32 key), shared by the histogram tools.
//!
//! Each key is taken with one lookup-and-delete (atomic for hash maps), so
//! an interval's counts are read exactly once: a count the program adds
//! after the take opens a fresh histogram for the next interval instead of
//! being erased by a separate clear. Kernels before 5.14 refuse
//! lookup-and-delete on hash maps; there each key is read and then deleted.

use std::io;

use libbpf_rs::skel::Skel;
use libbpf_rs::{MapCore, MapFlags, MapMut};

use super::bpf::io_error;
use super::bpf_engine::{Hook, Loaded, comm_at, u32_at, u64_at};

/// Slots per histogram: the header's MAX_SLOTS.
pub(crate) const MAX_SLOTS: usize = 36;
/// The bytes of a task name after the slots.
pub(crate) const COMM_LEN: usize = 16;

/// One histogram: its key (a tgid, tid or pid namespace; u32::MAX for the
/// single one; a program with 8-byte keys packs two values in it), the
/// name of the task that opened it, its log2 slots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeyedSlots {
    pub(crate) key: u64,
    pub(crate) comm: String,
    pub(crate) slots: Vec<u64>,
}

impl KeyedSlots {
    /// A map entry; `None` when its bytes are shorter than the layout.
    pub(crate) fn parse(key: &[u8], value: &[u8]) -> Option<KeyedSlots> {
        let slots = (0..MAX_SLOTS)
            .map(|i| u64_at(value, i * 8))
            .collect::<Option<Vec<u64>>>()?;
        Some(KeyedSlots {
            key: match key.len() {
                8 => u64_at(key, 0)?,
                _ => u64::from(u32_at(key, 0)?),
            },
            comm: comm_at(value, MAX_SLOTS * 8, COMM_LEN),
            slots,
        })
    }
}

/// One histogram with the total of its values (in its unit), from a
/// program that defines HIST_SUM: for bcc's `-e` average.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SummedSlots {
    pub(crate) slots: KeyedSlots,
    pub(crate) sum: u64,
}

impl SummedSlots {
    /// A map entry: `struct hist` with HIST_SUM; None when shorter.
    pub(crate) fn parse(key: &[u8], value: &[u8]) -> Option<SummedSlots> {
        Some(SummedSlots {
            slots: KeyedSlots::parse(key, value)?,
            sum: u64_at(value, MAX_SLOTS * 8 + COMM_LEN)?,
        })
    }
}

/// Takes every histogram out of `map` (they are deleted), by key.
pub(crate) fn drain<M: MapCore>(map: &M) -> io::Result<Vec<KeyedSlots>> {
    let mut out = drain_with(map, KeyedSlots::parse)?;
    out.sort_by_key(|h| h.key);
    Ok(out)
}

/// Takes every entry out of `map` (they are deleted), each parsed from its
/// key and value bytes by `parse` (an entry it refuses is left out): for
/// programs whose keys or values are not [`KeyedSlots`]' (tcprtt's
/// addresses). In the map's order.
pub(crate) fn drain_with<M: MapCore, T>(
    map: &M,
    parse: impl Fn(&[u8], &[u8]) -> Option<T>,
) -> io::Result<Vec<T>> {
    let keys: Vec<Vec<u8>> = map.keys().collect();
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let value = match map.lookup_and_delete(&key) {
            Ok(value) => value,
            Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => None,
            Err(_) => {
                let value = map
                    .lookup(&key, MapFlags::ANY)
                    .map_err(|e| io_error("reading the BPF histograms", e))?;
                match map.delete(&key) {
                    Ok(()) => {}
                    Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => {}
                    Err(e) => return Err(io_error("clearing the BPF histograms", e)),
                }
                value
            }
        };
        if let Some(h) = value.and_then(|v| parse(&key, &v)) {
            out.push(h);
        }
    }
    Ok(out)
}

/// A histogram tool's programs, loaded: its hooks, its histograms read
/// by [`drain`] from the map `hists` names, and detaching at the end.
pub(crate) struct HistBpf<S> {
    loaded: Loaded<S>,
    hists: for<'r> fn(&'r S) -> &'r MapMut<'static>,
}

impl<S> std::fmt::Debug for HistBpf<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistBpf")
            .field("loaded", &self.loaded)
            .finish()
    }
}

impl<S: Skel<'static>> HistBpf<S> {
    pub(crate) fn new(
        loaded: Loaded<S>,
        hists: for<'r> fn(&'r S) -> &'r MapMut<'static>,
    ) -> HistBpf<S> {
        HistBpf { loaded, hists }
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The histograms since the last read (they are deleted), by key.
    pub(crate) fn read(&self) -> io::Result<Vec<KeyedSlots>> {
        drain((self.hists)(&self.loaded.skel))
    }

    /// The entries since the last read (they are deleted), as `parse`
    /// makes them ([`drain_with`]).
    pub(crate) fn read_with<T>(
        &self,
        parse: impl Fn(&[u8], &[u8]) -> Option<T>,
    ) -> io::Result<Vec<T>> {
        drain_with((self.hists)(&self.loaded.skel), parse)
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_slots_and_name_and_refuses_short_values() {
        let mut value = vec![0u8; MAX_SLOTS * 8 + COMM_LEN];
        value[8..16].copy_from_slice(&7u64.to_ne_bytes());
        value[MAX_SLOTS * 8..MAX_SLOTS * 8 + 3].copy_from_slice(b"cat");
        let h = KeyedSlots::parse(&42u32.to_ne_bytes(), &value).expect("parses");
        assert_eq!((h.key, h.comm.as_str(), h.slots[1]), (42, "cat", 7));
        assert_eq!(h.slots.len(), MAX_SLOTS);
        assert_eq!(KeyedSlots::parse(&42u32.to_ne_bytes(), &value[..100]), None);
        assert_eq!(KeyedSlots::parse(&[1, 2], &value), None);
        let wide = KeyedSlots::parse(&(7u64 << 32 | 1).to_ne_bytes(), &value).expect("parses");
        assert_eq!(wide.key, 7 << 32 | 1);
    }
}
