//! The TCP tools' events (and bindsnoop's and solisten's) as the kernel side decodes them, and what is
//! summed in user space: tcpconnect's `-c` count of connections per
//! (source, destination, destination port), the source port kept only
//! when asked for (`-s`), as libbpf-tools counts them (it sums in a map;
//! here the same events are summed as they stream); tcprtt's histograms
//! per address with their averages.

use std::collections::BTreeMap;
use std::net::IpAddr;

pub(crate) use crate::sys::bpf_sockcall::SockcallEvent;
pub(crate) use crate::sys::bpf_tcp::TcpEvent;
pub(crate) use crate::sys::bpf_tcprtt::{AddrSide, RttHist};
pub(crate) use crate::sys::bpf_tcptop::FlowBytes;

use crate::analysis::hist::{Histogram, Scale};

/// tcprtt's histogram of one address (None: all sockets), with the
/// average of its RTTs (libbpf-tools' `-e`: the total over the count,
/// rounded down).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RttHistogram {
    pub(crate) addr: Option<IpAddr>,
    pub(crate) average: u64,
    pub(crate) hist: Histogram,
}

/// The histograms tcprtt read, in `unit`; one whose slots are all empty
/// has average 0.
pub(crate) fn rtt_histograms(read: &[RttHist], unit: &str) -> Vec<RttHistogram> {
    read.iter()
        .map(|h| {
            let hist = Histogram::from_slots(Scale::Log2, unit, &h.slots);
            RttHistogram {
                addr: h.addr,
                average: h.sum.checked_div(hist.total()).unwrap_or(0),
                hist,
            }
        })
        .collect()
}

/// tcptop's sort orders (`-s`): sent + received, sent, received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum FlowSort {
    #[default]
    All,
    Sent,
    Received,
}

/// tcptop's rows: the largest first by `sort` (ties by process and
/// ports, so the order is stable), at most `rows`.
pub(crate) fn top_flows(mut flows: Vec<FlowBytes>, sort: FlowSort, rows: usize) -> Vec<FlowBytes> {
    let weight = |f: &FlowBytes| match sort {
        FlowSort::All => f.sent + f.received,
        FlowSort::Sent => f.sent,
        FlowSort::Received => f.received,
    };
    flows.sort_by(|a, b| {
        weight(b)
            .cmp(&weight(a))
            .then((a.pid, a.lport, a.dport).cmp(&(b.pid, b.lport, b.dport)))
    });
    flows.truncate(rows);
    flows
}

/// One row of the connect counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ConnectKey {
    pub(crate) saddr: IpAddr,
    pub(crate) daddr: IpAddr,
    pub(crate) sport: Option<u16>,
    pub(crate) dport: u16,
}

/// Connections counted per [`ConnectKey`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConnectCounts {
    by_key: BTreeMap<ConnectKey, u64>,
    /// Whether the source port is part of the key.
    pub(crate) with_sport: bool,
}

impl ConnectCounts {
    pub(crate) fn new(with_sport: bool) -> ConnectCounts {
        ConnectCounts {
            by_key: BTreeMap::new(),
            with_sport,
        }
    }

    pub(crate) fn add(&mut self, e: &TcpEvent) {
        let key = ConnectKey {
            saddr: e.saddr,
            daddr: e.daddr,
            sport: self.with_sport.then_some(e.sport),
            dport: e.dport,
        };
        *self.by_key.entry(key).or_default() += 1;
    }

    /// The rows, addresses in order (IPv4 before IPv6, as libbpf-tools).
    pub(crate) fn rows(&self) -> impl Iterator<Item = (&ConnectKey, u64)> {
        self.by_key.iter().map(|(k, &n)| (k, n))
    }

    #[cfg(test)]
    pub(crate) fn total(&self) -> u64 {
        self.by_key.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_destination_and_optionally_source_port() {
        let e = |sport| TcpEvent {
            saddr: "127.0.0.1".parse().unwrap(),
            daddr: "127.0.0.2".parse().unwrap(),
            sport,
            dport: 80,
            ..TcpEvent::default()
        };
        let mut by_dest = ConnectCounts::new(false);
        let mut by_source = ConnectCounts::new(true);
        for sport in [1000, 1001, 1000] {
            by_dest.add(&e(sport));
            by_source.add(&e(sport));
        }
        assert_eq!(by_dest.rows().map(|(_, n)| n).collect::<Vec<_>>(), [3]);
        assert_eq!(by_source.rows().map(|(_, n)| n).collect::<Vec<_>>(), [2, 1]);
        assert_eq!(by_source.total(), 3);
    }

    #[test]
    fn rtt_average_is_the_total_over_the_count() {
        let mut slots = vec![0; 36];
        slots[4] = 3;
        let read = [RttHist {
            addr: None,
            slots: slots.clone(),
            sum: 50,
        }];
        let h = rtt_histograms(&read, "usecs");
        assert_eq!((h[0].average, h[0].hist.total()), (16, 3));
        let empty = [RttHist {
            addr: None,
            slots: vec![0; 36],
            sum: 0,
        }];
        assert_eq!(rtt_histograms(&empty, "usecs")[0].average, 0);
    }
}
