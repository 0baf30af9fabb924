//! The TCP tools (tcplife, tcpconnect, tcpaccept, tcpstates, tcpretrans,
//! bindsnoop, solisten, tcptop, tcprtt) on the real
//! kernel: `workloads/conns` makes N loopback connections (IPv4 and IPv6)
//! on a port of the test's choosing, each moving known byte counts, traced
//! at once by scry (table and --json) and by Debian's libbpf-tools
//! (tcplife, tcpstates: the two that load on a kernel without kprobes) as
//! the oracle. Also: bad input, a port filter that matches nothing, and
//! SIGKILL leaving nothing attached.
//!
//! Bytes: tcplife reports tcp_sock's bytes_acked and bytes_received,
//! counts of sequence space, so each side's FIN counts one byte: a
//! session that sent TX bytes and received RX shows TX+1 and RX+1 (the
//! workload closes both ways, so both FINs are acked).

use crate::common;

use std::process::Command;

use common::tracer::{
    Tracer, assert_each_bad_input, peer, require_root_and, scry_tool, sigkill_frees_everything,
};

/// A port no one listens on now (bound, read, released).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// `conns N TX RX FAMILY PORT`, to its end; its pid.
fn run_conns(n: usize, tx: u64, rx: u64, family: u8, port: u16) -> u32 {
    let mut child = Command::new(common::workload("conns"))
        .args([
            n.to_string(),
            tx.to_string(),
            rx.to_string(),
            family.to_string(),
            port.to_string(),
        ])
        .spawn()
        .expect("conns runs");
    let pid = child.id();
    assert!(child.wait().expect("conns ends").success());
    pid
}

/// A tcplife line's (pid, comm, laddr, lport, raddr, rport, tx_kb, rx_kb),
/// the duration left out.
type Life = (u32, String, String, u16, String, u16, String, String);

fn life_of_line(line: &str) -> Option<Life> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let [pid, comm, laddr, lport, raddr, rport, tx, rx, ms] = f[..] else {
        return None;
    };
    ms.parse::<f64>().ok()?;
    Some((
        pid.parse().ok()?,
        comm.to_string(),
        laddr.to_string(),
        lport.parse().ok()?,
        raddr.to_string(),
        rport.parse().ok()?,
        tx.to_string(),
        rx.to_string(),
    ))
}

fn lives(lines: &[String]) -> Vec<Life> {
    let mut lives: Vec<Life> = lines.iter().filter_map(|l| life_of_line(l)).collect();
    lives.sort();
    lives
}

fn json_of(lines: &[String]) -> Vec<serde_json::Value> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn kb(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / 1024.0)
}

#[test]
fn tcplife_lists_each_session_with_its_bytes_as_libbpf_tools() {
    if !require_root_and("tcplife") {
        return;
    }
    let n = 6;
    for (family, tx, rx, addr) in [
        (4u8, 10_000u64, 3_000u64, "127.0.0.1"),
        (6, 70_000, 512, "::1"),
    ] {
        let port = free_port();
        let p = port.to_string();
        let clients = Tracer::start(scry_tool(&["tcplife", "-D", &p]), 1);
        let servers = Tracer::start(scry_tool(&["tcplife", "-L", &p, "--json"]), 1);
        let oracle = Tracer::start(peer(&["tcplife", "-D", &p]), 0);
        let pid = run_conns(n, tx, rx, family, port);
        clients.wait_until(|l| lives(l).len() >= n);
        oracle.wait_until(|l| lives(l).len() >= n);
        servers.wait_until(|l| json_of(l).len() >= n);
        let (ours, _) = clients.stop();
        let (theirs, _) = oracle.stop();
        let (json, _) = servers.stop();

        let ours = lives(&ours);
        assert_eq!(ours, lives(&theirs), "IPv{family}: the same sessions");
        assert_eq!(ours.len(), n, "{ours:?}");
        for life in &ours {
            let expected = (pid, "conns", addr, port, kb(tx + 1), kb(rx + 1));
            let got = (
                life.0,
                life.1.as_str(),
                life.4.as_str(),
                life.5,
                life.6.clone(),
                life.7.clone(),
            );
            assert_eq!(got, expected, "IPv{family} client side");
            assert_eq!(life.2, addr);
        }
        let json = json_of(&json);
        assert_eq!(json.len(), n, "{json:?}");
        for v in &json {
            assert_eq!(v["pid"], pid, "{v}");
            assert_eq!(v["lport"], port, "{v}");
            assert_eq!(
                (v["laddr"].as_str(), v["raddr"].as_str()),
                (Some(addr), Some(addr))
            );
            assert_eq!(v["ip"], family, "{v}");
            // The server side: received the client's TX, sent RX.
            assert_eq!(
                (v["rx_bytes"].as_u64(), v["tx_bytes"].as_u64()),
                (Some(tx + 1), Some(rx + 1)),
                "{v}"
            );
            assert_eq!(v["oldstate"], "LAST_ACK", "{v}");
        }
    }
}

