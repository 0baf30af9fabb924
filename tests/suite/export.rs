//! `scry convert`: each export read back by a real consumer of its format.
//!
//! - pprof: `go tool pprof -top` (Debian's golang-go) shows the same top
//!   functions and percentages as `scry report --no-children --sort sym`
//!   within 0.5 points, and `-traces` the same chains.
//! - speedscope: the npm `speedscope` package's page, in headless Chromium,
//!   renders the file (the hot function on the page, no console error).
//! - Firefox Profiler: the JSON read back: threads, sample counts, the hot
//!   stack.
//! - Chrome trace: speedscope (its Trace Event Format importer) in
//!   headless Chromium lists each thread with its run slices' time; each
//!   thread's run slices add up to its on-CPU time;
//!   event pairs (system calls) are slices.
//! - Bad input: flat samples without stacks, tracepoints into pprof, an
//!   unknown format, a file that is not perf.data.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// `scry record -F 999 [-g] -o dir/name.data -- cpu7525 CPU_TIME`.
fn record_cpu7525(dir: &Path, name: &str, stacks: bool, cpu_time: &str) -> PathBuf {
    common::scry_record_cpu7525(dir, name, stacks, cpu_time)
}

/// `scry record -q ARGS -o data -- WORKLOAD ARGS...` (`workload[0]` a
/// workload of the suite); what the workload printed.
fn record(data: &Path, args: &[&str], workload: &[&str]) -> String {
    common::run_ok(
        common::scry()
            .args(["record", "-q"])
            .args(args)
            .arg("-o")
            .arg(data)
            .arg("--")
            .arg(common::workload(workload[0]))
            .args(&workload[1..]),
    )
}

/// `scry convert -i data --to format -o out`.
fn convert_cmd(data: &Path, format: &str, out: &Path) -> Command {
    let mut cmd = common::scry();
    cmd.args(["convert", "-i"])
        .arg(data)
        .args(["--to", format, "-o"])
        .arg(out);
    cmd
}

/// `scry convert`, which must succeed; asserts the file is 0600.
fn convert(data: &Path, format: &str, out: &Path) -> String {
    let stderr = common::stderr_ok(&mut convert_cmd(data, format, out));
    let mode = std::fs::metadata(out)
        .expect("export written")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{} is {mode:o}", out.display());
    stderr
}

/// `name → percent` from `scry report --no-children --sort sym` lines
/// (`    73.63%  [.] hot_a`).
fn report_percents(data: &Path) -> Vec<(String, f64)> {
    let args = "report --stdio --no-children --sort sym -g none -i".split(' ');
    let text = common::run_ok(common::scry().args(args).arg(data));
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (pct, rest) = l.trim().split_once('%')?;
            let name = rest.trim().split_once(' ')?.1.trim();
            Some((name.to_string(), pct.trim().parse().ok()?))
        })
        .collect()
}

/// `name → flat%` from `go tool pprof -top` lines.
fn pprof_percents(top: &str) -> Vec<(String, f64)> {
    top.lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            if cols.len() < 6 {
                return None;
            }
            let pct = cols[1].strip_suffix('%')?.parse().ok()?;
            Some((cols[5..].join(" "), pct))
        })
        .collect()
}

fn require_go() -> bool {
    common::require_go()
}

fn go_pprof(args: &[&str], profile: &Path) -> String {
    common::go_pprof(args, profile)
}

fn percent_of(list: &[(String, f64)], name: &str) -> f64 {
    list.iter()
        .find(|(n, _)| n == name)
        .map(|(_, p)| *p)
        .unwrap_or_else(|| panic!("{name} not in {list:?}"))
}

