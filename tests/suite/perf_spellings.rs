//! perf's spellings in `report`, `top`, `script` and `flamegraph` (issue 10,
//! "perf's command line, so one-liners work unchanged"): each test runs the
//! same perf.data file through `perf` and `scry` and compares, or runs the
//! one-liner as perf's users type it.

use crate::common;

use std::path::{Path, PathBuf};

/// `perf record ARGS -o DIR/NAME -- CMD`; panics unless perf records.
fn perf_record(dir: &Path, name: &str, args: &[&str], cmd: &[&str]) -> PathBuf {
    let out = dir.join(name);
    common::run_ok(
        common::perf()
            .args(["record", "-q"])
            .args(args)
            .arg("-o")
            .arg(&out)
            .arg("--")
            .args(cmd),
    );
    out
}

/// `perf record ARGS` of the cpu7525 workload (75/25 between two leaves)
/// for `rounds` rounds.
fn record_cpu7525(dir: &Path, name: &str, args: &[&str], rounds: &str) -> PathBuf {
    let work = common::workload("cpu7525");
    perf_record(dir, name, args, &[work.to_str().unwrap(), rounds])
}

fn perf(args: &[&str], file: &Path) -> String {
    common::run_ok(common::perf().args(args).arg("-i").arg(file))
}

fn scry(args: &[&str], file: &Path) -> String {
    common::run_ok(common::scry().args(args).arg("-i").arg(file))
}

/// A symbol name without its version tail, as perf's newer versions and
/// scry print it (perf 6.1 prints glibc's `.symtab` names as they are).
fn unversioned(name: &str) -> &str {
    name.split('@').next().unwrap_or(name)
}

/// The frame names of `perf script`-style text (`\taddr name+0xoff (dso)`).
fn frame_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix('\t'))
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|n| n.split("+0x").next().unwrap_or(n).to_string())
        .collect()
}

#[test]
fn symbol_names_have_no_version_tail() {
    require_perf!();
    require_tracefs!();
    let dir = common::tempdir();
    // `sleep` blocks in glibc's clock_nanosleep, which glibc's symbol table
    // lists twice: clock_nanosleep@GLIBC_2.2.5 and clock_nanosleep@@GLIBC_2.17.
    let file = perf_record(
        dir.path(),
        "sw.data",
        &["-e", "sched:sched_switch", "-g"],
        &["sleep", "0.05"],
    );
    let perf_names: Vec<String> = frame_names(&perf(&["script"], &file))
        .iter()
        .map(|n| unversioned(n).to_string())
        .collect();
    assert!(
        perf_names.iter().any(|n| n == "clock_nanosleep"),
        "perf shows no clock_nanosleep frame: {perf_names:?}"
    );
    let report = scry(&["report", "--stdio", "--no-children"], &file);
    assert!(
        report
            .lines()
            .any(|l| l.trim_start_matches([' ', '|', '-']) == "clock_nanosleep"),
        "{report}"
    );
    let folded = scry(&["flamegraph", "--folded"], &file);
    assert!(folded.contains(";clock_nanosleep;"), "{folded}");
    for text in [&report, &folded] {
        assert!(!text.contains("@GLIBC"), "a versioned name:\n{text}");
    }
}

/// Functions with several names at one address (libc's `__mmap`, `mmap`,
/// `mmap64`; `__munmap`, `munmap`; `_exit`, `_Exit`; ld.so's own) are named
/// as perf names them: every system call's user frames, the same text.
#[test]
fn aliases_are_named_as_perf_names_them() {
    require_perf!();
    require_tracefs!();
    let dir = common::tempdir();
    let workload = common::workload("aliases");
    let file = perf_record(
        dir.path(),
        "aliases.data",
        &[
            "-g",
            "-e",
            "syscalls:sys_enter_mmap",
            "-e",
            "syscalls:sys_enter_munmap",
            "-e",
            "syscalls:sys_enter_exit_group",
        ],
        &[&workload.display().to_string(), "20"],
    );
    let perf_text = perf(&["script", "-F", "ip,sym"], &file);
    let names = frame_names(&perf_text);
    for name in ["__mmap", "__munmap", "_exit"] {
        assert!(
            names.iter().any(|n| n == name),
            "perf names no {name}: {perf_text}"
        );
    }
    assert_same_text(
        &perf_text,
        &scry(&["script", "-F", "ip,sym"], &file),
        "perf script -F ip,sym",
    );
}

