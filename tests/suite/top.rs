//! `scry top` end to end: `--stdio` refreshes for a fixed number of
//! iterations, and the full-screen view under tmux (a real terminal) shows
//! the workload's hot function within seconds, `q` exits 0 and the
//! terminal is restored. The samples are counted in the kernel by default
//! (`-v` names the hook) and streamed with `--no-bpf` or when the view
//! needs a sample's thread (`-s tid`, said with `-v`): the same hot row,
//! the same columns.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Spinner(std::process::Child);

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spinner() -> Spinner {
    let child = Command::new(common::workload("spinner"))
        .stdout(Stdio::null())
        .spawn()
        .expect("spinner starts");
    Spinner(child)
}

#[test]
fn stdio_refreshes_show_the_hot_function() {
    require_kernel!();
    let spin = spinner();
    let pid = spin.0.id().to_string();
    let out = common::output(common::scry().args([
        "top",
        "--stdio",
        "-p",
        &pid,
        "-d",
        "0.5",
        "--iterations",
        "3",
        "--rows",
        "5",
    ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("PerfTop:").count(), 3, "{stdout}");
    let last = stdout.rsplit("PerfTop:").next().unwrap_or_default();
    let first_row = last
        .lines()
        .find(|l| l.contains('%') && !l.contains("irqs/sec"))
        .unwrap_or_default();
    assert!(
        first_row.contains("spin_forever"),
        "hottest row of the last refresh: {first_row}\n{stdout}"
    );
}

/// `scry top --stdio -v -p PID ARGS` for 3 refreshes: the last refresh's
/// rows and what it said on stderr.
fn top_rows(pid: &str, args: &[&str]) -> (Vec<String>, String) {
    let out = common::output(
        common::scry()
            .args(["top", "--stdio", "-v", "-p", pid, "-d", "0.5"])
            .args(["--iterations", "3", "--rows", "5", "-n"])
            .args(args),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {stderr}");
    assert_eq!(stdout.matches("PerfTop:").count(), 3, "{stdout}");
    let last = stdout.rsplit("PerfTop:").next().unwrap_or_default();
    let rows = last
        .lines()
        .skip_while(|l| !l.contains("Overhead"))
        .map(str::to_string)
        .collect();
    (rows, stderr)
}

#[test]
fn counted_in_the_kernel_or_streamed_the_same_rows() {
    require_kernel!();
    if !std::fs::metadata("/proc/self").is_ok_and(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid() == 0
    }) {
        common::gate(Err("BPF needs root (CAP_BPF and CAP_PERFMON)".to_string()));
        return;
    }
    let spin = spinner();
    let pid = spin.0.id().to_string();
    const HOOK: &str = "top: hook scry_oc_sample: perf_event";
    for (args, kernel) in [
        (&[][..], true),
        (&["--no-bpf"][..], false),
        (&["-s", "pid,sym"][..], true),
        (&["-s", "tid,sym"][..], false),
    ] {
        let (rows, stderr) = top_rows(&pid, args);
        assert_eq!(stderr.contains(HOOK), kernel, "{args:?}: {stderr}");
        if args.contains(&"tid,sym") {
            assert!(
                stderr.contains("top: streaming every sample: -s tid"),
                "{stderr}"
            );
        }
        // The header, then the hottest row: the spinner's function, with
        // its sample count.
        let header = rows.first().map_or("", String::as_str);
        assert!(header.contains("Samples"), "{args:?}: {rows:?}");
        let first = rows.get(1).map_or("", String::as_str);
        let share: f64 = first
            .split_whitespace()
            .next()
            .and_then(|p| p.trim_end_matches('%').parse().ok())
            .unwrap_or(0.0);
        assert!(
            first.contains("spin_forever") && share >= 90.0,
            "{args:?}: {rows:?}"
        );
        let samples: u64 = first
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(samples > 0, "{args:?}: {rows:?}");
        if args.contains(&"pid,sym") || args.contains(&"tid,sym") {
            assert!(first.contains(&pid), "{args:?}: {rows:?}");
        }
    }
}

#[test]
fn bad_flags_are_one_line_and_exit_2() {
    let out = common::output(common::scry().args(["top", "--stdio", "-s", "nosuchkey"]));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("scry: -s:"), "{stderr}");
    let out = common::output(common::scry().args(["top", "--stdio", "-p", "999999999"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such process"));
}

fn tmux(args: &[&str]) -> std::process::Output {
    Command::new("tmux").args(args).output().expect("tmux runs")
}

#[test]
fn terminal_view_under_tmux() {
    require_kernel!();
    if !common::require_tool("tmux", "tmux is not installed (scripts/deps installs it)") {
        return;
    }
    let spin = spinner();
    let pid = spin.0.id().to_string();
    let session = format!("scry-top-{}", std::process::id());
    let socket = format!("scry-top-{}", std::process::id());
    let command = format!(
        "{} top -p {pid} -d 0.5; echo scry-exit=$?; sleep 30",
        env!("CARGO_BIN_EXE_scry")
    );
    let started = tmux(&[
        "-L",
        &socket,
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "120",
        "-y",
        "30",
        &command,
    ]);
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    let capture = || {
        String::from_utf8_lossy(
            &tmux(&["-L", &socket, "capture-pane", "-p", "-t", &session]).stdout,
        )
        .into_owned()
    };
    // Bounds, not measures: a loaded machine may take seconds to start
    // the view (a debug build symbolizes slowly), and the test waits for
    // what it needs, a minute at most.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut screen = capture();
    while !screen.contains("spin_forever") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        screen = capture();
    }
    let shown = screen.contains("spin_forever") && screen.contains("PerfTop:");
    tmux(&["-L", &socket, "send-keys", "-t", &session, "q"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut after = capture();
    while !after.contains("scry-exit=") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        after = capture();
    }
    tmux(&["-L", &socket, "kill-server"]);
    assert!(shown, "hot function not on screen within 60 s:\n{screen}");
    assert!(after.contains("scry-exit=0"), "q did not exit 0:\n{after}");
    // The alternate screen is gone: the table is no longer on the pane.
    assert!(
        !after.contains("PerfTop:"),
        "terminal not restored:\n{after}"
    );
}
