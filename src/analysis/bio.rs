//! The block I/O tools' records (biosnoop's events, the disks they name),
//! as `render` reads them, and what is summed in user space: bitesize's
//! histograms per process name (the kernel keys them by tgid; libbpf-tools
//! keys them by name, so processes of one name are summed here), and
//! biotop's table (requests, bytes and latency per process, direction and
//! disk in an interval), summed from biosnoop's stream rather than in a
//! kernel map: one program serves both, at the cost of an event per I/O.

use std::collections::BTreeMap;

use crate::analysis::hist::{Histogram, KeyedHistogram, Scale};
use crate::sys::bpf_hists::KeyedSlots;

pub(crate) use crate::sys::block::Partition;
pub(crate) use crate::sys::bpf_bio::BioEvent;

/// bitesize: the histograms of `read` summed per process name, in name
/// order; only `comm` when given.
pub(crate) fn sizes_by_comm(read: &[KeyedSlots], comm: Option<&str>) -> Vec<KeyedHistogram> {
    let mut by_comm: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for h in read.iter().filter(|h| comm.is_none_or(|c| h.comm == c)) {
        let sum = by_comm.entry(&h.comm).or_default();
        sum.resize(sum.len().max(h.slots.len()), 0);
        for (s, n) in sum.iter_mut().zip(&h.slots) {
            *s += n;
        }
    }
    by_comm
        .into_iter()
        .enumerate()
        .map(|(i, (comm, slots))| KeyedHistogram {
            key: i as u64,
            label: format!("Process Name = {comm}"),
            hist: Histogram::from_slots(Scale::Log2, "Kbytes", &slots),
        })
        .collect()
}

/// One biotop row's key: the process that started the I/O, its
/// direction, its disk.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TopKey {
    pub(crate) pid: u32,
    pub(crate) comm: String,
    pub(crate) write: bool,
    pub(crate) dev: u32,
}

/// One biotop row's sums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TopSums {
    pub(crate) ios: u64,
    pub(crate) bytes: u64,
    pub(crate) latency_ns: u64,
}

/// biotop's sort orders (`-s`): libbpf-tools' all (I/Os + bytes +
/// microseconds), io, bytes, time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum TopSort {
    #[default]
    All,
    Io,
    Bytes,
    Time,
}

/// An interval's I/O per [`TopKey`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BioTop {
    rows: BTreeMap<TopKey, TopSums>,
}

impl BioTop {
    pub(crate) fn add(&mut self, e: &BioEvent) {
        let key = TopKey {
            pid: e.pid,
            comm: e.comm.clone(),
            write: e.flags & 0xff == 1,
            dev: e.dev,
        };
        let sums = self.rows.entry(key).or_default();
        sums.ios += 1;
        sums.bytes += u64::from(e.bytes);
        sums.latency_ns += e.latency_ns;
    }

    /// The rows, largest first by `sort` (ties in key order), at most
    /// `limit`; the sums start again from zero.
    pub(crate) fn take(&mut self, sort: TopSort, limit: usize) -> Vec<(TopKey, TopSums)> {
        let mut rows: Vec<(TopKey, TopSums)> = std::mem::take(&mut self.rows).into_iter().collect();
        let weight = |s: &TopSums| match sort {
            TopSort::All => s.ios + s.bytes + s.latency_ns / 1000,
            TopSort::Io => s.ios,
            TopSort::Bytes => s.bytes,
            TopSort::Time => s.latency_ns / 1000,
        };
        rows.sort_by(|a, b| weight(&b.1).cmp(&weight(&a.1)).then(a.0.cmp(&b.0)));
        rows.truncate(limit);
        rows
    }
}

/// biosnoop -P's column (bcc's): where a completed request starts
/// against where its disk's last completed request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// The disk's first request seen.
    Unknown,
    /// It starts where the last one ended.
    Sequential,
    /// Anywhere else.
    Random,
}

impl Pattern {
    /// bcc's letter: `?`, `S`, `R`.
    pub(crate) fn letter(self) -> char {
        match self {
            Pattern::Unknown => '?',
            Pattern::Sequential => 'S',
            Pattern::Random => 'R',
        }
    }

    /// The JSON name: null, "sequential", "random".
    pub(crate) fn name(self) -> Option<&'static str> {
        match self {
            Pattern::Unknown => None,
            Pattern::Sequential => Some("sequential"),
            Pattern::Random => Some("random"),
        }
    }
}

/// The sector after each disk's last completed request, in completion
/// order as bcc keeps it (there in a kernel map at the completion; here
/// from the stream, which the ring keeps in that order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Patterns {
    next_sector: BTreeMap<u32, u64>,
}

impl Patterns {
    /// The pattern of `e`, the next completed request.
    pub(crate) fn next(&mut self, e: &BioEvent) -> Pattern {
        let end = e.sector.saturating_add(u64::from(e.bytes) / 512);
        match self.next_sector.insert(e.dev, end) {
            None => Pattern::Unknown,
            Some(next) if next == e.sector => Pattern::Sequential,
            Some(_) => Pattern::Random,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_follow_each_disk_as_bcc() {
        let e = |dev, sector, bytes| BioEvent {
            dev,
            sector,
            bytes,
            ..BioEvent::default()
        };
        let mut p = Patterns::default();
        let seen: Vec<char> = [
            e(1, 0, 4096),
            e(1, 8, 8192),
            e(2, 100, 512),
            e(1, 24, 512),
            e(1, 0, 512),
            e(2, 101, 512),
        ]
        .iter()
        .map(|ev| p.next(ev).letter())
        .collect();
        assert_eq!(seen, ['?', 'S', '?', 'S', 'R', 'S']);
    }

    #[test]
    fn bitesize_sums_processes_of_one_name() {
        let h = |key, comm: &str, slot: usize| {
            let mut slots = vec![0; 36];
            slots[slot] = 2;
            KeyedSlots {
                key,
                comm: comm.into(),
                slots,
            }
        };
        let read = [h(1, "dd", 6), h(2, "dd", 6), h(3, "cp", 2)];
        let all = sizes_by_comm(&read, None);
        let labels: Vec<&str> = all.iter().map(|h| h.label.as_str()).collect();
        assert_eq!(labels, ["Process Name = cp", "Process Name = dd"]);
        assert_eq!((all[1].hist.total(), all[1].hist.buckets[6]), (4, 4));
        assert_eq!(sizes_by_comm(&read, Some("cp")).len(), 1);
    }

    #[test]
    fn biotop_sums_per_process_direction_and_disk() {
        let e = |pid, flags, bytes| BioEvent {
            pid,
            comm: "w".into(),
            flags,
            bytes,
            latency_ns: 2_000_000,
            dev: 7 << 20,
            ..BioEvent::default()
        };
        let mut top = BioTop::default();
        for ev in [e(1, 1, 4096), e(1, 1, 4096), e(1, 0, 512), e(2, 1, 65536)] {
            top.add(&ev);
        }
        let rows = top.take(TopSort::Io, 2);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].0.pid, rows[0].0.write, rows[0].1.ios),
            (1, true, 2)
        );
        assert_eq!(rows[0].1.bytes, 8192);
        let rows = top.take(TopSort::All, 10);
        assert!(rows.is_empty(), "taken: the sums start again");
    }
}
