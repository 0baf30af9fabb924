//! perf's target rule, for every live command that takes targets: with
//! `-p`/`-t` (or `-a`/`-C`) a command after `--` only sets how long the
//! capture lasts. The process given is what is recorded, counted or traced,
//! not the command (`perf record -F 99 -p PID -g -- sleep 10`, the most
//! typed one-liner there is). perf, run on the same process at the same
//! time, is the oracle where it has the command.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A workload started in the background; killed and reaped when dropped.
struct Background {
    child: Child,
    pid: u32,
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `workloads/NAME ARGS` and waits until it runs: for its first
/// line on `first_line` (stdout or stderr), or 300 ms for a silent one.
fn background(name: &str, args: &[&str], first_line: Output) -> Background {
    let mut cmd = Command::new(common::workload(name));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match first_line {
        Output::Stdout => cmd.stdout(Stdio::piped()),
        Output::Stderr => cmd.stderr(Stdio::piped()),
        Output::None => &mut cmd,
    };
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
    let mut line = String::new();
    match first_line {
        Output::Stdout => {
            let _ = BufReader::new(child.stdout.as_mut().expect("piped")).read_line(&mut line);
        }
        Output::Stderr => {
            let _ = BufReader::new(child.stderr.as_mut().expect("piped")).read_line(&mut line);
        }
        Output::None => {
            std::thread::sleep(std::time::Duration::from_millis(300));
            line.push('-');
        }
    }
    assert!(!line.is_empty(), "{name} printed nothing");
    let pid = child.id();
    Background { child, pid }
}

/// Where a background workload says it runs.
#[derive(Clone, Copy)]
enum Output {
    Stdout,
    Stderr,
    None,
}

/// `(pid, tid)` of each sample.
type Tasks = Vec<(u32, u32)>;

/// Every sample's `pid tid` in `file`, as perf script reads them.
fn sample_pids(file: &Path) -> Tasks {
    let text = common::run_ok(
        common::perf()
            .args(["script", "-F", "pid,tid", "-i"])
            .arg(file),
    );
    text.lines()
        .filter_map(|l| {
            let (pid, tid) = l.trim().split_once('/')?;
            Some((pid.trim().parse().ok()?, tid.trim().parse().ok()?))
        })
        .collect()
}

/// `scry record` and `perf record` of `flag ID -- sleep 2` at the same time.
fn record_beside_perf(flag: &str, id: u32) -> (Tasks, Tasks) {
    let dir = common::tempdir();
    let ours = dir.path().join("scry.data");
    let theirs = dir.path().join("perf.data");
    let id = id.to_string();
    let args = ["-F", "999", flag, &id, "-g", "-o"];
    let perf = common::perf()
        .arg("record")
        .arg("-q")
        .args(args)
        .arg(&theirs)
        .args(["--", "sleep", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("perf record starts");
    let out = common::output(
        common::scry()
            .arg("record")
            .args(args)
            .arg(&ours)
            .args(["--", "sleep", "2"]),
    );
    let perf = perf.wait_with_output().expect("perf record ends");
    assert!(
        out.status.success(),
        "scry record {flag}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(perf.status.success(), "perf record {flag} failed");
    (sample_pids(&ours), sample_pids(&theirs))
}

fn assert_records_only(flag: &str, spinner: u32) {
    let (ours, theirs) = record_beside_perf(flag, spinner);
    // The oracle first: perf records the spinner, never the sleep.
    assert!(!theirs.is_empty(), "perf record {flag}: no samples");
    assert!(theirs.iter().all(|&(pid, _)| pid == spinner), "{theirs:?}");
    let strangers: Vec<_> = ours.iter().filter(|&&(pid, _)| pid != spinner).collect();
    assert!(
        strangers.is_empty(),
        "scry record {flag} {spinner} -- sleep 2 recorded other processes: {strangers:?}"
    );
    // Both watched the same spinner for the same two seconds.
    assert!(
        ours.len() * 3 >= theirs.len() && ours.len() >= 20,
        "scry record {flag}: {} samples of the spinner, perf {}",
        ours.len(),
        theirs.len()
    );
}

#[test]
fn record_with_a_pid_and_a_command_records_the_pid() {
    require_kernel!();
    require_perf!();
    let spinner = background("spinner", &[], Output::Stdout);
    assert_records_only("-p", spinner.pid);
}

#[test]
fn record_with_a_tid_and_a_command_records_the_tid() {
    require_kernel!();
    require_perf!();
    let spinner = background("spinner", &[], Output::Stdout);
    assert_records_only("-t", spinner.pid);
}

#[test]
fn stat_with_a_pid_and_a_command_counts_the_pid() {
    require_kernel!();
    require_perf!();
    let spinner = background("spinner", &[], Output::Stdout);
    let pid = spinner.pid.to_string();
    let args = [
        "-x",
        ",",
        "-e",
        "task-clock",
        "-p",
        &pid,
        "--",
        "sleep",
        "1",
    ];
    let perf = common::perf()
        .arg("stat")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("perf stat starts");
    let out = common::output(common::scry().arg("stat").args(args));
    let perf = perf.wait_with_output().expect("perf stat ends");
    let msec = |stderr: &[u8]| -> f64 {
        String::from_utf8_lossy(stderr)
            .lines()
            .find(|l| l.contains("task-clock"))
            .and_then(|l| l.split(',').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no task-clock in {}", String::from_utf8_lossy(stderr)))
    };
    let (ours, theirs) = (msec(&out.stderr), msec(&perf.stderr));
    // A second of `sleep` is ~1 ms of CPU; the spinner's share of a second
    // is what both saw.
    assert!(
        ours >= theirs / 3.0 && ours <= theirs * 3.0 + 50.0 && ours > 20.0,
        "task-clock of -p {pid}: scry {ours} ms, perf {theirs} ms"
    );
}

#[test]
fn trace_with_a_pid_and_a_command_traces_the_pid() {
    require_kernel!();
    require_tracefs!();
    // 2000 getppid calls a second until killed.
    let storm = background("storm", &["1000000000", "2000"], Output::None);
    let dir = common::tempdir();
    let file = dir.path().join("trace.txt");
    let pid = storm.pid.to_string();
    let out = common::output(
        common::scry()
            .args(["trace", "-p", &pid, "-o"])
            .arg(&file)
            .args(["--", "sleep", "1"]),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&file).expect("trace output");
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("): ")).collect();
    let strangers: Vec<&&str> = lines.iter().filter(|l| !l.contains(" storm/")).collect();
    assert!(
        strangers.is_empty(),
        "trace -p {pid} -- sleep 1 traced others: {:?}",
        &strangers[..strangers.len().min(5)]
    );
    assert!(
        lines.iter().filter(|l| l.contains("getppid")).count() >= 50,
        "few getppid calls of {pid} traced:\n{text}"
    );
}

/// pingpong blocks in read all the time: off-CPU, sched and profile see it.
fn pingpong() -> Background {
    background("pingpong", &["1000000000"], Output::Stderr)
}

#[test]
fn offcpu_with_a_pid_and_a_command_watches_the_pid() {
    require_kernel!();
    require_tracefs!();
    let pp = pingpong();
    let out = common::output(common::scry().args([
        "offcpu",
        "--folded",
        "-p",
        &pp.pid.to_string(),
        "--",
        "sleep",
        "1",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.lines().any(|l| l.starts_with("pingpong;")), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("sleep;")), "{text}");
}

#[test]
fn sched_with_a_pid_and_a_command_watches_the_pid() {
    require_kernel!();
    require_tracefs!();
    let pp = pingpong();
    let out = common::output(common::scry().args([
        "sched",
        "timehist",
        "--format",
        "json",
        "-p",
        &pp.pid.to_string(),
        "--",
        "sleep",
        "1",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("timehist JSON");
    let rows = doc["rows"].as_array().expect("rows");
    assert!(!rows.is_empty(), "no rows");
    let others: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["pid"].as_i64() != Some(i64::from(pp.pid)))
        .collect();
    assert!(
        others.is_empty(),
        "rows of other tasks: {:?}",
        &others[..others.len().min(3)]
    );
}

#[test]
fn profile_with_a_pid_and_a_command_watches_the_pid() {
    require_kernel!();
    require_tracefs!();
    let pp = pingpong();
    let out = common::output(common::scry().args([
        "profile",
        "--format",
        "json",
        "-p",
        &pp.pid.to_string(),
        "--",
        "sleep",
        "1",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("profile JSON");
    let comms: Vec<&str> = doc["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .filter_map(|s| s["comm"].as_str())
        .collect();
    assert!(comms.contains(&"pingpong"), "{comms:?}");
    assert!(!comms.contains(&"sleep"), "{comms:?}");
}

/// A command whose program cannot run is refused by every command that
/// takes one, in the one line `scry run -c` says, exit 2, before anything
/// is loaded, forked or written (nothing on stdout: funccount printed its
/// `Tracing 1 functions` header, loaded, then failed to exec).
#[test]
fn a_command_that_cannot_run_is_refused_before_anything_loads() {
    let dir = common::tempdir();
    let data = dir.path().join("never.data");
    let data = data.to_str().unwrap();
    let missing = "no-such-program-here";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["funccount", "c:malloc", "--", missing], "funccount"),
        (
            vec!["funclatency", "c:malloc", "--", missing],
            "funclatency",
        ),
        (vec!["memleak", "-c", missing], "memleak"),
        (vec!["memleak", "--", missing, "1"], "memleak"),
        (vec!["sched", "runqlat", "--", missing], "sched"),
        (vec!["stat", "--", missing], "stat"),
        (vec!["record", "-o", data, "--", missing], "record"),
        (vec!["trace", "--", missing], "trace"),
        (vec!["offcpu", "--", missing], "offcpu"),
        (vec!["profile", "--", missing], "profile"),
        (vec!["flamegraph", "-o", data, "--", missing], "flamegraph"),
        (vec!["flamegraph", "--offcpu", "--", missing], "flamegraph"),
    ];
    for (args, tool) in &cases {
        let out = common::output(common::scry().args(args));
        let says =
            format!("{tool}: no program '{missing}' to run (not in PATH, or not executable)");
        common::assert_bad_input(&out, &says, args);
        assert!(
            out.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    // A path that is not executable: the same line.
    let out = common::output(common::scry().args(["stat", "--", "/etc/passwd"]));
    common::assert_bad_input(
        &out,
        "stat: no program '/etc/passwd' to run",
        &"/etc/passwd",
    );
    assert!(!std::path::Path::new(data).exists(), "{data} written");
}
