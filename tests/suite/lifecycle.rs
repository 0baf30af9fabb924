//! The workload's life around scry's: a failed start leaves no process
//! behind, the workload starts with default signal dispositions, a hangup
//! stops a capture as SIGINT does, and a workload killed by a signal is
//! said so, with perf's exit status.
//!
//! Leftovers are found by a mark in the environment: scry runs with
//! `SCRY_LIFECYCLE_MARK=<unique>`, which its forked children (before and
//! after their exec) inherit, so any process that still carries it after
//! scry exited was left behind.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

const MARK: &str = "SCRY_LIFECYCLE_MARK";

/// Pids and names of the processes whose environment holds `MARK=mark`.
fn marked(mark: &str) -> Vec<(i32, String)> {
    let needle = format!("{MARK}={mark}\0");
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if env.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            found.push((pid, comm.trim().to_string()));
        }
    }
    found
}

/// Runs `scry ARGS` marked; returns its exit code, stderr and whatever
/// marked process outlived it (killed before returning).
fn run_marked(args: &[&str], mark: &str) -> (Option<i32>, String, Vec<(i32, String)>) {
    // stderr to a file: a leftover holding a pipe would keep it open.
    let dir = common::tempdir();
    let err_path = dir.path().join("stderr");
    let err_file = std::fs::File::create(&err_path).expect("create the stderr file");
    let mut child = common::scry()
        .args(args)
        .env(MARK, mark)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file)
        .spawn()
        .expect("scry starts");
    let status = common::wait_timeout(&mut child, Duration::from_secs(60));
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    // A killed child may take a moment to be reaped.
    let mut left = marked(mark);
    for _ in 0..25 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        left = marked(mark);
    }
    for (pid, _) in &left {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    (status.and_then(|s| s.code()), stderr, left)
}

