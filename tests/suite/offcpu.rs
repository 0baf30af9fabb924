//! `scry offcpu` on a program that blocks in fsync: the heaviest off-CPU
//! stack goes through fsync, and the total off-CPU time agrees with what
//! the program itself measured (wall time minus CPU time).

use crate::common;

fn parse_ns(stderr: &str, key: &str) -> Option<f64> {
    let line = stderr.lines().find(|l| l.starts_with("fsyncer "))?;
    let value = line.split_whitespace().find_map(|w| w.strip_prefix(key))?;
    value.parse().ok()
}

fn total_ms(report: &str) -> f64 {
    let first = report.lines().next().unwrap_or_default();
    first
        .strip_prefix("# scry offcpu: ")
        .and_then(|rest| rest.split(" ms").next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no total in: {report}"))
}

/// The switch-out count of the report's first line (`in N switch-outs`).
fn switch_outs(report: &str) -> u64 {
    let first = report.lines().next().unwrap_or_default();
    first
        .split(" in ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no switch-out count in: {first}"))
}

#[test]
fn fsync_blocking_is_found_and_measured() {
    require_kernel!();
    require_tracefs!();
    let fsyncer = common::workload("fsyncer");
    let dir = common::tempdir();
    let svg = dir.path().join("offcpu.svg");
    let out = common::output(
        common::scry()
            .args(["offcpu", "-n", "3", "--svg"])
            .arg(&svg)
            .arg("--")
            .arg(&fsyncer)
            .arg("200")
            .arg(dir.path().join("data")),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    // The heaviest stack is blocked in fsync.
    let first_stack: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("#   off-CPU"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    assert!(first_stack.iter().any(|l| l.contains("fsync")), "{stdout}");
    assert!(
        first_stack
            .iter()
            .any(|l| l.contains("write_and_sync") || l.contains("main")),
        "{stdout}"
    );
    // Total off-CPU ≈ wall − cpu, as the program measured it.
    let wall = parse_ns(&stderr, "wall_ns=").expect("fsyncer reports its times");
    let cpu = parse_ns(&stderr, "cpu_ns=").expect("fsyncer reports its times");
    let expected_ms = (wall - cpu) / 1e6;
    let measured = total_ms(&stdout);
    let switch_outs = switch_outs(&stdout);
    // Switch-ins come from the context-switch records too (the tracepoint
    // misses idle -> task switches on 6.18), so nothing is short. Two
    // clocks disagree a little, in known directions:
    // - The task's CPU clock starts when the scheduler picks it, before the
    //   switch-in record (and the switch-out sample with its callchain) is
    //   written: each switch counts a few µs as both CPU and off-CPU time.
    //   Allowed: 10% plus 15 µs a switch-out (CI saw ~8 µs).
    // - On a VM, time the hypervisor steals while the task runs is not CPU
    //   time to the task's clock, nor off-CPU time to the scheduler:
    //   wall - cpu overstates off-CPU by it (up to 19% seen here). Allowed:
    //   25% below.
    let upper = expected_ms * 1.10 + switch_outs as f64 * 0.015;
    let lower = expected_ms * 0.75;
    assert!(
        (lower..=upper).contains(&measured),
        "off-CPU {measured:.3} ms vs wall-cpu {expected_ms:.3} ms \
         (allowed {lower:.3}..{upper:.3})\n{stdout}"
    );
    // The flame graph was written and names fsync.
    let svg_text = std::fs::read_to_string(&svg).expect("svg written");
    assert!(
        svg_text.starts_with("<?xml") && svg_text.contains("fsync"),
        "svg lacks fsync"
    );
}

#[test]
fn folded_output_and_wakeup_join() {
    require_kernel!();
    require_tracefs!();
    let fsyncer = common::workload("fsyncer");
    let dir = common::tempdir();
    let out = common::output(
        common::scry()
            .args(["offcpu", "--folded", "--wakeup", "--"])
            .arg(&fsyncer)
            .arg("50")
            .arg(dir.path().join("data")),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(!lines.is_empty());
    for line in &lines {
        let (stack, count) = line.rsplit_once(' ').expect("folded line: stack count");
        assert!(count.parse::<u64>().is_ok(), "{line}");
        assert!(stack.starts_with("fsyncer;"), "{line}");
    }
    // Some blocked stacks got the waker's stack joined on top of `--`.
    assert!(lines.iter().any(|l| l.contains(";--;")), "{stdout}");
}

#[test]
fn flamegraph_offcpu_draws_the_blocked_stacks() {
    require_kernel!();
    require_tracefs!();
    let fsyncer = common::workload("fsyncer");
    let dir = common::tempdir();
    let svg = dir.path().join("off.svg");
    let out = common::output(
        common::scry()
            .args(["flamegraph", "--offcpu", "-o"])
            .arg(&svg)
            .arg("--")
            .arg(&fsyncer)
            .arg("30")
            .arg(dir.path().join("data")),
    );
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Only the graph: no report on stdout.
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = std::fs::read_to_string(&svg).expect("the SVG was written");
    assert!(text.contains("<svg"), "not an SVG");
    assert!(text.contains("Off-CPU"), "not the off-CPU graph");
    assert!(
        text.contains("fsync"),
        "no fsync frame in the off-CPU graph"
    );
}

#[test]
fn bad_input_is_one_line() {
    let out = common::output(common::scry().args(["offcpu"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("scry: nothing to watch"));
    let out = common::output(common::scry().args(["offcpu", "-p", "999999999"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such process"));
}

/// perf's own off-CPU recipe, `perf record -a -g -e sched:sched_switch`,
/// read by `scry offcpu -i`: sleeper's time in S state is what perf
/// script's switches of the same file give (switch-out in S to switch-in,
/// in nanoseconds), to the microsecond scry prints. One recording read by
/// both: two recorders stamp one switch at two moments (see
/// `cli::offcpu`), which is why the guest's check compares this way.
#[test]
fn reads_perfs_recording_and_agrees_with_perf_script() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let sleeper = common::workload("sleeper");
    let dir = common::tempdir();
    let data = dir.path().join("perf.data");
    // perf's recording is the oracle's input: on this 6.18 host the kernel
    // now and then hands a CPU's records to no ring (perf's as scry's), and
    // a file without sleeper's switches compares nothing; it is made again
    // then (at most three times), never scry's answer.
    let (mut pid, mut perf_ns, mut sleeps) = (0, 0.0, 0);
    for _ in 0..3 {
        let out = common::output(
            std::process::Command::new("perf")
                // 16 MB a CPU: a loaded machine's switches filled perf's
                // default rings, and it lost sleeper's (no sleep was left).
                .args([
                    "record",
                    "-q",
                    "-a",
                    "-g",
                    "-m",
                    "4096",
                    "-e",
                    "sched:sched_switch",
                    "-o",
                ])
                .arg(&data)
                .arg("--")
                .arg(&sleeper)
                .args(["5", "10"]),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "perf record: {stderr}");
        pid = stderr
            .lines()
            .find_map(|l| l.strip_prefix("sleeper pid "))
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("no pid from sleeper: {stderr}"));
        let script = common::output(
            std::process::Command::new("perf")
                .args(["script", "--ns", "-F", "time,event,trace", "-i"])
                .arg(&data),
        );
        // `   123.456789012: sched:sched_switch: prev_comm=... prev_pid=...`
        let mut out_at: Option<(f64, bool)> = None;
        (perf_ns, sleeps) = (0.0, 0);
        for line in String::from_utf8_lossy(&script.stdout).lines() {
            let mut words = line.split_whitespace();
            let (Some(time), Some("sched:sched_switch:")) = (words.next(), words.next()) else {
                continue;
            };
            let t: f64 = time
                .trim_end_matches(':')
                .parse()
                .expect("perf script's time");
            let field = |key: &str| line.split_whitespace().find_map(|w| w.strip_prefix(key));
            // Its wait for perf before its exec too, when perf recorded it
            // (perf-exec): it is in the file scry reads.
            if field("prev_pid=") == Some(&pid.to_string()) {
                out_at = Some((t, field("prev_state=").is_some_and(|s| s.starts_with('S'))));
            }
            if field("next_pid=") == Some(&pid.to_string())
                && let Some((out, blocked)) = out_at.take()
                && blocked
            {
                perf_ns += (t - out) * 1e9;
                sleeps += 1;
            }
        }
        if sleeps >= 5 {
            break;
        }
        eprintln!("perf's file holds {sleeps} of sleeper's 5 sleeps: recording again");
    }
    assert!(sleeps >= 5, "sleeper's 5 sleeps in perf script: {sleeps}");
    let out = common::output(
        common::scry()
            .args(["offcpu", "-i"])
            .arg(&data)
            .args(["-p", &pid.to_string()]),
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s_ms: f64 = report
        .lines()
        .next()
        .and_then(|l| l.split("(S ").nth(1))
        .and_then(|r| r.split(" ms").next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no S state total in: {report}"));
    assert!(
        (s_ms - perf_ns / 1e6).abs() <= 0.0005 + 1e-9,
        "scry offcpu -i: S {s_ms} ms; perf script of the same file: {:.6} ms\n{report}",
        perf_ns / 1e6
    );
}