/// A tcpconnect line's (pid, comm, ip, saddr, daddr, dport).
fn connect_of_line(line: &str) -> Option<(u32, String, u8, String, String, u16)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let [pid, comm, ip, saddr, daddr, dport] = f[..] else {
        return None;
    };
    Some((
        pid.parse().ok()?,
        comm.to_string(),
        ip.parse().ok()?,
        saddr.to_string(),
        daddr.to_string(),
        dport.parse().ok()?,
    ))
}

/// A tcpaccept line's (pid, comm, ip, raddr, rport, laddr, lport).
fn accept_of_line(line: &str) -> Option<(u32, String, u8, String, u16, String, u16)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let [pid, comm, ip, raddr, rport, laddr, lport] = f[..] else {
        return None;
    };
    Some((
        pid.parse().ok()?,
        comm.to_string(),
        ip.parse().ok()?,
        raddr.to_string(),
        rport.parse().ok()?,
        laddr.to_string(),
        lport.parse().ok()?,
    ))
}

/// libbpf-tools' tcpconnect cannot load here (it hooks tcp_v4_connect
/// with a kprobe), and bcc's tcpaccept is not installed: the workload's
/// known answer is the oracle, N connections made and accepted by it.
#[test]
fn tcpconnect_and_tcpaccept_count_n_each() {
    if !require_root_and("tcplife") {
        return;
    }
    let (n4, n6) = (7, 4);
    let port = free_port();
    let p = port.to_string();
    let connects = Tracer::start(scry_tool(&["tcpconnect", "-P", &p]), 1);
    let connects_json = Tracer::start(scry_tool(&["tcpconnect", "-P", &p, "--json"]), 1);
    let counted = Tracer::start(scry_tool(&["tcpconnect", "-c", "-P", &p]), 1);
    let accepts = Tracer::start(scry_tool(&["tcpaccept", "-P", &p]), 2);
    let json = Tracer::start(scry_tool(&["tcpaccept", "-P", &p, "--json"]), 2);
    let pid4 = run_conns(n4, 100, 100, 4, port);
    let pid6 = run_conns(n6, 100, 100, 6, port);
    let n = n4 + n6;
    let count =
        |parse: fn(&str) -> bool| move |l: &[String]| l.iter().filter(|l| parse(l)).count() >= n;
    connects.wait_until(count(|l| connect_of_line(l).is_some()));
    connects_json.wait_until(count(|l| l.starts_with('{')));
    accepts.wait_until(count(|l| accept_of_line(l).is_some()));
    json.wait_until(count(|l| l.starts_with('{')));
    let (connect_lines, _) = connects.stop();
    let (connect_json, _) = connects_json.stop();
    let (accept_lines, _) = accepts.stop();
    let (json_lines, _) = json.stop();
    let (count_lines, _) = counted.stop();

    let mut got: Vec<_> = connect_lines
        .iter()
        .filter_map(|l| connect_of_line(l))
        .collect();
    got.sort();
    let row = |pid, ip, addr: &str| {
        (
            pid,
            "conns".to_string(),
            ip,
            addr.to_string(),
            addr.to_string(),
            port,
        )
    };
    let mut expected = vec![row(pid4, 4, "127.0.0.1"); n4];
    expected.extend(vec![row(pid6, 6, "::1"); n6]);
    expected.sort();
    assert_eq!(got, expected, "tcpconnect");
    // --json: one object per connection, the line's fields.
    let mut objects: Vec<_> = json_of(&connect_json)
        .iter()
        .map(|v| {
            (
                v["pid"].as_u64().map_or(0, |p| p as u32),
                v["comm"].as_str().unwrap_or("").to_string(),
                v["ip"].as_u64().map_or(0, |i| i as u8),
                v["laddr"].as_str().unwrap_or("").to_string(),
                v["raddr"].as_str().unwrap_or("").to_string(),
                v["rport"].as_u64().map_or(0, |p| p as u16),
            )
        })
        .collect();
    objects.sort();
    assert_eq!(objects, expected, "tcpconnect --json: {connect_json:?}");

    let accepted: Vec<_> = accept_lines
        .iter()
        .filter_map(|l| accept_of_line(l))
        .collect();
    assert_eq!(accepted.len(), n, "{accept_lines:?}");
    for a in &accepted {
        let (pid, addr) = if a.2 == 4 {
            (pid4, "127.0.0.1")
        } else {
            (pid6, "::1")
        };
        assert_eq!(
            (a.0, a.1.as_str(), a.3.as_str(), a.5.as_str(), a.6),
            (pid, "conns", addr, addr, port),
            "{a:?}"
        );
    }
    assert_eq!(accepted.iter().filter(|a| a.2 == 4).count(), n4);
    let json = json_of(&json_lines);
    assert_eq!(json.len(), n);
    assert!(
        json.iter()
            .all(|v| v["lport"] == port && v["comm"] == "conns"),
        "{json:?}"
    );

    // -c: one row per (source, destination, port), the count at the end.
    let rows: Vec<Vec<&str>> = count_lines
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() == 4 && f[2] == p)
        .collect();
    assert_eq!(
        rows,
        vec![
            vec!["127.0.0.1", "127.0.0.1", p.as_str(), &n4.to_string()],
            vec!["::1", "::1", p.as_str(), &n6.to_string()]
        ],
        "{count_lines:?}"
    );
}