/// perf's text with glibc's version tails dropped from frame names (the
/// one difference scry keeps on purpose, see `symbol::names`).
fn without_versions(text: &str) -> String {
    text.lines()
        .map(|l| match l.find('@') {
            Some(at) if l.starts_with('\t') => {
                let end = l[at..].find(['+', ' ']).map_or(l.len(), |e| at + e);
                format!("{}{}\n", &l[..at], &l[end..])
            }
            _ => format!("{l}\n"),
        })
        .collect()
}

fn assert_same_text(perf: &str, scry: &str, what: &str) {
    let perf = without_versions(perf);
    if perf != scry {
        let diff: Vec<String> = perf
            .lines()
            .zip(scry.lines())
            .filter(|(p, s)| p != s)
            .take(10)
            .map(|(p, s)| format!("perf: {p}\nscry: {s}"))
            .collect();
        panic!(
            "{what}: perf {} lines, scry {}; first differences:\n{}",
            perf.lines().count(),
            scry.lines().count(),
            diff.join("\n")
        );
    }
}

#[test]
fn script_callchains_show_sym_offsets_and_relative_addresses_as_perf() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let file = record_cpu7525(dir.path(), "g.data", &["-F", "499", "-g"], "30");
    // perf's default for callchains: `\t    addr sym+0xoff (dso)`, user
    // addresses relative to their binary.
    assert_same_text(
        &perf(&["script"], &file),
        &scry(&["script"], &file),
        "perf script",
    );
    let plain = record_cpu7525(dir.path(), "p.data", &["-F", "499"], "30");
    for fields in ["ip,sym,symoff", "comm,ip,sym,symoff,dso"] {
        assert_same_text(
            &perf(&["script", "-F", fields], &plain),
            &scry(&["script", "-F", fields], &plain),
            fields,
        );
    }
}

#[test]
fn script_shows_the_callchains_of_tracepoint_samples() {
    require_perf!();
    require_tracefs!();
    let dir = common::tempdir();
    let file = dir.path().join("sw.data");
    // Frame pointers only: the text must be perf's, and perf appends its
    // own unwind of -g's stack copy to each chain (tests/stack_join.rs).
    common::run_ok(
        common::scry()
            .args([
                "record",
                "-e",
                "sched:sched_switch",
                "--call-graph",
                "fp",
                "-o",
            ])
            .arg(&file)
            .args(["--", "sleep", "0.05"]),
    );
    let ours = scry(&["script"], &file);
    assert!(
        ours.lines().any(|l| l.starts_with('\t')),
        "no frames under the tracepoint lines:\n{ours}"
    );
    assert_same_text(&perf(&["script"], &file), &ours, "perf script");
}

/// perf top's one-liner `perf top -e raw_syscalls:sys_enter -ns comm`: a
/// Samples column (`-n`), rows by command (`-s comm`), and every system
/// call counted once, as perf's tracepoint default (`[1Hz ...]`, a period
/// of 1) counts it: a row's share is its share of the calls.
#[test]
fn top_shows_sample_counts_by_comm_for_a_tracepoint() {
    require_tracefs!();
    let calls = common::workload("calls");
    let mut work = std::process::Command::new(&calls)
        .arg("20000000")
        .spawn()
        .expect("calls starts");
    let out = common::output(common::scry().args([
        "top",
        "-e",
        "raw_syscalls:sys_enter",
        "-ns",
        "comm",
        "--stdio",
        "-d",
        "1",
        "--iterations",
        "1",
        "--rows",
        "100000",
    ]));
    let _ = work.kill();
    let _ = work.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("[1Hz raw_syscalls:sys_enter]"), "{text}");
    assert!(
        text.lines()
            .any(|l| l == " Overhead       Samples  Command"),
        "{text}"
    );
    let rows: Vec<(f64, u64, String)> = text
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let pct = words.next()?.strip_suffix('%')?.parse().ok()?;
            let samples = words.next()?.parse().ok()?;
            Some((pct, samples, words.collect::<Vec<_>>().join(" ")))
        })
        .collect();
    assert!(rows.iter().any(|r| r.2 == "calls" && r.1 > 0), "{text}");
    let total: u64 = rows.iter().map(|r| r.1).sum();
    for (pct, samples, comm) in &rows {
        let share = *samples as f64 * 100.0 / total as f64;
        assert!(
            (pct - share).abs() < 0.02,
            "{comm}: {pct}% but {samples} of {total} calls\n{text}"
        );
    }
}

