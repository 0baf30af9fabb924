//! perf's event spellings in `scry stat` and `scry record`, with perf as
//! the oracle on the same command line and workload: groups
//! (`'{task-clock,page-faults}:u'`, opened as perf opens them: the
//! syscalls, seen with strace, must make the same groups), `PMU/terms/`
//! (`software/config=1,name=foo/u`, `msr/tsc/`), tool events
//! (`duration_time`, `user_time`, `system_time`), tracepoint globs in
//! perf's order, and `record -e cycles:u` on a machine without a hardware
//! PMU (perf falls back to `cpu-clock:uH`).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn stat() -> Command {
    let mut cmd = common::scry();
    cmd.arg("stat");
    cmd
}

fn perf_stat() -> Command {
    let mut cmd = common::perf();
    cmd.arg("stat");
    cmd
}

/// `-x,` lines as (placeholder or not, unit, event).
fn csv_shape(text: &str) -> Vec<(bool, String, String)> {
    text.lines()
        .filter(|l| l.contains(','))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].starts_with('<'), f[1].to_string(), f[2].to_string())
        })
        .collect()
}

fn csv_value(text: &str, event: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.split(',').nth(2) == Some(event))
        .unwrap_or_else(|| panic!("no {event} line in:\n{text}"));
    let value = line.split(',').next().unwrap_or_default();
    value
        .parse()
        .unwrap_or_else(|_| panic!("{event}: '{value}' is not a number in:\n{text}"))
}

/// Whether the hardware cycles counter works here (perf is asked).
fn perf_has_cycles() -> bool {
    let out = common::output(perf_stat().args(["-x,", "-e", "cycles", "true"]));
    !String::from_utf8_lossy(&out.stderr).contains("<not supported>")
}

/// One successful perf_event_open of `pid`, as strace shows it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Open {
    /// `PERF_TYPE_SOFTWARE PERF_COUNT_SW_TASK_CLOCK`.
    event: String,
    /// The leader's `event` when opened in a group.
    leader: Option<String>,
    group_read: bool,
    disabled: bool,
    enable_on_exec: bool,
}

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    let start = line
        .find(&format!("{name}="))
        .map(|i| i + name.len() + 1)
        .unwrap_or_else(|| panic!("no {name}= in {line}"));
    let rest = &line[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim()
}