#[test]
fn pprof_matches_report_in_go_tool_pprof() {
    require_kernel!();
    if !require_go() {
        return;
    }
    let dir = common::tempdir();
    let data = record_cpu7525(dir.path(), "cpu", true, "0.6s");
    let out = dir.path().join("cpu.pb.gz");
    convert(&data, "pprof", &out);

    let report = report_percents(&data);
    let top = go_pprof(&["-top", "-nodecount=20"], &out);
    let pprof = pprof_percents(&top);
    for name in ["hot_a", "hot_b"] {
        let (want, got) = (percent_of(&report, name), percent_of(&pprof, name));
        assert!(
            (want - got).abs() <= 0.5,
            "{name}: report {want}%, pprof {got}%\n{top}"
        );
    }
    // The top two are the same functions in the same order.
    let names = |l: &[(String, f64)]| l.iter().take(2).map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&report), names(&pprof), "{top}");
    assert!(top.contains("Type: cpu"), "{top}");

    // -traces: the chains, leaf first, one frame a line.
    let traces = go_pprof(&["-traces"], &out);
    let chains: Vec<Vec<&str>> = traces
        .split("-----------+")
        .map(|block| {
            block
                .lines()
                .filter(|l| !l.contains(':') && !l.trim().is_empty() && !l.starts_with('-'))
                .map(|l| l.split_whitespace().last().unwrap_or(""))
                .collect()
        })
        .collect();
    for want in [
        &["hot_a", "outer_a", "main"][..],
        &["hot_b", "middle_b", "outer_b", "main"][..],
    ] {
        assert!(
            chains.iter().any(|c| c.starts_with(want)),
            "no chain {want:?} in\n{traces}"
        );
    }
    // Labels for pid, tid and comm.
    assert!(
        traces.contains("comm:") && traces.contains("pid:") && traces.contains("tid:"),
        "{traces}"
    );
    // The workload's mapping carries its build id (the file's BUILD_ID
    // feature); the sample types are the samples and their nanoseconds.
    let raw = go_pprof(&["-raw"], &out);
    let binary = common::workload("cpu7525");
    let id = scry::data::build_id::read_build_id(&binary)
        .expect("read the workload's build id")
        .expect("the workload has a build id");
    let id = scry::data::build_id::to_hex(&id);
    assert!(
        raw.lines()
            .any(|l| l.contains(&*binary.to_string_lossy()) && l.contains(&id)),
        "no mapping of {} with build id {id} in\n{raw}",
        binary.display()
    );
    assert!(
        raw.contains("samples/count cpu/nanoseconds"),
        "sample types:\n{raw}"
    );
    // Source lines were kept: -lines names the file.
    let lines = go_pprof(&["-top", "-lines"], &out);
    assert!(lines.contains("cpu7525.c:"), "{lines}");
}

#[test]
fn pprof_of_a_file_without_stacks_is_flat() {
    require_kernel!();
    if !require_go() {
        return;
    }
    let dir = common::tempdir();
    let data = record_cpu7525(dir.path(), "flat", false, "0.4s");
    let out = dir.path().join("flat.pb.gz");
    convert(&data, "pprof", &out);
    let top = go_pprof(&["-top"], &out);
    let pprof = pprof_percents(&top);
    let report = report_percents(&data);
    let (want, got) = (percent_of(&report, "hot_a"), percent_of(&pprof, "hot_a"));
    assert!(
        (want - got).abs() <= 0.5,
        "report {want}%, pprof {got}%\n{top}"
    );
}

#[test]
fn convert_refuses_what_a_format_cannot_hold() {
    require_kernel!();
    require_tracefs!();
    let dir = common::tempdir();
    let data = dir.path().join("sw.data");
    common::run_ok(
        common::scry()
            .args(["record", "-q", "-e", "sched:sched_switch", "-a", "-o"])
            .arg(&data)
            .args(["--", "sleep", "0.2"]),
    );
    let out = dir.path().join("sw.pb.gz");
    let result = common::output(&mut convert_cmd(&data, "pprof", &out));
    common::assert_bad_input(
        &result,
        "pprof cannot hold tracepoint events",
        &"sched into pprof",
    );
    assert!(!out.exists(), "a refused export leaves no file");

    let cpu = record_cpu7525(dir.path(), "cpu", true, "0.05s");
    let t = dir.path().join("t.json");
    let result = common::output(&mut convert_cmd(&cpu, "chrome-trace", &t));
    common::assert_bad_input(
        &result,
        "chrome-trace cannot hold sampled profiles",
        &"cpu-clock into chrome-trace",
    );
}

#[test]
fn convert_bad_input_is_one_line() {
    let dir = common::tempdir();
    let junk = dir.path().join("junk.data");
    std::fs::write(&junk, b"PERFILE2 this is not a perf.data file at all").expect("write");
    for format in ["pprof", "firefox", "speedscope", "chrome-trace", "folded"] {
        let out = common::output(&mut convert_cmd(&junk, format, &dir.path().join("out")));
        common::assert_bad_input(&out, "junk.data", &format);
    }
    let out = common::output(&mut convert_cmd(&junk, "svg", &dir.path().join("out")));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown format 'svg'"));
}

