//! bindsnoop's and solisten's kernel side: loads `src/bpf/sockcall.bpf.c`
//! through the engine (the bind or the listen programs, the others left
//! out), fills its cgroup filter before attaching, and decodes the calls
//! its ring streams (see the program's header for what each holds).

use std::io;
use std::net::IpAddr;
use std::path::PathBuf;

use super::bpf_engine::{GroupRules, u32_at};
use super::bpf_events::{EventStream, c_string_at, i32_at, u16_at};
use super::bpf_execsnoop::{load_in_cgroup, open_cgroup};
use super::bpf_tcp::{AF_INET6, MAX_PORTS};

super::bpf::bpf_skeleton!("sockcall.skel.rs");

use skel::SockcallSkelBuilder;

/// Which call the program follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SockCall {
    #[default]
    Bind,
    Listen,
}

/// The program's settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SockcallSettings {
    pub(crate) call: SockCall,
    pub(crate) pid: Option<u32>,
    /// Failed binds too (-x).
    pub(crate) include_failed: bool,
    /// Only tasks under this cgroup directory.
    pub(crate) cgroup: Option<PathBuf>,
    /// Local ports (at most [`MAX_PORTS`], none 0); empty: any.
    pub(crate) ports: Vec<u16>,
}

/// One bind or listen, at its return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SockcallEvent {
    /// The local address (the socket's; the one asked for when the call failed).
    pub(crate) addr: IpAddr,
    pub(crate) pid: u32,
    pub(crate) ret: i32,
    /// listen: the backlog.
    pub(crate) backlog: u32,
    /// bind: the device the socket is bound to (0: none).
    pub(crate) bound_dev_if: i32,
    pub(crate) port: u16,
    pub(crate) family: u16,
    /// IPPROTO_TCP, IPPROTO_UDP... (0: no socket behind the descriptor).
    pub(crate) proto: u16,
    /// SOCK_STREAM, SOCK_DGRAM...
    pub(crate) sock_type: u16,
    /// bind's options: bits freebind, transparent, bind_address_no_port,
    /// reuseaddr, reuseport (libbpf-tools' order).
    pub(crate) opts: u8,
    pub(crate) comm: String,
}

impl SockcallEvent {
    /// Decodes one ring record (`struct sockcall_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<SockcallEvent> {
        let family = u16_at(r, 34)?;
        let bytes: [u8; 16] = r.get(0..16)?.try_into().ok()?;
        let addr = if family == AF_INET6 {
            IpAddr::from(bytes)
        } else {
            IpAddr::from([bytes[0], bytes[1], bytes[2], bytes[3]])
        };
        Some(SockcallEvent {
            addr,
            pid: u32_at(r, 16)?,
            ret: i32_at(r, 20)?,
            backlog: u32_at(r, 24)?,
            bound_dev_if: i32_at(r, 28)?,
            port: u16_at(r, 32)?,
            family,
            proto: u16_at(r, 36)?,
            sock_type: u16_at(r, 38)?,
            opts: *r.get(40)?,
            comm: c_string_at(r, 44, 16),
        })
    }

    pub(crate) fn is_ipv6(&self) -> bool {
        self.family == AF_INET6
    }
}

/// The loaded, attached programs, streaming [`SockcallEvent`]s.
pub(crate) type SockcallBpf = EventStream<SockcallEvent>;

/// Loads and attaches the programs of `settings.call`, the cgroup filter
/// filled first.
pub(crate) fn load(settings: &SockcallSettings) -> io::Result<SockcallBpf> {
    if settings.ports.len() > MAX_PORTS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("at most {MAX_PORTS} ports"),
        ));
    }
    let cgroup = open_cgroup(settings.cgroup.as_deref())?;
    let skip: &[&str] = match settings.call {
        SockCall::Bind => &["scry_listen_enter", "scry_listen_exit"],
        SockCall::Listen => &["scry_bind_enter", "scry_bind_exit"],
    };
    let loaded = load_in_cgroup(
        SockcallSkelBuilder::default,
        |open: &mut skel::OpenSockcallSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_tgid = settings.pid.unwrap_or(0);
            rodata.include_failed = settings.include_failed;
            rodata.filter_cgroup = cgroup.is_some();
            for (slot, port) in rodata.ports.iter_mut().zip(&settings.ports) {
                *slot = *port;
            }
            Ok(())
        },
        GroupRules::skipping(skip),
        cgroup.as_ref(),
        |s: &skel::SockcallSkel<'static>| &s.maps.cgroup_map,
    )?;
    Ok(EventStream::new(
        loaded,
        |s: &skel::SockcallSkel<'static>| (&s.maps.events, &s.maps.drops),
        SockcallEvent::decode,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::bpf_tcp::AF_INET;

    #[test]
    fn decodes_a_v4_bind() {
        let mut r = vec![0u8; 60];
        r[0..4].copy_from_slice(&[127, 0, 0, 1]);
        r[16..20].copy_from_slice(&42u32.to_ne_bytes());
        r[20..24].copy_from_slice(&(-98i32).to_ne_bytes());
        r[32..34].copy_from_slice(&8080u16.to_ne_bytes());
        r[34..36].copy_from_slice(&AF_INET.to_ne_bytes());
        r[36..38].copy_from_slice(&6u16.to_ne_bytes());
        r[40] = 0x18;
        r[44..48].copy_from_slice(b"bind");
        let e = SockcallEvent::decode(&r).unwrap();
        assert_eq!(e.addr, "127.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(
            (e.pid, e.ret, e.port, e.proto, e.opts),
            (42, -98, 8080, 6, 0x18)
        );
        assert_eq!(e.comm, "bind");
        assert!(SockcallEvent::decode(&r[..40]).is_none());
    }
}
