//! tcprtt's kernel side: loads `src/bpf/tcprtt.bpf.c` through the engine
//! and reads its histograms of smoothed RTTs (read and deleted, so each
//! interval starts from zero): one for all sockets, or one per local or
//! remote address (libbpf-tools' `-b`/`-B`), each with the total of its
//! values (`-e`'s average).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::bpf_engine::{self, u64_at};
use super::bpf_events::u16_at;
use super::bpf_hists::{COMM_LEN, HistBpf, KeyedSlots, MAX_SLOTS};

super::bpf::bpf_skeleton!("tcprtt.skel.rs");

use skel::{TcprttSkel, TcprttSkelBuilder};

/// The program's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TcprttSettings {
    /// Only this local port.
    pub(crate) lport: Option<u16>,
    /// Only this remote port.
    pub(crate) rport: Option<u16>,
    /// Only sockets with this local address.
    pub(crate) laddr: Option<IpAddr>,
    /// Only sockets with this remote address.
    pub(crate) raddr: Option<IpAddr>,
    pub(crate) milliseconds: bool,
    /// One histogram per address of this side (None: one for all).
    pub(crate) by_addr: Option<AddrSide>,
}

/// Which address of a socket keys its histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AddrSide {
    Local,
    Remote,
}

/// One histogram as the program counted it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RttHist {
    /// The address it is for (None: all sockets).
    pub(crate) addr: Option<IpAddr>,
    /// Log2 slots of RTTs (µs or ms).
    pub(crate) slots: Vec<u64>,
    /// The RTTs' total, in the same unit.
    pub(crate) sum: u64,
}

impl RttHist {
    /// A map entry: `struct addr_key` (family u16, 16 address bytes) and
    /// `struct hist` with HIST_SUM; None when shorter than that.
    fn parse(key: &[u8], value: &[u8]) -> Option<RttHist> {
        let addr = key.get(2..18)?;
        let addr = match u16_at(key, 0)? {
            0 => None,
            super::bpf_tcp::AF_INET6 => {
                Some(IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(addr).ok()?)))
            }
            _ => Some(IpAddr::V4(Ipv4Addr::from(
                <[u8; 4]>::try_from(addr.get(..4)?).ok()?,
            ))),
        };
        Some(RttHist {
            addr,
            slots: KeyedSlots::parse(key, value)?.slots,
            sum: u64_at(value, MAX_SLOTS * 8 + COMM_LEN)?,
        })
    }
}

/// An address as the program compares it: (family, 16 bytes with an IPv4
/// address in the first four); family 0 for none.
fn addr_filter(addr: Option<IpAddr>) -> (u16, [u8; 16]) {
    let mut bytes = [0u8; 16];
    match addr {
        None => (0, bytes),
        Some(IpAddr::V4(v4)) => {
            bytes[..4].copy_from_slice(&v4.octets());
            (super::bpf_tcp::AF_INET, bytes)
        }
        Some(IpAddr::V6(v6)) => (super::bpf_tcp::AF_INET6, v6.octets()),
    }
}

/// The loaded program; its histograms read by [`read`].
pub(crate) type TcprttBpf = HistBpf<TcprttSkel<'static>>;

/// The histograms since the last read (they are deleted), by address
/// (IPv4 first).
pub(crate) fn read(bpf: &TcprttBpf) -> io::Result<Vec<RttHist>> {
    let mut hists = bpf.read_with(RttHist::parse)?;
    hists.sort_by_key(|h| h.addr);
    Ok(hists)
}

pub(crate) fn load(settings: TcprttSettings) -> io::Result<TcprttBpf> {
    let loaded = bpf_engine::load_now(
        TcprttSkelBuilder::default,
        |open: &mut skel::OpenTcprttSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_lport = settings.lport.unwrap_or(0);
            rodata.filter_rport = settings.rport.unwrap_or(0);
            rodata.milliseconds = settings.milliseconds;
            rodata.by_addr = match settings.by_addr {
                None => 0,
                Some(AddrSide::Local) => 1,
                Some(AddrSide::Remote) => 2,
            };
            let (family, bytes) = addr_filter(settings.laddr);
            rodata.filter_laddr_family = family;
            for (slot, b) in rodata.filter_laddr.iter_mut().zip(bytes) {
                *slot = b as _;
            }
            let (family, bytes) = addr_filter(settings.raddr);
            rodata.filter_raddr_family = family;
            for (slot, b) in rodata.filter_raddr.iter_mut().zip(bytes) {
                *slot = b as _;
            }
            Ok(())
        },
    )?;
    Ok(HistBpf::new(loaded, |s: &TcprttSkel<'static>| {
        &s.maps.hists
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_address_keys_and_the_sum() {
        let mut value = vec![0u8; MAX_SLOTS * 8 + COMM_LEN + 8];
        value[16..24].copy_from_slice(&3u64.to_ne_bytes());
        value[MAX_SLOTS * 8 + COMM_LEN..].copy_from_slice(&(3u64 * 5).to_ne_bytes());
        let mut key = vec![0u8; 18];
        let all = RttHist::parse(&key, &value).expect("parses");
        assert_eq!((all.addr, all.slots[2], all.sum), (None, 3, 15));
        key[..2].copy_from_slice(&super::super::bpf_tcp::AF_INET.to_ne_bytes());
        key[2..6].copy_from_slice(&[127, 0, 0, 1]);
        let v4 = RttHist::parse(&key, &value).expect("parses");
        assert_eq!(v4.addr, Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        key[..2].copy_from_slice(&super::super::bpf_tcp::AF_INET6.to_ne_bytes());
        key[2..18].copy_from_slice(&Ipv6Addr::LOCALHOST.octets());
        let v6 = RttHist::parse(&key, &value).expect("parses");
        assert_eq!(v6.addr, Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        assert_eq!(
            RttHist::parse(&key, &value[..MAX_SLOTS * 8 + COMM_LEN]),
            None
        );
        assert_eq!(RttHist::parse(&key[..6], &value), None);
    }
}
