//! The one-liners our users already type (`shared/ONELINERS.md`, Brendan
//! Gregg's perf one-liners), run as written with `perf` and with `scry` in
//! its place, on the same workload, and the answers compared.
//!
//! Each row is a shell command line with `{T}` where the tool's name goes;
//! `{W:name}` is the path of a workload of `workloads/`, `{U:name}` a copy of
//! it named `ol-name` in the row's directory (a command name no other process
//! on the machine has, for rows that count a command's events system-wide),
//! `{F}` one perf.data file that `perf record -g --sample-cpu` made of `cpu7525` (rows
//! that read a file read the same one), `{PID}` a spinner
//! started for the row, `{D}` a fresh directory of the row. A row names what
//! must agree: the exit status (always), exact event counts, the hottest
//! symbol, or the lines a pattern picks out. Durations are what the command
//! line asks (`sleep`), never a guess at this machine's speed. All rows run
//! and every failure is printed before the test fails.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// What the perf run and the scry run must agree on.
enum Check {
    /// Both succeed (or both fail, when the command line is meant to).
    Status,
    /// `stat` output: these events' counts are equal (`<not supported>`
    /// included); the other events must be listed by both.
    StatExact(&'static [&'static str]),
    /// `stat` output: the same events are listed, in the same order.
    StatEvents,
    /// `stat` output: these events (hardware counts, different in any two
    /// runs) are `<not supported>` (or `<not counted>`) in both, or counted
    /// in both.
    StatState(&'static [&'static str]),
    /// The file each wrote to `{D}/perf.data` has, by `scry report` and by
    /// `perf report` alike, this symbol hottest among the samples of `comm`.
    TopSymbol {
        comm: &'static str,
        sym: &'static str,
    },
    /// The output (stdout and stderr) has the same number of lines holding
    /// each of these patterns, at least one.
    SameLines(&'static [&'static str]),
    /// The number of samples in `{D}/perf.data` whose `perf script` line
    /// has `comm` as its command: exactly `n` in scry's file, at least `n`
    /// in perf's.
    CommEvents { comm: &'static str, n: usize },
}

struct Row {
    line: &'static str,
    check: Check,
}

