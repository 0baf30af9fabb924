//! `scry stat` on the real kernel, with perf stat as the oracle: exact
//! tracepoint counts, task-clock and page-faults against perf's, perf's
//! layout line for line, `-r`, `-I`, `-x`, `--json`, `-A`, `-p`, `-G`,
//! Ctrl-C, and the bad-input messages.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

fn stat() -> Command {
    let mut cmd = common::scry();
    cmd.arg("stat");
    cmd
}

/// Runs a stat command (ours or perf's); its counts are on stderr.
fn stderr_of(cmd: &mut Command) -> String {
    common::stderr_ok(cmd)
}

/// `-x,` lines into (value, event) pairs.
fn csv_counts(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| l.contains(','))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_string(), f[2].to_string())
        })
        .collect()
}

fn csv_value(text: &str, event: &str) -> f64 {
    let (value, _) = csv_counts(text)
        .into_iter()
        .find(|(_, e)| e == event)
        .unwrap_or_else(|| panic!("no {event} line in:\n{text}"));
    value
        .parse()
        .unwrap_or_else(|_| panic!("{event}: '{value}' is not a number in:\n{text}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[test]
fn counts_exactly_the_syscalls_made() {
    require_kernel!();
    require_tracefs!();
    let calls = common::workload("calls");
    let text = stderr_of(
        stat()
            .args([
                "-x,",
                "-e",
                "syscalls:sys_enter_getppid,raw_syscalls:sys_enter",
                "--",
            ])
            .arg(&calls)
            .arg("100000"),
    );
    assert_eq!(
        csv_value(&text, "syscalls:sys_enter_getppid"),
        100000.0,
        "{text}"
    );
    // Plus the few dozen of the loader and libc.
    let raw = csv_value(&text, "raw_syscalls:sys_enter");
    assert!(
        (100000.0..100200.0).contains(&raw),
        "raw_syscalls {raw}:\n{text}"
    );
}

#[test]
fn tracepoint_globs_expand() {
    require_kernel!();
    require_tracefs!();
    let calls = common::workload("calls");
    let text = stderr_of(
        stat()
            .args(["-x,", "-e", "syscalls:sys_enter_*", "--"])
            .arg(&calls)
            .arg("1000"),
    );
    let counts = csv_counts(&text);
    assert!(
        counts.len() > 100,
        "only {} syscalls:sys_enter_* lines",
        counts.len()
    );
    assert!(
        counts
            .iter()
            .all(|(_, e)| e.starts_with("syscalls:sys_enter_"))
    );
    assert_eq!(csv_value(&text, "syscalls:sys_enter_getppid"), 1000.0);
}

#[test]
fn page_faults_and_task_clock_agree_with_perf() {
    require_kernel!();
    require_perf!();
    let work = common::workload("cpu7525");
    let (mut ours, mut theirs) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for _ in 0..5 {
        let text = stderr_of(
            stat()
                .args(["-x,", "-e", "task-clock,page-faults", "--"])
                .arg(&work)
                .arg("0.25s"),
        );
        ours.0.push(csv_value(&text, "task-clock"));
        ours.1.push(csv_value(&text, "page-faults"));
        let text = stderr_of(
            common::perf()
                .args(["stat", "-x,", "-e", "task-clock,page-faults", "--"])
                .arg(&work)
                .arg("0.25s"),
        );
        theirs.0.push(csv_value(&text, "task-clock"));
        theirs.1.push(csv_value(&text, "page-faults"));
    }
    for (what, ours, theirs) in [
        ("task-clock", median(ours.0), median(theirs.0)),
        ("page-faults", median(ours.1), median(theirs.1)),
    ] {
        let diff = (ours - theirs).abs() / theirs;
        assert!(
            diff <= 0.05,
            "{what}: scry {ours} vs perf {theirs} ({:.1}% apart)",
            diff * 100.0
        );
    }
}

/// Our default output has perf's shape: the same lines, events, columns.
#[test]
fn default_layout_matches_perf() {
    require_kernel!();
    require_perf!();
    let quick = common::workload("quick");
    let ours = stderr_of(stat().arg("--").arg(&quick));
    let theirs = stderr_of(common::perf().arg("stat").arg("--").arg(&quick));
    let shape = |text: &str| -> Vec<(usize, String)> {
        text.lines()
            .map(|l| {
                // Keep the words that are not numbers; the numbers differ.
                let words: Vec<&str> = l
                    .split_whitespace()
                    .filter(|w| w.parse::<f64>().is_err())
                    .collect();
                let counted = l.contains('#') || l.contains("<not");
                (if counted { l.len() } else { 0 }, words.join(" "))
            })
            .collect()
    };
    let (ours_shape, theirs_shape) = (shape(&ours), shape(&theirs));
    assert_eq!(
        ours_shape.len(),
        theirs_shape.len(),
        "scry:\n{ours}\nperf:\n{theirs}"
    );
    for (a, b) in ours_shape.iter().zip(&theirs_shape) {
        // Rates may change unit (/sec vs K/sec) between runs; compare the rest.
        let norm = |s: &str| s.replace("K/sec", "/sec").replace("M/sec", "/sec");
        assert_eq!(norm(&a.1), norm(&b.1), "scry:\n{ours}\nperf:\n{theirs}");
        assert_eq!(
            a.0, b.0,
            "line width differs: {:?}\nscry:\n{ours}\nperf:\n{theirs}",
            a.1
        );
    }
    assert!(ours.contains("<not supported>      cycles") || !theirs.contains("<not supported>"));
}

#[test]
fn repeat_prints_mean_and_deviation() {
    require_kernel!();
    let work = common::workload("cpu7525");
    let text = stderr_of(
        stat()
            .args(["-r", "10", "-e", "task-clock,page-faults", "--"])
            .arg(&work)
            .arg("3"),
    );
    assert!(text.contains("(10 runs):"), "{text}");
    let clock = text
        .lines()
        .find(|l| l.contains("task-clock"))
        .unwrap_or_else(|| panic!("no task-clock line:\n{text}"));
    assert!(clock.contains("( +-") && clock.ends_with("% )"), "{clock}");
    let elapsed = text
        .lines()
        .find(|l| l.contains("seconds time elapsed"))
        .unwrap_or_else(|| panic!("no elapsed line:\n{text}"));
    assert!(elapsed.contains(" +- "), "{elapsed}");
    assert!(
        !text.contains("seconds user"),
        "perf prints no user/sys with -r"
    );
}

#[test]
fn interval_prints_about_ten_times_a_second() {
    require_kernel!();
    // A 1 s workload that does not depend on how busy the machine is: the
    // CPUs' cpu-clock runs ~100 ms per CPU per interval whatever they do.
    let cpus = scry::sys::proc::online_cpus().unwrap().len() as f64;
    let text = stderr_of(stat().args([
        "-a",
        "-I",
        "100",
        "-x,",
        "-e",
        "cpu-clock",
        "--",
        "sleep",
        "1",
    ]));
    let rows: Vec<(f64, f64)> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].trim().parse().unwrap(), f[1].parse().unwrap())
        })
        .collect();
    assert!(
        (9..=12).contains(&rows.len()),
        "{} intervals:\n{text}",
        rows.len()
    );
    assert!(rows.windows(2).all(|w| w[0].0 < w[1].0), "{text}");
    // Whole intervals (all but the last, partial one): 100 ms apart, and
    // 100 ms of cpu-clock per CPU.
    let whole = &rows[..rows.len() - 1];
    for w in whole.windows(2) {
        let gap = w[1].0 - w[0].0;
        assert!((0.08..0.15).contains(&gap), "gap {gap}:\n{text}");
    }
    for (_, ms) in whole {
        let per_cpu = ms / cpus;
        assert!(
            (75.0..=130.0).contains(&per_cpu),
            "{per_cpu} ms per CPU:\n{text}"
        );
    }
    // The text form prints perf's interval header once.
    let text = stderr_of(stat().args(["-I", "100", "-e", "page-faults", "--", "sleep", "0.35"]));
    assert!(
        text.starts_with("#           time             counts unit events\n"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 5, "{text}");
}