/// tcpconnect --cgroup PATH (bcc filters by a pinned cgroup map; scry by
/// the directory, in the kernel): N connections from a `conns` run in a
/// cgroup of the test's own, M from one outside it: the N only; a
/// cgroup with no task sees none.
#[test]
fn tcpconnect_cgroup_lists_only_that_cgroups_connections() {
    if !require_root_and("tcplife") {
        return;
    }
    let Some(cg) = crate::bpf_tools::TestCgroup::new("cg-tcpconnect") else {
        return;
    };
    let Some(empty) = crate::bpf_tools::TestCgroup::new("cg-tcpconnect-empty") else {
        return;
    };
    let (n, m) = (4usize, 3usize);
    let port = free_port();
    let p = port.to_string();
    let inside = Tracer::start(
        scry_tool(&["tcpconnect", "-P", &p, "--cgroup", &cg.arg(), "--json"]),
        1,
    );
    let nothing = Tracer::start(
        scry_tool(&["tcpconnect", "-P", &p, "--cgroup", &empty.arg()]),
        1,
    );
    let everyone = Tracer::start(scry_tool(&["tcpconnect", "-P", &p, "--json"]), 1);
    let outside_pid = run_conns(m, 10, 10, 4, port);
    // The same workload, moved into the cgroup before it connects.
    let procs = cg.0.join("cgroup.procs");
    let status = Command::new("sh")
        .args([
            "-c",
            "echo $$ > \"$1\" && exec \"$2\" \"$3\" 10 10 4 \"$4\"",
            "sh",
        ])
        .arg(&procs)
        .arg(common::workload("conns"))
        .arg(n.to_string())
        .arg(&p)
        .status()
        .expect("conns runs in the cgroup");
    assert!(status.success());
    everyone.wait_until(|l| json_of(l).len() >= n + m);
    inside.wait_until(|l| json_of(l).len() >= n);
    let (all, _) = everyone.stop();
    let (lines, err) = inside.stop();
    let (none, _) = nothing.stop();
    let pids = |lines: &[String]| -> Vec<u64> {
        json_of(lines)
            .iter()
            .filter_map(|v| v["pid"].as_u64())
            .collect()
    };
    let all = pids(&all);
    assert_eq!(all.len(), n + m, "{all:?}");
    let inside_pid = all
        .iter()
        .copied()
        .find(|&p| p != u64::from(outside_pid))
        .expect("the cgroup's run");
    assert_eq!(pids(&lines), vec![inside_pid; n], "{lines:?}\n{err}");
    assert!(
        none.iter().all(|l| !l.contains(&p)),
        "the empty cgroup: {none:?}"
    );
}

/// A tcpstates line without its duration.
fn transitions(lines: &[String]) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = lines
        .iter()
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .filter(|f| f.len() == 11)
        .map(|mut f| {
            f.pop();
            f
        })
        .collect();
    rows.sort();
    rows
}