const ROWS: &[Row] = &[
    // perf stat
    Row {
        line: "{T} stat -e syscalls:sys_enter_getppid {W:calls} 20000",
        check: Check::StatExact(&["syscalls:sys_enter_getppid"]),
    },
    Row {
        line: "{T} stat -e syscalls:sys_enter_getppid -- {W:calls} 20000",
        check: Check::StatExact(&["syscalls:sys_enter_getppid"]),
    },
    Row {
        line: "{T} stat {W:quick}",
        check: Check::StatEvents,
    },
    Row {
        line: "{T} stat -a sleep 0.3",
        check: Check::StatEvents,
    },
    Row {
        line: "{T} stat -e LLC-loads,LLC-load-misses,LLC-stores,LLC-prefetches {W:quick}",
        check: Check::StatState(&[
            "LLC-loads",
            "LLC-load-misses",
            "LLC-stores",
            "LLC-prefetches",
        ]),
    },
    Row {
        line: "{T} stat -e cycles --repeat 3 -- {W:quick}",
        check: Check::StatState(&["cycles"]),
    },
    Row {
        line: "{T} stat -e '{task-clock,page-faults}' {W:quick}",
        check: Check::StatEvents,
    },
    Row {
        line: "{T} stat -e duration_time,task-clock {W:quick}",
        check: Check::StatEvents,
    },
    Row {
        line: "{T} stat -e 'syscalls:sys_enter_getppid' -p {PID} -- sleep 0.3",
        check: Check::StatExact(&["syscalls:sys_enter_getppid"]),
    },
    Row {
        line: "{T} stat -dp {PID} -- sleep 0.3",
        check: Check::StatEvents,
    },
    Row {
        line: "{T} stat -e 'block:*' -a sleep 0.3",
        check: Check::StatEvents,
    },
    // perf record, read back by both reports
    Row {
        line: "{T} record -q -o {D}/perf.data -F 99 {W:cpu7525} 150",
        check: Check::TopSymbol {
            comm: "cpu7525",
            sym: "hot_a",
        },
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -g {W:cpu7525} 150",
        check: Check::TopSymbol {
            comm: "cpu7525",
            sym: "hot_a",
        },
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -F 99 -p {PID} -g -- sleep 1",
        check: Check::TopSymbol {
            comm: "spinner",
            sym: "spin_forever",
        },
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -F 99 -ag -- {W:cpu7525} 150",
        check: Check::TopSymbol {
            comm: "cpu7525",
            sym: "hot_a",
        },
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -e cycles:k -a -- sleep 0.3",
        check: Check::Status,
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -e cycles:u -a -- sleep 0.3",
        check: Check::Status,
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -e context-switches -ag -- sleep 0.3",
        check: Check::Status,
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -e migrations -a -- sleep 0.3",
        check: Check::Status,
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -e syscalls:sys_enter_getppid -ag -- {U:calls} 3000",
        check: Check::CommEvents {
            comm: "ol-calls",
            n: 3000,
        },
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -e syscalls:sys_enter_connect -ag -- {U:conns} 5 10 10",
        check: Check::CommEvents {
            comm: "ol-conns",
            n: 5,
        },
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -e sched:sched_process_exec -a -- sh -c '{U:quick}; {U:quick}; :'",
        check: Check::CommEvents {
            comm: "ol-quick",
            n: 2,
        },
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -e block:block_rq_complete --filter 'nr_sector > 200' -a -- sleep 0.2",
        check: Check::Status,
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -e block:block_rq_complete --filter 'rwbs == \"WS\"' -a -- sleep 0.2",
        check: Check::Status,
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -e block:block_rq_complete --filter 'rwbs ~ \"*W*\"' -a -- sleep 0.2",
        check: Check::Status,
    },
    Row {
        line: "{T} record -q -o {D}/perf.data -e block:block_rq_complete --filter 'no_such_field > 1' -a -- sleep 0.2",
        check: Check::Status,
    },
    // perf report and perf script, on one file perf wrote
    Row {
        line: "{T} report --stdio -i {F}",
        check: Check::SameLines(&["hot_a", "hot_b", "outer_a"]),
    },
    Row {
        line: "{T} report -n --stdio -i {F}",
        check: Check::SameLines(&["hot_a", "hot_b", "middle_b"]),
    },
    Row {
        line: "{T} report --stdio --no-children --sort comm,dso,sym -i {F}",
        check: Check::SameLines(&["hot_a", "hot_b"]),
    },
    Row {
        line: "{T} script -i {F}",
        check: Check::SameLines(&["cpu-clock", "hot_a", "hot_b", "outer_b"]),
    },
    Row {
        line: "{T} script -F comm,tid,pid,time,cpu,event,ip,sym,dso -i {F}",
        check: Check::SameLines(&["cpu7525", "hot_a", "hot_b"]),
    },
    // perf list
    Row {
        line: "{T} list 'sched:*'",
        check: Check::SameLines(&[
            "sched:sched_switch",
            "sched:sched_wakeup",
            "sched:sched_process_exec",
        ]),
    },
    Row {
        line: "{T} list | grep sched_switch",
        check: Check::SameLines(&["sched:sched_switch"]),
    },
];

/// Replaces the placeholders of `line` for `tool`.
fn expand(line: &str, tool: &Path, dir: &Path, pid: u32, file: &Path) -> String {
    let mut out = line
        .replace("{F}", &file.display().to_string())
        .replace("{T}", &tool.display().to_string())
        .replace("{D}", &dir.display().to_string())
        .replace("{PID}", &pid.to_string());
    while let Some(start) = out.find("{W:") {
        let Some(len) = out[start..].find('}') else {
            break;
        };
        let name = out[start + 3..start + len].to_string();
        let path = common::workload(&name);
        out.replace_range(start..=start + len, &path.display().to_string());
    }
    while let Some(start) = out.find("{U:") {
        let Some(len) = out[start..].find('}') else {
            break;
        };
        let name = out[start + 3..start + len].to_string();
        let copy = dir.join(format!("ol-{name}"));
        std::fs::copy(common::workload(&name), &copy).expect("copy a workload");
        out.replace_range(start..=start + len, &copy.display().to_string());
    }
    out
}

