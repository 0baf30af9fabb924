//! The streaming BPF tools (execsnoop, opensnoop, exitsnoop, killsnoop,
//! sigsnoop, mountsnoop, ...) on the real kernel: workloads with known
//! answers (N executions of which some fail, N opens of which K fail, N
//! signals of which K fail, N mounts and umounts then K failed mounts), traced at once by scry (table and --json) and by
//! Debian's libbpf-tools as the oracle; the same events from both. Also:
//! bad input, a filter that matches nothing, SIGKILL leaving nothing
//! attached.
//!
//! A tracer counts as ready when it holds its BPF links (scry: read from
//! its fdinfo) or printed its header (libbpf-tools prints it after
//! attaching); each is stopped once it printed every line the workload
//! should give, so no assertion waits on a fixed time.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::tracer::{
    Tracer, assert_each_bad_input, peer, require_root_and, scry_tool, sigkill_frees_everything,
};

/// An execsnoop table line's (comm, ppid, ret, args).
type Exec = (String, u32, i32, Vec<String>);

fn exec_of_line(line: &str) -> Option<Exec> {
    let mut f = line.split_whitespace();
    let comm = f.next()?.to_string();
    let _pid: u32 = f.next()?.parse().ok()?;
    let ppid = f.next()?.parse().ok()?;
    let ret = f.next()?.parse().ok()?;
    Some((comm, ppid, ret, f.map(str::to_string).collect()))
}

fn exec_of_json(line: &str) -> Option<Exec> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let args = v["args"].as_array()?;
    Some((
        v["comm"].as_str()?.to_string(),
        u32::try_from(v["ppid"].as_u64()?).ok()?,
        i32::try_from(v["ret"].as_i64()?).ok()?,
        args.iter()
            .filter_map(|a| Some(a.as_str()?.to_string()))
            .collect(),
    ))
}

/// The workload's executions among `lines` (children of `parent`), sorted.
fn workload_execs(lines: &[String], parent: u32, parse: fn(&str) -> Option<Exec>) -> Vec<Exec> {
    let mut execs: Vec<Exec> = lines
        .iter()
        .filter_map(|l| parse(l))
        .filter(|e| e.1 == parent && e.3.get(1).is_some_and(|a| a == "execs"))
        .collect();
    execs.sort();
    execs
}

#[test]
fn execsnoop_lists_each_execution_with_its_arguments_and_return_code_as_libbpf_tools() {
    if !require_root_and("execsnoop") {
        return;
    }
    let dir = common::tempdir();
    let missing = dir.path().join("missing");
    let noexec = dir.path().join("noexec");
    std::fs::write(&noexec, "not a program\n").expect("write");
    let paths = [
        "/bin/true".to_string(),
        path_str(&missing),
        path_str(&noexec),
    ];
    let n = 30;
    let failing = Tracer::start(scry_tool(&["execsnoop", "-x"]), 2);
    let json = Tracer::start(scry_tool(&["execsnoop", "--json"]), 2);
    let oracle = Tracer::start(peer(&["execsnoop", "-x"]), 0);
    let mut workload = Command::new(common::workload("execs"));
    let mut workload = workload
        .arg(n.to_string())
        .args(&paths)
        .spawn()
        .expect("execs runs");
    let parent = workload.id();
    assert!(workload.wait().expect("execs ends").success());

    let mut expected: Vec<Exec> = (0..n)
        .map(|i| {
            let path = &paths[i % 3];
            let (comm, ret) = [("true", 0), ("execs", -2), ("execs", -13)][i % 3];
            let args = vec![path.clone(), "execs".to_string(), i.to_string()];
            (comm.to_string(), parent, ret, args)
        })
        .collect();
    expected.sort();
    let successes: Vec<Exec> = expected.iter().filter(|e| e.2 == 0).cloned().collect();
    let count = |want: usize, parse: fn(&str) -> Option<Exec>| {
        move |lines: &[String]| workload_execs(lines, parent, parse).len() >= want
    };
    failing.wait_until(count(n, exec_of_line));
    json.wait_until(count(successes.len(), exec_of_json));
    oracle.wait_until(count(n, exec_of_line));
    let (scry_lines, _) = failing.stop();
    let (json_lines, _) = json.stop();
    let (peer_lines, _) = oracle.stop();
    assert_eq!(
        scry_lines.first().map(String::as_str),
        peer_lines.first().map(|l| l.trim_end()),
        "the header"
    );
    assert_eq!(workload_execs(&scry_lines, parent, exec_of_line), expected);
    assert_eq!(workload_execs(&peer_lines, parent, exec_of_line), expected);
    assert_eq!(workload_execs(&json_lines, parent, exec_of_json), successes);
}

fn path_str(path: &Path) -> String {
    path.to_str().expect("utf-8 temp path").to_string()
}

/// An opensnoop -e line's (pid, comm, fd, err, flags, path).
type Open = (u32, String, i32, i32, String, String);

fn open_of_line(line: &str) -> Option<Open> {
    let mut f = line.split_whitespace();
    Some((
        f.next()?.parse().ok()?,
        f.next()?.to_string(),
        f.next()?.parse().ok()?,
        f.next()?.parse().ok()?,
        f.next()?.to_string(),
        f.next()?.to_string(),
    ))
}

