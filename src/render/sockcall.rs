//! bindsnoop's and solisten's lines as libbpf-tools prints them:
//! `PID COMM RET PROTO OPTS IF PORT ADDR` (OPTS: `FTNRr`, a dot for each
//! option not set: freebind, transparent, bind_address_no_port,
//! reuseaddr, reuseport) and `PID COMM RET BACKLOG PROTO PORT ADDR`
//! (PROTO `TCPv4`...), each with `-t`'s leading HH:MM:SS under `TIME(s)`
//! (libbpf-tools' own spelling), and their JSON objects.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::analysis::net::SockcallEvent;
use crate::render::snoop::{Clock, SnoopFormat, hms};

const IPPROTO_TCP: u16 = 6;
const IPPROTO_UDP: u16 = 17;
const SOCK_STREAM: u16 = 1;
const SOCK_DGRAM: u16 = 2;

/// bindsnoop's PROTO.
fn proto_name(proto: u16) -> &'static str {
    match proto {
        IPPROTO_TCP => "TCP",
        IPPROTO_UDP => "UDP",
        _ => "UNK",
    }
}

/// The OPTS column: `FTNRr`, a dot for each one not set.
pub(crate) fn bind_options(opts: u8) -> String {
    "FTNRr"
        .chars()
        .enumerate()
        .map(|(i, c)| if opts & (1 << i) != 0 { c } else { '.' })
        .collect()
}

/// solisten's PROTO: `TCPv4`, `UDPv6`...
fn listen_proto(e: &SockcallEvent) -> String {
    let kind = match e.sock_type {
        SOCK_STREAM => "TCP",
        SOCK_DGRAM => "UDP",
        _ => "UNK",
    };
    format!("{kind}v{}", if e.is_ipv6() { 6 } else { 4 })
}

fn time_header(w: &mut impl Write, time: bool) -> io::Result<()> {
    if time {
        write!(w, "{:<8} ", "TIME(s)")?;
    }
    Ok(())
}

fn time_value(w: &mut impl Write, time: bool, clock: Clock) -> io::Result<()> {
    if time {
        write!(w, "{:>8} ", hms(clock.hms))?;
    }
    Ok(())
}

/// bindsnoop's table (`time`: -t).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BindLayout {
    pub(crate) time: bool,
}

impl SnoopFormat for BindLayout {
    type Event = SockcallEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        time_header(w, self.time)?;
        writeln!(
            w,
            "{:<7} {:<16} {:<3} {:<5} {:<5} {:<4} {:<5} {:<48}",
            "PID", "COMM", "RET", "PROTO", "OPTS", "IF", "PORT", "ADDR"
        )
    }

    fn line<W: Write>(&self, w: &mut W, e: &SockcallEvent, clock: Clock) -> io::Result<()> {
        time_value(w, self.time, clock)?;
        writeln!(
            w,
            "{:<7} {:<16} {:<3} {:<5} {:<5} {:<4} {:<5} {:<48}",
            e.pid,
            e.comm,
            e.ret,
            proto_name(e.proto),
            bind_options(e.opts),
            e.bound_dev_if,
            e.port,
            e.addr.to_string()
        )
    }

    fn fields(&self, e: &SockcallEvent) -> Value {
        json!({
            "pid": e.pid, "comm": e.comm, "ret": e.ret,
            "proto": proto_name(e.proto), "opts": bind_options(e.opts),
            "if": e.bound_dev_if, "port": e.port, "addr": e.addr.to_string(),
            "ip": if e.is_ipv6() { 6 } else { 4 },
        })
    }
}

/// solisten's table (`time`: -t).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ListenLayout {
    pub(crate) time: bool,
}

impl SnoopFormat for ListenLayout {
    type Event = SockcallEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        time_header(w, self.time)?;
        writeln!(
            w,
            "{:<7} {:<16} {:<3} {:<7} {:<5} {:<5} {:<32}",
            "PID", "COMM", "RET", "BACKLOG", "PROTO", "PORT", "ADDR"
        )
    }

    fn line<W: Write>(&self, w: &mut W, e: &SockcallEvent, clock: Clock) -> io::Result<()> {
        time_value(w, self.time, clock)?;
        writeln!(
            w,
            "{:<7} {:<16} {:<3} {:<7} {:<5} {:<5} {:<32}",
            e.pid,
            e.comm,
            e.ret,
            e.backlog,
            listen_proto(e),
            e.port,
            e.addr.to_string()
        )
    }

    fn fields(&self, e: &SockcallEvent) -> Value {
        json!({
            "pid": e.pid, "comm": e.comm, "ret": e.ret, "backlog": e.backlog,
            "proto": listen_proto(e), "port": e.port, "addr": e.addr.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_in_libbpf_tools_layout() {
        let e = SockcallEvent {
            addr: "::1".parse().unwrap(),
            pid: 42,
            ret: 0,
            backlog: 128,
            bound_dev_if: 0,
            port: 8080,
            family: 10,
            proto: IPPROTO_TCP,
            sock_type: SOCK_STREAM,
            opts: 0x18,
            comm: "binds".into(),
        };
        let mut out = Vec::new();
        let clock = Clock::default();
        BindLayout::default().line(&mut out, &e, clock).unwrap();
        ListenLayout { time: true }
            .line(&mut out, &e, clock)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
        assert_eq!(
            lines,
            [
                "42      binds            0   TCP   ...Rr 0    8080  ::1",
                "00:00:00 42      binds            0   128     TCPv6 8080  ::1",
            ]
        );
    }
}