/// `cmd` with `input` on its standard input (a pipe); its stdout.
fn piped(cmd: &mut std::process::Command, input: &[u8]) -> Vec<u8> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("wait");
    let _ = writer.join();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn sorted_lines(text: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(text)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// `perf script | scry flamegraph > out.svg`, as `stackcollapse-perf.pl |
/// flamegraph.pl`: perf's text on a pipe folds as inferno-collapse-perf
/// folds it, and a folded file on stdin draws too.
#[test]
fn flamegraph_reads_perf_script_text_and_folded_stacks_on_stdin() {
    require_perf!();
    require_kernel!();
    if !common::require_tool(
        "inferno-collapse-perf",
        "inferno-collapse-perf is not installed (cargo install --locked inferno)",
    ) {
        return;
    }
    let dir = common::tempdir();
    let file = record_cpu7525(dir.path(), "g.data", &["-F", "499", "-g"], "30");
    let text = perf(&["script"], &file);
    let theirs = sorted_lines(&piped(
        &mut std::process::Command::new("inferno-collapse-perf"),
        text.as_bytes(),
    ));
    assert!(theirs.iter().any(|l| l.contains("hot_a")), "{theirs:?}");
    let ours = sorted_lines(&piped(
        common::scry().args(["flamegraph", "--folded"]),
        text.as_bytes(),
    ));
    assert_eq!(ours, theirs, "perf script | scry flamegraph --folded");

    let svg = piped(common::scry().arg("flamegraph"), text.as_bytes());
    let svg = String::from_utf8_lossy(&svg);
    assert!(
        svg.starts_with("<?xml") && svg.contains("hot_a"),
        "{svg:.300}"
    );

    // A folded file on stdin (a redirect, then a pipe with -i -).
    let folded = dir.path().join("folded.txt");
    std::fs::write(&folded, theirs.join("\n") + "\n").unwrap();
    let again = common::output(
        common::scry()
            .args(["flamegraph", "--folded"])
            .stdin(std::fs::File::open(&folded).unwrap()),
    );
    assert_eq!(sorted_lines(&again.stdout), theirs);
    let svg = piped(
        common::scry().args(["flamegraph", "-i", "-", "--title", "folded"]),
        (theirs.join("\n") + "\n").as_bytes(),
    );
    assert!(String::from_utf8_lossy(&svg).contains("hot_b"));

    // A bad folded line: where it is, in one line, exit 2.
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "a;b 1\nc;d 2\nnot a stack\n").unwrap();
    let out = common::output(
        common::scry()
            .args(["flamegraph", "-i", "-"])
            .stdin(std::fs::File::open(&bad).unwrap()),
    );
    common::assert_bad_input(&out, "<stdin>: line 3", &"bad folded text");
}

/// A `--stdio` report as compared: its column header and dots lines, then
/// its entries as runs of equal figures (the leading percentages and
/// counts), each run's lines sorted (perf's order among ties is its hash
/// table's). Trailing blanks are trimmed (perf pads its last column).
fn report_body(text: &str) -> Vec<String> {
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && (!l.starts_with('#') || l.contains("  ")))
        .filter(|l| !l.starts_with("# (Tip") && !l.contains("stack quality"))
        .filter(|l| !l.starts_with("# Samples") && !l.starts_with("# Event count"))
        .map(|l| l.trim_end().to_string())
        .collect();
    // Percentages and counts; not a zero-padded CPU or socket (`001`).
    let figure = |w: &&str| {
        w.ends_with('%') || (w.parse::<u64>().is_ok() && (w.len() == 1 || !w.starts_with('0')))
    };
    let figures = |line: &str| -> String {
        line.split_whitespace()
            .take_while(figure)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out: Vec<String> = Vec::new();
    let mut run: Vec<String> = Vec::new();
    for line in lines {
        if !run.is_empty() && (line.starts_with('#') || figures(&line) != figures(&run[0])) {
            run.sort();
            out.append(&mut run);
        }
        if line.starts_with('#') {
            out.push(line);
        } else {
            run.push(line);
        }
    }
    run.sort();
    out.append(&mut run);
    out
}

