//! `scry heatmap`: the pages read back twice, from the JSON they carry and
//! in headless Chromium (loads with no console message, the flame graph of
//! a selected range drawn in the page).
//!
//! - Offset map: `pulse` (busy for the first 100 ms of every second) shows
//!   one band, and selecting it draws `pulse_busy`; an empty range draws
//!   nothing.
//! - Latency map: `sleeper`'s 20 sleeps of 5 ms are 20 system-call pairs of
//!   4.2 ms or more (from raw_syscalls and from the per-call syscalls
//!   tracepoints); the wakeup map counts what `scry report --profile`
//!   counts.
//! - Bad input: one line, exit 2.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// `scry heatmap -i data -o out ARGS`, which must succeed; the page is
/// 0600; returns its text.
fn heatmap(data: &Path, out: &Path, args: &[&str]) -> String {
    common::run_ok(
        common::scry()
            .args(["heatmap", "-i"])
            .arg(data)
            .arg("-o")
            .arg(out)
            .args(args),
    );
    let mode = std::fs::metadata(out).expect("page").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{} is {mode:o}", out.display());
    std::fs::read_to_string(out).expect("read page")
}

/// The JSON the page carries (`#heatmap-data`).
fn page_data(page: &str) -> Value {
    let open = r#"<script type="application/json" id="heatmap-data">"#;
    let start = page.find(open).expect("data block") + open.len();
    let end = start + page[start..].find("</script>").expect("end of data");
    serde_json::from_str(&page[start..end]).expect("JSON")
}