/// `(tid, event) → samples` from `perf script -F tid,event` (the oracle).
fn perf_script_counts(data: &Path) -> BTreeMap<(String, String), u64> {
    let text = common::run_ok(
        common::perf()
            .args(["script", "-F", "tid,event", "-i"])
            .arg(data),
    );
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let mut cols = line.split_whitespace();
        if let (Some(tid), Some(event)) = (cols.next(), cols.next()) {
            let event = event.trim_end_matches(':').to_string();
            *counts.entry((tid.to_string(), event)).or_default() += 1;
        }
    }
    counts
}

/// The function names of a Firefox Profiler thread's stack, leaf first.
fn firefox_stack(thread: &Value, mut stack: usize) -> Vec<String> {
    let strings = &thread["stringArray"];
    let mut names = Vec::new();
    loop {
        let frame = thread["stackTable"]["frame"][stack]
            .as_u64()
            .expect("frame") as usize;
        let func = thread["frameTable"]["func"][frame].as_u64().expect("func") as usize;
        let name = thread["funcTable"]["name"][func].as_u64().expect("name") as usize;
        names.push(strings[name].as_str().expect("string").to_string());
        match thread["stackTable"]["prefix"][stack].as_u64() {
            Some(prefix) => stack = prefix as usize,
            None => return names,
        }
    }
}

#[test]
fn firefox_profile_has_threads_samples_and_markers() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let dir = common::tempdir();
    let data = dir.path().join("ff.data");
    let stdout = record(
        &data,
        &[
            "-F",
            "999",
            "-g",
            "-e",
            "cpu-clock",
            "-e",
            "sched:sched_switch",
        ],
        &["threads", "3", "0.2s"],
    );
    let out = dir.path().join("ff.json");
    convert(&data, "firefox", &out);
    let profile: Value = serde_json::from_slice(&std::fs::read(&out).expect("read")).expect("JSON");
    let threads = profile["threads"].as_array().expect("threads");

    // A thread per tid, with perf script's sample and tracepoint counts.
    let oracle = perf_script_counts(&data);
    let tids: BTreeSet<&str> = oracle.keys().map(|(tid, _)| tid.as_str()).collect();
    let ours: BTreeSet<&str> = threads
        .iter()
        .map(|t| t["tid"].as_str().expect("tid"))
        .collect();
    assert_eq!(ours, tids);
    for thread in threads {
        let tid = thread["tid"].as_str().expect("tid").to_string();
        let count = |event: &str| {
            oracle
                .get(&(tid.clone(), event.into()))
                .copied()
                .unwrap_or(0)
        };
        let weights = thread["samples"]["weight"].as_array().expect("weights");
        let samples: u64 = weights.iter().map(|w| w.as_u64().expect("weight")).sum();
        assert_eq!(samples, count("cpu-clock"), "tid {tid}: samples");
        let markers = thread["markers"]["length"].as_u64().expect("markers");
        assert_eq!(markers, count("sched:sched_switch"), "tid {tid}: markers");
        let deltas = thread["samples"]["timeDeltas"]
            .as_array()
            .expect("timeDeltas");
        assert!(deltas.iter().all(|d| d.as_f64().is_some_and(|d| d >= 0.0)));
    }

    // Each worker's heaviest stack, decoded from the tables (samples ->
    // stackTable -> frameTable -> funcTable -> stringArray), is perf
    // script's heaviest chain for that tid, frame for frame, with as many
    // samples: its own function under thread_main and start_thread.
    let perfs = perf_script_chains(&data);
    for line in stdout.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let [_, index, _, tid] = words[..] else {
            continue;
        };
        let thread = threads
            .iter()
            .find(|t| t["tid"] == tid)
            .expect("worker thread");
        let mut ours: BTreeMap<Vec<String>, u64> = BTreeMap::new();
        for stack in thread["samples"]["stack"].as_array().expect("stacks") {
            let stack = stack.as_u64().expect("stack") as usize;
            *ours.entry(firefox_stack(thread, stack)).or_default() += 1;
        }
        let (hot, n) = heaviest(&ours);
        let (perf_hot, perf_n) = heaviest(perfs.get(tid).expect("perf's samples of the worker"));
        assert_eq!((hot, n), (perf_hot, perf_n), "tid {tid}");
        let worker = format!("worker_{index}");
        assert_eq!(hot[..], [worker.as_str(), "thread_main", "start_thread"]);
    }
}