#[test]
fn csv_and_json_parse() {
    require_kernel!();
    let quick = common::workload("quick");
    let text = stderr_of(stat().args(["-x;", "--"]).arg(&quick));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 8, "{text}");
    for line in &lines {
        let fields: Vec<&str> = line.split(';').collect();
        assert_eq!(fields.len(), 7, "{line}");
        assert!(
            fields[0].parse::<f64>().is_ok() || fields[0].starts_with('<'),
            "{line}"
        );
    }
    assert!(lines[0].contains(";msec;task-clock;"), "{text}");

    let text = stderr_of(
        stat()
            .args(["--json", "-e", "task-clock,page-faults,cycles", "--"])
            .arg(&quick),
    );
    let objects: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(objects.len(), 3, "{text}");
    assert_eq!(objects[0]["event"], "task-clock");
    assert_eq!(objects[0]["unit"], "msec");
    assert_eq!(objects[0]["metric-unit"], "CPUs utilized");
    let faults: f64 = objects[1]["counter-value"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(faults > 10.0, "{text}");
    let cycles = objects[2]["counter-value"].as_str().unwrap();
    assert!(cycles == "<not supported>" || cycles.parse::<f64>().is_ok());
}

#[test]
fn per_cpu_system_wide() {
    require_kernel!();
    let online = scry::sys::proc::online_cpus().unwrap();
    let started = std::time::Instant::now();
    let text = stderr_of(stat().args(["-a", "-A", "-x,", "-e", "cpu-clock", "--", "sleep", "0.1"]));
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), online.len(), "{text}");
    for (line, cpu) in lines.iter().zip(&online) {
        assert!(line.starts_with(&format!("CPU{cpu},")), "{line}");
        // A CPU's cpu-clock runs all the time the counters are on: at
        // least the sleep's 100 ms, at most the whole run of scry stat
        // (a loaded machine stretches the sleep's start and end).
        let ms: f64 = line.split(',').nth(1).unwrap().parse().unwrap();
        assert!(
            (80.0..=wall_ms).contains(&ms),
            "{line} (scry stat ran {wall_ms:.1} ms)"
        );
    }
    let text = stderr_of(stat().args(["-a", "--", "sleep", "0.05"]));
    assert!(
        text.contains("Performance counter stats for 'system wide':"),
        "{text}"
    );
    assert!(text.contains("cpu-clock"), "{text}");
}

