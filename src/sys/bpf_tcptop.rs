//! tcptop's kernel side: loads `src/bpf/tcptop.bpf.c` through the engine,
//! fills its cgroup filter, and takes its per-connection byte counts (read
//! and deleted, so each interval starts from zero; see the program's
//! header for what is counted and what is not seen). bcc's hooks on
//! tcp_sendmsg and tcp_cleanup_rbuf count where they attach, else the sock
//! tracepoints (the engine's kernel-function groups).

use std::io;
use std::net::IpAddr;
use std::path::PathBuf;

use super::bpf_engine::{self, GroupRules, Loaded, comm_at, u32_at, u64_at};
use super::bpf_events::u16_at;
use super::bpf_execsnoop::{load_in_cgroup, open_cgroup};
use super::bpf_tcp::AF_INET6;

super::bpf::bpf_skeleton!("tcptop.skel.rs");

use skel::{TcptopSkel, TcptopSkelBuilder};

/// The program's settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TcptopSettings {
    pub(crate) pid: Option<u32>,
    /// AF_INET or AF_INET6 only.
    pub(crate) family: Option<u16>,
    pub(crate) cgroup: Option<PathBuf>,
}

/// One connection's bytes in an interval, for one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FlowBytes {
    pub(crate) saddr: IpAddr,
    pub(crate) daddr: IpAddr,
    pub(crate) pid: u32,
    pub(crate) lport: u16,
    pub(crate) dport: u16,
    pub(crate) family: u16,
    pub(crate) sent: u64,
    pub(crate) received: u64,
    pub(crate) comm: String,
}

impl FlowBytes {
    /// One map entry (`struct flow_key`, `struct flow_bytes`); None when short.
    fn parse(key: &[u8], value: &[u8]) -> Option<FlowBytes> {
        let family = u16_at(key, 40)?;
        let addr = |at: usize| -> Option<IpAddr> {
            let b: [u8; 16] = key.get(at..at + 16)?.try_into().ok()?;
            Some(if family == AF_INET6 {
                IpAddr::from(b)
            } else {
                IpAddr::from([b[0], b[1], b[2], b[3]])
            })
        };
        Some(FlowBytes {
            saddr: addr(0)?,
            daddr: addr(16)?,
            pid: u32_at(key, 32)?,
            lport: u16_at(key, 36)?,
            dport: u16_at(key, 38)?,
            family,
            sent: u64_at(value, 0)?,
            received: u64_at(value, 8)?,
            comm: comm_at(value, 16, 16),
        })
    }
}

/// The loaded, attached programs.
#[derive(Debug)]
pub(crate) struct TcptopBpf {
    loaded: Loaded<TcptopSkel<'static>>,
}

impl TcptopBpf {
    pub(crate) fn load(settings: &TcptopSettings) -> io::Result<TcptopBpf> {
        let cgroup = open_cgroup(settings.cgroup.as_deref())?;
        let loaded = load_in_cgroup(
            TcptopSkelBuilder::default,
            |open: &mut skel::OpenTcptopSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.filter_tgid = settings.pid.unwrap_or(0);
                rodata.filter_family = settings.family.unwrap_or(0);
                rodata.filter_cgroup = cgroup.is_some();
                Ok(())
            },
            GroupRules::kernel_functions(
                &["scry_k_tcp_send", "scry_k_tcp_recv"],
                &["scry_tcptop_send", "scry_tcptop_recv"],
                &[],
            ),
            cgroup.as_ref(),
            |s: &skel::TcptopSkel<'static>| &s.maps.cgroup_map,
        )?;
        Ok(TcptopBpf { loaded })
    }

    pub(crate) fn hooks(&self) -> Vec<bpf_engine::Hook> {
        self.loaded.hooks()
    }

    /// The counts since the last take (each entry read and deleted).
    pub(crate) fn take(&self) -> io::Result<Vec<FlowBytes>> {
        bpf_engine::take_entries(
            &self.loaded.skel.maps.flows,
            "reading tcptop's counts",
            FlowBytes::parse,
        )
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_flow_entry() {
        let mut key = vec![0u8; 44];
        key[0..4].copy_from_slice(&[127, 0, 0, 1]);
        key[16..20].copy_from_slice(&[127, 0, 0, 2]);
        key[32..36].copy_from_slice(&42u32.to_ne_bytes());
        key[36..38].copy_from_slice(&5000u16.to_ne_bytes());
        key[38..40].copy_from_slice(&80u16.to_ne_bytes());
        key[40..42].copy_from_slice(&2u16.to_ne_bytes());
        let mut value = vec![0u8; 32];
        value[0..8].copy_from_slice(&10u64.to_ne_bytes());
        value[8..16].copy_from_slice(&20u64.to_ne_bytes());
        value[16..20].copy_from_slice(b"curl");
        let f = FlowBytes::parse(&key, &value).unwrap();
        assert_eq!(f.daddr, "127.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!(
            (f.pid, f.lport, f.dport, f.sent, f.received),
            (42, 5000, 80, 10, 20)
        );
        assert_eq!(f.comm, "curl");
        assert!(FlowBytes::parse(&key[..40], &value).is_none());
    }
}