fn open_of_json(line: &str) -> Option<Open> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    Some((
        u32::try_from(v["pid"].as_u64()?).ok()?,
        v["comm"].as_str()?.to_string(),
        i32::try_from(v["fd"].as_i64()?).ok()?,
        i32::try_from(v["err"].as_i64()?).ok()?,
        format!("{:08o}", v["flags"].as_i64()?),
        v["path"].as_str()?.to_string(),
    ))
}

/// The opens of files under `dir` among `lines`, sorted.
fn opens_under(lines: &[String], dir: &str, parse: fn(&str) -> Option<Open>) -> Vec<Open> {
    let mut opens: Vec<Open> = lines
        .iter()
        .filter_map(|l| parse(l))
        .filter(|o| o.5.starts_with(dir))
        .collect();
    opens.sort();
    opens
}

#[test]
fn opensnoop_lists_n_opens_of_which_k_fail_as_libbpf_tools() {
    if !require_root_and("opensnoop") {
        return;
    }
    let dir = common::tempdir();
    let root = path_str(dir.path());
    std::fs::write(dir.path().join("present"), "x").expect("write");
    let (n, k) = (50, 20);
    let all = Tracer::start(scry_tool(&["opensnoop", "-e", "-n", "opens"]), 4);
    let failed = Tracer::start(scry_tool(&["opensnoop", "-x", "--json"]), 4);
    let oracle = Tracer::start(peer(&["opensnoop", "-e", "-n", "opens"]), 0);
    let mut workload = Command::new(common::workload("opens"))
        .args([n.to_string(), k.to_string(), root.clone()])
        .spawn()
        .expect("opens runs");
    let pid = workload.id();
    assert!(workload.wait().expect("opens ends").success());

    let opens = |fd: i32, err: i32, name: &str, times: usize| {
        let path = format!("{root}/{name}");
        let open = (
            pid,
            "opens".to_string(),
            fd,
            err,
            "02000000".to_string(),
            path,
        );
        vec![open; times]
    };
    let mut expected = opens(-1, 2, "missing", k);
    expected.extend(opens(3, 0, "present", n - k));
    expected.sort();
    let count = |want: usize, parse: fn(&str) -> Option<Open>| {
        let root = root.clone();
        move |lines: &[String]| opens_under(lines, &root, parse).len() >= want
    };
    all.wait_until(count(n, open_of_line));
    failed.wait_until(count(k, open_of_json));
    oracle.wait_until(count(n, open_of_line));
    let (scry_lines, _) = all.stop();
    let (json_lines, _) = failed.stop();
    let (peer_lines, _) = oracle.stop();
    assert_eq!(
        scry_lines.first().map(String::as_str),
        peer_lines.first().map(|l| l.trim_end()),
        "the header"
    );
    assert_eq!(opens_under(&scry_lines, &root, open_of_line), expected);
    assert_eq!(opens_under(&peer_lines, &root, open_of_line), expected);
    assert_eq!(
        opens_under(&json_lines, &root, open_of_json),
        expected[..k].to_vec()
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    if !require_root_and("execsnoop") {
        return;
    }
    let cases: [(&[&str], Option<&str>, &str); 11] = [
        (&["opensnoop", "-p", "4194304"], None, "no such process"),
        (&["mountsnoop", "-p", "4194304"], None, "no such process"),
        (&["killsnoop", "-p", "4194304"], None, "no such process"),
        (&["statsnoop", "-p", "4194304"], None, "no such process"),
        (&["threadsnoop", "-p", "4194304"], None, "no such process"),
        (&["vfsstat", "-p", "4194304"], None, "no such process"),
        (
            &["sigsnoop", "-s", "9,SIGNOPE"],
            None,
            "-s SIGNOPE: not a signal",
        ),
        (&["opensnoop", "-t", "4194304"], None, "no such process"),
        (
            &["execsnoop", "--cgroup", "/sys/fs/cgroup/scry-no-such-group"],
            None,
            "--cgroup",
        ),
        // A kernel without the hook: the only kind the programs come in
        // (classic tracepoints) is not allowed.
        (&["execsnoop"], Some("raw_tp"), "no hook"),
        (&["mountsnoop"], Some("raw_tp"), "no hook"),
    ];
    assert_each_bad_input(&cases);
}

#[test]
fn a_filter_that_matches_nothing_says_so_once() {
    if !require_root_and("execsnoop") {
        return;
    }
    let tracer = Tracer::start(scry_tool(&["execsnoop", "-n", "scry-matches-nothing"]), 2);
    let status = Command::new(common::workload("execs"))
        .args(["3", "/bin/true"])
        .status()
        .expect("execs runs");
    assert!(status.success());
    let (lines, err) = tracer.stop();
    assert_eq!(lines.len(), 1, "only the header: {lines:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("none of the") && err.contains("matched -n scry-matches-nothing"),
        "{err}"
    );
}

#[test]
fn sigkill_leaves_no_program_or_link() {
    if !require_root_and("execsnoop") {
        return;
    }
    let tools = [
        (&["execsnoop", "-x"][..], 2),
        (&["opensnoop"][..], 4),
        (&["exitsnoop"][..], 1),
        (&["killsnoop"][..], 6),
        (&["sigsnoop"][..], 1),
        (&["statsnoop"][..], 10),
        (&["threadsnoop"][..], 2),
        (&["vfsstat"][..], 20),
        (&["mountsnoop"][..], 4),
    ];
    for (args, links) in tools {
        sigkill_frees_everything(args, links);
    }
}

/// An exitsnoop line's (comm, pid, ppid, tid, exit), the age left out.
fn exit_of_line(line: &str) -> Option<(String, u32, u32, u32, String)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let ids: Vec<u32> = f.get(1..4)?.iter().filter_map(|v| v.parse().ok()).collect();
    f.get(4)?.parse::<f64>().ok()?;
    Some((
        f[0].to_string(),
        *ids.first()?,
        *ids.get(1)?,
        *ids.get(2)?,
        f[5..].join(" "),
    ))
}

