//! `scry sched timehist` and `scry sched runqlat` on a two-thread ping-pong
//! against `perf sched`: from the same `perf sched record` file the
//! timeline has perf sched timehist's rows, task by task; live, the rows
//! of each thread equal the switch-outs perf sched recorded in the same run;
//! the histogram counts exactly the rows that had a run-queue wait; and
//! live runqlat of a program that sleeps 20 times counts the waits bpftrace
//! counts in the same run.

use crate::common;

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

fn json(cmd: &mut std::process::Command) -> Value {
    let out = common::run_ok(cmd);
    serde_json::from_str(&out).expect("json output parses")
}

/// Rows per tid of `scry sched timehist --format json`.
fn rows_per_tid(report: &Value) -> HashMap<i64, u64> {
    let mut counts = HashMap::new();
    for row in report["rows"].as_array().expect("rows") {
        *counts.entry(row["tid"].as_i64().unwrap_or(0)).or_default() += 1;
    }
    counts
}

/// Rows per tid of `perf sched timehist` ("name[tid]" or "name[tid/pid]").
fn perf_rows(file: &Path) -> HashMap<i64, u64> {
    let out = common::run_ok(common::perf().args(["sched", "timehist", "-i"]).arg(file));
    let mut counts = HashMap::new();
    for line in out.lines().skip(3) {
        let Some(task) = line.split("]  ").nth(1) else {
            continue;
        };
        let ids = task.split('[').nth(1).and_then(|t| t.split(']').next());
        if let Some(tid) = ids
            .and_then(|i| i.split('/').next())
            .and_then(|t| t.parse::<i64>().ok())
        {
            *counts.entry(tid).or_default() += 1;
        }
    }
    counts
}

fn pingpong_tids(stderr: &str) -> Vec<i64> {
    ["pinger", "ponger"]
        .iter()
        .map(|role| {
            stderr
                .lines()
                .find_map(|l| l.strip_prefix(&format!("pingpong {role} ")))
                .and_then(|t| t.trim().parse().ok())
                .unwrap_or_else(|| panic!("no {role} tid in: {stderr}"))
        })
        .collect()
}

