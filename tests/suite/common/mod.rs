//! Helpers shared by the integration tests: kernel-facility gating, the
//! workload programs of `workloads/`, and the two binaries under test (`scry`)
//! and as oracle (`perf`).
//!
//! Gating: a test that needs a kernel facility starts with
//! `require_kernel!()` (perf_event_open), `require_tracefs!()` or
//! `require_perf!()` (the perf binary, our oracle). When the facility is
//! missing the test returns early after printing `skipping: <reason>`, unless
//! `SCRY_KERNEL_TESTS=required` (CI), where it panics with the reason.
//!
//! Workloads are built on demand with `cc`/`c++`/`rustc` into
//! `target/workloads/`, only when the source (or `work.h`) is newer than the binary. Tests
//! run in parallel, so each build goes to a unique temporary name and is
//! renamed into place (rename is atomic; two racing builders both produce a
//! correct binary). The compiler flags live in the source's first line,
//! `// build: FLAGS`, so a workload says how it is made.
#![allow(dead_code)] // each test binary uses a different subset

pub(crate) mod loop_device;
pub(crate) mod tracer;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// True when `SCRY_KERNEL_TESTS=required`: a missing facility fails the test.
pub(crate) fn kernel_tests_required() -> bool {
    std::env::var("SCRY_KERNEL_TESTS").is_ok_and(|v| v == "required")
}

/// Skips (returns false after printing the reason) or, when kernel tests are
/// required, panics with the reason.
pub(crate) fn gate(what: Result<(), String>) -> bool {
    match what {
        Ok(()) => true,
        Err(reason) if kernel_tests_required() => {
            panic!("SCRY_KERNEL_TESTS=required but {reason}")
        }
        Err(reason) => {
            eprintln!("skipping: {reason}");
            false
        }
    }
}

fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// Whether this process may sample with perf_event_open: the kernel has it
/// (the paranoid sysctl exists) and we are root or paranoid allows users.
pub(crate) fn perf_events_available() -> Result<(), String> {
    let path = "/proc/sys/kernel/perf_event_paranoid";
    let paranoid: i32 = match std::fs::read_to_string(path) {
        Ok(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("{path} holds {s:?}, not a number"))?,
        Err(e) => return Err(format!("perf_event_open is unavailable: {path}: {e}")),
    };
    if euid() == Some(0) || paranoid <= 2 {
        Ok(())
    } else {
        Err(format!(
            "perf_event_open needs root or kernel.perf_event_paranoid <= 2 (it is {paranoid})"
        ))
    }
}

/// True when perf events can be used; see [`gate`].
pub(crate) fn require_perf_events() -> bool {
    gate(perf_events_available())
}

/// Whether tracefs is mounted or can be mounted (as root) with its events.
pub(crate) fn tracefs_available() -> Result<(), String> {
    scry::sys::tracefs::root()
        .map(|_| ())
        .map_err(|e| format!("tracefs is unavailable: {e}"))
}

/// True when tracefs can be used; see [`gate`].
pub(crate) fn require_tracefs() -> bool {
    gate(tracefs_available())
}

/// Whether the oracle `perf` binary is installed and runs.
pub(crate) fn perf_available() -> Result<(), String> {
    match perf().arg("--version").output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "perf (the test oracle) does not run: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!(
            "perf (the test oracle) is not installed ({e}); apt-get install linux-perf"
        )),
    }
}

/// True when the oracle `perf` runs; see [`gate`].
pub(crate) fn require_perf() -> bool {
    gate(perf_available())
}

/// True when `program -V` starts (a tool a test drives or compares with);
/// otherwise `missing` goes to [`gate`].
pub(crate) fn require_tool(program: &str, missing: &str) -> bool {
    gate(
        Command::new(program)
            .arg("-V")
            .output()
            .map(drop)
            .map_err(|_| missing.to_string()),
    )
}

/// Return from the test early (or panic under `SCRY_KERNEL_TESTS=required`)
/// when perf_event_open is unavailable.
#[macro_export]
macro_rules! require_kernel {
    () => {
        if !common::require_perf_events() {
            return;
        }
    };
}

/// As `require_kernel!`, for tracefs.
#[macro_export]
macro_rules! require_tracefs {
    () => {
        if !common::require_tracefs() {
            return;
        }
    };
}