#[test]
fn exitsnoop_reports_exit_codes_and_signals_as_libbpf_tools() {
    if !require_root_and("exitsnoop") {
        return;
    }
    let scry = Tracer::start(scry_tool(&["exitsnoop", "-x"]), 1);
    let json = Tracer::start(scry_tool(&["exitsnoop", "--json"]), 1);
    let oracle = Tracer::start(peer(&["exitsnoop", "-x"]), 0);
    let mut coded = Command::new("sh")
        .args(["-c", "exit 3"])
        .spawn()
        .expect("sh");
    assert_eq!(coded.wait().expect("sh ends").code(), Some(3));
    let mut killed = Command::new("sleep").arg("60").spawn().expect("sleep");
    common::signal(killed.id(), "SEGV");
    let _ = killed.wait();
    let me = std::process::id();
    let expected = vec![
        (
            "sh".to_string(),
            coded.id(),
            me,
            coded.id(),
            "code 3".to_string(),
        ),
        (
            "sleep".to_string(),
            killed.id(),
            me,
            killed.id(),
            "signal 11 (Segmentation fault)".to_string(),
        ),
    ];
    let ours = |lines: &[String]| {
        let mut exits: Vec<_> = lines
            .iter()
            .filter_map(|l| exit_of_line(l))
            .filter(|e| e.1 == coded.id() || e.1 == killed.id())
            .collect();
        exits.sort();
        exits
    };
    scry.wait_until(|l| ours(l).len() >= 2);
    oracle.wait_until(|l| ours(l).len() >= 2);
    json.wait_until(|l| {
        l.iter()
            .filter(|l| l.contains(&format!("\"ppid\":{me},")))
            .count()
            >= 2
    });
    let (scry_lines, _) = scry.stop();
    let (peer_lines, _) = oracle.stop();
    let (json_lines, _) = json.stop();
    assert_eq!(ours(&scry_lines), expected);
    assert_eq!(ours(&peer_lines), expected);
    assert_eq!(
        scry_lines.first().map(String::as_str),
        peer_lines.first().map(|l| l.trim_end())
    );
    let of = |pid: u32| -> serde_json::Value {
        let line = json_lines
            .iter()
            .find(|l| l.contains(&format!("\"pid\":{pid},")))
            .expect("the exit in JSON");
        serde_json::from_str(line).expect("JSON")
    };
    assert_eq!(
        (
            of(coded.id())["code"].as_u64(),
            of(coded.id())["signal"].as_u64()
        ),
        (Some(3), None)
    );
    assert_eq!(of(killed.id())["signal"].as_u64(), Some(11));
}

/// A killsnoop or sigsnoop line's (pid, comm, sig, tpid, result).
type Sig = (u32, String, String, i32, i32);

fn sig_of_line(line: &str) -> Option<Sig> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let [_time, pid, comm, sig, tpid, ret] = f[..] else {
        return None;
    };
    Some((
        pid.parse().ok()?,
        comm.to_string(),
        sig.to_string(),
        tpid.parse().ok()?,
        ret.parse().ok()?,
    ))
}

fn sig_of_json(line: &str) -> Option<Sig> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    Some((
        u32::try_from(v["pid"].as_u64()?).ok()?,
        v["comm"].as_str()?.to_string(),
        v["sig"].as_i64()?.to_string(),
        i32::try_from(v["tpid"].as_i64()?).ok()?,
        i32::try_from(v["ret"].as_i64()?).ok()?,
    ))
}

/// The signals `pid` sent among `lines`, sorted.
fn signals_of(lines: &[String], pid: u32, parse: fn(&str) -> Option<Sig>) -> Vec<Sig> {
    let mut sigs: Vec<Sig> = lines
        .iter()
        .filter_map(|l| parse(l))
        .filter(|s| s.0 == pid && s.2 != "17" && s.2 != "SIGCHLD")
        .collect();
    sigs.sort();
    sigs
}

/// A pid no process has: above the largest pid_max a 64-bit kernel allows.
const DEAD_PID: i32 = 4_194_304;