/// Both hook the same tracepoint call and read the current task there, so
/// every line agrees, the process too. Per connection the server's
/// socket makes five transitions (LISTEN -> SYN_RECV -> ESTABLISHED ->
/// CLOSE_WAIT -> LAST_ACK -> CLOSE), the listener two.
#[test]
fn tcpstates_shows_the_transitions_libbpf_tools_shows() {
    if !require_root_and("tcpstates") {
        return;
    }
    let n = 5;
    let port = free_port();
    let p = port.to_string();
    let scry = Tracer::start(scry_tool(&["tcpstates", "-L", &p]), 1);
    let json = Tracer::start(scry_tool(&["tcpstates", "-L", &p, "--json"]), 1);
    let oracle = Tracer::start(peer(&["tcpstates", "-L", &p]), 0);
    run_conns(n, 1000, 1000, 4, port);
    let want = 5 * n + 2;
    scry.wait_until(|l| transitions(l).len() >= want);
    oracle.wait_until(|l| transitions(l).len() >= want);
    json.wait_until(|l| json_of(l).len() >= want);
    let (json, _) = json.stop();
    let (ours, _) = scry.stop();
    let (theirs, _) = oracle.stop();
    assert_eq!(
        ours.first().map(String::as_str),
        theirs.first().map(|l| l.trim_end()),
        "the header"
    );
    let ours = transitions(&ours);
    assert_eq!(ours.len(), want, "{ours:?}");
    assert_eq!(ours, transitions(&theirs));
    // --json: one object per transition, the line's fields.
    let mut objects: Vec<Vec<String>> = json_of(&json)
        .iter()
        .map(|v| {
            let field = |k: &str| match &v[k] {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let mut row: Vec<String> = [
                "skaddr", "pid", "comm", "laddr", "lport", "raddr", "rport", "oldstate",
            ]
            .map(field)
            .to_vec();
            row.extend(["->".to_string(), field("newstate")]);
            row
        })
        .collect();
    objects.sort();
    assert_eq!(objects, ours, "tcpstates --json: {json:?}");
    let closes = ours
        .iter()
        .filter(|f| f[7] == "LAST_ACK" && f[9] == "CLOSE")
        .count();
    assert_eq!(closes, n);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    if !require_root_and("tcplife") {
        return;
    }
    let cases: [(&[&str], Option<&str>, &str); 15] = [
        (
            &["tcprtt", "-a", "host"],
            None,
            "-a host: not an IPv4 or IPv6 address",
        ),
        (&["tcplife", "-L", "0"], None, "not a port"),
        (
            &["tcplife", "-D", "1,2,3,4,5,6,7,8,9"],
            None,
            "at most 8 ports",
        ),
        (&["tcpconnect", "-P", "http"], None, "not a port"),
        (&["tcpaccept", "-p", "4194304"], None, "no such process"),
        (
            &["tcpretrans", "-l"],
            None,
            "tail loss probes have no tracepoint",
        ),
        (&["bindsnoop", "-P", "0"], None, "not a port"),
        (
            &["bindsnoop", "-c", "/sys/fs/cgroup/scry-none"],
            None,
            "--cgroup /sys/fs/cgroup/scry-none",
        ),
        (&["solisten", "-p", "4194304"], None, "no such process"),
        (&["tcptop", "-p", "4194304"], None, "no such process"),
        (
            &["tcptop", "--cgroupmap", "/sys/fs/bpf/cg"],
            None,
            "--cgroupmap /sys/fs/bpf/cg: bcc's map",
        ),
        (
            &["tcptop", "--mntnsmap", "/sys/fs/bpf/ns"],
            None,
            "--mntnsmap /sys/fs/bpf/ns: bcc's map",
        ),
        (
            &["tcpconnect", "--cgroupmap", "/sys/fs/bpf/cg"],
            None,
            "--cgroupmap /sys/fs/bpf/cg: bcc's map",
        ),
        (
            &["tcpconnect", "--mntnsmap", "/sys/fs/bpf/ns"],
            None,
            "--mntnsmap /sys/fs/bpf/ns: bcc's map",
        ),
        // A kernel without the hooks: none of the kinds the programs come in.
        (&["tcplife"], Some("kprobe"), "no hook"),
    ];
    assert_each_bad_input(&cases);
}

#[test]
fn a_port_filter_that_matches_nothing_says_so_once() {
    if !require_root_and("tcplife") {
        return;
    }
    let unused = free_port();
    let tracer = Tracer::start(scry_tool(&["tcplife", "-L", &unused.to_string()]), 1);
    run_conns(2, 10, 10, 4, free_port());
    let (lines, err) = tracer.stop();
    assert_eq!(lines.len(), 1, "only the header: {lines:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("nothing matched -L {unused}")),
        "{err}"
    );
}

#[test]
fn sigkill_leaves_no_program_or_link() {
    if !require_root_and("tcplife") {
        return;
    }
    for (args, links) in [
        (&["tcplife"][..], 1),
        (&["tcpconnect"][..], 1),
        (&["tcpaccept"][..], 2),
        (&["tcpstates"][..], 1),
        (&["tcpretrans"][..], 1),
        (&["bindsnoop"][..], 2),
        (&["solisten"][..], 2),
        (&["tcptop"][..], 2),
        (&["tcprtt"][..], 1),
    ] {
        sigkill_frees_everything(args, links);
    }
}

/// `retrans N FAMILY` to its end (workloads/retrans: N connects to a full
/// listener, every SYN retransmitted until the connect times out); the
/// listener's port.
fn run_retrans(n: usize, family: u8) -> u16 {
    let out = common::output(
        Command::new(common::workload("retrans")).args([n.to_string(), family.to_string()]),
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("retrans timedout {n}")),
        "{stderr}"
    );
    stdout
        .trim()
        .strip_prefix("retrans port ")
        .and_then(|p| p.parse().ok())
        .expect("retrans port P")
}

/// A tcpretrans line's (ip, laddr:lport, raddr:rport, state).
fn retrans_of_line(line: &str) -> Option<(u8, String, String, String)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let [_time, pid, ip, local, "R>", remote, state] = f[..] else {
        return None;
    };
    pid.parse::<u32>().ok()?;
    Some((
        ip.parse().ok()?,
        local.to_string(),
        remote.to_string(),
        state.to_string(),
    ))
}

