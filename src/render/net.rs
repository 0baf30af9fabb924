//! The TCP tools' lines in bcc's layouts: tcplife and tcpstates as
//! libbpf-tools prints them (`PID COMM LADDR LPORT RADDR RPORT TX_KB RX_KB
//! MS`; `SKADDR PID COMM LADDR ... OLDSTATE -> NEWSTATE MS`), tcpconnect
//! as libbpf-tools (`PID COMM IP SADDR DADDR DPORT`, and its `-c` table),
//! tcpaccept as bcc's (`PID COMM IP RADDR RPORT LADDR LPORT`), tcpretrans
//! as bcc's (`TIME PID IP LADDR:LPORT T> RADDR:RPORT STATE`, `-s` adding
//! `SEQ`, and its `-c` table), each a [`TcpTable`] behind the streaming tools' `SnoopFormat`,
//! and one JSON object per event, the same keys for every tool; tcprtt's
//! histograms under libbpf-tools' address lines.
//!
//! The time columns are one choice for all five (bcc's tcplife and
//! tcpaccept): `-T` HH:MM:SS under `TIME`, `-t` seconds since the tool
//! started under `TIME(s)`; libbpf-tools' tcpstates prints HH:MM:SS under
//! `TIME(s)`, which is not copied. Clocks come from the caller.

use std::io::{self, Write};

use serde_json::{Value, json};

use crate::analysis::net::{AddrSide, ConnectCounts, FlowBytes, RttHistogram, TcpEvent};
use crate::render::hist::{buckets_json, write_hist};
use crate::render::snoop::{Clock, SnoopFormat, hms};

/// The optional time columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stamps {
    /// -T: HH:MM:SS.
    pub(crate) hms: bool,
    /// -t: seconds since the start.
    pub(crate) secs: bool,
}

impl Stamps {
    fn header(self, w: &mut impl Write) -> io::Result<()> {
        if self.hms {
            write!(w, "{:<8} ", "TIME")?;
        }
        if self.secs {
            write!(w, "{:<9} ", "TIME(s)")?;
        }
        Ok(())
    }

    fn values(self, w: &mut impl Write, clock: Clock) -> io::Result<()> {
        if self.hms {
            write!(w, "{} ", hms(clock.hms))?;
        }
        if self.secs {
            write!(w, "{:<9.3} ", clock.secs)?;
        }
        Ok(())
    }
}

/// The IP version column (4 or 6).
fn ip_version(e: &TcpEvent) -> u8 {
    if e.saddr.is_ipv6() { 6 } else { 4 }
}

/// The kernel's TCP state names, as tcpstates prints them.
pub(crate) fn state_name(state: u8) -> &'static str {
    const NAMES: [&str; 13] = [
        "UNKNOWN",
        "ESTABLISHED",
        "SYN_SENT",
        "SYN_RECV",
        "FIN_WAIT1",
        "FIN_WAIT2",
        "TIME_WAIT",
        "CLOSE",
        "CLOSE_WAIT",
        "LAST_ACK",
        "LISTEN",
        "CLOSING",
        "NEW_SYN_RECV",
    ];
    NAMES.get(usize::from(state)).copied().unwrap_or("UNKNOWN")
}

/// tcplife's and tcpstates' optional columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SessionLayout {
    pub(crate) stamps: Stamps,
    /// -w: address columns that fit IPv6 (39, not 15).
    pub(crate) wide: bool,
}

impl SessionLayout {
    fn addr_width(self) -> usize {
        if self.wide { 39 } else { 15 }
    }
}

fn life_header(w: &mut impl Write, l: SessionLayout) -> io::Result<()> {
    l.stamps.header(w)?;
    let aw = l.addr_width();
    writeln!(
        w,
        "{:<7} {:<16} {:<aw$} {:<5} {:<aw$} {:<5} {:<6} {:<6} MS",
        "PID", "COMM", "LADDR", "LPORT", "RADDR", "RPORT", "TX_KB", "RX_KB"
    )
}

fn life_line(w: &mut impl Write, e: &TcpEvent, l: SessionLayout, clock: Clock) -> io::Result<()> {
    l.stamps.values(w, clock)?;
    let aw = l.addr_width();
    let kb = |bytes: u64| bytes as f64 / 1024.0;
    writeln!(
        w,
        "{:<7} {:<16} {:<aw$} {:<5} {:<aw$} {:<5} {:<6.2} {:<6.2} {:.2}",
        e.pid,
        e.comm,
        e.saddr.to_string(),
        e.sport,
        e.daddr.to_string(),
        e.dport,
        kb(e.tx_bytes),
        kb(e.rx_bytes),
        e.span_ns as f64 / 1e6
    )
}