/// As `require_kernel!`, for the oracle `perf` binary.
#[macro_export]
macro_rules! require_perf {
    () => {
        if !common::require_perf() {
            return;
        }
    };
}

/// The scry binary under test.
pub(crate) fn scry() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scry"))
}

/// The oracle: Debian's perf (override with env `SCRY_TEST_PERF`).
pub(crate) fn perf() -> Command {
    Command::new(perf_path())
}

/// The first CPU this process may run on (`Cpus_allowed_list` in
/// /proc/self/status), for a workload pinned to one CPU; 0 if unreadable.
pub(crate) fn first_allowed_cpu() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let list = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
                .trim()
                .to_string();
            let first = list.split([',', '-']).next()?.trim().to_string();
            first.parse::<u32>().is_ok().then_some(first)
        })
        .unwrap_or_else(|| "0".to_string())
}

/// The perf binary the oracle tests run (`SCRY_TEST_PERF`, else `perf`).
pub(crate) fn perf_path() -> std::ffi::OsString {
    std::env::var_os("SCRY_TEST_PERF").unwrap_or_else(|| "perf".into())
}

/// A fresh temporary directory, removed when dropped.
pub(crate) fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("scry-test-")
        .tempdir()
        .expect("create a temporary directory")
}

/// Runs `cmd`, panics (showing the command, status and stderr) unless it
/// succeeds; returns its stdout as text.
pub(crate) fn run_ok(cmd: &mut Command) -> String {
    let out = output(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `cmd` (a `stat`, ours or perf's: the counts are on stderr), panics
/// unless it succeeds; returns its stderr as text.
pub(crate) fn stderr_ok(cmd: &mut Command) -> String {
    let out = output(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{stderr}",
        out.status
    );
    stderr
}

/// Runs `cmd` to completion, panicking only if it cannot be started.
pub(crate) fn output(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Asserts that `out` is scry's answer to bad input: exit status 2 and one
/// stderr line, `scry: ...`, that contains `needle`; `case` names the input
/// in the failure message.
pub(crate) fn assert_bad_input(out: &Output, needle: &str, case: &dyn std::fmt::Debug) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{case:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{case:?}: {err}");
    assert!(
        err.starts_with("scry: ") && err.contains(needle),
        "{case:?}: {err}"
    );
}

/// `perf record -F 999 -g` of `program args` into `dir/name.data`.
pub(crate) fn perf_record_g(dir: &Path, name: &str, program: &Path, args: &[&str]) -> PathBuf {
    let data = dir.join(format!("{name}.data"));
    run_ok(
        perf()
            .args(["record", "-q", "-F", "999", "-g", "-o"])
            .arg(&data)
            .arg("--")
            .arg(program)
            .args(args),
    );
    data
}

/// `kernel.perf_event_paranoid`, or 2 (the kernel's default) when unreadable.
pub(crate) fn perf_event_paranoid() -> i32 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2)
}

/// Runs scry with `args` as `nobody` (root drops privileges with setpriv);
/// None, after [`gate`], when we are not root: then there is nothing to drop.
pub(crate) fn scry_as_nobody(args: &[&str]) -> Option<Output> {
    if !gate(match euid() {
        Some(0) => Ok(()),
        _ => Err("privilege tests need root (to drop to nobody)".to_string()),
    }) {
        return None;
    }
    let out = Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_scry"))
        .args(args)
        .output()
        .expect("setpriv (util-linux) runs");
    Some(out)
}

/// The lines of perf's stderr that are warnings or errors (perf prints
/// nothing else there for a clean file, bar its "no symbols" hints).
pub(crate) fn perf_warnings(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter(|l| !l.starts_with("no symbols found in") && !l.contains("with build id"))
        .map(str::to_owned)
        .collect()
}

/// Waits up to `limit` for `child` to exit; returns its status, or None.
pub(crate) fn wait_timeout(
    child: &mut std::process::Child,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            _ => return None,
        }
    }
}