/// bcc's tcpretrans is not installed and bpftrace's tcpretrans.bt needs a
/// kprobe: the oracle is bpftrace on the same tracepoint, one line per
/// retransmit (`LPORT RPORT`). Each of the N connections retransmits its
/// SYN at least once (how often is the kernel's timer: both count the
/// same), all in SYN_SENT.
#[test]
fn tcpretrans_lists_each_retransmit_as_the_tracepoint_does() {
    if !require_root_and("tcplife")
        || !common::require_tool("bpftrace", "bpftrace is not installed (scripts/deps)")
    {
        return;
    }
    let n = 4;
    let lines = Tracer::start(scry_tool(&["tcpretrans"]), 1);
    let counted = Tracer::start(scry_tool(&["tcpretrans", "-c", "-4"]), 1);
    let json = Tracer::start(scry_tool(&["tcpretrans", "-6", "--json"]), 1);
    let oracle = Tracer::start(
        peer(&[
            "bpftrace",
            "-e",
            "tracepoint:tcp:tcp_retransmit_skb { printf(\"%d %d\\n\", args->sport, args->dport); }",
        ]),
        0,
    );
    let port4 = run_retrans(n, 4);
    let port6 = run_retrans(n, 6);
    let of_port = |port: u16| {
        move |l: &String| l.split_whitespace().nth(1) == Some(port.to_string().as_str())
    };
    let wanted = |l: &[String]| {
        l.iter().filter(|l| of_port(port4)(l)).count() >= n
            && l.iter().filter(|l| of_port(port6)(l)).count() >= n
    };
    oracle.wait_until(wanted);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (theirs, _) = oracle.stop();
    let (ours, _) = lines.stop();
    let (json_lines, _) = json.stop();
    let (count_lines, _) = counted.stop();

    // Per (family, local port): the retransmits bpftrace saw.
    let mut expected: Vec<(u8, String, String)> = Vec::new();
    for l in &theirs {
        let [sport, dport] = l.split_whitespace().collect::<Vec<_>>()[..] else {
            continue;
        };
        let (ip, addr) = match dport.parse::<u16>() {
            Ok(p) if p == port4 => (4, "127.0.0.1"),
            Ok(p) if p == port6 => (6, "::1"),
            _ => continue,
        };
        expected.push((ip, format!("{addr}:{sport}"), format!("{addr}:{dport}")));
    }
    expected.sort();
    let distinct: std::collections::BTreeSet<_> = expected.iter().map(|e| &e.1).collect();
    assert_eq!(distinct.len(), 2 * n, "{theirs:?}");
    let mut got: Vec<(u8, String, String)> = ours
        .iter()
        .filter_map(|l| retrans_of_line(l))
        .filter(|r| r.2.ends_with(&format!(":{port4}")) || r.2.ends_with(&format!(":{port6}")))
        .map(|r| {
            assert_eq!(r.3, "SYN_SENT", "{r:?}");
            (r.0, r.1, r.2)
        })
        .collect();
    got.sort();
    assert_eq!(got, expected, "scry:\n{ours:?}");

    let json = json_of(&json_lines);
    let six: Vec<_> = expected.iter().filter(|e| e.0 == 6).collect();
    let json_six: Vec<_> = json.iter().filter(|v| v["rport"] == port6).collect();
    assert_eq!(json_six.len(), six.len(), "{json:?}");
    assert!(json.iter().all(|v| v["ip"] == 6), "-6: {json:?}");
    assert!(json_six.iter().all(|v| v["newstate"] == "SYN_SENT"));

    // -c -4: one row per IPv4 connection, its count bpftrace's.
    let rows: Vec<(String, u64)> = count_lines
        .iter()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [local, "<->", remote, n] = f[..] else {
                return None;
            };
            (remote == format!("[127.0.0.1]#{port4}"))
                .then(|| (local.to_string(), n.parse().ok()))
                .and_then(|(l, n)| Some((l, n?)))
        })
        .collect();
    assert_eq!(rows.len(), n, "{count_lines:?}");
    for (local, count) in &rows {
        let sport = local.rsplit('#').next().unwrap_or_default();
        let theirs = expected
            .iter()
            .filter(|e| e.1 == format!("127.0.0.1:{sport}"))
            .count();
        assert_eq!(*count as usize, theirs, "{local}: {count_lines:?}");
    }
    assert!(
        count_lines.iter().all(|l| !l.contains("::1")),
        "-4: {count_lines:?}"
    );
}