#[test]
fn a_failed_start_leaves_no_process_behind() {
    require_kernel!();
    require_tracefs!();
    let dir = common::tempdir();
    let nowhere = dir.path().join("no/such/dir/out");
    let nowhere = nowhere.to_str().expect("UTF-8 temp path");
    let sleep: &[&str] = &["--", "sleep", "30"];
    let nosuch: &[&str] = &["--", "/nonexistent/program"];
    let join = |parts: &[&[&str]]| -> Vec<String> {
        parts
            .iter()
            .flat_map(|p| p.iter())
            .map(|s| s.to_string())
            .collect()
    };
    let mut cases: Vec<Vec<String>> = Vec::new();
    for cmd in [&["record"][..], &["trace"], &["stat"]] {
        cases.push(join(&[cmd, &["-p", "999999"], sleep]));
        cases.push(join(&[cmd, nosuch]));
        cases.push(join(&[cmd, &["-e", "nosuch_event_xyz"], sleep]));
    }
    cases.push(join(&[&["record", "-t", "999999"], sleep]));
    cases.push(join(&[&["record", "-C", "999"], sleep]));
    cases.push(join(&[&["record", "-o", nowhere], sleep]));
    cases.push(join(&[&["trace", "-o", nowhere], sleep]));
    let filter = [
        "record",
        "-e",
        "sched:sched_switch",
        "--filter",
        "no_such_field == 1",
    ];
    cases.push(join(&[&filter, sleep]));
    cases.push(join(&[&["stat", "-C", "999"], sleep]));
    for cmd in [
        &["offcpu"][..],
        &["profile"],
        &["sched", "runqlat"],
        &["sched", "timehist"],
        &["flamegraph", "--offcpu"],
    ] {
        cases.push(join(&[cmd, &["-p", "999999"], sleep]));
        cases.push(join(&[cmd, nosuch]));
    }
    cases.push(join(&[&["profile", "-H", "nosuch/nosuch"], sleep]));
    cases.push(join(&[&["flamegraph"], nosuch]));
    cases.push(join(&[&["flamegraph", "-o", nowhere], nosuch]));

    let mut failures = Vec::new();
    for (n, args) in cases.iter().enumerate() {
        let mark = format!("{}-{n}", std::process::id());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stderr, left) = run_marked(&args, &mark);
        if code.is_none_or(|c| c == 0) || !left.is_empty() {
            failures.push(format!(
                "scry {}: exit {code:?}, left behind {left:?}: {}",
                args.join(" "),
                stderr.trim()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_workload_starts_with_default_signal_dispositions() {
    require_kernel!();
    require_tracefs!();
    // scry catches SIGINT/SIGTERM/SIGHUP and Rust ignores SIGPIPE: none of
    // that may reach the workload (SigCgt is dropped by exec; SigIgn and
    // SigBlk are not).
    let dir = common::tempdir();
    let data = dir.path().join("perf.data");
    let data = data.to_str().expect("UTF-8 temp path");
    let script = "grep -E '^Sig(Ign|Blk)' /proc/self/status >&2";
    for head in [
        &["record", "-q", "-o", data][..],
        &["stat", "-o", "/dev/null"],
        &["trace", "-o", "/dev/null"],
        &["offcpu", "--folded"],
        &["sched", "runqlat"],
    ] {
        let out = common::output(
            common::scry()
                .args(head)
                .args(["--", "sh", "-c", script])
                .stdout(Stdio::null()),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let masks: Vec<&str> = stderr.lines().filter(|l| l.starts_with("Sig")).collect();
        assert_eq!(masks.len(), 2, "scry {head:?}: {stderr}");
        for line in masks {
            // Signals 1-31; 32 and up are libc's or real-time (and our own
            // parent may ignore those).
            let mask = line
                .split_whitespace()
                .nth(1)
                .and_then(|m| u64::from_str_radix(m, 16).ok())
                .unwrap_or(u64::MAX);
            assert_eq!(
                mask & 0x7fff_ffff,
                0,
                "scry {head:?}: the workload started with {line}"
            );
        }
    }
}

/// The live commands, each with `-- CMD` to follow; `out` is a file path
/// for those that write one.
fn live_commands(out: &str) -> Vec<Vec<String>> {
    [
        &["record", "-q", "-o", out][..],
        &["stat", "-e", "task-clock"],
        &["trace", "-o", "/dev/null"],
        &["offcpu", "--folded"],
        &["sched", "runqlat"],
        &["profile"],
    ]
    .iter()
    .map(|c| c.iter().map(|s| s.to_string()).collect())
    .collect()
}

#[test]
fn a_hangup_stops_every_live_command_as_ctrl_c_does() {
    require_kernel!();
    require_tracefs!();
    let dir = common::tempdir();
    let data = dir.path().join("perf.data");
    let data = data.to_str().expect("UTF-8 temp path");
    for (n, head) in live_commands(data).iter().enumerate() {
        let mark = format!("{}-hup-{n}", std::process::id());
        let mut scry = common::scry()
            .args(head)
            .args(["--", "sleep", "30"])
            .env(MARK, &mark)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("scry starts");
        // The capture runs once the workload has exec'd.
        let mut started = false;
        for _ in 0..1500 {
            if marked(&mark).iter().any(|(_, comm)| comm == "sleep") {
                started = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        common::signal(scry.id(), "HUP");
        let status = common::wait_timeout(&mut scry, Duration::from_secs(30));
        if status.is_none() {
            let _ = scry.kill();
            let _ = scry.wait();
        }
        std::thread::sleep(Duration::from_millis(100));
        let left = marked(&mark);
        for (pid, _) in &left {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        assert!(started, "scry {head:?}: the workload never started");
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(0),
            "scry {head:?} after SIGHUP: {status:?}"
        );
        assert!(left.is_empty(), "scry {head:?} left {left:?} after SIGHUP");
    }
}

#[test]
fn a_workload_killed_by_a_signal_is_said_and_is_the_exit_status() {
    use std::os::unix::process::ExitStatusExt;
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let dir = common::tempdir();
    let data = dir.path().join("perf.data");
    let kill = ["--", "sh", "-c", "kill -9 $$"];
    // The oracle: perf record dies of its workload's signal, which a shell
    // reports as 128 + 9 = 137.
    let perf = common::output(
        common::perf()
            .args(["record", "-q", "-o"])
            .arg(dir.path().join("perf-oracle.data"))
            .args(kill),
    );
    assert_eq!(
        perf.status.signal(),
        Some(9),
        "perf record: {:?}",
        perf.status
    );
    for head in live_commands(data.to_str().expect("UTF-8 temp path")) {
        let out = common::output(common::scry().args(&head).args(kill).stdout(Stdio::null()));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(128 + 9), "scry {head:?}: {stderr}");
        let lines: Vec<&str> = stderr
            .lines()
            // Notes on what this kernel lacks (hardware counters, the
            // function_graph tracer of profile) are not the workload's line.
            .filter(|l| {
                l.starts_with("scry: ")
                    && !l.contains("not supported here")
                    && !l.contains("kernel functions not profiled")
            })
            .collect();
        assert_eq!(
            lines,
            ["scry: sh: Killed (signal 9)"],
            "scry {head:?}: {stderr}"
        );
    }
}

#[test]
fn output_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let dir = common::tempdir();
    let path = |name: &str| dir.path().join(name).to_str().expect("UTF-8").to_string();
    let mode = |p: &str| {
        std::fs::metadata(p)
            .unwrap_or_else(|e| panic!("{p}: {e}"))
            .permissions()
            .mode()
            & 0o777
    };
    // The oracle: perf.data as perf creates it.
    let oracle = path("perf-oracle.data");
    common::run_ok(common::perf().args(["record", "-q", "-o", &oracle, "--", "true"]));
    assert_eq!(mode(&oracle), 0o600, "perf's own perf.data");

    let data = path("perf.data");
    // An existing world-readable output is narrowed too.
    let stat_out = path("stat.txt");
    std::fs::write(&stat_out, "old").expect("write");
    std::fs::set_permissions(&stat_out, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let runs: Vec<Vec<String>> = vec![
        vec![
            "record".into(),
            "-g".into(),
            "-q".into(),
            "-o".into(),
            data.clone(),
        ],
        vec!["stat".into(), "-o".into(), stat_out.clone()],
        vec!["trace".into(), "-o".into(), path("trace.txt")],
        vec!["offcpu".into(), "--svg".into(), path("offcpu.svg")],
        vec![
            "sched".into(),
            "runqlat".into(),
            "-o".into(),
            path("runqlat.txt"),
        ],
        vec!["profile".into(), "-o".into(), path("profile.txt")],
        vec!["flamegraph".into(), "-o".into(), path("flame.svg")],
        vec![
            "flamegraph".into(),
            "--folded".into(),
            "-o".into(),
            path("folded.txt"),
        ],
    ];
    let spin = common::workload("cpu7525");
    for args in &runs {
        let out = common::output(
            common::scry()
                .args(args)
                .arg("--")
                .arg(&spin)
                .arg("5")
                .stdout(Stdio::null()),
        );
        assert!(
            out.status.success(),
            "scry {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let file = args.last().expect("the output path");
        assert_eq!(
            mode(file),
            0o600,
            "scry {args:?} wrote {file} with mode {:o}",
            mode(file)
        );
    }
}