/// Waits (at most a minute: a bound, not a measure) until the main thread
/// of process `pid`, or of a process it started, is blocked in poll(2) or
/// ppoll(2) (`/proc/PID/syscall`, x86_64 numbers): a perf-based tracer
/// (`scry trace`, `perf record`) enables its counters before its first
/// poll, so once it polls, what runs next is traced. A fixed sleep could
/// end before a loaded machine had the tracer started; the file perf
/// writes first is its header, before it reads /proc and enables anything.
/// (perf was once seen recording in a child of its own, the parent in
/// wait4.)
pub(crate) fn wait_until_polling(pid: u32) {
    fn tree(pid: u32, out: &mut Vec<u32>) {
        out.push(pid);
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                tree(child, out);
            }
        }
    }
    let start = Instant::now();
    loop {
        let mut pids = Vec::new();
        tree(pid, &mut pids);
        let calls: Vec<String> = pids
            .iter()
            .map(|p| std::fs::read_to_string(format!("/proc/{p}/syscall")).unwrap_or_default())
            .collect();
        if calls
            .iter()
            .any(|c| matches!(c.split_whitespace().next(), Some("7" | "271")))
        {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "process {pid} never waited in poll: {pids:?} {calls:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends signal `sig` (e.g. "INT", "TERM", "KILL") to `pid` with kill(1).
pub(crate) fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap_or_else(|e| panic!("cannot run kill(1): {e}"));
    assert!(status.success(), "kill -{sig} {pid} failed: {status}");
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `target/workloads/` (next to cargo's `target/tmp/`).
fn workload_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("workloads")
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The path of workload `name` (from `workloads/<name>.{c,cpp,rs}`), built
/// if missing or older than its source. Panics if it does not build.
pub(crate) fn workload(name: &str) -> PathBuf {
    let src_dir = repo().join("workloads");
    let (source, compiler) = [("c", "cc"), ("cpp", "c++"), ("rs", "rustc")]
        .iter()
        .map(|(ext, cc)| (src_dir.join(format!("{name}.{ext}")), *cc))
        .find(|(path, _)| path.is_file())
        .unwrap_or_else(|| panic!("no workload {name}.{{c,cpp,rs}} in {}", src_dir.display()));
    let dir = workload_dir();
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    let binary = dir.join(name);
    // The shared header counts as source too.
    let src_time = modified(&source).max(modified(&src_dir.join("work.h")));
    if let (Some(bin_time), Some(src_time)) = (modified(&binary), src_time)
        && bin_time >= src_time
    {
        return binary;
    }
    let text = std::fs::read_to_string(&source)
        .unwrap_or_else(|e| panic!("read {}: {e}", source.display()));
    let flags: Vec<&str> = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("// build:"))
        .map(|f| f.split_whitespace().collect())
        .unwrap_or_default();
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let temp = dir.join(format!(
        ".{name}.{}.{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let mut cmd = Command::new(compiler);
    cmd.args(&flags).arg("-o").arg(&temp).arg(&source);
    let out = output(&mut cmd);
    assert!(
        out.status.success(),
        "building workload {name} failed: {cmd:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&temp, &binary)
        .unwrap_or_else(|e| panic!("rename {} -> {}: {e}", temp.display(), binary.display()));
    binary
}

/// The header lines (`# hostname : vm`) every perf.data file scry and perf
/// write holds, as `perf script --header` and `perf report --header` print
/// them.
pub(crate) const HEADER_KEYS: [&str; 10] = [
    "# hostname :",
    "# os release :",
    "# perf version :",
    "# arch :",
    "# nrcpus online :",
    "# nrcpus avail :",
    "# cpudesc :",
    "# cpuid :",
    "# total memory :",
    "# cmdline :",
];

/// The lines of `text` starting with one of `HEADER_KEYS` or `extra`,
/// trailing blanks trimmed.
pub(crate) fn header_lines(text: &str, extra: &[&str]) -> Vec<String> {
    text.lines()
        .filter(|l| HEADER_KEYS.iter().chain(extra).any(|k| l.starts_with(k)))
        .map(|l| l.trim_end().to_owned())
        .collect()
}

/// The system chromium, which the page tests drive headless, or why it is
/// missing; see [`gate`].
pub(crate) fn chromium() -> Result<PathBuf, String> {
    let path = Path::new("/usr/bin/chromium");
    if path.is_file() {
        Ok(path.to_path_buf())
    } else {
        Err("chromium is not installed (scripts/deps)".into())
    }
}

/// What headless chromium made of a page: the DOM once its scripts ran
/// (`--dump-dom`), and the console's lines (chromium logs every console
/// message and uncaught error as `...:CONSOLE...`; GL driver chatter left
/// out). `profile_dir`: chromium's user data directory, one per run.
pub(crate) fn headless_dom(url: &str, profile_dir: &Path) -> (String, Vec<String>) {
    let chromium = chromium().expect("chromium");
    let result = output(
        Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
            ])
            .arg(format!("--user-data-dir={}", profile_dir.display()))
            .args([
                "--enable-logging=stderr",
                "--v=0",
                "--virtual-time-budget=8000",
                "--dump-dom",
            ])
            .arg(url),
    );
    let log = String::from_utf8_lossy(&result.stderr);
    let console = log
        .lines()
        .filter(|l| l.contains(":CONSOLE") && !l.contains("GL Driver Message"))
        .map(str::to_string)
        .collect();
    (
        String::from_utf8_lossy(&result.stdout).into_owned(),
        console,
    )
}

/// `scry record -F 999 [-g] -o dir/name.data -- cpu7525 CPU_TIME`.
pub(crate) fn scry_record_cpu7525(dir: &Path, name: &str, stacks: bool, cpu_time: &str) -> PathBuf {
    let data = dir.join(format!("{name}.data"));
    let mut cmd = scry();
    cmd.args(["record", "-q", "-F", "999"]);
    if stacks {
        cmd.arg("-g");
    }
    cmd.arg("-o")
        .arg(&data)
        .arg("--")
        .arg(workload("cpu7525"))
        .arg(cpu_time);
    run_ok(&mut cmd);
    data
}

/// The pprof reader: Debian's golang-go.
pub(crate) fn require_go() -> bool {
    require_tool("go", "golang-go is not installed (scripts/deps)")
}

pub(crate) fn go_pprof(args: &[&str], profile: &Path) -> String {
    run_ok(
        Command::new("go")
            .args(["tool", "pprof"])
            .args(args)
            .arg(profile),
    )
}

/// The counts of a bcc-style histogram's rows (`low -> high : count |...|`), summed.
pub(crate) fn hist_total(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.contains(" -> "))
        .filter_map(|l| {
            l.split(':')
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// bcc's `-e` line of a histogram tool's text (`avg = A UNIT, total: T
/// UNIT, count: N`): the line and [A, T, N]; panics when there is none.
pub(crate) fn average_line(text: &str) -> (String, [u64; 3]) {
    let line = text
        .lines()
        .find(|l| l.starts_with("avg = "))
        .unwrap_or_else(|| panic!("no average line:\n{text}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    let [avg, total, count] = numbers[..] else {
        panic!("{line}");
    };
    assert!(
        line.ends_with(&format!("count: {count}")) && line.contains(", total: "),
        "{line}"
    );
    (line.to_string(), [avg, total, count])
}

/// The non-empty slots of the log2 histograms in `text`: (low, high,
/// count), in order.
pub(crate) fn hist_slots(text: &str) -> Vec<(u64, u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let (range, rest) = l.split_once(':')?;
            let (lo, hi) = range.split_once("->")?;
            let n: u64 = rest.split_whitespace().next()?.parse().ok()?;
            (n > 0).then_some((lo.trim().parse().ok()?, hi.trim().parse().ok()?, n))
        })
        .collect()
}

/// The tracefs root, for a test of the function_graph tracer's absence;
/// `None` (skipped, said why) where this kernel offers it: the kernel
/// matrix checks it there.
pub(crate) fn without_function_graph() -> Option<std::path::PathBuf> {
    let root = scry::sys::tracefs::root().expect("tracefs");
    let has = std::fs::read_to_string(root.join("available_tracers"))
        .unwrap_or_default()
        .split_whitespace()
        .any(|t| t == "function_graph");
    if has {
        eprintln!("skipping: this kernel has function_graph (checked in the kernel matrix)");
        return None;
    }
    Some(root.to_path_buf())
}

/// CPU time (user + system) `pid` has used so far, in seconds, from
/// /proc/PID/stat (utime and stime, fields 14 and 15, in USER_HZ ticks of
/// 10 ms); 0 for a process that is gone.
pub(crate) fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // Counted from the state field after "(comm)": utime and stime are 11 and 12.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / 100.0
}