/// `binds N K FAMILY` to its end (workloads/binds): its pid and the N ports.
fn run_binds(n: usize, k: usize, family: u8) -> (u32, Vec<u16>) {
    let child = Command::new(common::workload("binds"))
        .args([n.to_string(), k.to_string(), family.to_string()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("binds runs");
    let pid = child.id();
    let out = child.wait_with_output().expect("binds ends");
    assert!(out.status.success());
    let ports = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("binds port ")?.parse().ok())
        .collect();
    (pid, ports)
}

/// The lines of process `pid` (the first column), split.
fn lines_of(lines: &[String], pid: u32) -> Vec<Vec<String>> {
    lines
        .iter()
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .filter(|f| f.first().is_some_and(|p| *p == pid.to_string()))
        .collect()
}

/// libbpf-tools' bindsnoop and solisten need kprobes (inet_bind,
/// inet_listen) and cannot load here: the workload's known answer is the
/// oracle. N binds to port 0 with SO_REUSEADDR, each listening with
/// backlog i + 1, then K binds failing with EADDRINUSE: bindsnoop -x
/// shows the N with the ports the kernel chose and option R, and the K
/// with -98; without -x only the N; solisten the N backlogs.
#[test]
fn bindsnoop_and_solisten_list_each_bind_and_listen() {
    if !require_root_and("tcplife") {
        return;
    }
    let (n, k) = (5, 3);
    for (family, addr) in [(4u8, "127.0.0.1"), (6, "::1")] {
        let failed = Tracer::start(scry_tool(&["bindsnoop", "-x"]), 2);
        let json = Tracer::start(scry_tool(&["bindsnoop", "--json"]), 2);
        let listens = Tracer::start(scry_tool(&["solisten", "-t"]), 2);
        let listens_json = Tracer::start(scry_tool(&["solisten", "--json"]), 2);
        let (pid, ports) = run_binds(n, k, family);
        assert_eq!(ports.len(), n);
        let of_pid = |l: &String| l.contains(&format!("\"pid\":{pid},"));
        failed.wait_until(|l| lines_of(l, pid).len() >= n + k);
        json.wait_until(|l| l.iter().filter(|l| of_pid(l)).count() >= n);
        listens.wait_until(|l| {
            l.iter()
                .filter(|l| l.split_whitespace().nth(1) == Some(pid.to_string().as_str()))
                .count()
                >= n
        });
        let (failed, _) = failed.stop();
        let (json, _) = json.stop();
        listens_json.wait_until(|l| l.iter().filter(|l| of_pid(l)).count() >= n);
        let (listens, _) = listens.stop();
        let (listens_json, _) = listens_json.stop();

        let binds = lines_of(&failed, pid);
        let mut expected: Vec<Vec<String>> = ports
            .iter()
            .map(|p| {
                [
                    &pid.to_string(),
                    "binds",
                    "0",
                    "TCP",
                    "...R.",
                    "0",
                    &p.to_string(),
                    addr,
                ]
                .map(str::to_string)
                .to_vec()
            })
            .collect();
        let refused = [
            &pid.to_string(),
            "binds",
            "-98",
            "TCP",
            ".....",
            "0",
            &ports[0].to_string(),
            addr,
        ];
        expected.extend(vec![refused.map(str::to_string).to_vec(); k]);
        assert_eq!(binds, expected, "IPv{family} bindsnoop -x:\n{failed:?}");

        let json: Vec<serde_json::Value> = json
            .iter()
            .filter(|l| of_pid(l))
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let json_ports: Vec<u64> = json.iter().filter_map(|v| v["port"].as_u64()).collect();
        assert_eq!(
            json_ports,
            ports.iter().map(|&p| u64::from(p)).collect::<Vec<_>>()
        );
        assert!(
            json.iter()
                .all(|v| v["ret"] == 0 && v["ip"] == family && v["addr"] == addr),
            "{json:?}"
        );

        let rows: Vec<Vec<String>> = listens
            .iter()
            .map(|l| {
                l.split_whitespace()
                    .skip(1)
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .filter(|f| f.first() == Some(&pid.to_string()))
            .collect();
        let expected: Vec<Vec<String>> = ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (backlog, proto) = ((i + 1).to_string(), format!("TCPv{family}"));
                [
                    &pid.to_string(),
                    "binds",
                    "0",
                    &backlog,
                    &proto,
                    &p.to_string(),
                    addr,
                ]
                .map(str::to_string)
                .to_vec()
            })
            .collect();
        assert_eq!(rows, expected, "IPv{family} solisten -t:\n{listens:?}");
        // --json: the same fields, one object per listen.
        let objects: Vec<Vec<String>> = listens_json
            .iter()
            .filter(|l| of_pid(l))
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|v| {
                ["pid", "comm", "ret", "backlog", "proto", "port", "addr"]
                    .map(|k| match &v[k] {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .to_vec()
            })
            .collect();
        assert_eq!(
            objects, expected,
            "IPv{family} solisten --json:\n{listens_json:?}"
        );
    }
}

/// libbpf-tools' tcptop needs kprobes (tcp_sendmsg, tcp_cleanup_rbuf) and
/// cannot load here: the workload's known answer is the oracle. N
/// connections, each sending TX bytes and receiving RX: per connection,
/// the client side received RX and sent TX, the server side the reverse,
/// to the byte in --json, to the KB in the table (one interval, ended by
/// SIGINT, so no connection is split across two).
#[test]
fn tcptop_counts_each_connections_bytes() {
    if !require_root_and("tcplife") {
        return;
    }
    let n = 4;
    for (family, tx, rx, addr) in [
        (4u8, 100_000u64, 30_000u64, "127.0.0.1"),
        (6, 5_000, 70_000, "::1"),
    ] {
        let port = free_port();
        let json = Tracer::start(scry_tool(&["tcptop", "--json", "60"]), 2);
        let text = Tracer::start(scry_tool(&["tcptop", "-S", "-r", "100", "60"]), 2);
        let pid = run_conns(n, tx, rx, family, port);
        let (json, _) = json.stop();
        let (text, _) = text.stop();

        let rows: Vec<serde_json::Value> = json
            .iter()
            .filter_map(|l| serde_json::from_str::<Vec<serde_json::Value>>(l).ok())
            .flatten()
            .filter(|r| r["pid"] == pid)
            .collect();
        let side = |server: bool| -> Vec<(u64, u64)> {
            let key = if server { "lport" } else { "rport" };
            rows.iter()
                .filter(|r| r[key] == port)
                .map(|r| {
                    assert_eq!(
                        (r["laddr"].as_str(), r["raddr"].as_str()),
                        (Some(addr), Some(addr)),
                        "{r}"
                    );
                    assert_eq!(r["ip"], family, "{r}");
                    (
                        r["rx_bytes"].as_u64().unwrap_or(0),
                        r["tx_bytes"].as_u64().unwrap_or(0),
                    )
                })
                .collect()
        };
        assert_eq!(
            side(false),
            vec![(rx, tx); n],
            "IPv{family} clients: {json:?}"
        );
        assert_eq!(
            side(true),
            vec![(tx, rx); n],
            "IPv{family} servers: {json:?}"
        );

        let kb = |rx: u64, tx: u64| ((rx / 1024).to_string(), (tx / 1024).to_string());
        let text_rows: Vec<(String, String)> = text
            .iter()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|f| f.len() == 6 && f[0] == pid.to_string())
            .map(|f| (f[4].to_string(), f[5].to_string()))
            .collect();
        let mut expected = vec![kb(rx, tx); n];
        expected.extend(vec![kb(tx, rx); n]);
        let mut got = text_rows.clone();
        got.sort();
        expected.sort();
        assert_eq!(got, expected, "IPv{family}: {text:?}");
    }
}

/// libbpf-tools' tcprtt needs fentry or a kprobe on tcp_rcv_established
/// and cannot load here: the oracle is bpftrace counting the same
/// tracepoint (tcp:tcp_probe) for the port. The histogram holds one RTT
/// per segment received by the port's sockets: the same count.
#[test]
fn tcprtt_counts_each_segment_the_tracepoint_sees() {
    if !require_root_and("tcplife")
        || !common::require_tool("bpftrace", "bpftrace is not installed (scripts/deps)")
    {
        return;
    }
    let port = free_port();
    let p = port.to_string();
    let ours = Tracer::start(scry_tool(&["tcprtt", "-p", &p]), 1);
    let json = Tracer::start(scry_tool(&["tcprtt", "-l", &p, "-m", "--json"]), 1);
    let local = Tracer::start(scry_tool(&["tcprtt", "-p", &p, "-a", "127.0.0.1"]), 1);
    let remote = Tracer::start(scry_tool(&["tcprtt", "-p", &p, "-A", "127.0.0.1"]), 1);
    let elsewhere = Tracer::start(scry_tool(&["tcprtt", "-p", &p, "-a", "::1"]), 1);
    let program = format!("tracepoint:tcp:tcp_probe /args->sport == {port}/ {{ @n = count(); }}");
    let oracle = Tracer::start(peer(&["bpftrace", "-e", &program]), 0);
    run_conns(6, 200_000, 50_000, 4, port);
    let (ours, _) = ours.stop();
    let (json, _) = json.stop();
    let (local, _) = local.stop();
    let (remote, _) = remote.stop();
    let (elsewhere, _) = elsewhere.stop();
    let (theirs, _) = oracle.stop();
    let count: u64 = theirs
        .iter()
        .find_map(|l| l.strip_prefix("@n: ")?.trim().parse().ok())
        .expect("bpftrace's count");
    assert!(count >= 6, "{theirs:?}");
    assert_eq!(common::hist_total(&ours.join("\n")), count, "{ours:?}");
    assert_eq!(
        common::hist_total(&local.join("\n")),
        count,
        "-a: {local:?}"
    );
    assert_eq!(
        common::hist_total(&remote.join("\n")),
        count,
        "-A: {remote:?}"
    );
    assert_eq!(
        common::hist_total(&elsewhere.join("\n")),
        0,
        "-a ::1: {elsewhere:?}"
    );
    assert!(
        ours.iter()
            .any(|l| l == "     usecs               : count    distribution"),
        "{ours:?}"
    );
    let doc: serde_json::Value = serde_json::from_str(&json.join("\n")).expect("one JSON document");
    assert_eq!(doc[0]["total"], count, "{doc}");
    assert_eq!(doc[0]["unit"], "msecs", "{doc}");
}

/// The sections of tcprtt's text: each address line and its histogram's
/// total.
fn rtt_sections(lines: &[String]) -> Vec<(String, u64)> {
    let mut sections: Vec<(String, u64)> = Vec::new();
    for line in lines {
        if line.contains(" Address") {
            sections.push((line.clone(), 0));
        } else if let Some(last) = sections.last_mut() {
            last.1 += common::hist_total(line);
        }
    }
    sections
}

/// tcprtt -b / -B (libbpf-tools' histograms per local or remote address)
/// and -e (each with its average) on IPv4 and IPv6 connections to one
/// port: a histogram per address holding the segments bpftrace counts
/// for that family at tcp:tcp_probe, and the average its srtt sum gives.
#[test]
fn tcprtt_by_address_with_averages() {
    if !require_root_and("tcplife")
        || !common::require_tool("bpftrace", "bpftrace is not installed (scripts/deps)")
    {
        return;
    }
    let port = free_port();
    let p = port.to_string();
    let local = Tracer::start(scry_tool(&["tcprtt", "-p", &p, "-b", "-e"]), 1);
    let remote = Tracer::start(scry_tool(&["tcprtt", "-p", &p, "-B"]), 1);
    let all = Tracer::start(scry_tool(&["tcprtt", "-p", &p, "-e"]), 1);
    let json = Tracer::start(scry_tool(&["tcprtt", "-p", &p, "-b", "--json"]), 1);
    let program = format!(
        "BEGIN {{ printf(\"ready\\n\"); }} tracepoint:tcp:tcp_probe /args->sport == {port}/ \
         {{ @n[args->family] = count(); @s[args->family] = sum(args->srtt); }}"
    );
    let oracle = Tracer::start(peer(&["bpftrace", "-e", &program]), 0);
    oracle.wait_until(|l| l.iter().any(|l| l == "ready"));
    run_conns(4, 100_000, 20_000, 4, port);
    run_conns(4, 100_000, 20_000, 6, port);
    let (local, _) = local.stop();
    let (remote, _) = remote.stop();
    let (all, _) = all.stop();
    let (json, _) = json.stop();
    let (theirs, _) = oracle.stop();
    let value = |map: &str, family: u16| -> u64 {
        let prefix = format!("@{map}[{family}]: ");
        theirs
            .iter()
            .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("bpftrace's {prefix}: {theirs:?}"))
    };
    let (n4, n6) = (value("n", 2), value("n", 10));
    let (s4, s6) = (value("s", 2), value("s", 10));
    assert_eq!(
        rtt_sections(&local),
        [
            (format!("Local Address = 127.0.0.1 [AVG {}]", s4 / n4), n4),
            (format!("Local Address = ::1 [AVG {}]", s6 / n6), n6),
        ],
        "{local:?}"
    );
    assert_eq!(
        rtt_sections(&remote),
        [
            ("Remote Address = 127.0.0.1 ".to_string(), n4),
            ("Remote Address = ::1 ".to_string(), n6),
        ],
        "{remote:?}"
    );
    assert_eq!(
        rtt_sections(&all),
        [(
            format!("All Addresses = ****** [AVG {}]", (s4 + s6) / (n4 + n6)),
            n4 + n6
        )],
        "{all:?}"
    );
    let doc: serde_json::Value = serde_json::from_str(&json.join("\n")).expect("one JSON document");
    assert_eq!(doc[0]["address"], "127.0.0.1", "{doc}");
    assert_eq!(doc[1]["address"], "::1", "{doc}");
    assert_eq!(
        (doc[0]["total"].clone(), doc[1]["total"].clone()),
        (n4.into(), n6.into()),
        "{doc}"
    );
    assert_eq!(doc[1]["average"], s6 / n6, "{doc}");
}