/// The chain (leaf first) with the most samples, and its count.
fn heaviest(chains: &BTreeMap<Vec<String>, u64>) -> (&[String], u64) {
    chains
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(c, n)| (&c[..], *n))
        .expect("samples")
}

/// Per tid, `perf script`'s cpu-clock chains (function names, leaf first)
/// with their sample counts. scry's files carry a copy of the user stack
/// (for leaf frames without a frame pointer): perf unwinds it by DWARF and
/// appends what it finds, starting again at the user leaf's address, after
/// the frame-pointer chain. The chain is cut there.
fn perf_script_chains(data: &Path) -> BTreeMap<String, BTreeMap<Vec<String>, u64>> {
    let text = common::run_ok(
        common::perf()
            .args(["script", "-F", "tid,event,ip,sym", "-i"])
            .arg(data),
    );
    let mut chains: BTreeMap<String, BTreeMap<Vec<String>, u64>> = BTreeMap::new();
    for sample in text.split("\n\n") {
        let mut lines = sample.lines().filter(|l| !l.trim().is_empty());
        let Some(head) = lines.next() else { continue };
        let mut cols = head.split_whitespace();
        let (Some(tid), Some("cpu-clock:")) = (cols.next(), cols.next()) else {
            continue;
        };
        let mut leaf = None;
        let mut names = Vec::new();
        for line in lines {
            let Some((addr, name)) = line.trim().split_once(' ') else {
                continue;
            };
            let user = u64::from_str_radix(addr, 16).is_ok_and(|a| a < 1 << 47);
            if user && leaf.is_some_and(|l| l == addr) {
                break;
            }
            if user && leaf.is_none() {
                leaf = Some(addr);
            }
            names.push(name.to_string());
        }
        *chains
            .entry(tid.into())
            .or_default()
            .entry(names)
            .or_default() += 1;
    }
    chains
}

/// Run time per tid (ms) from `perf sched timehist` (the oracle): the last
/// column of each row, the task column `comm[tid/pid]` or `comm[tid]`.
fn perf_timehist_run_ms(data: &Path) -> BTreeMap<String, f64> {
    let text = common::run_ok(common::perf().args(["sched", "timehist", "-i"]).arg(data));
    let mut runs = BTreeMap::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let Some(run) = cols.last().and_then(|c| c.parse::<f64>().ok()) else {
            continue;
        };
        let Some(task) = cols
            .iter()
            .find(|c| c.ends_with(']') && !c.starts_with('['))
        else {
            continue;
        };
        let Some(ids) = task
            .rsplit_once('[')
            .map(|(_, ids)| ids.trim_end_matches(']'))
        else {
            continue;
        };
        let tid = ids.split('/').next().unwrap_or(ids).to_string();
        *runs.entry(tid).or_default() += run;
    }
    runs
}

/// `threads 2 DURATION` recorded with sched_switch on every CPU and
/// converted to a Chrome trace in `dir`: the workload's stdout (its
/// `done I tid T cpu_ms MS` lines), the trace's path, and the time the
/// CPUs' task clocks did not count while it recorded (`uncounted_ms`).
fn threads_chrome_trace(dir: &Path, duration: &str) -> (String, PathBuf, f64) {
    let data = dir.join("sw.data");
    let before = uncounted_ms();
    let stdout = record(
        &data,
        &["-e", "sched:sched_switch", "-a"],
        &["threads", "2", duration],
    );
    let uncounted = (uncounted_ms() - before).max(0.0);
    let out = dir.join("trace.json");
    convert(&data, "chrome-trace", &out);
    (stdout, out, uncounted)
}

/// The time, all CPUs together (ms), that the scheduler's task clock did not
/// count and a thread's CPU time therefore lacks: time the hypervisor took
/// the CPU (steal, with PARAVIRT_TIME_ACCOUNTING) and interrupts (with
/// IRQ_TIME_ACCOUNTING). Each CPU's `clock - clock_task` in debugfs's
/// sched/debug; where that is not readable, /proc/stat's steal (USER_HZ
/// ticks of 10 ms, short of the truth by less than a tick per CPU).
fn uncounted_ms() -> f64 {
    let debug = std::fs::read_to_string("/sys/kernel/debug/sched/debug").unwrap_or_default();
    let mut clock = None;
    let mut sum = None;
    for line in debug.lines() {
        let Some((name, value)) = line.trim().split_once(':') else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        match name.trim() {
            ".clock" => clock = Some(value),
            ".clock_task" => {
                if let Some(clock) = clock.take() {
                    *sum.get_or_insert(0.0) += clock - value;
                }
            }
            _ => {}
        }
    }
    sum.unwrap_or_else(|| {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let steal = stat
            .lines()
            .find(|l| l.starts_with("cpu "))
            .and_then(|l| l.split_whitespace().nth(8))
            .and_then(|ticks| ticks.parse::<f64>().ok());
        steal.unwrap_or(0.0) * 10.0
    })
}