#[test]
fn killsnoop_and_sigsnoop_list_n_signals_of_which_k_fail_as_libbpf_tools() {
    if !require_root_and("sigsnoop") || !common::require_tool("killsnoop", "libbpf-tools") {
        return;
    }
    let (n, k) = (30, 12);
    let kills = Tracer::start(scry_tool(&["killsnoop"]), 6);
    let failed = Tracer::start(scry_tool(&["killsnoop", "-x", "--json"]), 6);
    let sigs = Tracer::start(scry_tool(&["sigsnoop", "-n", "-s", "USR1"]), 1);
    let kill_oracle = Tracer::start(peer(&["killsnoop"]), 0);
    let sig_oracle = Tracer::start(peer(&["sigsnoop", "-n", "-s", "10"]), 0);
    let mut workload = Command::new(common::workload("signals"))
        .args([n.to_string(), k.to_string(), DEAD_PID.to_string()])
        .spawn()
        .expect("signals runs");
    let pid = workload.id();
    assert!(workload.wait().expect("signals ends").success());

    let sent = |sig: &str, tpid: i32, ret: i32, times: usize| {
        vec![(pid, "signals".to_string(), sig.to_string(), tpid, ret); times]
    };
    let me = i32::try_from(pid).expect("pid");
    let mut expected = sent("10", DEAD_PID, -3, k);
    expected.extend(sent("10", me, 0, n - k));
    expected.sort();
    let delivered = sent("SIGUSR1", me, 0, n - k);
    let count = |want: usize, parse: fn(&str) -> Option<Sig>| {
        move |lines: &[String]| signals_of(lines, pid, parse).len() >= want
    };
    kills.wait_until(count(n, sig_of_line));
    failed.wait_until(count(k, sig_of_json));
    sigs.wait_until(count(n - k, sig_of_line));
    kill_oracle.wait_until(count(n, sig_of_line));
    sig_oracle.wait_until(count(n - k, sig_of_line));
    let (kill_lines, _) = kills.stop();
    let (json_lines, _) = failed.stop();
    let (sig_lines, _) = sigs.stop();
    let (peer_kills, _) = kill_oracle.stop();
    let (peer_sigs, _) = sig_oracle.stop();
    assert_eq!(
        kill_lines.first().map(String::as_str),
        peer_kills.first().map(|l| l.trim_end()),
        "the header"
    );
    assert_eq!(signals_of(&kill_lines, pid, sig_of_line), expected);
    assert_eq!(signals_of(&peer_kills, pid, sig_of_line), expected);
    assert_eq!(
        signals_of(&json_lines, pid, sig_of_json),
        sent("10", DEAD_PID, -3, k)
    );
    assert_eq!(signals_of(&sig_lines, pid, sig_of_line), delivered);
    assert_eq!(signals_of(&peer_sigs, pid, sig_of_line), delivered);
}

/// A statsnoop -s line's (pid, comm, ret, err, syscall, path).
type Stat = (u32, String, i32, i32, String, String);

fn stat_of_line(line: &str) -> Option<Stat> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let [pid, comm, ret, err, call, path] = f[..] else {
        return None;
    };
    Some((
        pid.parse().ok()?,
        comm.to_string(),
        ret.parse().ok()?,
        err.parse().ok()?,
        call.to_string(),
        path.to_string(),
    ))
}

fn stat_of_json(line: &str) -> Option<Stat> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    Some((
        u32::try_from(v["pid"].as_u64()?).ok()?,
        v["comm"].as_str()?.to_string(),
        i32::try_from(v["ret"].as_i64()?).ok()?,
        i32::try_from(v["err"].as_i64()?).ok()?,
        v["syscall"].as_str()?.to_string(),
        v["path"].as_str()?.to_string(),
    ))
}

/// The calls on files under `dir` among `lines`, sorted.
fn stats_under<T: Ord>(
    lines: &[String],
    dir: &str,
    parse: impl Fn(&str) -> Option<T>,
    path: fn(&T) -> &str,
) -> Vec<T> {
    let mut stats: Vec<T> = lines
        .iter()
        .filter_map(|l| parse(l))
        .filter(|s| path(s).starts_with(dir))
        .collect();
    stats.sort();
    stats
}