#[test]
fn pid_target_ends_with_the_process() {
    require_kernel!();
    let mut sleeper = Command::new("sleep").arg("0.4").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let started = std::time::Instant::now();
    let text = stderr_of(stat().args(["-p", &pid, "-e", "task-clock,context-switches"]));
    let _ = sleeper.wait();
    // A bound, not a measure (scry looks for the process every 200 ms; a
    // loaded machine is slower): it did not run on until interrupted.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(30), "{took:?}: {text}");
    assert!(text.contains(&format!("process id '{pid}'")), "{text}");
    assert!(text.contains("seconds time elapsed"), "{text}");
}

/// The CPU time, in ms, of the children of process `parent`.
fn spinner_cpu_ms(parent: u32) -> u64 {
    let children = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
        .unwrap_or_default();
    let seconds: f64 = children
        .split_whitespace()
        .filter_map(|pid| pid.parse().ok())
        .map(common::cpu_seconds)
        .sum();
    (seconds * 1000.0).round() as u64
}

#[test]
fn ctrl_c_prints_the_counts_so_far() {
    require_kernel!();
    let spinner = common::workload("spinner");
    let mut child = stat()
        .args(["-e", "task-clock,page-faults", "--"])
        .arg(&spinner)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // SIGINT once the spinner has spun 50 ms of CPU (by /proc, in 10 ms
    // ticks): scry stat then runs its counters, with its signals caught.
    // A fixed 400 ms could end before a loaded machine had either.
    let start = std::time::Instant::now();
    while spinner_cpu_ms(child.id()) < 50 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the spinner never ran under scry stat"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    common::signal(child.id(), "INT");
    let status = common::wait_timeout(&mut child, Duration::from_secs(20));
    let Some(status) = status else {
        let _ = child.kill();
        panic!("scry stat did not stop on SIGINT");
    };
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(status.success(), "{status}: {text}");
    let clock = text.lines().find(|l| l.contains("task-clock")).unwrap();
    let ms: f64 = clock.split_whitespace().next().unwrap().parse().unwrap();
    // It spun for 50 ms of CPU or more (give or take a tick of /proc's).
    assert!(ms > 30.0, "{clock}");
    assert!(text.contains("seconds time elapsed"), "{text}");
}