fn sh(command: &str) -> Output {
    common::output(
        Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(Stdio::null()),
    )
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The `count event` lines of perf stat's layout, in order.
fn stat_counts(text: &str) -> Vec<(String, String)> {
    let mut counts = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() || line.starts_with("Performance counter stats") {
            continue;
        }
        let (count, rest) = if let Some(rest) = line.strip_prefix("<not supported>") {
            ("<not supported>".to_string(), rest)
        } else if let Some(rest) = line.strip_prefix("<not counted>") {
            ("<not counted>".to_string(), rest)
        } else {
            let mut parts = line.splitn(2, char::is_whitespace);
            let count = parts.next().unwrap_or("");
            if !count.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                continue;
            }
            (count.replace(',', ""), parts.next().unwrap_or(""))
        };
        let mut words = rest.split_whitespace();
        let mut event = words.next().unwrap_or("");
        // "2.81 msec task-clock", "7652965 ns duration_time": a unit first.
        if matches!(event, "msec" | "ns" | "seconds" | "sec" | "usec") {
            event = words.next().unwrap_or("");
        }
        if event.is_empty() || matches!(event, "seconds" | "+-") {
            continue;
        }
        counts.push((event.to_string(), count));
    }
    counts
}

/// Samples per symbol among `comm`'s, as `TOOL report` prints them.
fn top_symbol(tool: &Path, data: &Path, comm: &str) -> Result<String, String> {
    let out = common::output(
        Command::new(tool)
            .args([
                "report",
                "--stdio",
                "--no-children",
                "--sort",
                "sym",
                "--comms",
                comm,
                "-i",
            ])
            .arg(data),
    );
    if !out.status.success() {
        return Err(format!("{} report: {}", tool.display(), text(&out)));
    }
    let report = String::from_utf8_lossy(&out.stdout);
    report
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#') && l.contains('%'))
        .and_then(|l| l.rsplit(' ').next())
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "{} report of {} has no entry:\n{report}",
                tool.display(),
                data.display()
            )
        })
}

/// `perf script` lines of `data` whose command is `comm`.
fn comm_events(data: &Path, comm: &str) -> Result<usize, String> {
    let out = common::output(
        common::perf()
            .args(["script", "-F", "comm", "-i"])
            .arg(data),
    );
    if !out.status.success() {
        return Err(format!("perf script -i {}: {}", data.display(), text(&out)));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.trim() == comm)
        .count())
}