#[test]
fn statsnoop_lists_n_stat_calls_of_which_k_fail_as_bpftrace() {
    // libbpf-tools' statsnoop (Debian's 2023 build) attaches nothing: it
    // looks for its tracepoints under /sys/kernel/debug/tracing/events/
    // syscalls/statfs, a path no kernel has; bcc's statsnoop.bt is the
    // oracle (it leaves newfstatat out).
    if !require_root_and("bpftrace") {
        return;
    }
    let dir = common::tempdir();
    let root = path_str(dir.path());
    std::fs::write(dir.path().join("present"), "x").expect("write");
    let (n, k) = (50, 20);
    let all = Tracer::start(scry_tool(&["statsnoop", "-s"]), 10);
    let failed = Tracer::start(scry_tool(&["statsnoop", "-x", "--json"]), 10);
    let mut bpftrace = Command::new("bpftrace");
    bpftrace.args(["-B", "line", "/usr/sbin/statsnoop.bt"]);
    let oracle = Tracer::start(bpftrace, 0);
    oracle.wait_until(|lines| lines.iter().any(|l| l.starts_with("Tracing")));
    let mut workload = Command::new(common::workload("stats"))
        .args([n.to_string(), k.to_string()])
        .args([dir.path().join("missing"), dir.path().join("present")])
        .spawn()
        .expect("stats runs");
    let pid = workload.id();
    assert!(workload.wait().expect("stats ends").success());

    let calls = ["statfs", "newstat", "newlstat", "statx", "newfstatat"];
    let mut expected: Vec<Stat> = (0..n)
        .map(|i| {
            let (ret, err, name) = if i < k {
                (-1, 2, "missing")
            } else {
                (0, 0, "present")
            };
            let call = calls[i % 5].to_string();
            (
                pid,
                "stats".to_string(),
                ret,
                err,
                call,
                format!("{root}/{name}"),
            )
        })
        .collect();
    expected.sort();
    let failures: Vec<Stat> = expected.iter().filter(|s| s.3 != 0).cloned().collect();
    // bpftrace's lines: (pid, comm, err, path), without newfstatat.
    let mut seen_by_bpftrace: Vec<(u32, String, i32, String)> = expected
        .iter()
        .filter(|s| s.4 != "newfstatat")
        .map(|s| (s.0, s.1.clone(), s.3, s.5.clone()))
        .collect();
    seen_by_bpftrace.sort();
    let bt_of_line = |line: &str| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [pid, comm, err, path] = f[..] else {
            return None;
        };
        Some((
            pid.parse::<u32>().ok()?,
            comm.to_string(),
            err.parse::<i32>().ok()?,
            path.to_string(),
        ))
    };
    let count = |want: usize, parse: fn(&str) -> Option<Stat>| {
        let root = root.clone();
        move |lines: &[String]| stats_under(lines, &root, parse, |s| &s.5).len() >= want
    };
    all.wait_until(count(n, stat_of_line));
    failed.wait_until(count(k, stat_of_json));
    oracle.wait_until(|lines| {
        stats_under(lines, &root, bt_of_line, |s| &s.3).len() >= seen_by_bpftrace.len()
    });
    let (scry_lines, _) = all.stop();
    let (json_lines, _) = failed.stop();
    let (peer_lines, _) = oracle.stop();
    assert_eq!(
        scry_lines.first().map(String::as_str),
        Some("PID     COMM                 RET  ERR  SYSCALL    PATH")
    );
    assert_eq!(
        stats_under(&scry_lines, &root, stat_of_line, |s| &s.5),
        expected
    );
    assert_eq!(
        stats_under(&json_lines, &root, stat_of_json, |s| &s.5),
        failures
    );
    assert_eq!(
        stats_under(&peer_lines, &root, bt_of_line, |s| &s.3),
        seen_by_bpftrace
    );
}

/// A threadsnoop line's (pid, comm, func), the time left out.
fn thread_of_line(line: &str) -> Option<(u32, String, String)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let [_ms, pid, comm, func] = f[..] else {
        return None;
    };
    Some((pid.parse().ok()?, comm.to_string(), func.to_string()))
}

#[test]
fn threadsnoop_lists_n_thread_creations_with_their_start_function() {
    if !require_root_and("bpftrace") {
        return;
    }
    let n = 20;
    let scry = Tracer::start(scry_tool(&["threadsnoop"]), 2);
    let json = Tracer::start(scry_tool(&["threadsnoop", "--json"]), 2);
    // Without the uprobe: every creation still, no start function.
    let mut tracepoint_only = scry_tool(&["threadsnoop"]);
    tracepoint_only.env("SCRY_BPF_HOOKS", "tp");
    let bare = Tracer::start(tracepoint_only, 1);
    let mut bpftrace = Command::new("bpftrace");
    bpftrace.args([
        "-B",
        "line",
        "-e",
        "BEGIN { printf(\"Tracing\\n\"); } \
         uprobe:libc:pthread_create /comm == \"spawns\"/ \
         { printf(\"0 %d %s %s\\n\", pid, comm, usym(arg2)); }",
    ]);
    // Only the workload's: naming every other process's start functions
    // (a linker's hundreds of threads) can hold bpftrace up until its
    // buffer drops events.
    let oracle = Tracer::start(bpftrace, 0);
    oracle.wait_until(|lines| lines.iter().any(|l| l.starts_with("Tracing")));
    let mut workload = Command::new(common::workload("spawns"))
        .arg(n.to_string())
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawns runs");
    let pid = workload.id();
    let ours = move |lines: &[String]| -> Vec<(u32, String, String)> {
        lines
            .iter()
            .filter_map(|l| thread_of_line(l))
            .filter(|t| t.0 == pid)
            .collect()
    };
    let jsons = move |lines: &[String]| -> Vec<serde_json::Value> {
        lines
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["pid"].as_u64() == Some(u64::from(pid)))
            .collect()
    };
    // The process stays until its stdin closes: its start function can be
    // named while the tracers print.
    scry.wait_until(|l| ours(l).len() >= n);
    bare.wait_until(|l| ours(l).len() >= n);
    oracle.wait_until(|l| ours(l).len() >= n);
    json.wait_until(|l| jsons(l).len() >= n);
    drop(workload.stdin.take());
    assert!(workload.wait().expect("spawns ends").success());
    let (scry_lines, _) = scry.stop();
    let (bare_lines, bare_err) = bare.stop();
    let (peer_lines, _) = oracle.stop();
    let (json_lines, _) = json.stop();
    let started = |func: &str| vec![(pid, "spawns".to_string(), func.to_string()); n];
    assert_eq!(
        scry_lines.first().map(String::as_str),
        Some("TIME(ms)   PID     COMM             FUNC")
    );
    assert_eq!(ours(&scry_lines), started("spawned_start"));
    assert_eq!(ours(&peer_lines), started("spawned_start"));
    assert_eq!(ours(&bare_lines), started("[unknown]"));
    assert_eq!(bare_err.lines().count(), 1, "{bare_err}");
    assert!(
        bare_err.contains("no uprobe on libc's pthread_create"),
        "{bare_err}"
    );
    let threads = jsons(&json_lines);
    let mut new_tids: Vec<u64> = threads
        .iter()
        .filter_map(|v| v["new_tid"].as_u64())
        .collect();
    new_tids.sort();
    new_tids.dedup();
    assert_eq!(new_tids.len(), n, "{threads:?}");
    assert!(!new_tids.contains(&u64::from(pid)));
    assert!(
        threads.iter().all(|v| v["func"] == "spawned_start"),
        "{threads:?}"
    );
}