fn counts(data: &Value) -> Vec<u64> {
    data["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .map(|n| n.as_u64().expect("count"))
        .collect()
}

/// The page in headless Chromium at `fragment`: its DOM, after asserting
/// the console stayed silent (the page logs nothing; any line is an error
/// or a blocked fetch).
fn load(page: &Path, fragment: &str, dir: &Path, name: &str) -> String {
    let url = format!("file://{}{fragment}", page.display());
    let (dom, console) = common::headless_dom(&url, &dir.join(name));
    assert!(console.is_empty(), "console: {console:#?}");
    dom
}

/// The text of `<p id="range">` in a DOM.
fn range_line(dom: &str) -> &str {
    let start = dom.find(r#"<p id="range">"#).expect("range line") + 14;
    &dom[start..start + dom[start..].find('<').expect("end")]
}

fn record(dir: &Path, name: &str, args: &[&str], command: &[&str]) -> PathBuf {
    let data = dir.join(format!("{name}.data"));
    let mut cmd = common::scry();
    cmd.args(["record", "-q"]).args(args).arg("-o").arg(&data);
    cmd.arg("--").arg(common::workload(command[0]));
    cmd.args(&command[1..]);
    common::run_ok(&mut cmd);
    data
}

/// `sleeper N MS` recorded with raw_syscalls' enter and exit.
fn record_syscalls(dir: &Path, n: &str, ms: &str) -> PathBuf {
    let events = [
        "-e",
        "raw_syscalls:sys_enter",
        "-e",
        "raw_syscalls:sys_exit",
    ];
    record(dir, "raw", &events, &["sleeper", n, ms])
}

#[test]
fn offset_heatmap_has_the_busy_band_and_selecting_it_draws_the_busy_function() {
    require_kernel!();
    if !common::gate(common::chromium().map(drop)) {
        return;
    }
    let dir = common::tempdir();
    let data = record(dir.path(), "pulse", &["-F", "999", "-g"], &["pulse", "4"]);
    let out = dir.path().join("pulse.html");
    let page = heatmap(&data, &out, &[]);
    let json = page_data(&page);
    let rows = json["rows"].as_u64().expect("rows") as usize;
    let columns = json["columns"].as_u64().expect("columns") as usize;
    assert_eq!(rows, 50);
    assert!((4..=5).contains(&columns), "{columns} columns");
    let counts = counts(&json);
    let total: u64 = counts.iter().sum();
    assert!(total > 0);
    // Samples per row over all seconds; the busy 100 ms are 5 rows. Time
    // counts from the first sample, which comes a little after the first
    // burst began (later on a loaded machine), so the band may start
    // before row 0 and wrap to the last rows: find the 6 rows (circular)
    // holding the most.
    let per_row: Vec<u64> = (0..rows)
        .map(|r| (0..columns).map(|c| counts[c * rows + r]).sum())
        .collect();
    let window = |first: usize| -> u64 { (0..6).map(|k| per_row[(first + k) % rows]).sum() };
    let band = (0..rows).max_by_key(|&r| window(r)).expect("rows");
    assert!(
        window(band) * 100 >= total * 90,
        "band at row {band} holds {} of {total} samples: {per_row:?}",
        window(band)
    );
    // In every whole second.
    for c in 0..4 {
        let in_band: u64 = (0..6).map(|k| counts[c * rows + (band + k) % rows]).sum();
        assert!(in_band > 0, "second {c} has no band: {counts:?}");
    }

    // Select the band of second 2 (within one column when it does not
    // wrap; else from the previous column's last rows).
    let (from, to) = if band + 5 < rows {
        (format!("2.{band}"), format!("2.{}", band + 5))
    } else {
        (format!("1.{band}"), format!("2.{}", (band + 5) % rows))
    };
    let dom = load(&out, &format!("#select={from}-{to}"), dir.path(), "band");
    let range = range_line(&dom);
    assert!(range.starts_with("Flame graph of "), "{range}");
    assert!(!range.ends_with(" 0 samples"), "{range}");
    let busy = dom
        .split("<title>")
        .find(|t| t.starts_with("pulse_busy ("))
        .unwrap_or_else(|| panic!("no pulse_busy frame in the flame graph: {range}"));
    // pulse_busy is (nearly) all of the band.
    let pct: f64 = busy
        .split(", ")
        .nth(1)
        .and_then(|p| p.split('%').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{busy}"));
    assert!(pct >= 80.0, "{busy}");
    // The cells say their count and range.
    assert!(
        dom.contains(r#"class="cell""#) && dom.contains(" samples</title>"),
        "cells without titles"
    );

    // The middle of the idle part: no sample, no flame graph.
    let near = |r: usize| (0..16).any(|k| (band + rows - 5 + k) % rows == r);
    let idle = (0..rows - 5)
        .find(|&s| (s..s + 6).all(|r| !near(r)))
        .expect("an idle window");
    let dom = load(
        &out,
        &format!("#select=1.{idle}-1.{}", idle + 5),
        dir.path(),
        "idle",
    );
    assert!(
        range_line(&dom).ends_with(": 0 samples"),
        "{}",
        range_line(&dom)
    );
    assert!(!dom.contains("pulse_busy ("));
}

/// 20 clock_nanosleep pairs of at least 4.19 ms (5 ms asked; bucket 22 is
/// 4,194,304 ns up), however loaded the machine.
fn assert_twenty_sleeps(page: &str) {
    let json = page_data(page);
    let buckets = json["buckets"].as_u64().expect("buckets") as usize;
    let min = json["min_bucket"].as_u64().expect("min_bucket") as usize;
    let counts = counts(&json);
    assert_eq!(counts.iter().sum::<u64>(), 20, "{json}");
    for (i, n) in counts.iter().enumerate() {
        if *n > 0 {
            assert!(
                min + i % buckets >= 22,
                "a sleep in bucket {}",
                min + i % buckets
            );
        }
    }
}

#[test]
fn latency_heatmap_of_system_calls() {
    require_kernel!();
    require_tracefs!();
    if !common::gate(common::chromium().map(drop)) {
        return;
    }
    let dir = common::tempdir();
    let raw = record_syscalls(dir.path(), "20", "5");
    let out = dir.path().join("sleeps.html");
    let page = heatmap(&raw, &out, &["--latency", "sys_clock_nanosleep"]);
    assert_twenty_sleeps(&page);
    let dom = load(&out, "", dir.path(), "sleeps");
    assert!(dom.contains(" sys_clock_nanosleep</title>"), "{dom}");

    // Every call: the sleeps and libc's start-up calls.
    let all = heatmap(
        &raw,
        &dir.path().join("all.html"),
        &["--latency", "syscalls"],
    );
    let total: u64 = counts(&page_data(&all)).iter().sum();
    assert!(total > 20, "{total} system calls");

    // The per-call tracepoints pair the same way.
    let per_call = record(
        dir.path(),
        "per_call",
        &[
            "-e",
            "syscalls:sys_enter_clock_nanosleep",
            "-e",
            "syscalls:sys_exit_clock_nanosleep",
        ],
        &["sleeper", "20", "5"],
    );
    let page = heatmap(
        &per_call,
        &dir.path().join("per_call.html"),
        &["--latency", "syscalls"],
    );
    assert_twenty_sleeps(&page);
}

#[test]
fn latency_heatmap_of_wakeups_counts_what_report_counts() {
    require_kernel!();
    require_tracefs!();
    let dir = common::tempdir();
    let data = record(
        dir.path(),
        "wake",
        &["-a", "-e", "sched:sched_switch", "-e", "sched:sched_waking"],
        &["sleeper", "20", "5"],
    );
    let page = heatmap(
        &data,
        &dir.path().join("wake.html"),
        &["--latency", "wakeup"],
    );
    let total: u64 = counts(&page_data(&page)).iter().sum();
    let report = common::run_ok(
        common::scry()
            .args(["report", "--profile", "-i"])
            .arg(&data),
    );
    // `  Event: sched_wakeup (N) Total: ...`, per task.
    let want: u64 = report
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Event: sched_wakeup ("))
        .filter_map(|l| l.split(')').next()?.parse::<u64>().ok())
        .sum();
    assert!(want > 0, "{report}");
    assert_eq!(total, want);
}

/// Block I/O: `dwrites`' N direct writes to a loop device, recorded
/// system-wide with block_rq_issue and block_rq_complete (the completion
/// runs in an interrupt or the loop device's worker, not in the writer),
/// are as many pairs or more (the machine's other disks may add theirs) in
/// `--latency bio`'s map as the file holds the loop device's issues and
/// completions, and the same pairs through `-H` in trace-cmd's hook syntax;
/// a hook naming an event the file lacks is one line naming the file's
/// events. (The file may lack one of the N: 29 pairs once, at half the
/// work, where the file's events are the measure, not the N writes.)
#[test]
fn latency_heatmap_of_block_io_and_of_any_hook() {
    require_kernel!();
    require_tracefs!();
    if !common::require_tool(
        "losetup",
        "util-linux's losetup is not installed (scripts/deps)",
    ) {
        return;
    }
    let n = 30u64;
    let dir = common::tempdir();
    let disk = common::loop_device::LoopDevice::new();
    let dev = disk.dev.to_string_lossy().into_owned();
    let data = record(
        dir.path(),
        "bio",
        &[
            "-a",
            "-e",
            "block:block_rq_issue",
            "-e",
            "block:block_rq_complete",
        ],
        &["dwrites", &dev, &n.to_string(), "65536"],
    );
    let page = heatmap(&data, &dir.path().join("bio.html"), &["--latency", "bio"]);
    let bio: u64 = counts(&page_data(&page)).iter().sum();
    // The loop device's events in the file (`7,M` in their text).
    let minor = dev.trim_start_matches("/dev/loop");
    let script = common::run_ok(common::scry().args(["script", "-i"]).arg(&data));
    let of_loop = |event: &str| {
        let (event, dev) = (format!("{event}: "), format!(": 7,{minor} "));
        script
            .lines()
            .filter(|l| l.contains(&event) && l.contains(&dev))
            .count() as u64
    };
    let held = of_loop("block:block_rq_issue").min(of_loop("block:block_rq_complete"));
    assert!(held * 2 >= n, "{held} of {n} writes in the file:\n{script}");
    assert!(bio >= held, "{bio} block I/O pairs for {held} in the file");
    assert!(page.contains("block_rq_issue-block_rq_complete"));

    let hook = "block:block_rq_issue,sector/block:block_rq_complete,sector,g";
    let page = heatmap(&data, &dir.path().join("hook.html"), &["-H", hook]);
    assert_eq!(counts(&page_data(&page)).iter().sum::<u64>(), bio);

    let result = common::output(
        common::scry()
            .args(["heatmap", "-H", "block_rq_insert/block_rq_complete", "-i"])
            .arg(&data)
            .arg("-o")
            .arg(dir.path().join("x.html")),
    );
    common::assert_bad_input(&result, "has no event block_rq_insert", &"insert");
    assert!(
        String::from_utf8_lossy(&result.stderr).contains("block:block_rq_issue"),
        "the file's events are named"
    );
}

#[test]
fn heatmap_bad_input_is_one_line() {
    let dir = common::tempdir();
    let junk = dir.path().join("junk.data");
    std::fs::write(&junk, b"PERFILE2 this is not a perf.data file at all").expect("write");
    let out = dir.path().join("out.html");
    for args in [&[][..], &["--latency", "syscalls"][..]] {
        let result = common::output(
            common::scry()
                .args(["heatmap", "-i"])
                .arg(&junk)
                .arg("-o")
                .arg(&out)
                .args(args),
        );
        common::assert_bad_input(&result, "junk.data", &args);
        assert!(!out.exists());
    }
    let result = common::output(common::scry().args(["heatmap", "--rows", "0"]));
    assert_eq!(result.status.code(), Some(2));
    let result = common::output(common::scry().args(["heatmap", "--interval", "-5"]));
    assert_eq!(result.status.code(), Some(2));
}

#[test]
fn latency_heatmap_of_pairs_the_file_lacks_names_what_it_has() {
    require_kernel!();
    require_tracefs!();
    let dir = common::tempdir();
    let raw = record_syscalls(dir.path(), "2", "1");
    let result = common::output(
        common::scry()
            .args(["heatmap", "--latency", "wakeup", "-i"])
            .arg(&raw)
            .arg("-o")
            .arg(dir.path().join("x.html")),
    );
    common::assert_bad_input(&result, "no wakeup pairs (pairs in the file: ", &"wakeup");
    assert!(String::from_utf8_lossy(&result.stderr).contains("sys_clock_nanosleep"));
}