#[test]
fn cgroup_counts_only_its_tasks() {
    require_kernel!();
    let Some(base) = [
        "/sys/fs/cgroup/unified",
        "/sys/fs/cgroup/perf_event",
        "/sys/fs/cgroup",
    ]
    .iter()
    .map(std::path::Path::new)
    .find(|p| p.join("cgroup.procs").exists()) else {
        assert!(
            !common::kernel_tests_required(),
            "no cgroup hierarchy to test -G with"
        );
        eprintln!("skipping: no writable cgroup hierarchy");
        return;
    };
    let name = format!("scry-test-{}", std::process::id());
    let dir = base.join(&name);
    if let Err(e) = std::fs::create_dir(&dir) {
        assert!(
            !common::kernel_tests_required(),
            "cannot create {}: {e}",
            dir.display()
        );
        eprintln!("skipping: cannot create {}: {e}", dir.display());
        return;
    }
    let spinner = common::workload("spinner");
    let mut spin = Command::new(&spinner)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::fs::write(dir.join("cgroup.procs"), spin.id().to_string()).unwrap();
    let started = std::time::Instant::now();
    let out = common::output(stat().args([
        "-a",
        "-x,",
        "-G",
        &name,
        "-e",
        "cpu-clock",
        "--",
        "sleep",
        "0.3",
    ]));
    let window_ms = started.elapsed().as_secs_f64() * 1e3;
    let _ = spin.kill();
    let _ = spin.wait();
    // The same cgroup, empty now: nothing counts.
    let empty = common::output(stat().args([
        "-a",
        "-x,",
        "-G",
        &name,
        "-e",
        "cpu-clock",
        "--",
        "sleep",
        "0.1",
    ]));
    let _ = std::fs::remove_dir(&dir);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let line = text.lines().next().unwrap();
    let f: Vec<&str> = line.split(',').collect();
    assert_eq!(f[3], name, "{line}");
    // The spinner ran while scry counted: 300 ms and a little (less on a
    // busy machine), never more than the wall time of the whole run. The
    // run time is the counting window too, never the kernel's cgroup-clock
    // glitch (0, or the machine's uptime; see capture::counting).
    let ms: f64 = f[0].parse().unwrap_or_else(|_| panic!("no count: {line}"));
    assert!(
        (10.0..=window_ms).contains(&ms),
        "{line} (ran {window_ms:.1} ms)"
    );
    // The run time is summed over the per-CPU events of `-a` (as perf's
    // is), and a cgroup event's clock runs on each CPU while the cgroup is
    // scheduled there, switches included: under a CPU hog the spinner moves
    // between CPUs and the sum passed the wall time (449 ms in a 420 ms
    // window). Each CPU's share is bounded by the window.
    let running_ms = f[4].parse::<f64>().unwrap_or_default() / 1e6;
    let cpus = scry::sys::proc::online_cpus().map_or(1, |c| c.len()) as f64;
    assert!(
        (ms * 0.99..=window_ms * cpus).contains(&running_ms),
        "{line} (ran {window_ms:.1} ms on {cpus} CPUs)"
    );
    let empty = String::from_utf8_lossy(&empty.stderr);
    let f: Vec<&str> = empty.lines().next().unwrap().split(',').collect();
    assert!(
        f[0] == "<not counted>" || f[0].parse::<f64>().is_ok_and(|v| v < 1.0),
        "empty cgroup: {empty}"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let quick = common::workload("quick");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "-e".into(),
                "nosuch".into(),
                "--".into(),
                quick.display().to_string(),
            ],
            "unknown event 'nosuch'",
        ),
        (vec!["-p".into(), "999999999".into()], "no such process"),
        (vec![], "nothing to count"),
        (vec!["-A".into(), "--".into(), "true".into()], "-A"),
        (
            vec!["-r".into(), "0".into(), "--".into(), "true".into()],
            "-r",
        ),
        (
            vec!["-I".into(), "1".into(), "--".into(), "true".into()],
            "-I",
        ),
    ];
    for (args, expect) in cases {
        let out = common::output(stat().args(&args));
        common::assert_bad_input(&out, expect, &args);
    }
    let out = common::output(stat().args(["-e", "nosuch"]).arg("--").arg(&quick));
    assert!(String::from_utf8_lossy(&out.stderr).contains("scry list"));
}