#[test]
fn vfsstat_counts_each_kind_of_call_of_one_process_exactly() {
    // libbpf-tools' vfsstat cannot load here (kprobes on vfs_read...):
    // the workload's own counts are the answer.
    if !require_root_and("bpftrace") {
        return;
    }
    let dir = common::tempdir();
    let file = dir.path().join("file");
    let (r, w, f, o, c) = (40, 30, 5, 20, 3);
    let mut workload = Command::new(common::workload("vfsops"))
        .args([r, w, f, o, c].map(|n: u64| n.to_string()))
        .arg(&file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("vfsops runs");
    let pid = workload.id();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(workload.stdout.take().expect("piped")),
        &mut ready,
    )
    .expect("ready");
    assert_eq!(ready, "ready\n");
    let pid_text = pid.to_string();
    let json = Tracer::start(scry_tool(&["vfsstat", "-p", &pid_text, "--json"]), 20);
    let table = Tracer::start(scry_tool(&["vfsstat", "-p", &pid_text]), 20);
    std::io::Write::write_all(&mut workload.stdin.take().expect("piped"), b"x").expect("go");
    assert!(workload.wait().expect("vfsops ends").success());
    // Each ends when the process has exited, after its last interval.
    let totals = |lines: &[String]| -> Vec<u64> {
        let objects: Vec<serde_json::Value> = lines
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        ["read", "write", "fsync", "open", "create"]
            .iter()
            .map(|k| objects.iter().filter_map(|v| v[k].as_u64()).sum())
            .collect()
    };
    let (json_lines, _) = json.finish();
    let (table_lines, _) = table.finish();
    assert_eq!(
        totals(&json_lines),
        vec![r, w, f, o + c, c],
        "{json_lines:?}"
    );
    assert_eq!(
        table_lines[0],
        "TIME         READ/s  WRITE/s  FSYNC/s   OPEN/s CREATE/s"
    );
}

/// A mountsnoop line's (comm, pid, tid, mount namespace, call as C).
type Mount = (String, u32, u32, u64, String);

fn mount_of_line(line: &str) -> Option<Mount> {
    let mut f = line.split_whitespace();
    let head = (
        f.next()?.to_string(),
        f.next()?.parse().ok()?,
        f.next()?.parse().ok()?,
        f.next()?.parse().ok()?,
    );
    let call = line.find("mount(\"")?;
    let call = line[..call].strip_suffix('u').map_or(call, |l| l.len());
    Some((head.0, head.1, head.2, head.3, line[call..].to_string()))
}

fn mount_of_json(line: &str) -> Option<Mount> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let (flags, ret) = (v["flag_names"].as_str()?, v["ret"].as_i64()?);
    let ret = match ret {
        0 => "0".to_string(),
        -2 => "-ENOENT".to_string(),
        other => other.to_string(),
    };
    let call = match v["call"].as_str()? {
        "mount" => format!(
            "mount(\"{}\", \"{}\", \"{}\", {flags}, \"{}\") = {ret}",
            v["source"].as_str()?,
            v["target"].as_str()?,
            v["fs"].as_str()?,
            v["data"].as_str()?
        ),
        call => format!("{call}(\"{}\", {flags}) = {ret}", v["target"].as_str()?),
    };
    Some((
        v["comm"].as_str()?.to_string(),
        u32::try_from(v["pid"].as_u64()?).ok()?,
        u32::try_from(v["tid"].as_u64()?).ok()?,
        v["mnt_ns"].as_u64()?,
        call,
    ))
}

/// The calls of process `pid` on paths under `dir`, in the order seen.
fn mounts_under(
    lines: &[String],
    pid: u32,
    dir: &str,
    parse: fn(&str) -> Option<Mount>,
) -> Vec<Mount> {
    lines
        .iter()
        .filter_map(|l| parse(l))
        .filter(|m| m.1 == pid && m.4.contains(dir))
        .collect()
}

