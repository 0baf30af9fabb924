//! `scry profile` (trace-cmd profile's event pairs) on programs with known
//! behaviour: exactly N fsync system calls with the blocked time led by the
//! fsync stack; a ping-pong whose wakeups are counted per thread; a custom
//! global hook with per-value sections; and bad hooks as one-line errors.

mod common;

use serde_json::Value;

fn profile_json(args: &[&str], command: &[&std::ffi::OsStr]) -> (Value, String) {
    let out = common::output(
        common::scry()
            .arg("profile")
            .args(args)
            .args(["--format", "json", "--"])
            .args(command),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "stderr: {stderr}");
    let value: Value = serde_json::from_slice(&out.stdout).expect("profile --format json parses");
    (value, stderr)
}

fn task_events(report: &Value, tid: i64) -> &Vec<Value> {
    report["sections"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["kind"] == "task" && s["id"] == tid))
        .and_then(|s| s["events"].as_array())
        .unwrap_or_else(|| panic!("no section for task {tid}: {report:#}"))
}

fn event<'a>(events: &'a [Value], name: &str) -> Option<&'a Value> {
    events.iter().find(|e| e["event"] == name)
}

#[test]
fn fsync_calls_counted_and_blocked_stack_found() {
    require_kernel!();
    require_tracefs!();
    let fsyncer = common::workload("fsyncer");
    let dir = common::tempdir();
    let data = dir.path().join("data");
    let (report, stderr) =
        profile_json(&[], &[fsyncer.as_os_str(), "40".as_ref(), data.as_os_str()]);
    let _ = stderr;
    let sections = report["sections"].as_array().expect("sections");
    let fsync_task = sections
        .iter()
        .find(|s| s["comm"] == "fsyncer")
        .unwrap_or_else(|| panic!("no fsyncer task: {report:#}"));
    let events = fsync_task["events"].as_array().expect("events");
    let fsync = event(events, "sys_fsync").expect("sys_fsync event");
    assert_eq!(fsync["count"], 40, "{fsync:#}");
    assert!(fsync["total_ns"].as_u64().unwrap_or(0) > 0);
    // Blocked time (S or D) is led by a stack through fsync.
    let blocked: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "sched_switch:D" || e["event"] == "sched_switch:S")
        .collect();
    let heaviest = blocked
        .iter()
        .max_by_key(|e| e["total_ns"].as_u64().unwrap_or(0))
        .unwrap_or_else(|| panic!("no blocked time: {events:#?}"));
    let top_stack = &heaviest["stacks"][0]["frames"];
    let frames: Vec<&str> = top_stack
        .as_array()
        .expect("frames")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(frames.iter().any(|f| f.contains("fsync")), "{frames:?}");
    assert!(
        frames
            .iter()
            .any(|f| *f == "write_and_sync" || *f == "main"),
        "{frames:?}"
    );
}

#[test]
fn pingpong_wakeups_per_thread() {
    require_kernel!();
    require_tracefs!();
    let pingpong = common::workload("pingpong");
    let (report, stderr) = profile_json(&[], &[pingpong.as_os_str(), "500".as_ref()]);
    let tid_of = |role: &str| -> i64 {
        stderr
            .lines()
            .find_map(|l| l.strip_prefix(&format!("pingpong {role} ")))
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {role} tid in: {stderr}"))
    };
    for role in ["pinger", "ponger"] {
        let events = task_events(&report, tid_of(role));
        let count =
            |name: &str| event(events, name).map_or(0, |e| e["count"].as_u64().unwrap_or(0));
        let wakeups = count("sched_wakeup");
        // At most one wakeup per round trip (a few more at start and exit);
        // a write that finds the reader not yet asleep wakes nobody, which
        // a loaded machine makes common, so the floor is loose.
        assert!(
            (100..=520).contains(&wakeups),
            "{role}: {wakeups} wakeups for 500 round trips"
        );
        // Every sleep (S) ends in a wakeup and every wakeup in a switch-in:
        // the two pairings count the same events.
        let sleeps = count("sched_switch:S");
        assert!(
            sleeps.abs_diff(wakeups) <= 3,
            "{role}: {sleeps} sleeps vs {wakeups} wakeups"
        );
        let reads = event(events, "sys_read").map_or(0, |e| e["count"].as_u64().unwrap_or(0));
        assert!(reads >= 500, "{role}: {reads} reads");
    }
}

#[test]
fn custom_global_hook_gives_per_value_sections() {
    require_kernel!();
    require_tracefs!();
    let (report, _) = profile_json(
        &[
            "--no-default-hooks",
            "-a",
            "-H",
            "hrtimer_expire_entry,hrtimer/hrtimer_expire_exit,hrtimer,g",
        ],
        &["sleep".as_ref(), "0.5".as_ref()],
    );
    let globals: Vec<&Value> = report["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .filter(|s| s["kind"] == "global")
        .collect();
    assert!(!globals.is_empty(), "no per-timer sections: {report:#}");
    for section in &globals {
        let e = &section["events"][0];
        assert_eq!(e["event"], "hrtimer_expire_entry-hrtimer_expire_exit");
        assert!(e["count"].as_u64().unwrap_or(0) >= 1);
    }
}

#[test]
fn bad_hooks_are_one_line_and_exit_2() {
    for (hook, expected) in [
        (
            "nosuch_event,x/sched_switch,y",
            "unknown event 'nosuch_event'",
        ),
        ("sched_wakeup,comm/sched_switch,next_pid", "not a number"),
        (
            "sched_wakeup,pid/sched_switch,next_pid,z",
            "unknown flag 'z'",
        ),
        (
            "sched_wakeup,nosuchfield/sched_switch,next_pid",
            "has no field 'nosuchfield'",
        ),
    ] {
        let out = common::output(common::scry().args(["profile", "-a", "-H", hook, "--", "true"]));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{hook}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{hook}: {stderr}");
        assert!(
            stderr.starts_with("scry: ") && stderr.contains(expected),
            "{hook}: {stderr}"
        );
    }
}