fn compare(check: &Check, perf: (&Output, &Path), scry: (&Output, &Path)) -> Result<(), String> {
    let (p, s) = (text(perf.0), text(scry.0));
    if perf.0.status.success() != scry.0.status.success() {
        return Err(format!(
            "exit status differs: perf {} scry {}\n--- perf\n{p}--- scry\n{s}",
            perf.0.status, scry.0.status
        ));
    }
    match check {
        Check::Status => Ok(()),
        Check::StatEvents | Check::StatExact(_) | Check::StatState(_) => {
            let (pc, sc) = (stat_counts(&p), stat_counts(&s));
            let names =
                |c: &[(String, String)]| c.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>();
            if names(&pc) != names(&sc) {
                return Err(format!(
                    "events differ: perf {:?} scry {:?}\n--- perf\n{p}--- scry\n{s}",
                    names(&pc),
                    names(&sc)
                ));
            }
            if let Check::StatState(events) = check {
                let (pm, sm): (BTreeMap<_, _>, BTreeMap<_, _>) =
                    (pc.iter().cloned().collect(), sc.iter().cloned().collect());
                // `<not supported>`, `<not counted>`, or a count (any value).
                fn state(c: Option<&String>) -> Option<&str> {
                    c.map(|text| {
                        if text.starts_with('<') {
                            text.as_str()
                        } else {
                            "counted"
                        }
                    })
                }
                for event in *events {
                    let (ps, ss) = (state(pm.get(*event)), state(sm.get(*event)));
                    if ps != ss {
                        return Err(format!("{event}: perf {ps:?} scry {ss:?}"));
                    }
                }
            }
            if let Check::StatExact(exact) = check {
                let (pm, sm): (BTreeMap<_, _>, BTreeMap<_, _>) =
                    (pc.into_iter().collect(), sc.into_iter().collect());
                for event in *exact {
                    if pm.get(*event) != sm.get(*event) {
                        return Err(format!(
                            "{event}: perf {:?} scry {:?}",
                            pm.get(*event),
                            sm.get(*event)
                        ));
                    }
                }
            }
            Ok(())
        }
        Check::SameLines(patterns) => {
            for pattern in *patterns {
                let count = |t: &str| t.lines().filter(|l| l.contains(pattern)).count();
                if count(&p) == 0 || count(&p) != count(&s) {
                    return Err(format!(
                        "'{pattern}': perf {} lines, scry {}",
                        count(&p),
                        count(&s)
                    ));
                }
            }
            Ok(())
        }
        Check::TopSymbol { comm, sym } => {
            let scry_bin = Path::new(env!("CARGO_BIN_EXE_scry"));
            for (who, dir) in [("perf", perf.1), ("scry", scry.1)] {
                let data = dir.join("perf.data");
                for (reader, tool) in [("perf", Path::new("perf")), ("scry", scry_bin)] {
                    let top = top_symbol(tool, &data, comm)?;
                    if top != *sym {
                        return Err(format!(
                            "{reader} report of {who}'s file: hottest {top}, want {sym}"
                        ));
                    }
                }
            }
            Ok(())
        }
        Check::CommEvents { comm, n } => {
            // perf's file has been seen with one getppid more than the
            // workload makes (3001 of 3000), in the command's process: the
            // answer is the workload's, so perf may only have more.
            let theirs = comm_events(&perf.1.join("perf.data"), comm)?;
            let ours = comm_events(&scry.1.join("perf.data"), comm)?;
            if ours != *n || theirs < *n {
                return Err(format!(
                    "events of {comm}: scry's file {ours}, perf's {theirs}, want {n}"
                ));
            }
            Ok(())
        }
    }
}

#[test]
fn perf_one_liners_answer_as_perf() {
    require_kernel!();
    require_perf!();
    let scry_bin = Path::new(env!("CARGO_BIN_EXE_scry"));
    let mut spinner = Command::new(common::workload("spinner"))
        .stdout(Stdio::null())
        .spawn()
        .expect("start the spinner");
    let fixture = common::tempdir();
    let file = fixture.path().join("cpu7525.data");
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-F", "999", "-g", "--sample-cpu", "-o"])
            .arg(&file)
            .arg("--")
            .arg(common::workload("cpu7525"))
            .arg("100"),
    );
    let mut failures = Vec::new();
    for row in ROWS {
        let (pdir, sdir) = (common::tempdir(), common::tempdir());
        let perf_line = expand(
            row.line,
            Path::new("perf"),
            pdir.path(),
            spinner.id(),
            &file,
        );
        let scry_line = expand(row.line, scry_bin, sdir.path(), spinner.id(), &file);
        let (p, s) = (sh(&perf_line), sh(&scry_line));
        if let Err(why) = compare(&row.check, (&p, pdir.path()), (&s, sdir.path())) {
            failures.push(format!("{}\n  {}", row.line, why.replace('\n', "\n  ")));
        }
    }
    let _ = spinner.kill();
    let _ = spinner.wait();
    assert!(
        failures.is_empty(),
        "{} of {} one-liners differ from perf:\n{}",
        failures.len(),
        ROWS.len(),
        failures.join("\n")
    );
}