/// `workloads/mounts`: N mounts of a tmpfs, each unmounted, then K mounts
/// on a missing directory (ENOENT), in a mount namespace of the
/// workload's own; scry (table and --json) and libbpf-tools' mountsnoop
/// list the same 2N + K calls, arguments, flags and results.
#[test]
fn mountsnoop_lists_n_mounts_and_umounts_of_which_k_fail_as_libbpf_tools() {
    if !require_root_and("mountsnoop") {
        return;
    }
    let dir = common::tempdir();
    let root = path_str(dir.path());
    let (n, k) = (20, 5);
    let table = Tracer::start(scry_tool(&["mountsnoop"]), 4);
    let json = Tracer::start(scry_tool(&["mountsnoop", "--json"]), 4);
    let oracle = Tracer::start(peer(&["mountsnoop"]), 0);
    let mut workload = Command::new(common::workload("mounts"))
        .args([n.to_string(), k.to_string(), root.clone()])
        .spawn()
        .expect("mounts runs");
    let pid = workload.id();
    assert!(workload.wait().expect("mounts ends").success());

    let mut calls: Vec<String> = Vec::new();
    for i in 1..=n {
        calls.push(format!(
            "mount(\"scry-mounts\", \"{root}\", \"tmpfs\", MS_NOSUID | MS_NODEV, \"size={i}k\") = 0"
        ));
        calls.push(format!("umount(\"{root}\", 0x0) = 0"));
    }
    for _ in 0..k {
        calls.push(format!(
            "mount(\"scry-mounts\", \"{root}/missing\", \"tmpfs\", MS_NOSUID | MS_NODEV, \"size=1k\") = -ENOENT"
        ));
    }
    let want = calls.len();
    let count = |parse: fn(&str) -> Option<Mount>| {
        let root = root.clone();
        move |lines: &[String]| mounts_under(lines, pid, &root, parse).len() >= want
    };
    table.wait_until(count(mount_of_line));
    json.wait_until(count(mount_of_json));
    oracle.wait_until(count(mount_of_line));
    let (table_lines, _) = table.stop();
    let (json_lines, _) = json.stop();
    let (peer_lines, _) = oracle.stop();
    assert_eq!(
        table_lines.first().map(String::as_str),
        peer_lines.first().map(|l| l.trim_end()),
        "the header"
    );
    let ours = mounts_under(&table_lines, pid, &root, mount_of_line);
    let got: Vec<&str> = ours.iter().map(|m| m.4.as_str()).collect();
    assert_eq!(got, calls, "scry's calls");
    // One mount namespace, the workload's own (not the tests').
    let ns = ours[0].3;
    assert!(
        ours.iter()
            .all(|m| (m.0.as_str(), m.1, m.2, m.3) == ("mounts", pid, pid, ns))
    );
    assert_eq!(
        mounts_under(&peer_lines, pid, &root, mount_of_line),
        ours,
        "libbpf-tools'"
    );
    assert_eq!(
        mounts_under(&json_lines, pid, &root, mount_of_json),
        ours,
        "--json"
    );
}

/// execsnoop's filters and columns on `execs N /bin/true` started stopped
/// in a cgroup of its own while another `execs` runs outside it:
/// `--ppid P -T -t -U -u 0` lists its N children with HH:MM:SS, seconds
/// and uid 0; `-u 65534` none of them; `--cgroup CG` (scry's and
/// libbpf-tools' `-c`) the N children and none of the other's.
#[test]
fn execsnoop_ppid_uid_cgroup_and_time_columns() {
    if !require_root_and("execsnoop") {
        return;
    }
    let Some(cg) = crate::bpf_tools::TestCgroup::new("cg-execsnoop") else {
        return;
    };
    let n = 12;
    let execs = common::workload("execs");
    let inside = common::tracer::stopped_to(&execs, &[&n.to_string(), "/bin/true"], Stdio::piped());
    let parent = inside.id();
    std::fs::write(cg.0.join("cgroup.procs"), parent.to_string()).expect("moved into the cgroup");
    let p = parent.to_string();
    let timed = Tracer::start(
        scry_tool(&["execsnoop", "--ppid", &p, "-T", "-t", "-U", "-u", "0"]),
        2,
    );
    let nobody = Tracer::start(scry_tool(&["execsnoop", "-u", "65534", "--ppid", &p]), 2);
    let in_cg = Tracer::start(scry_tool(&["execsnoop", "--cgroup", &cg.arg()]), 2);
    let oracle = Tracer::start(peer(&["execsnoop", "-c", &cg.arg()]), 0);
    let mut outside = Command::new(&execs)
        .args([n.to_string(), "/bin/true".to_string()])
        .spawn()
        .expect("execs runs");
    let other = outside.id();
    assert!(outside.wait().expect("execs ends").success());
    common::tracer::run_stopped(inside);

    // TIME TIME(s) UID, then execsnoop's usual columns.
    let timed_of_line = |l: &str| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let hms = f.first()?;
        let clock = hms.len() == 8
            && hms.char_indices().all(|(i, c)| match i {
                2 | 5 => c == ':',
                _ => c.is_ascii_digit(),
            });
        let secs: f64 = f.get(1)?.parse().ok()?;
        let exec = exec_of_line(&f.get(3..)?.join(" "))?;
        Some((clock && secs >= 0.0, f[2].to_string(), exec))
    };
    let mut children: Vec<Exec> = (0..n)
        .map(|i| {
            let args = ["/bin/true", "execs", &i.to_string()]
                .map(String::from)
                .to_vec();
            ("true".to_string(), parent, 0, args)
        })
        .collect();
    children.sort();
    timed.wait_until(|lines| lines.iter().filter_map(|l| timed_of_line(l)).count() >= n);
    in_cg.wait_until(|lines| workload_execs(lines, parent, exec_of_line).len() >= n);
    oracle.wait_until(|lines| workload_execs(lines, parent, exec_of_line).len() >= n);
    let (timed_lines, _) = timed.stop();
    let (nobody_lines, _) = nobody.stop();
    let (cg_lines, _) = in_cg.stop();
    let (peer_lines, _) = oracle.stop();
    let mut timed: Vec<(bool, String, Exec)> = timed_lines
        .iter()
        .filter_map(|l| timed_of_line(l))
        .collect();
    timed.sort();
    let want: Vec<(bool, String, Exec)> = children
        .iter()
        .map(|e| (true, "0".to_string(), e.clone()))
        .collect();
    assert_eq!(timed, want, "{timed_lines:?}");
    assert!(
        workload_execs(&nobody_lines, parent, exec_of_line).is_empty(),
        "{nobody_lines:?}"
    );
    assert_eq!(workload_execs(&cg_lines, parent, exec_of_line), children);
    assert_eq!(workload_execs(&peer_lines, parent, exec_of_line), children);
    assert!(
        workload_execs(&cg_lines, other, exec_of_line).is_empty(),
        "{cg_lines:?}"
    );
    assert!(
        workload_execs(&peer_lines, other, exec_of_line).is_empty(),
        "{peer_lines:?}"
    );
}