#[test]
fn timehist_from_a_perf_sched_file_has_perfs_rows() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let pingpong = common::workload("pingpong");
    let dir = common::tempdir();
    let file = dir.path().join("sched.data");
    let out = common::output(
        common::perf()
            .args(["sched", "record", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&pingpong)
            .arg("300"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tids = pingpong_tids(&String::from_utf8_lossy(&out.stderr));
    let report = json(
        common::scry()
            .args(["sched", "timehist", "--format", "json", "-i"])
            .arg(&file),
    );
    assert_eq!(
        report["lost"], 0,
        "perf lost events: counts cannot be compared"
    );
    let ours = rows_per_tid(&report);
    let theirs = perf_rows(&file);
    for tid in &tids {
        let (o, t) = (
            ours.get(tid).copied().unwrap_or(0),
            theirs.get(tid).copied().unwrap_or(0),
        );
        // Near 300 (a read whose byte is already in the pipe does not
        // block, and an idle switch can go undelivered on this VM: 299 was
        // seen); the proof is the equality with perf below.
        assert!(o >= 150, "tid {tid}: only {o} rows for 300 round trips");
        // perf shows a thread's last switch-out (as it exits) as tid -1.
        assert!(
            o == t || o == t + 1,
            "tid {tid}: scry {o} rows, perf sched timehist {t}"
        );
    }
    // The histogram counts the rows that waited on a run queue, plus
    // switch-ins never followed by a switch-out before the end.
    let runqlat = json(
        common::scry()
            .args(["sched", "runqlat", "--format", "json", "-i"])
            .arg(&file),
    );
    let with_delay = report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| !r["delay_ns"].is_null())
        .count() as u64;
    let count = runqlat["count"].as_u64().unwrap_or(0);
    let buckets: u64 = runqlat["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .map(|b| b["count"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(count, buckets);
    assert!(
        count >= with_delay && count <= with_delay + 4,
        "runqlat {count} vs {with_delay} timehist rows with a delay"
    );
}

#[test]
fn live_timehist_rows_equal_perf_sched_switch_outs() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let pingpong = common::workload("pingpong");
    let dir = common::tempdir();
    let file = dir.path().join("sched.data");
    let mut perf = common::perf()
        .args(["sched", "record", "-a", "-o"])
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start perf sched record");
    // perf records from its first poll on (after its header and its read
    // of /proc, slow on a loaded machine).
    common::wait_until_polling(perf.id());
    let out = common::output(
        common::scry()
            .args(["sched", "timehist", "--format", "json", "--"])
            .arg(&pingpong)
            .arg("300"),
    );
    common::signal(perf.id(), "INT");
    let stopped = common::wait_timeout(&mut perf, std::time::Duration::from_secs(20));
    if stopped.is_none() {
        let _ = perf.kill();
        let _ = perf.wait();
        panic!("perf sched record did not stop");
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tids = pingpong_tids(&String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["lost"], 0, "scry lost events");
    let ours = rows_per_tid(&report);
    let theirs = perf_rows(&file);
    for tid in &tids {
        let (o, t) = (
            ours.get(tid).copied().unwrap_or(0),
            theirs.get(tid).copied().unwrap_or(0),
        );
        // Near 300 (a read whose byte is already in the pipe does not
        // block, and an idle switch can go undelivered on this VM: 299 was
        // seen); the proof is the equality with perf below.
        assert!(o >= 150, "tid {tid}: only {o} rows for 300 round trips");
        // perf also saw the forked child wait before scry enabled its
        // counters, and shows a thread's last switch-out as tid -1.
        assert!(
            o.abs_diff(t) <= 1,
            "tid {tid}: scry {o} rows, perf sched (same run) {t}"
        );
    }
}

#[test]
fn bad_input_is_one_line() {
    let out = common::output(common::scry().args(["sched", "runqlat"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("scry: nothing to watch"));
    let out =
        common::output(common::scry().args(["sched", "timehist", "-i", "/nonexistent/perf.data"]));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

/// runqlat's wait semantics in bpftrace, per pid: a wakeup of a task not on
/// a CPU, or a preemption (state R, R+), starts a wait; its switch-in ends
/// it. A task's waits count from its first sched_wakeup (the workload's:
/// scry's start pipe), not from its fork. Prints `ready` once attached
/// (BEGIN runs after every probe).
const RUNQLAT_BT: &str = r#"
BEGIN { printf("ready\n"); }
END { clear(@on); clear(@q); clear(@live); }
tracepoint:sched:sched_wakeup {
  @live[args->pid] = 1;
  if (@on[args->pid] == 0 && @q[args->pid] == 0) { @q[args->pid] = nsecs; }
}
tracepoint:sched:sched_switch {
  @on[args->prev_pid] = 0;
  if ((args->prev_state & 0xff) == 0) { @q[args->prev_pid] = nsecs; }
  @on[args->next_pid] = 1;
  if (@q[args->next_pid] && @live[args->next_pid]) { @n[args->next_pid] = count(); }
  delete(@q[args->next_pid]);
}
"#;

/// bpftrace running `RUNQLAT_BT` in the background, stopped by SIGINT.
struct Bpftrace {
    child: std::process::Child,
    out: std::path::PathBuf,
}

impl Bpftrace {
    fn start(dir: &Path) -> Bpftrace {
        let out = dir.join("bpftrace.out");
        let child = std::process::Command::new("bpftrace")
            .args(["-e", RUNQLAT_BT])
            .stdout(std::fs::File::create(&out).expect("bpftrace output file"))
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start bpftrace");
        let mut bt = Bpftrace { child, out };
        let start = std::time::Instant::now();
        while !bt.output().contains("ready") {
            if let Ok(Some(status)) = bt.child.try_wait() {
                panic!("bpftrace exited early: {status}");
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "bpftrace did not attach"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        bt
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// Stops it; the waits it counted per pid. SIGINT again every 2 s: one
    /// that comes while bpftrace is still attaching is ignored.
    fn stop(mut self) -> HashMap<i64, u64> {
        let stopped = (0..15).any(|_| {
            common::signal(self.child.id(), "INT");
            common::wait_timeout(&mut self.child, std::time::Duration::from_secs(2)).is_some()
        });
        assert!(stopped, "bpftrace does not stop on SIGINT");
        self.output()
            .lines()
            .filter_map(|l| {
                let (key, n) = l.strip_prefix("@n[")?.split_once("]: ")?;
                Some((key.parse().ok()?, n.trim().parse().ok()?))
            })
            .collect()
    }
}

impl Drop for Bpftrace {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Live runqlat of a program that sleeps 20 times counts the waits bpftrace
/// counts with runqlat's rules on the same run, run after run (counts of
/// 21-32 against bpftrace's 31-33 were reported). Both count in the kernel
/// by the same rules, and scry's filter holds the workload from before its
/// exec, inside bpftrace's window: the same waits, exactly.
///
/// `--no-bpf` streams the events through perf_event rings, and on this
/// 6.18 VM the tracepoint events raised in the idle task (the timer that
/// ends a sleep on an idle CPU, the switch from idle to the sleeper)
/// sometimes reach no ring for a whole run (perf record of the same events
/// lost them too: 10 of about 50 idle events in one run of ten) while BPF
/// programs on the same tracepoints see them all. That path is pinned from
/// above only: it never counts a wait bpftrace did not see (one more at
/// most: its counters go on while the child is still on its way to the
/// start pipe, where it can be preempted once more).
#[test]
fn live_runqlat_counts_what_bpftrace_counts() {
    require_kernel!();
    require_tracefs!();
    if !common::require_tool("bpftrace", "bpftrace is not installed (scripts/deps)") {
        return;
    }
    let sleeper = common::workload("sleeper");
    let dir = common::tempdir();
    let runqlat = |extra: &[&str]| {
        let out = common::output(
            common::scry()
                .args(["sched", "runqlat", "--format", "json"])
                .args(extra)
                .arg("--")
                .arg(&sleeper)
                .arg("20"),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let report: Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(report["lost"], 0, "scry lost events");
        let pid: i64 = stderr
            .lines()
            .find_map(|l| l.strip_prefix("sleeper pid "))
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("no sleeper pid in: {stderr}"));
        (pid, report["count"].as_u64().unwrap_or(0))
    };
    for run in 0..3 {
        let bt = Bpftrace::start(dir.path());
        let (pid, ours) = runqlat(&[]);
        let (streamed_pid, streamed) = runqlat(&["--no-bpf"]);
        let counted = bt.stop();
        let theirs = counted.get(&pid).copied().unwrap_or(0);
        assert!(theirs > 0, "run {run}: bpftrace saw no waits");
        assert_eq!(
            ours, theirs,
            "run {run}: scry counted {ours} run-queue waits, bpftrace {theirs}"
        );
        let theirs = counted.get(&streamed_pid).copied().unwrap_or(0);
        assert!(
            streamed <= theirs + 1,
            "run {run}: scry --no-bpf counted {streamed} run-queue waits, bpftrace {theirs}"
        );
    }
}

/// A scry recording that lost events (a one-page ring under a storm of
/// system calls beside the scheduler events) counts each loss once: the
/// file carries a PERF_RECORD_LOST and the LOST_SAMPLES scry writes for it,
/// and `sched` added both. perf report's "Total Lost Samples" on the same
/// file is the reference.
#[test]
fn losses_in_a_scry_file_are_counted_once() {
    if !common::require_perf() || !common::require_perf_events() || !common::require_tracefs() {
        return;
    }
    let dir = common::tempdir();
    let file = dir.path().join("sched.data");
    let storm = common::workload("storm");
    common::run_ok(
        common::scry()
            .args(["record", "-m", "1", "-a", "-e", "sched:sched_switch"])
            .args(["-e", "sched:sched_wakeup", "-e", "raw_syscalls:*", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&storm)
            .args(["300000", "0"]),
    );
    let text = common::run_ok(common::perf().args(["report", "--stdio", "-i"]).arg(&file));
    let by_perf: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("# Total Lost Samples: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Total Lost Samples line in:\n{text}"));
    assert!(
        by_perf > 0,
        "the recording lost nothing: the test proves nothing"
    );
    let report = json(
        common::scry()
            .args(["sched", "runqlat", "--format", "json", "-i"])
            .arg(&file),
    );
    assert_eq!(report["lost"], by_perf, "{report}");
}