/// Each thread's run slices in a Chrome trace, in ms: all of them, and
/// those whose switch-in the recording lacks (`"switch_in": "not
/// recorded"`). Asserts that no two slices of a thread touch or overlap
/// in the arithmetic of speedscope's importer (µs as floats, less the
/// thread's first `ts`): one that begins where the last ends can read as
/// beginning before it, and on another CPU (another frame) speedscope then
/// keeps the last open to the end of the profile and weighs every gap
/// after it (a made-up trace of 200 µs of slices weighed 1.10 ms).
fn run_slices(trace: &Value) -> BTreeMap<String, (f64, f64)> {
    let mut slices: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    let mut spans: BTreeMap<i64, Vec<(f64, f64)>> = BTreeMap::new();
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let (ts, dur) = (
            e["ts"].as_f64().expect("ts"),
            e["dur"].as_f64().expect("dur"),
        );
        let (all, inferred) = slices.entry(e["tid"].to_string()).or_default();
        *all += dur / 1000.0;
        match &e["args"]["switch_in"] {
            Value::Null => {}
            v => {
                assert_eq!(v, "not recorded", "{e}");
                *inferred += dur / 1000.0;
            }
        }
        let tid = e["tid"].as_i64().expect("tid");
        if tid > 0 {
            spans.entry(tid).or_default().push((ts, dur));
        }
    }
    for (tid, mut spans) in spans {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let first = spans[0].0;
        for pair in spans.windows(2) {
            let (ts, dur, next) = (pair[0].0 - first, pair[0].1, pair[1].0 - first);
            assert!(
                next > ts + dur,
                "tid {tid}: a slice begins at {next} µs, not after the one of {dur} µs at {ts} µs"
            );
        }
    }
    slices
}

/// A `threads` worker's run slices (`run_slices`) against the CPU time it
/// measured (`cpu`, ms): all of it in the slices, to 5% (the issue's
/// bound); the slices the recording shows whole no more than 5% and 1 ms
/// over it, and the time the CPUs' task clocks did not count meanwhile
/// (`uncounted`, from `threads_chrome_trace`).
///
/// Why the inferred slices are left out of the upper bound: the kernel
/// does not emit every switch (on this 6.18 VM, ftrace and perf alike never
/// see one out of PID 1's tokio-rt-worker threads, and sometimes miss one
/// out of the idle task). A worker switched in by such a task has no
/// switch-in in the file; scry starts that run at the latest moment the
/// file allows (the CPU's previous switch, or the worker's own switch-out),
/// so its slice also holds what ran unseen before it. One such slice, of
/// 24 ms, put a worker's slices 3 ms (1.5%) over its CPU time; the
/// whole-suite failure was 6.6% over. The file
/// cannot place the run inside that slice, so the test allows the slice.
/// With nothing lost, the bounds are the issue's.
///
/// Why `uncounted`: the thread's CPU time is the scheduler's task clock,
/// which leaves out the time the hypervisor took the CPU (this VM's kernel
/// accounts steal so); the slices, from the switches' timestamps, hold it.
/// A run with 12.4 ms of steal on the CPUs put a worker's whole slices 11.4
/// ms over its CPU time; one whose steal was not measured came to 88 ms
/// over (44%), no slice of it inferred.
///
/// The slices the file shows whole also read a little more than the CPU
/// time run by run (the tracepoint's timestamps are not the scheduler's
/// accounting to the µs): 0.5-4 µs a run on a quiet machine, about 9 µs a
/// run beside another worker's perf sessions (433 runs, 4.1 ms over 204
/// ms), within the 5%.
fn assert_slices_hold_cpu_time(
    tid: &str,
    (all, inferred): (f64, f64),
    cpu: f64,
    uncounted: f64,
    what: &str,
) {
    assert!(
        all >= cpu * 0.95,
        "tid {tid}: {what}: slices add up to {all:.3} ms for the {cpu:.3} ms of CPU the thread measured"
    );
    let whole = all - inferred;
    assert!(
        whole <= cpu * 1.05 + 1.0 + uncounted,
        "tid {tid}: {what}: the slices with their switch-in add up to {whole:.3} ms \
         ({inferred:.3} ms more without one) for the {cpu:.3} ms of CPU the thread measured \
         ({uncounted:.3} ms of CPU time went uncounted meanwhile)"
    );
}