/// opensnoop `-p PID` on `opens` started stopped: its N opens, all of
/// that pid, and the tool ends by itself when the process exits; `-d 1`
/// ends by itself too.
#[test]
fn opensnoop_p_follows_one_process_to_its_end_and_d_stops() {
    if !require_root_and("opensnoop") {
        return;
    }
    let dir = common::tempdir();
    let root = path_str(dir.path());
    std::fs::write(dir.path().join("present"), "x").expect("write");
    let (n, k) = (30, 10);
    let workload = common::tracer::stopped_to(
        &common::workload("opens"),
        &[&n.to_string(), &k.to_string(), &root],
        Stdio::piped(),
    );
    let pid = workload.id();
    let one = Tracer::start(scry_tool(&["opensnoop", "-e", "-p", &pid.to_string()]), 4);
    let timed = Tracer::start(scry_tool(&["opensnoop", "-d", "1"]), 4);
    common::tracer::run_stopped(workload);
    let (lines, _) = one.finish();
    let opens = opens_under(&lines, &root, open_of_line);
    assert_eq!(opens.len(), n, "{lines:?}");
    assert!(opens.iter().all(|o| o.0 == pid), "{opens:?}");
    assert_eq!(opens.iter().filter(|o| o.3 == 2).count(), k, "{opens:?}");
    let (_, err) = timed.finish();
    assert!(err.is_empty(), "{err}");
}

/// A running opensnoop, whose programs sit on classic tracepoints, leaves
/// perf's events on those tracepoints alone: `perf stat -e
/// syscalls:sys_enter_openat` counts each of `opens`' N opens while it
/// runs. The kernel delivers a tracepoint's record to perf only when the
/// BPF program on it returns non-zero; bcc's return 0 (libbpf-tools'
/// opensnoop hides every openat from perf while it runs), scry's return
/// TP_PASS (src/bpf/tp_pass.bpf.h).
#[test]
fn a_running_tool_leaves_perfs_events_on_its_tracepoints() {
    if !require_root_and("opensnoop") || !common::require_tool("perf", "apt-get install linux-perf")
    {
        return;
    }
    let dir = common::tempdir();
    let root = path_str(dir.path());
    std::fs::write(dir.path().join("present"), "x").expect("write");
    let n = 30;
    let tool = Tracer::start(scry_tool(&["opensnoop", "-n", "opens"]), 4);
    let out = common::output(
        Command::new("perf")
            .args(["stat", "-x", ",", "-e", "syscalls:sys_enter_openat", "--"])
            .arg(common::workload("opens"))
            .args([n.to_string(), "0".to_string(), root.clone()]),
    );
    let stat = String::from_utf8_lossy(&out.stderr).into_owned();
    let counted: u64 = stat
        .lines()
        .find(|l| l.contains("sys_enter_openat"))
        .and_then(|l| l.split(',').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    tool.wait_until(|lines| lines.iter().filter(|l| l.contains(&root)).count() >= n);
    let (lines, _) = tool.stop();
    assert!(out.status.success(), "{stat}");
    assert!(
        counted >= n as u64,
        "perf counted {counted} openat calls of the {n} while scry opensnoop ran:\n{stat}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.contains(&root)).count(),
        n,
        "{lines:?}"
    );
}
