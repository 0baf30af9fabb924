//! The TCP tools' kernel side (tcplife, tcpconnect, tcpaccept, tcpstates,
//! tcpretrans): loads `src/bpf/tcp.bpf.c` through the engine in one of its
//! modes, leaving out the programs that mode does not use, and decodes the
//! events its ring streams. The rules of each mode are in the program's
//! header comment; one object and one event type serve all five tools.
//! tcpconnect prefers bcc's hooks (tcp_v4_connect, tcp_v6_connect) to the
//! state tracepoint where they attach (the engine's kernel-function groups).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::bpf_engine::{GroupRules, u32_at, u64_at};
use super::bpf_events::{EventStream, c_string_at, u16_at};
use super::bpf_execsnoop::{load_in_cgroup, open_cgroup};

super::bpf::bpf_skeleton!("tcp.skel.rs");

use skel::TcpSkelBuilder;

/// Ports per filter list: the program's MAX_PORTS.
pub(crate) const MAX_PORTS: usize = 8;

pub(crate) const AF_INET: u16 = 2;
pub(crate) const AF_INET6: u16 = 10;

/// Which tool's rules the program follows (its `mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum TcpMode {
    /// Every state transition (tcpstates).
    #[default]
    States,
    /// One event per closed session, with its bytes (tcplife).
    Life,
    /// Active opens (tcpconnect).
    Connect,
    /// Accepted connections, in the accepting process (tcpaccept).
    Accept,
    /// Retransmitted segments (tcpretrans).
    Retrans,
}

impl TcpMode {
    fn code(self) -> u8 {
        match self {
            TcpMode::States => 1,
            TcpMode::Life => 2,
            TcpMode::Connect => 3,
            TcpMode::Accept => 4,
            TcpMode::Retrans => 5,
        }
    }

    /// The program groups this mode does not load.
    fn skipped(self) -> &'static [&'static str] {
        const RETRANS: &str = "scry_tcp_retrans";
        const ACCEPT: &str = "scry_tcp_accept";
        const ACCEPT4: &str = "scry_tcp_accept4";
        match self {
            TcpMode::Accept => &[STATE, RETRANS, C4, C4R, C6, C6R],
            TcpMode::Retrans => &[STATE, ACCEPT, ACCEPT4, C4, C4R, C6, C6R],
            TcpMode::Connect => &[RETRANS, ACCEPT, ACCEPT4],
            _ => &[RETRANS, ACCEPT, ACCEPT4, C4, C4R, C6, C6R],
        }
    }

    /// The groups on kernel functions this mode prefers (bcc's hooks), and
    /// the tracepoint groups they stand in for.
    fn functions(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            TcpMode::Connect => (&CONNECT_FUNCTIONS, &[STATE]),
            _ => (&[], &[]),
        }
    }
}

/// The state hook (sock:inet_sock_set_state).
const STATE: &str = "scry_tcp_state";

/// tcpconnect's hooks on tcp_v4_connect and tcp_v6_connect, entry and return.
const C4: &str = "scry_k_connect4";
const C4R: &str = "scry_k_connect4_ret";
const C6: &str = "scry_k_connect6";
const C6R: &str = "scry_k_connect6_ret";
const CONNECT_FUNCTIONS: [&str; 4] = [C4, C4R, C6, C6R];

/// The program's settings (its `const volatile`s).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TcpSettings {
    pub(crate) mode: TcpMode,
    /// AF_INET or AF_INET6 only.
    pub(crate) family: Option<u16>,
    pub(crate) pid: Option<u32>,
    pub(crate) uid: Option<u32>,
    /// Local ports (at most [`MAX_PORTS`], none 0); empty: any.
    pub(crate) lports: Vec<u16>,
    /// Remote ports, as `lports`.
    pub(crate) rports: Vec<u16>,
    /// tcpconnect's `--cgroup`: only connections from tasks under this
    /// cgroup v2 directory.
    pub(crate) cgroup: Option<std::path::PathBuf>,
}

/// One event of the TCP program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TcpEvent {
    /// The kernel's socket address (tcpstates' SKADDR).
    pub(crate) skaddr: u64,
    pub(crate) ts_ns: u64,
    /// tcplife: the session's life; tcpstates: time in the old state.
    pub(crate) span_ns: u64,
    /// tcplife: bytes the peer acked, and bytes received.
    pub(crate) tx_bytes: u64,
    pub(crate) rx_bytes: u64,
    pub(crate) saddr: IpAddr,
    pub(crate) daddr: IpAddr,
    pub(crate) sport: u16,
    pub(crate) dport: u16,
    pub(crate) family: u16,
    pub(crate) pid: u32,
    pub(crate) uid: u32,
    pub(crate) oldstate: u8,
    pub(crate) newstate: u8,
    pub(crate) comm: String,
}