fn states_header(w: &mut impl Write, l: SessionLayout) -> io::Result<()> {
    l.stamps.header(w)?;
    if l.wide {
        writeln!(
            w,
            "{:<16} {:<7} {:<16} {:<2} {:<39} {:<5} {:<39} {:<5} {:<11} -> {:<11} MS",
            "SKADDR",
            "PID",
            "COMM",
            "IP",
            "LADDR",
            "LPORT",
            "RADDR",
            "RPORT",
            "OLDSTATE",
            "NEWSTATE"
        )
    } else {
        writeln!(
            w,
            "{:<16} {:<7} {:<10} {:<15} {:<5} {:<15} {:<5} {:<11} -> {:<11} MS",
            "SKADDR", "PID", "COMM", "LADDR", "LPORT", "RADDR", "RPORT", "OLDSTATE", "NEWSTATE"
        )
    }
}

fn states_line(w: &mut impl Write, e: &TcpEvent, l: SessionLayout, clock: Clock) -> io::Result<()> {
    l.stamps.values(w, clock)?;
    let (old, new) = (state_name(e.oldstate), state_name(e.newstate));
    let ms = e.span_ns as f64 / 1e6;
    let (saddr, daddr) = (e.saddr.to_string(), e.daddr.to_string());
    if l.wide {
        writeln!(
            w,
            "{:<16x} {:<7} {:<16} {:<2} {saddr:<39} {:<5} {daddr:<39} {:<5} {old:<11} -> {new:<11} {ms:.3}",
            e.skaddr,
            e.pid,
            e.comm,
            ip_version(e),
            e.sport,
            e.dport,
        )
    } else {
        writeln!(
            w,
            "{:<16x} {:<7} {:<10.10} {saddr:<15} {:<5} {daddr:<15} {:<5} {old:<11} -> {new:<11} {ms:.3}",
            e.skaddr, e.pid, e.comm, e.sport, e.dport,
        )
    }
}

/// tcpconnect's optional columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConnectLayout {
    pub(crate) stamps: Stamps,
    /// -U: the user id.
    pub(crate) uid: bool,
    /// -s: the source port.
    pub(crate) sport: bool,
}

fn connect_header(w: &mut impl Write, l: ConnectLayout) -> io::Result<()> {
    l.stamps.header(w)?;
    if l.uid {
        write!(w, "{:<6}", "UID")?;
    }
    write!(
        w,
        "{:<6} {:<16} {:<2} {:<16} {:<16}",
        "PID", "COMM", "IP", "SADDR", "DADDR"
    )?;
    if l.sport {
        write!(w, " {:<5}", "SPORT")?;
    }
    writeln!(w, " DPORT")
}

fn connect_line(
    w: &mut impl Write,
    e: &TcpEvent,
    l: ConnectLayout,
    clock: Clock,
) -> io::Result<()> {
    l.stamps.values(w, clock)?;
    if l.uid {
        write!(w, "{:<6}", e.uid)?;
    }
    write!(
        w,
        "{:<6} {:<16.16} {:<2} {:<16} {:<16}",
        e.pid,
        e.comm,
        ip_version(e),
        e.saddr.to_string(),
        e.daddr.to_string()
    )?;
    if l.sport {
        write!(w, " {:<5}", e.sport)?;
    }
    writeln!(w, " {:<5}", e.dport)
}

/// tcpconnect -c: connections per (source, destination, port), as
/// libbpf-tools prints them at the end.
pub(crate) fn connect_counts(w: &mut impl Write, counts: &ConnectCounts) -> io::Result<()> {
    write!(w, "\n{:<25} {:<25}", "LADDR", "RADDR")?;
    if counts.with_sport {
        write!(w, " {:<20}", "LPORT")?;
    }
    writeln!(w, " {:<20} {:<10}", "RPORT", "CONNECTS")?;
    for (key, count) in counts.rows() {
        write!(
            w,
            "{:<25} {:<25}",
            key.saddr.to_string(),
            key.daddr.to_string()
        )?;
        if let Some(port) = key.sport {
            write!(w, " {port:<20}")?;
        }
        writeln!(w, " {:<20} {count:<10}", key.dport)?;
    }
    Ok(())
}

fn accept_header(w: &mut impl Write, stamps: Stamps) -> io::Result<()> {
    stamps.header(w)?;
    writeln!(
        w,
        "{:<7} {:<12} {:<2} {:<16} {:<5} {:<16} LPORT",
        "PID", "COMM", "IP", "RADDR", "RPORT", "LADDR"
    )
}

