//! tcprtt's kernel side: loads `src/bpf/tcprtt.bpf.c` through the engine
//! and reads its one histogram of smoothed RTTs (read and deleted, so each
//! interval starts from zero).

use std::io;
use std::net::IpAddr;

use super::bpf_engine::{self};
use super::bpf_hists::HistBpf;

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

pub(crate) type TcprttBpf = HistBpf<TcprttSkel<'static>>;

pub(crate) fn load(settings: TcprttSettings) -> io::Result<TcprttBpf> {
    let loaded = bpf_engine::load_now(
        TcprttSkelBuilder::default,
        |open: &mut skel::OpenTcprttSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_lport = settings.lport.unwrap_or(0);
            rodata.filter_rport = settings.rport.unwrap_or(0);
            rodata.milliseconds = settings.milliseconds;
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
