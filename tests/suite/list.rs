//! `scry list` against `perf list`: every tracepoint perf lists, we list;
//! hardware events perf hides are shown as `<not supported>`; globs,
//! group keywords and `--json`.

use crate::common;

use std::collections::BTreeSet;

fn list(args: &[&str]) -> String {
    common::run_ok(common::scry().arg("list").args(args))
}

/// The event names of two-column `list` text (`a OR b` gives both).
fn names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let Some(left) = line.split(" [").next() else {
            continue;
        };
        for name in left.trim().split(" OR ") {
            if !name.is_empty() {
                out.insert(name.trim().to_string());
            }
        }
    }
    out
}

#[test]
fn lists_every_tracepoint_perf_lists() {
    require_tracefs!();
    require_perf!();
    let ours = names(&list(&[]));
    let perf = common::run_ok(common::perf().args(["list", "tracepoint"]));
    let theirs: BTreeSet<String> = names(&perf)
        .into_iter()
        .filter(|n| n.contains(':'))
        .collect();
    assert!(
        theirs.len() > 100,
        "perf listed {} tracepoints",
        theirs.len()
    );
    let missing: Vec<&String> = theirs.difference(&ours).collect();
    assert!(
        missing.is_empty(),
        "scry list lacks {} of perf's tracepoints: {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
}

#[test]
fn hardware_marked_where_perf_cannot_count_it() {
    require_kernel!();
    require_perf!();
    let ours = list(&["hw"]);
    let perf_hw = names(&common::run_ok(common::perf().args(["list", "hw"])));
    let mut lines = 0;
    for line in ours.lines() {
        lines += 1;
        assert!(line.contains("[Hardware event]"), "{line}");
        let first = line.split_whitespace().next().unwrap();
        let perf_has = perf_hw.contains(first)
            || line
                .split(" OR ")
                .any(|n| perf_hw.contains(n.split_whitespace().next().unwrap()));
        // perf lists only what it can open; we list all and mark the rest.
        assert_eq!(
            line.ends_with("<not supported>"),
            !perf_has,
            "{line} (perf lists: {perf_hw:?})"
        );
    }
    assert!(lines >= 10, "{ours}");
    // Software events always count.
    let sw = list(&["sw"]);
    assert!(
        sw.contains("task-clock") && !sw.contains("<not supported>"),
        "{sw}"
    );
}

#[test]
fn globs_select_events() {
    require_tracefs!();
    let sched = names(&list(&["sched:*"]));
    assert!(sched.contains("sched:sched_switch"), "{sched:?}");
    assert!(sched.iter().all(|n| n.starts_with("sched:")), "{sched:?}");
    let faults = names(&list(&["*fault*"]));
    assert!(
        faults.contains("page-faults") && faults.contains("major-faults"),
        "{faults:?}"
    );
    assert!(faults.iter().all(|n| n.contains("fault")), "{faults:?}");
    let none = list(&["no_such_event_anywhere"]);
    assert!(none.is_empty(), "{none}");
}

#[test]
fn json_parses_and_agrees_with_text() {
    require_kernel!();
    let json: serde_json::Value =
        serde_json::from_str(&list(&["--json"])).expect("scry list --json is JSON");
    let array = json.as_array().expect("an array");
    let text = names(&list(&[]));
    assert_eq!(array.len(), list(&[]).lines().count());
    for e in array {
        let name = e["name"].as_str().unwrap();
        assert!(text.contains(name), "{name}");
        assert!(e["group"].is_string() && e["supported"].is_boolean(), "{e}");
    }
    let task_clock = array.iter().find(|e| e["name"] == "task-clock").unwrap();
    assert_eq!(task_clock["supported"], true);
    assert_eq!(task_clock["group"], "Software event");
}

#[test]
fn every_listed_tracepoint_counts() {
    // What `list` names, `stat -e` accepts: try a few tracepoints.
    require_kernel!();
    require_tracefs!();
    let sched = names(&list(&["sched:sched_process_*"]));
    assert!(!sched.is_empty());
    let events: Vec<String> = sched.into_iter().collect();
    let out =
        common::output(common::scry().args(["stat", "-x,", "-e", &events.join(","), "--", "true"]));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.lines().count(), events.len(), "{text}");
    let exec = text
        .lines()
        .find(|l| l.contains("sched:sched_process_exec"))
        .unwrap();
    assert!(exec.starts_with("1,"), "{exec}");
}

#[test]
fn tool_and_pmu_events_perf_lists_are_listed_and_count() {
    require_kernel!();
    require_perf!();
    let perf = common::run_ok(common::perf().arg("list"));
    let of_kind = |text: &str, kind: &str| -> BTreeSet<String> {
        names(
            &text
                .lines()
                .filter(|l| l.contains(kind))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    };
    let ours = list(&[]);
    let tools = of_kind(&perf, "[Tool event]");
    assert!(!tools.is_empty(), "perf lists no tool events:\n{perf}");
    assert_eq!(of_kind(&ours, "[Tool event]"), tools);
    // Each one, and each PMU event perf names, counts with scry stat.
    let pmu = of_kind(&perf, "[Kernel PMU event]");
    assert!(
        pmu.is_subset(&of_kind(&ours, "[Kernel PMU event]")),
        "{pmu:?}"
    );
    for event in tools.iter().chain(&pmu) {
        common::run_ok(common::scry().args(["stat", "-e", event, "--", "true"]));
    }
}