impl Default for TcpEvent {
    fn default() -> TcpEvent {
        TcpEvent {
            skaddr: 0,
            ts_ns: 0,
            span_ns: 0,
            tx_bytes: 0,
            rx_bytes: 0,
            saddr: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            daddr: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            sport: 0,
            dport: 0,
            family: AF_INET,
            pid: 0,
            uid: 0,
            oldstate: 0,
            newstate: 0,
            comm: String::new(),
        }
    }
}

/// An address of `family` from the record's 16 bytes at `offset`.
fn addr_at(r: &[u8], offset: usize, family: u16) -> Option<IpAddr> {
    if family == AF_INET6 {
        let b: [u8; 16] = r.get(offset..offset + 16)?.try_into().ok()?;
        Some(IpAddr::V6(Ipv6Addr::from(b)))
    } else {
        let b: [u8; 4] = r.get(offset..offset + 4)?.try_into().ok()?;
        Some(IpAddr::V4(Ipv4Addr::from(b)))
    }
}

impl TcpEvent {
    /// Decodes one ring record (`struct tcp_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<TcpEvent> {
        let family = u16_at(r, 76)?;
        Some(TcpEvent {
            skaddr: u64_at(r, 0)?,
            ts_ns: u64_at(r, 8)?,
            span_ns: u64_at(r, 16)?,
            tx_bytes: u64_at(r, 24)?,
            rx_bytes: u64_at(r, 32)?,
            saddr: addr_at(r, 40, family)?,
            daddr: addr_at(r, 56, family)?,
            sport: u16_at(r, 72)?,
            dport: u16_at(r, 74)?,
            family,
            pid: u32_at(r, 80)?,
            uid: u32_at(r, 84)?,
            oldstate: *r.get(88)?,
            newstate: *r.get(89)?,
            comm: c_string_at(r, 92, 16),
        })
    }
}

/// The loaded, attached program, streaming [`TcpEvent`]s.
pub(crate) type TcpBpf = EventStream<TcpEvent>;

/// A port list as the program's array (0 ends it).
fn port_array(ports: &[u16]) -> [u16; MAX_PORTS] {
    let mut array = [0u16; MAX_PORTS];
    for (slot, port) in array.iter_mut().zip(ports) {
        *slot = *port;
    }
    array
}

/// Loads and attaches the programs of `settings.mode`.
pub(crate) fn load(settings: &TcpSettings) -> io::Result<TcpBpf> {
    if settings.lports.len() > MAX_PORTS || settings.rports.len() > MAX_PORTS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("at most {MAX_PORTS} ports per list"),
        ));
    }
    let cgroup = open_cgroup(settings.cgroup.as_deref())?;
    let loaded = load_in_cgroup(
        TcpSkelBuilder::default,
        |open: &mut skel::OpenTcpSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.mode = settings.mode.code();
            rodata.filter_family = settings.family.unwrap_or(0);
            rodata.filter_tgid = settings.pid.unwrap_or(0);
            rodata.filter_uid = settings.uid.unwrap_or(u32::MAX);
            rodata.lports = port_array(&settings.lports);
            rodata.rports = port_array(&settings.rports);
            rodata.filter_cgroup = cgroup.is_some();
            Ok(())
        },
        GroupRules {
            skip: settings.mode.skipped(),
            functions: settings.mode.functions().0,
            tracepoints: settings.mode.functions().1,
            ..GroupRules::default()
        },
        cgroup.as_ref(),
        |s: &skel::TcpSkel<'static>| &s.maps.cgroup_map,
    )?;
    Ok(EventStream::new(
        loaded,
        |s: &skel::TcpSkel<'static>| (&s.maps.events, &s.maps.drops),
        TcpEvent::decode,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_v6_record() {
        let mut r = vec![0u8; 112];
        r[0..8].copy_from_slice(&0xffff_8880_1234_5678u64.to_ne_bytes());
        r[24..32].copy_from_slice(&5000u64.to_ne_bytes());
        r[40 + 15] = 1;
        r[56 + 15] = 1;
        r[72..74].copy_from_slice(&8080u16.to_ne_bytes());
        r[74..76].copy_from_slice(&40000u16.to_ne_bytes());
        r[76..78].copy_from_slice(&AF_INET6.to_ne_bytes());
        r[80..84].copy_from_slice(&42u32.to_ne_bytes());
        r[88] = 1;
        r[89] = 7;
        r[92..97].copy_from_slice(b"conns");
        let e = TcpEvent::decode(&r).unwrap();
        assert_eq!(e.saddr, "::1".parse::<IpAddr>().unwrap());
        assert_eq!(
            (e.sport, e.dport, e.pid, e.tx_bytes),
            (8080, 40000, 42, 5000)
        );
        assert_eq!((e.oldstate, e.newstate, e.comm.as_str()), (1, 7, "conns"));
        assert!(TcpEvent::decode(&r[..89]).is_none());
    }
}