/// tcpretrans -s (bcc's SEQ column): each retransmitted SYN's sequence
/// number, which the kernel reads from the segment's control block; the
/// oracle is bpftrace at the same tracepoint reading the socket's
/// snd_una, which is the SYN's sequence number while the socket is in
/// SYN_SENT (tcp_connect_init).
#[test]
fn tcpretrans_sequence_numbers_are_the_syns() {
    if !require_root_and("tcplife")
        || !common::require_tool("bpftrace", "bpftrace is not installed (scripts/deps)")
    {
        return;
    }
    let n = 2;
    let ours = Tracer::start(scry_tool(&["tcpretrans", "-s"]), 1);
    let json = Tracer::start(scry_tool(&["tcpretrans", "--json"]), 1);
    let oracle = Tracer::start(
        peer(&[
            "bpftrace",
            "-e",
            "BEGIN { printf(\"ready\\n\"); } \
             tracepoint:tcp:tcp_retransmit_skb { printf(\"%d %d %u\\n\", args->sport, args->dport, \
             ((struct tcp_sock *)args->skaddr)->snd_una); }",
        ]),
        0,
    );
    oracle.wait_until(|l| l.iter().any(|l| l == "ready"));
    let ports = [run_retrans(n, 4), run_retrans(n, 6)];
    let ours_port = |l: &String| {
        ports
            .iter()
            .any(|p| l.split_whitespace().nth(1) == Some(p.to_string().as_str()))
    };
    oracle.wait_until(|l| l.iter().filter(|l| ours_port(l)).count() >= 2 * n);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (theirs, _) = oracle.stop();
    let (ours, _) = ours.stop();
    let (json_lines, _) = json.stop();
    let mut expected: Vec<(String, String)> = theirs
        .iter()
        .filter(|l| ours_port(l))
        .filter_map(|l| {
            let [sport, _, seq] = l.split_whitespace().collect::<Vec<_>>()[..] else {
                return None;
            };
            Some((sport.to_string(), seq.to_string()))
        })
        .collect();
    expected.sort();
    assert!(expected.len() >= 2 * n, "{theirs:?}");
    assert!(
        ours.iter().any(|l| l.split_whitespace().collect::<Vec<_>>()
            == [
                "TIME",
                "PID",
                "IP",
                "LADDR:LPORT",
                "T>",
                "RADDR:RPORT",
                "STATE",
                "SEQ"
            ]),
        "{ours:?}"
    );
    let mut got: Vec<(String, String)> = ours
        .iter()
        .filter_map(|l| {
            let [_, _, _, local, "R>", remote, "SYN_SENT", seq] =
                l.split_whitespace().collect::<Vec<_>>()[..]
            else {
                return None;
            };
            let rport: u16 = remote.rsplit(':').next()?.parse().ok()?;
            ports.contains(&rport).then(|| {
                let lport = local.rsplit(':').next().unwrap_or_default();
                (lport.to_string(), seq.to_string())
            })
        })
        .collect();
    got.sort();
    assert_eq!(got, expected, "scry:\n{ours:?}");
    let mut from_json: Vec<(String, String)> = json_of(&json_lines)
        .iter()
        .filter(|v| ports.iter().any(|p| v["rport"] == *p))
        .map(|v| (v["lport"].to_string(), v["seq"].to_string()))
        .collect();
    from_json.sort();
    assert_eq!(from_json, expected, "--json: {json_lines:?}");
}