fn accept_line(w: &mut impl Write, e: &TcpEvent, stamps: Stamps, clock: Clock) -> io::Result<()> {
    stamps.values(w, clock)?;
    writeln!(
        w,
        "{:<7} {:<12.12} {:<2} {:<16} {:<5} {:<16} {:<5}",
        e.pid,
        e.comm,
        ip_version(e),
        e.daddr.to_string(),
        e.dport,
        e.saddr.to_string(),
        e.sport
    )
}

fn retrans_header(w: &mut impl Write, sequence: bool) -> io::Result<()> {
    write!(
        w,
        "{:<8} {:<7} {:<2} {:<20} {:1}> {:<20}",
        "TIME", "PID", "IP", "LADDR:LPORT", "T", "RADDR:RPORT"
    )?;
    if sequence {
        writeln!(w, " {:<12} {:<10}", "STATE", "SEQ")
    } else {
        writeln!(w, " {:<4}", "STATE")
    }
}

/// bcc's `ADDR:PORT` (no brackets for IPv6).
fn endpoint(addr: std::net::IpAddr, port: u16) -> String {
    format!("{addr}:{port}")
}

fn retrans_line(w: &mut impl Write, e: &TcpEvent, clock: Clock, sequence: bool) -> io::Result<()> {
    write!(
        w,
        "{:<8} {:<7} {:<2} {:<20} R> {:<20}",
        hms(clock.hms),
        e.pid,
        ip_version(e),
        endpoint(e.saddr, e.sport),
        endpoint(e.daddr, e.dport),
    )?;
    if sequence {
        writeln!(w, " {:<12} {}", state_name(e.newstate), retrans_seq(e))
    } else {
        writeln!(w, " {}", state_name(e.newstate))
    }
}

/// A retransmit's sequence number (the program sends it in `span_ns`).
fn retrans_seq(e: &TcpEvent) -> u32 {
    e.span_ns as u32
}

/// tcpretrans -c: retransmits per connection at the end, fewest first, as
/// bcc prints them (`[ADDR]#PORT <-> [ADDR]#PORT COUNT`).
pub(crate) fn retrans_counts(w: &mut impl Write, counts: &ConnectCounts) -> io::Result<()> {
    writeln!(
        w,
        "\n{:<25} {:<25} {:<10}",
        "LADDR:LPORT", "RADDR:RPORT", "RETRANSMITS"
    )?;
    let mut rows: Vec<_> = counts.rows().collect();
    rows.sort_by_key(|&(key, n)| (n, *key));
    for (key, n) in rows {
        let local = format!("[{}]#{}", key.saddr, key.sport.unwrap_or(0));
        let remote = format!("[{}]#{}", key.daddr, key.dport);
        writeln!(w, "{local:<20} <-> {remote:<20} {n:>10}")?;
    }
    Ok(())
}

/// One tcptop interval as libbpf-tools prints it: the head (`HH:MM:SS
/// loadavg: ...`, when given), `PID COMM LADDR RADDR RX_KB TX_KB`, the
/// IPv6 rows under their own header, a blank line. KB are whole (bytes /
/// 1024, rounded down).
pub(crate) fn tcptop_table(
    w: &mut impl Write,
    head: Option<&str>,
    flows: &[FlowBytes],
) -> io::Result<()> {
    if let Some(head) = head {
        writeln!(w, "{head}")?;
    }
    writeln!(
        w,
        "{:<6} {:<12} {:<21} {:<21} {:>6} {:>6}",
        "PID", "COMM", "LADDR", "RADDR", "RX_KB", "TX_KB"
    )?;
    let mut v6_header = false;
    for f in flows {
        let width = if f.saddr.is_ipv6() { 51 } else { 21 };
        if f.saddr.is_ipv6() && !v6_header {
            writeln!(
                w,
                "\n{:<6} {:<12} {:<51} {:<51} {:>6} {:>6}",
                "PID", "COMM", "LADDR6", "RADDR6", "RX_KB", "TX_KB"
            )?;
            v6_header = true;
        }
        writeln!(
            w,
            "{:<6} {:<12.12} {:<width$} {:<width$} {:>6} {:>6}",
            f.pid,
            f.comm,
            endpoint(f.saddr, f.lport),
            endpoint(f.daddr, f.dport),
            f.received / 1024,
            f.sent / 1024
        )?;
    }
    writeln!(w)
}

