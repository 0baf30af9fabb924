//! The `perf stat` and `perf record -e` one-liners of Brendan Gregg's list
//! (`/work/shared/ONELINERS.md` of the project), each run with perf and
//! with scry on the same command line and workload (durations shortened),
//! answers compared: for stat, every line's state (a count, `<not
//! supported>`, `<not counted>`), unit and event, in order; for record,
//! that both succeed or both refuse, and the events `perf evlist -g` reads
//! back from the two files (`cycles:u` is `cpu-clock:uH` in both on a
//! machine without a PMU).

use crate::common;

use std::process::{Child, Command};

/// A process to point `-p` at; killed when dropped.
struct Sleeper(Child);

impl Sleeper {
    fn start() -> Sleeper {
        Sleeper(
            Command::new("sleep")
                .arg("60")
                .spawn()
                .expect("start sleep"),
        )
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The lines of stat's text output as (state, unit, event).
fn stat_lines(text: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.contains("seconds")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (state, rest) = match words.first() {
            Some(w) if w.starts_with('<') && words.len() > 2 => (words[..2].join(" "), &words[2..]),
            Some(w) if w.starts_with(|c: char| c.is_ascii_digit()) => {
                ("N".to_string(), &words[1..])
            }
            _ => continue,
        };
        let (unit, rest) = match rest.first() {
            Some(&u) if u == "msec" || u == "ns" => (u, &rest[1..]),
            _ => ("", rest),
        };
        if let Some(event) = rest.first() {
            out.push((state, unit.to_string(), event.to_string()));
        }
    }
    out
}

#[test]
fn stat_one_liners_answer_as_perf() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let quick = common::workload("quick");
    let quick = quick.to_str().expect("utf-8 path");
    let sleeper = Sleeper::start();
    let pid = sleeper.0.id().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "-e",
            "LLC-loads,LLC-load-misses,LLC-stores,LLC-prefetches",
            "--",
            quick,
        ],
        vec![
            "-e",
            "syscalls:sys_enter_*",
            "-p",
            &pid,
            "--",
            "sleep",
            "0.2",
        ],
        vec!["-e", "block:*", "-a", "--", "sleep", "0.2"],
        vec!["-e", "cycles", "--repeat", "5", "--", quick],
        vec!["-dp", &pid, "--", "sleep", "0.2"],
    ];
    for args in cases {
        let ours = common::stderr_ok(common::scry().arg("stat").args(&args));
        let theirs = common::stderr_ok(common::perf().arg("stat").args(&args));
        let (a, b) = (stat_lines(&ours), stat_lines(&theirs));
        assert!(!a.is_empty(), "{args:?}: no lines:\n{ours}");
        assert_eq!(a, b, "stat {args:?}\nscry:\n{ours}\nperf:\n{theirs}");
    }
}

#[test]
fn record_one_liners_answer_as_perf() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let quick = common::workload("quick");
    let quick = quick.to_str().expect("utf-8 path");
    let dir = common::tempdir();
    let sleep: &[&str] = &["--", "sleep", "0.2"];
    let cases: Vec<Vec<&str>> = vec![
        vec!["-e", "cycles:k", "-a"],
        vec!["-e", "cycles:u", "-a"],
        vec!["-e", "cycles:pp", "--", quick],
        vec!["-e", "L1-dcache-load-misses", "-c", "10000", "-ag"],
        vec!["-e", "LLC-load-misses", "-c", "100", "-ag"],
        vec!["-e", "context-switches", "-ag"],
        vec!["-e", "migrations", "-a"],
        vec![
            "-e",
            "block:block_rq_complete",
            "--filter",
            "nr_sector > 200",
            "-a",
        ],
        vec![
            "-e",
            "block:block_rq_complete",
            "--filter",
            "rwbs == \"WS\"",
            "-a",
        ],
        vec![
            "-e",
            "block:block_rq_complete",
            "--filter",
            "rwbs ~ \"*W*\"",
            "-a",
        ],
    ];
    for mut args in cases {
        if !args.contains(&"--") {
            args.extend_from_slice(sleep);
        }
        let record = |mut tool: Command, file: &str| -> (bool, String) {
            let path = dir.path().join(file);
            let out = common::output(tool.args(["record", "-q", "-o"]).arg(&path).args(&args));
            if !out.status.success() {
                return (false, String::from_utf8_lossy(&out.stderr).into_owned());
            }
            let events = common::run_ok(common::perf().args(["evlist", "-g", "-i"]).arg(&path));
            // perf adds a dummy event for its own side-band records system-wide.
            let events = events
                .lines()
                .filter(|l| !l.starts_with("dummy:") && !l.starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n");
            (true, events)
        };
        let (ours_ok, ours) = record(common::scry(), "scry.data");
        let (theirs_ok, theirs) = record(common::perf(), "perf.data");
        assert_eq!(
            ours_ok, theirs_ok,
            "record {args:?}: succeeded differently\nscry:\n{ours}\nperf:\n{theirs}"
        );
        if ours_ok {
            assert_eq!(ours, theirs, "record {args:?}");
        }
    }
}