#[test]
fn workload_failures() {
    require_kernel!();
    // A program that cannot run: said before anything is counted.
    let out = common::output(stat().args(["-e", "page-faults", "--", "/nonexistent/program"]));
    common::assert_bad_input(
        &out,
        "stat: no program '/nonexistent/program' to run (not in PATH, or not executable)",
        &"/nonexistent/program",
    );
    // A failing command still gets its counts printed; scry exits 1.
    let out = common::output(stat().args(["-e", "page-faults", "--", "false"]));
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("page-faults"), "{text}");
}

#[test]
fn unsupported_hardware_is_a_normal_line() {
    require_kernel!();
    require_perf!();
    let quick = common::workload("quick");
    let ours = stderr_of(
        stat()
            .args(["-x,", "-e", "cycles,instructions,page-faults", "--"])
            .arg(&quick),
    );
    let theirs = stderr_of(
        common::perf()
            .args(["stat", "-x,", "-e", "cycles,instructions,page-faults", "--"])
            .arg(&quick),
    );
    let states = |text: &str| -> Vec<(bool, String)> {
        csv_counts(text)
            .into_iter()
            .map(|(v, e)| (v.starts_with('<'), e))
            .collect()
    };
    assert_eq!(
        states(&ours),
        states(&theirs),
        "scry:\n{ours}\nperf:\n{theirs}"
    );
}

#[test]
fn without_privileges() {
    require_kernel!();
    if common::perf_event_paranoid() < 2 {
        eprintln!("skipping: perf_event_paranoid < 2 lets users count the kernel");
        return;
    }
    // System-wide: refused, naming the sysctl.
    let Some(out) = common::scry_as_nobody(&["stat", "-a", "-e", "cpu-clock", "--", "true"]) else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.starts_with("scry: permission denied") && text.contains("perf_event_paranoid"),
        "{text}"
    );
    // Its own command: user space only, as perf does, marked `:u`.
    let Some(out) =
        common::scry_as_nobody(&["stat", "-x,", "-e", "page-faults,task-clock", "--", "true"])
    else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let faults = csv_value(&text, "page-faults:u");
    assert!(faults > 0.0, "{text}");
    assert!(text.contains(",task-clock:u,"), "{text}");
}

#[test]
fn tid_target_counts_one_thread_until_it_ends() {
    require_kernel!();
    use std::io::BufRead;
    let threads = common::workload("threads");
    let mut work = Command::new(&threads)
        .args(["1", "0.4s"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(work.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "thread 0 tid TID": a thread that is not the process's leader.
    let tid = line.split_whitespace().nth(3).unwrap().to_string();
    assert_ne!(tid, work.id().to_string(), "{line}");
    let started = std::time::Instant::now();
    let text = stderr_of(stat().args(["-t", &tid, "-x,", "-e", "task-clock"]));
    let _ = work.wait();
    assert!(started.elapsed() < Duration::from_secs(30));
    let ms = csv_value(&text, "task-clock");
    assert!(ms > 10.0, "the thread was burning CPU: {text}");
}