/// One tcptop interval as one JSON line: an array of rows, bytes exact.
pub(crate) fn tcptop_json(w: &mut impl Write, flows: &[FlowBytes]) -> io::Result<()> {
    let rows: Vec<Value> = flows
        .iter()
        .map(|f| {
            json!({
                "pid": f.pid, "comm": f.comm, "ip": if f.saddr.is_ipv6() { 6 } else { 4 },
                "laddr": f.saddr.to_string(), "lport": f.lport,
                "raddr": f.daddr.to_string(), "rport": f.dport,
                "rx_bytes": f.received, "tx_bytes": f.sent,
            })
        })
        .collect();
    serde_json::to_writer(&mut *w, &rows)?;
    writeln!(w)
}

/// tcpconnect -c as one JSON document: a row per key.
pub(crate) fn connect_counts_json(w: &mut impl Write, counts: &ConnectCounts) -> io::Result<()> {
    let rows: Vec<serde_json::Value> = counts
        .rows()
        .map(|(key, count)| {
            json!({
                "laddr": key.saddr.to_string(), "lport": key.sport,
                "raddr": key.daddr.to_string(), "rport": key.dport,
                "connects": count,
            })
        })
        .collect();
    serde_json::to_writer(&mut *w, &rows)?;
    writeln!(w)
}

/// tcprtt's histograms as libbpf-tools prints them, each under its line:
/// `All Addresses = ****** `, or `Local Address = ADDR ` (`-b`) or
/// `Remote Address = ADDR ` (`-B`), then `[AVG N]` under `-e`.
pub(crate) fn rtt_hists(
    w: &mut impl Write,
    hists: &[RttHistogram],
    by: Option<AddrSide>,
    extended: bool,
) -> io::Result<()> {
    for h in hists {
        match (by, h.addr) {
            (Some(AddrSide::Local), Some(addr)) => write!(w, "Local Address = {addr} ")?,
            (Some(AddrSide::Remote), Some(addr)) => write!(w, "Remote Address = {addr} ")?,
            _ => write!(w, "All Addresses = ****** ")?,
        }
        if extended {
            write!(w, "[AVG {}]", h.average)?;
        }
        writeln!(w)?;
        write_hist(w, &h.hist)?;
    }
    Ok(())
}

/// tcprtt's histograms as one JSON document: per histogram its address
/// (null: all sockets), the average, the unit, the total and the
/// non-empty buckets.
pub(crate) fn rtt_hists_json(w: &mut impl Write, hists: &[RttHistogram]) -> io::Result<()> {
    let rows: Vec<Value> = hists
        .iter()
        .map(|h| {
            json!({
                "address": h.addr.map(|a| a.to_string()),
                "average": h.average,
                "unit": h.hist.unit,
                "scale": h.hist.scale,
                "total": h.hist.total(),
                "buckets": buckets_json(&h.hist),
            })
        })
        .collect();
    serde_json::to_writer_pretty(&mut *w, &rows)?;
    writeln!(w)
}

/// One event's JSON fields: the same keys for every TCP tool (bytes and
/// spans are 0 where the tool has none).
pub(crate) fn tcp_fields(e: &TcpEvent) -> Value {
    json!({
        "pid": e.pid, "uid": e.uid, "comm": e.comm, "ip": ip_version(e),
        "laddr": e.saddr.to_string(), "lport": e.sport,
        "raddr": e.daddr.to_string(), "rport": e.dport,
        "oldstate": state_name(e.oldstate), "newstate": state_name(e.newstate),
        "span_ns": e.span_ns, "tx_bytes": e.tx_bytes, "rx_bytes": e.rx_bytes,
        "skaddr": format!("{:x}", e.skaddr),
    })
}

/// The table of each TCP tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TcpTable {
    Life(SessionLayout),
    States(SessionLayout),
    Connect(ConnectLayout),
    Accept(Stamps),
    /// tcpretrans; `sequence`: bcc's `-s` SEQ column.
    Retrans {
        sequence: bool,
    },
    /// tcpconnect -c: no line per event (the counts print at the end).
    Counted,
}