/// The perf_event_open calls of `cmd` (run under `strace -f -v`) made for
/// some task other than the tracer itself, with groups told by the
/// leader's event.
fn opens_under_strace(cmd: &[&str], workload: &Path) -> Vec<Open> {
    let dir = common::tempdir();
    let log = dir.path().join("strace.log");
    let out = common::output(
        Command::new("strace")
            .args(["-f", "-v", "-s", "0", "-e", "trace=perf_event_open", "-o"])
            .arg(&log)
            .args(cmd)
            .arg(workload),
    );
    assert!(
        out.status.success(),
        "{cmd:?} under strace: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&log).expect("strace log");
    let mut by_fd: BTreeMap<i64, String> = BTreeMap::new();
    let mut opens = Vec::new();
    for line in text.lines().filter(|l| l.contains("perf_event_open({")) {
        let Some((call, ret)) = line.rsplit_once(" = ") else {
            continue;
        };
        let Ok(fd) = ret.trim().parse::<i64>() else {
            continue;
        };
        let Some((_, args)) = call.rsplit_once("}, ") else {
            continue;
        };
        let args: Vec<i64> = args
            .trim_end_matches(')')
            .split(", ")
            .take(3)
            .filter_map(|a| a.parse().ok())
            .collect();
        let [pid, _cpu, group_fd] = args[..] else {
            continue;
        };
        let event = format!("{} {}", field(line, "type"), field(line, "config"));
        by_fd.insert(fd, event.clone());
        if pid <= 0 {
            // Feature probes on the tool itself, and system-wide helpers.
            continue;
        }
        opens.push(Open {
            leader: (group_fd >= 0).then(|| by_fd.get(&group_fd).cloned().unwrap_or_default()),
            group_read: field(line, "read_format").contains("PERF_FORMAT_GROUP"),
            disabled: field(line, "disabled") == "1",
            enable_on_exec: field(line, "enable_on_exec") == "1",
            event,
        });
    }
    opens.sort();
    opens
}

#[test]
fn groups_open_as_perf_opens_them() {
    require_kernel!();
    require_perf!();
    if !common::require_tool("strace", "strace is not installed (the syscall oracle)") {
        return;
    }
    let quick = common::workload("quick");
    let dir = common::tempdir();
    let (ours_data, perf_data) = (dir.path().join("s.data"), dir.path().join("p.data"));
    let scry = env!("CARGO_BIN_EXE_scry");
    for (ours, theirs) in [
        (
            vec![scry, "stat", "-e", "{task-clock,page-faults}:u,cs", "--"],
            vec!["perf", "stat", "-e", "{task-clock,page-faults}:u,cs", "--"],
        ),
        (
            vec![
                scry,
                "record",
                "-q",
                "-o",
                ours_data.to_str().unwrap(),
                "-e",
                "{task-clock,page-faults}",
                "--",
            ],
            vec![
                "perf",
                "record",
                "-q",
                "-o",
                perf_data.to_str().unwrap(),
                "-e",
                "{task-clock,page-faults}",
                "--",
            ],
        ),
    ] {
        let (a, b) = (
            opens_under_strace(&ours, &quick),
            opens_under_strace(&theirs, &quick),
        );
        assert!(
            a.iter().any(|o| o.leader.is_some()),
            "{ours:?}: no counter opened in a group: {a:#?}"
        );
        assert_eq!(a, b, "{ours:?} vs perf");
    }
    // perf reads the groups back from the file's GROUP_DESC.
    let groups =
        |file: &Path| common::run_ok(common::perf().args(["evlist", "-g", "-i"]).arg(file));
    assert_eq!(groups(&ours_data), groups(&perf_data));
    assert_eq!(groups(&ours_data).trim(), "{task-clock,page-faults}");
    // The group reads as one: its members' times are the leader's.
    let text = common::stderr_ok(
        stat()
            .args(["-x,", "-e", "{task-clock,page-faults,cs}", "--"])
            .arg(&quick),
    );
    let runtimes: Vec<&str> = text.lines().filter_map(|l| l.split(',').nth(3)).collect();
    assert_eq!(runtimes.len(), 3, "{text}");
    assert!(runtimes.iter().all(|r| *r == runtimes[0]), "{text}");
}

#[test]
fn groups_count_and_print_as_perf() {
    require_kernel!();
    require_perf!();
    let quick = common::workload("quick");
    for events in ["{task-clock,page-faults}", "{task-clock,page-faults}:u,cs"] {
        let args = ["-x,", "-e", events, "--"];
        let ours = common::stderr_ok(stat().args(args).arg(&quick));
        let theirs = common::stderr_ok(perf_stat().args(args).arg(&quick));
        assert_eq!(
            csv_shape(&ours),
            csv_shape(&theirs),
            "{events}\nscry:\n{ours}\nperf:\n{theirs}"
        );
    }
    // A member this machine cannot count is `<not supported>`, as in perf.
    // (perf then also loses the leader's count, `<not counted>`: its group
    // read wants every member; the leader did count, and we say how much.)
    if !perf_has_cycles() {
        let args = ["-x,", "-e", "{cpu-clock,cycles}", "--"];
        let ours = common::stderr_ok(stat().args(args).arg(&quick));
        let theirs = common::stderr_ok(perf_stat().args(args).arg(&quick));
        assert_eq!(
            csv_shape(&ours)[1..],
            csv_shape(&theirs)[1..],
            "scry:\n{ours}\nperf:\n{theirs}"
        );
        assert!(csv_value(&ours, "cpu-clock") > 0.0, "{ours}");
    }
    // A group whose leader this machine cannot count: perf refuses the
    // whole group; so do we, in one line.
    if !perf_has_cycles() {
        let theirs = common::output(perf_stat().args(["-e", "{cycles,instructions}:u", "true"]));
        assert!(!theirs.status.success());
        let ours = common::output(stat().args(["-e", "{cycles,instructions}:u", "--", "true"]));
        common::assert_bad_input(
            &ours,
            "group led by 'cycles': the leader is not supported",
            &"leader unsupported",
        );
    }
}

#[test]
fn pmu_terms_count_and_print_as_perf() {
    require_kernel!();
    require_perf!();
    let quick = common::workload("quick");
    let mut events = vec![
        "software/config=1/",
        "software/config=2,name=faults2/u",
        "page-faults:u",
        "software/config=0x3/k",
        "r1a8",
        "breakpoint/config=0/",
    ];
    if Path::new("/sys/bus/event_source/devices/msr/events/tsc").exists() {
        events.push("msr/tsc/");
        events.push("msr/tsc,name=t/k");
    }
    let list = events.join(",");
    let args = ["-x,", "-e", list.as_str(), "--"];
    let ours = common::stderr_ok(stat().args(args).arg(&quick));
    let theirs = common::stderr_ok(perf_stat().args(args).arg(&quick));
    assert_eq!(
        csv_shape(&ours),
        csv_shape(&theirs),
        "scry:\n{ours}\nperf:\n{theirs}"
    );
    // The same counter by name and by terms counts the same faults.
    assert_eq!(
        csv_value(&ours, "faults2"),
        csv_value(&ours, "page-faults:u"),
        "{ours}"
    );
    // Text layout: a task-clock by terms is a plain ns count with perf's
    // CPUs-utilized metric, not msec.
    let text = common::stderr_ok(stat().args(["-e", "software/config=1/", "--"]).arg(&quick));
    let line = text
        .lines()
        .find(|l| l.contains("software/config=1/"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("CPUs utilized") && !line.contains("msec"),
        "{text}"
    );
}

#[test]
fn bad_pmu_terms_name_the_term_and_the_known_ones() {
    for (event, needle) in [
        (
            "software/bogus=1/",
            "unknown term 'bogus' for PMU 'software' (valid terms: config,config1,config2,name,period,percore,metric-id)",
        ),
        ("nosuchpmu/config=1/", "no PMU 'nosuchpmu'"),
        ("software/config=zz/", "'zz' is not a number"),
        ("{task-clock,page-faults", "no closing '}'"),
    ] {
        let out = common::output(stat().args(["-e", event, "--", "true"]));
        common::assert_bad_input(&out, needle, &event);
    }
    if Path::new("/sys/bus/event_source/devices/uprobe/format/retprobe").exists() {
        let out = common::output(stat().args(["-e", "uprobe/bogus/", "--", "true"]));
        common::assert_bad_input(
            &out,
            "valid terms: ref_ctr_offset,retprobe,config,config1,config2,name,period,percore,metric-id",
            &"uprobe/bogus/",
        );
    }
}

#[test]
fn tool_events_print_as_perf() {
    require_kernel!();
    require_perf!();
    let quick = common::workload("quick");
    let args = ["-x,", "-e", "duration_time,task-clock,user_time", "--"];
    let ours = common::stderr_ok(stat().args(args).arg(&quick));
    let theirs = common::stderr_ok(perf_stat().args(args).arg(&quick));
    let shape = |text: &str| -> Vec<(String, String)> {
        csv_shape(text)
            .into_iter()
            .map(|(_, unit, event)| (unit, event))
            .collect()
    };
    assert_eq!(
        shape(&ours),
        shape(&theirs),
        "scry:\n{ours}\nperf:\n{theirs}"
    );
    assert!(
        ours.lines()
            .next()
            .is_some_and(|l| l.starts_with(|c: char| c.is_ascii_digit()) && l.ends_with("/sec")),
        "duration_time has a value and a rate:\n{ours}"
    );
    // Per CPU (-A), perf reads a tool event on the first CPU only.
    let args = [
        "-A",
        "-a",
        "-x,",
        "-e",
        "duration_time,cs",
        "--",
        "sleep",
        "0.1",
    ];
    let per_cpu = |text: &str| -> Vec<(String, String, String)> {
        text.lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f.len() > 3)
            .map(|f| (f[0].to_string(), f[2].to_string(), f[3].to_string()))
            .collect()
    };
    let ours = common::stderr_ok(stat().args(args));
    let theirs = common::stderr_ok(perf_stat().args(args));
    assert_eq!(
        per_cpu(&ours),
        per_cpu(&theirs),
        "scry:\n{ours}\nperf:\n{theirs}"
    );
    // duration_time is the elapsed time of the footer; user_time and
    // system_time are its user and sys seconds (`<not counted>` at 0, as perf).
    let text = common::stderr_ok(
        stat()
            .args(["-e", "duration_time,user_time,system_time", "--"])
            .arg(&quick),
    );
    let footer = |what: &str| -> f64 {
        text.lines()
            .find(|l| l.contains(what))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no '{what}' in:\n{text}"))
    };
    let count = |event: &str| -> Option<f64> {
        let line = text
            .lines()
            .find(|l| {
                l.split_whitespace().nth(2) == Some(event) || l.contains(&format!(" {event} "))
            })
            .unwrap_or_else(|| panic!("no {event} in:\n{text}"));
        assert!(line.contains(" ns "), "{line}");
        line.split_whitespace().next().and_then(|v| v.parse().ok())
    };
    let ns = |s: f64| (s * 1e9).round();
    assert_eq!(
        count("duration_time"),
        Some(ns(footer("seconds time elapsed"))),
        "{text}"
    );
    for (event, what) in [
        ("user_time", "seconds user"),
        ("system_time", "seconds sys"),
    ] {
        let secs = footer(what);
        let expected = (secs > 0.0).then(|| ns(secs));
        assert_eq!(count(event), expected, "{event}:\n{text}");
    }
}

#[test]
fn tracepoint_globs_expand_in_perfs_order() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    for glob in ["block:*", "sched:*"] {
        let args = ["-x,", "-e", glob, "--", "true"];
        let names = |text: &str| -> Vec<String> {
            csv_shape(text).into_iter().map(|(_, _, e)| e).collect()
        };
        let ours = names(&common::stderr_ok(stat().args(args)));
        let theirs = names(&common::stderr_ok(perf_stat().args(args)));
        assert!(ours.len() > 3, "{glob}: {ours:?}");
        assert_eq!(ours, theirs, "{glob}");
    }
}

#[test]
fn record_cycles_without_a_pmu_is_cpu_clock_named_as_perf() {
    require_kernel!();
    require_perf!();
    if perf_has_cycles() {
        eprintln!("skipping: this machine counts cycles; perf does not fall back");
        return;
    }
    let dir = common::tempdir();
    for event in ["cycles:u", "cycles:k", "cycles:pp", "{cycles,page-faults}"] {
        let names = |tool: Command, file: &str| -> String {
            let path = dir.path().join(file);
            let mut tool = tool;
            common::run_ok(
                tool.args(["record", "-q", "-o"])
                    .arg(&path)
                    .args(["-e", event, "--", "true"]),
            );
            common::run_ok(common::perf().args(["evlist", "-g", "-i"]).arg(&path))
        };
        let ours = names(common::scry(), "s.data");
        let theirs = names(common::perf(), "p.data");
        assert_eq!(ours, theirs, "{event}");
    }
}