#[test]
fn chrome_trace_run_slices_add_up_to_cpu_time() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let dir = common::tempdir();
    let (stdout, out, uncounted) = threads_chrome_trace(dir.path(), "0.3s");
    let trace: Value = serde_json::from_slice(&std::fs::read(&out).expect("read")).expect("JSON");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    // The structure Chrome's trace viewer and Perfetto read.
    let slices = run_slices(&trace);
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        assert!(e["pid"].is_i64() && e["tid"].is_i64(), "{e}");
        match ph {
            "X" => {
                let ts = e["ts"].as_f64().expect("ts");
                let dur = e["dur"].as_f64().expect("dur");
                assert!(ts >= 0.0 && dur >= 0.0, "{e}");
            }
            "i" => assert!(e["ts"].as_f64().is_some() && e["s"] == "t", "{e}"),
            // Event pairs (blocked time, wakeups): async slices.
            "b" | "e" => assert!(e["cat"] == "pair" && e["id"].is_u64(), "{e}"),
            "M" => {
                names.insert(
                    e["tid"].to_string(),
                    e["args"]["name"].as_str().expect("name").into(),
                );
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    let oracle = perf_timehist_run_ms(&dir.path().join("sw.data"));
    let mut workers = 0;
    for line in stdout.lines() {
        // "done I tid TID cpu_ms MS": the CPU time the thread measured.
        let words: Vec<&str> = line.split_whitespace().collect();
        let ["done", _, "tid", tid, "cpu_ms", cpu] = words.as_slice() else {
            continue;
        };
        workers += 1;
        let cpu: f64 = cpu.parse().expect("cpu_ms");
        let (ours, inferred) = slices.get(*tid).copied().unwrap_or_default();
        let want = oracle.get(*tid).copied().unwrap_or(0.0);
        eprintln!(
            "tid {tid}: slices {ours:.3} ms ({inferred:.3} ms without their switch-in), perf sched timehist {want:.3} ms, the thread measured {cpu:.3} ms ({uncounted:.3} ms uncounted)"
        );
        // perf sched timehist, the oracle, counts a run without its
        // switch-in from the CPU's previous switch, or not at all where
        // there was none, and can come out short by whole runs: it is
        // printed, not asserted.
        assert_slices_hold_cpu_time(
            tid,
            (ours, inferred),
            cpu,
            uncounted,
            &format!("perf sched timehist {want:.3} ms"),
        );
        assert_eq!(names.get(*tid).map(String::as_str), Some("threads"));
    }
    assert_eq!(workers, 2, "{stdout}");
}

/// Event pairs as slices: sleeper's 20 sleeps of 5 ms, recorded with
/// raw_syscalls' enter and exit, are 20 `sys_clock_nanosleep` slices of
/// 5 ms or more on sleeper's process, each begun and ended once. The
/// events are stamped with CLOCK_MONOTONIC (`-k monotonic`), the clock the
/// kernel's sleep timer runs on: a sleep is then 5 ms or more by
/// construction (entered before its timer is armed, left after it
/// expires), where perf's default clock (sched_clock, per CPU) is another
/// clock than the timer's, and a sleep that starts on one CPU and ends on
/// another is measured across two of them.
#[test]
fn chrome_trace_pairs_are_slices() {
    require_kernel!();
    require_tracefs!();
    let dir = common::tempdir();
    let data = dir.path().join("raw.data");
    let events = [
        "-k",
        "monotonic",
        "-e",
        "raw_syscalls:sys_enter",
        "-e",
        "raw_syscalls:sys_exit",
    ];
    record(&data, &events, &["sleeper", "20", "5"]);
    let out = dir.path().join("pairs.json");
    convert(&data, "chrome-trace", &out);
    let trace: Value = serde_json::from_slice(&std::fs::read(&out).expect("read")).expect("JSON");
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let mut sleeps: BTreeMap<u64, (Option<f64>, Option<f64>, i64)> = BTreeMap::new();
    for e in events.iter().filter(|e| e["name"] == "sys_clock_nanosleep") {
        let id = e["id"].as_u64().expect("id");
        let ts = e["ts"].as_f64().expect("ts");
        let slot = sleeps.entry(id).or_default();
        slot.2 = e["pid"].as_i64().expect("pid");
        match e["ph"].as_str() {
            Some("b") => assert!(slot.0.replace(ts).is_none(), "begun twice: {e}"),
            Some("e") => assert!(slot.1.replace(ts).is_none(), "ended twice: {e}"),
            _ => panic!("not a pair slice: {e}"),
        }
    }
    assert_eq!(sleeps.len(), 20, "{sleeps:?}");
    let process = events
        .iter()
        .find(|e| e["name"] == "process_name" && e["args"]["name"] == "sleeper")
        .and_then(|e| e["pid"].as_i64())
        .unwrap_or_else(|| {
            let names: Vec<&Value> = events.iter().filter(|e| e["ph"] == "M").collect();
            panic!("no process named sleeper: {names:?}")
        });
    for (begin, end, pid) in sleeps.values() {
        let (Some(begin), Some(end)) = (begin, end) else {
            panic!("an unpaired slice: {sleeps:?}");
        };
        assert!(
            end - begin >= 5000.0,
            "a 5 ms sleep of {} us: {sleeps:?}",
            end - begin
        );
        assert_eq!(*pid, process, "{sleeps:?}");
    }
}

/// Tracepoints none of which starts or ends a pair (`sched_process_exit`
/// here; block I/O alike) are the trace's instants, one per record: the
/// export does not ask for the profile hooks' events.
#[test]
fn chrome_trace_of_tracepoints_without_pairs_has_their_instants() {
    require_kernel!();
    require_tracefs!();
    let dir = common::tempdir();
    let data = dir.path().join("exit.data");
    record(
        &data,
        &["-e", "sched:sched_process_exit"],
        &["threads", "2", "0.05s"],
    );
    let out = dir.path().join("exit.json");
    convert(&data, "chrome-trace", &out);
    let trace: Value = serde_json::from_slice(&std::fs::read(&out).expect("read")).expect("JSON");
    let exits = trace["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .iter()
        .filter(|e| e["ph"] == "i" && e["name"] == "sched:sched_process_exit")
        .count();
    // The two workers and the process's main thread.
    assert!(exits >= 3, "{exits} exits:\n{trace}");
}

/// speedscope's built page from the npm package (`npm install -g
/// speedscope`), or the reason it is missing.
fn speedscope_page() -> Result<PathBuf, String> {
    let root = Command::new("npm")
        .args(["root", "-g"])
        .output()
        .map_err(|_| "npm is not installed".to_string())?;
    let root = String::from_utf8_lossy(&root.stdout).trim().to_string();
    let page = Path::new(&root).join("speedscope/dist/release/index.html");
    if page.is_file() {
        Ok(page)
    } else {
        Err(format!(
            "{} is missing (npm install -g speedscope@1.25)",
            page.display()
        ))
    }
}

/// The DOM of speedscope's page in headless Chromium with the file `name`
/// (its `text`) loaded, as speedscope's own CLI loads it: a script that
/// hands the file to the page, named in the URL's #localProfilePath;
/// `view=sandwich` lists the functions in the DOM (the flame chart is a
/// canvas). The console must say `imported` and hold no error.
fn speedscope_dom(page: &Path, dir: &Path, name: &str, text: &str, imported: &str) -> String {
    let loader = dir.join("load.js");
    std::fs::write(
        &loader,
        format!(
            "speedscope.loadFileFromBase64('{name}', \
             btoa(unescape(encodeURIComponent(JSON.stringify({text})))))"
        ),
    )
    .expect("write loader");
    let url = format!(
        "file://{}#localProfilePath={}&view=sandwich",
        page.display(),
        loader.display()
    );
    let (dom, console) = common::headless_dom(&url, &dir.join("chromium"));
    assert!(
        console.iter().any(|l| l.contains(imported)),
        "speedscope did not say '{imported}':\n{}",
        console.join("\n")
    );
    let errors: Vec<&String> = console
        .iter()
        .filter(|l| l.contains("ERROR:CONSOLE") || l.contains("Uncaught") || l.contains("rror"))
        .collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    dom
}

#[test]
fn speedscope_renders_in_headless_chromium() {
    require_kernel!();
    if !common::gate(speedscope_page().map(drop)) || !common::gate(common::chromium().map(drop)) {
        return;
    }
    let page = speedscope_page().expect("speedscope page");
    let dir = common::tempdir();
    let data = record_cpu7525(dir.path(), "cpu", true, "0.4s");
    let out = dir.path().join("cpu.speedscope.json");
    convert(&data, "speedscope", &out);
    let text = std::fs::read_to_string(&out).expect("read");
    let file: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        file["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );

    let dom = speedscope_dom(
        &page,
        dir.path(),
        "cpu.speedscope.json",
        &text,
        "Importing as speedscope json file",
    );
    for name in ["hot_a", "hot_b", "cpu7525 (pid"] {
        assert!(dom.contains(name), "{name} is not on the page:\n{dom}");
    }
}

/// A speedscope weight as the page prints it (`207.04ms`, `365.87µs`,
/// `1.02s`), in milliseconds, and half its last digit (how far the
/// printed number may be from the weight).
fn speedscope_ms(text: &str) -> Option<(f64, f64)> {
    let (number, scale) = [("ms", 1.0), ("µs", 1e-3), ("ns", 1e-6), ("s", 1e3)]
        .iter()
        .find_map(|(unit, scale)| Some((text.strip_suffix(unit)?, *scale)))?;
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
    let half_digit = 0.5 * 10f64.powi(-(decimals as i32)) * scale;
    Some((number.parse::<f64>().ok()? * scale, half_digit))
}

/// The Chrome trace export loaded by a consumer that runs here: speedscope
/// imports the Trace Event Format (its run slices, 'X' events, become a
/// profile per thread). Its page, in headless Chromium, lists each worker
/// of `threads` as `threads (pid P), threads (tid T)` (its process and
/// thread names from the metadata events) with a weight that
/// is the thread's run slices (to the digits it prints), which hold the
/// CPU time the thread measured as `chrome_trace_run_slices_add_up_to_cpu_time`
/// asks; no error in the console.
#[test]
fn chrome_trace_renders_in_speedscope() {
    require_kernel!();
    require_tracefs!();
    if !common::gate(speedscope_page().map(drop)) || !common::gate(common::chromium().map(drop)) {
        return;
    }
    let page = speedscope_page().expect("speedscope page");
    let dir = common::tempdir();
    let (stdout, out, uncounted) = threads_chrome_trace(dir.path(), "0.2s");
    let text = std::fs::read_to_string(&out).expect("read");
    let slices = run_slices(&serde_json::from_str(&text).expect("JSON"));
    let dom = speedscope_dom(
        &page,
        dir.path(),
        "trace.json",
        &text,
        "Importing as Trace Event Format profile",
    );
    let mut workers = 0;
    for line in stdout.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let ["done", _, "tid", tid, "cpu_ms", cpu] = words.as_slice() else {
            continue;
        };
        workers += 1;
        let cpu: f64 = cpu.parse().expect("cpu_ms");
        // The profile list's row: <span>NAME</span></td><td ...>WEIGHT</td>.
        let suffix = format!("), threads (tid {tid})</span></td>");
        let row = dom
            .split_once(&suffix)
            .unwrap_or_else(|| panic!("tid {tid} is not on the page:\n{dom}"))
            .1;
        let (weight, half_digit) = row
            .split_once('>')
            .and_then(|(_, rest)| rest.split_once('<'))
            .and_then(|(w, _)| speedscope_ms(w))
            .unwrap_or_else(|| panic!("no weight after tid {tid}: {}", &row[..row.len().min(200)]));
        let (ours, inferred) = slices.get(*tid).copied().unwrap_or_default();
        eprintln!(
            "tid {tid}: speedscope shows {weight:.3} ms, the slices add up to {ours:.4} ms ({inferred:.3} ms without their switch-in), the thread measured {cpu:.3} ms ({uncounted:.3} ms uncounted)"
        );
        assert!(
            (weight - ours).abs() <= half_digit + 1e-6,
            "tid {tid}: speedscope weighs {weight:.3} ms for {ours:.4} ms of run slices"
        );
        assert_slices_hold_cpu_time(tid, (ours, inferred), cpu, uncounted, "speedscope's weight");
    }
    assert_eq!(workers, 2, "{stdout}");
}