impl SnoopFormat for TcpTable {
    type Event = TcpEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        match *self {
            TcpTable::Life(l) => life_header(w, l),
            TcpTable::States(l) => states_header(w, l),
            TcpTable::Connect(l) => connect_header(w, l),
            TcpTable::Accept(stamps) => accept_header(w, stamps),
            TcpTable::Retrans { sequence } => retrans_header(w, sequence),
            TcpTable::Counted => Ok(()),
        }
    }

    fn line<W: Write>(&self, w: &mut W, e: &TcpEvent, clock: Clock) -> io::Result<()> {
        match *self {
            TcpTable::Life(l) => life_line(w, e, l, clock),
            TcpTable::States(l) => states_line(w, e, l, clock),
            TcpTable::Connect(l) => connect_line(w, e, l, clock),
            TcpTable::Accept(stamps) => accept_line(w, e, stamps, clock),
            TcpTable::Retrans { sequence } => retrans_line(w, e, clock, sequence),
            TcpTable::Counted => Ok(()),
        }
    }

    fn fields(&self, e: &TcpEvent) -> Value {
        let mut fields = tcp_fields(e);
        if let TcpTable::Retrans { .. } = self {
            fields["seq"] = retrans_seq(e).into();
        }
        fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::hist::{Histogram, Scale};

    /// The lines libbpf-tools' tcprtt prints above each histogram.
    #[test]
    fn rtt_address_lines_are_libbpf_tools() {
        let hist = Histogram::from_slots(Scale::Log2, "usecs", &[0, 0, 1]);
        let h = |addr: Option<&str>| RttHistogram {
            addr: addr.map(|a| a.parse().unwrap()),
            average: 5,
            hist: hist.clone(),
        };
        let first = |hists: &[RttHistogram], by, extended| {
            let mut out = Vec::new();
            rtt_hists(&mut out, hists, by, extended).unwrap();
            let text = String::from_utf8(out).unwrap();
            text.lines()
                .filter(|l| l.contains("Address"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(first(&[h(None)], None, false), ["All Addresses = ****** "]);
        assert_eq!(
            first(&[h(None)], None, true),
            ["All Addresses = ****** [AVG 5]"]
        );
        assert_eq!(
            first(
                &[h(Some("127.0.0.1")), h(Some("::1"))],
                Some(AddrSide::Local),
                true
            ),
            [
                "Local Address = 127.0.0.1 [AVG 5]",
                "Local Address = ::1 [AVG 5]"
            ]
        );
        assert_eq!(
            first(&[h(Some("10.0.0.2"))], Some(AddrSide::Remote), false),
            ["Remote Address = 10.0.0.2 "]
        );
    }

    /// Rows as libbpf-tools' tcplife and tcpstates print them.
    #[test]
    fn lines_in_libbpf_tools_layout() {
        let e = TcpEvent {
            skaddr: 0xffff8881_0a2b3c00,
            span_ns: 1_234_567,
            tx_bytes: 10_000,
            rx_bytes: 2_048,
            saddr: "127.0.0.1".parse().unwrap(),
            daddr: "127.0.0.1".parse().unwrap(),
            sport: 5000,
            dport: 41234,
            pid: 77,
            oldstate: 9,
            newstate: 7,
            comm: "conns".into(),
            ..TcpEvent::default()
        };
        let (clock, l) = (Clock::default(), SessionLayout::default());
        let mut out = Vec::new();
        TcpTable::Life(l).header(&mut out).unwrap();
        TcpTable::Life(l).line(&mut out, &e, clock).unwrap();
        TcpTable::States(l).line(&mut out, &e, clock).unwrap();
        TcpTable::Accept(l.stamps)
            .line(&mut out, &e, clock)
            .unwrap();
        let plain = TcpTable::Retrans { sequence: false };
        plain.header(&mut out).unwrap();
        plain.line(&mut out, &e, clock).unwrap();
        let sequence = TcpTable::Retrans { sequence: true };
        sequence.header(&mut out).unwrap();
        sequence.line(&mut out, &e, clock).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "PID     COMM             LADDR           LPORT RADDR           RPORT TX_KB  RX_KB  MS\n\
             77      conns            127.0.0.1       5000  127.0.0.1       41234 9.77   2.00   1.23\n\
             ffff88810a2b3c00 77      conns      127.0.0.1       5000  127.0.0.1       41234 LAST_ACK    -> CLOSE       1.235\n\
             77      conns        4  127.0.0.1        41234 127.0.0.1        5000 \n\
             TIME     PID     IP LADDR:LPORT          T> RADDR:RPORT          STATE\n\
             00:00:00 77      4  127.0.0.1:5000       R> 127.0.0.1:41234      CLOSE\n\
             TIME     PID     IP LADDR:LPORT          T> RADDR:RPORT          STATE        SEQ       \n\
             00:00:00 77      4  127.0.0.1:5000       R> 127.0.0.1:41234      CLOSE        1234567\n"
        );
        assert_eq!(sequence.fields(&e)["seq"], 1_234_567);
        let mut counts = ConnectCounts::new(true);
        counts.add(&e);
        counts.add(&e);
        let mut out = Vec::new();
        retrans_counts(&mut out, &counts).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\nLADDR:LPORT               RADDR:RPORT               RETRANSMITS\n\
             [127.0.0.1]#5000     <-> [127.0.0.1]#41234             2\n"
        );
    }
}