#[test]
fn report_sort_keys_and_fields_as_perf() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let file = record_cpu7525(dir.path(), "g.data", &["-F", "499", "-g"], "30");
    let cases: [&[&str]; 12] = [
        &["-n"],
        &["--no-children", "-s", "cpu"],
        &["--no-children", "-s", "socket,comm"],
        &["--no-children", "-s", "parent,sym"],
        &["--no-children", "-s", "srcline"],
        &["--no-children", "-s", "srcline,sym", "-n"],
        &["-s", "cpu,comm", "-n"],
        &["-F", "overhead,sample,period,comm,sym"],
        &["-F", "overhead_children,overhead,sample,sym"],
        &["-F", "overhead_sys,overhead_us,overhead,comm"],
        &["--no-children", "-F", "sym,overhead"],
        &["-F", "overhead,comm", "-s", "sym"],
    ];
    for case in cases {
        let mut args = vec!["report", "--stdio", "-g", "none"];
        args.extend_from_slice(case);
        let theirs = report_body(&perf(&args, &file));
        let ours = report_body(&scry(&args, &file));
        assert!(theirs.len() >= 3, "{case:?}: perf printed {theirs:#?}");
        assert_eq!(ours, theirs, "{case:?}");
    }
    // System-wide, samples carry their CPU, and perf's file its topology.
    let all = perf_record(
        dir.path(),
        "a.data",
        &["-a", "-F", "499"],
        &["sleep", "0.3"],
    );
    for case in [["-s", "socket,cpu"], ["-s", "cpu,comm"]] {
        let mut args = vec!["report", "--stdio", "-g", "none", "--no-children"];
        args.extend_from_slice(&case);
        let theirs = report_body(&perf(&args, &all));
        assert!(theirs.len() >= 3, "{case:?}: perf printed {theirs:#?}");
        assert_eq!(report_body(&scry(&args, &all)), theirs, "{case:?}");
    }
    // The keys in JSON: the text report's values.
    let json: serde_json::Value = serde_json::from_str(&scry(
        &[
            "report",
            "--format",
            "json",
            "--no-children",
            "-s",
            "cpu,parent,srcline",
        ],
        &file,
    ))
    .expect("scry report --format json is JSON");
    let text = report_body(&scry(
        &[
            "report",
            "--stdio",
            "-g",
            "none",
            "--no-children",
            "-s",
            "cpu,parent,srcline",
        ],
        &file,
    ));
    let entries = json["events"][0]["entries"].as_array().expect("entries");
    assert_eq!(entries.len() + 2, text.len(), "{text:#?}");
    for e in entries {
        let cpu = e["cpu"].as_i64().expect("cpu");
        let cell = if cpu < 0 {
            format!("-{:03}", -cpu)
        } else {
            format!("{cpu:03}")
        };
        let parent = e["parent"].as_str().unwrap_or("[other]");
        let srcline = e["srcline"].as_str().expect("srcline");
        let line = format!("{cell}  {parent}");
        assert!(
            text.iter()
                .any(|l| l.contains(&line) && l.ends_with(srcline)),
            "{e}: no {line} ... {srcline} in {text:#?}"
        );
    }
    // Unknown keys and fields: one line naming the known ones, exit 2.
    for (args, needle) in [
        (
            ["-s", "bogus"],
            "known: pid, tid, comm, dso, sym, parent, cpu, socket, srcline",
        ),
        (
            ["-F", "bogus"],
            "known: overhead, overhead_sys, overhead_us",
        ),
    ] {
        let out = common::output(
            common::scry()
                .args(["report", "--stdio"])
                .args(args)
                .arg("-i")
                .arg(&file),
        );
        common::assert_bad_input(&out, needle, &args);
    }
}

/// The header lines of a file with samples, besides `common::HEADER_KEYS`.
const HEADER_TIMES: [&str; 3] = [
    "# time of first sample :",
    "# time of last sample :",
    "# sample duration :",
];

#[test]
fn report_header_lines_as_perf() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let file = record_cpu7525(dir.path(), "h.data", &["-F", "999"], "10");
    let pick = |text: &str| common::header_lines(text, &HEADER_TIMES);
    let theirs = pick(&perf(&["report", "--header-only"], &file));
    assert_eq!(
        theirs.len(),
        common::HEADER_KEYS.len() + HEADER_TIMES.len(),
        "{theirs:?}"
    );
    let only = scry(&["report", "--header-only"], &file);
    assert_eq!(pick(&only), theirs);
    assert!(!only.contains("Overhead"), "--header-only printed a report");
    let both = scry(&["report", "--stdio", "--header"], &file);
    assert_eq!(pick(&both), theirs);
    let header_end = both.find("# ========\n#\n").expect("header block");
    assert!(both[header_end..].contains("# Samples: "), "{both}");
}
