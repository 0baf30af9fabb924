//! `scry top` end to end: `--stdio` refreshes for a fixed number of
//! iterations, and the full-screen view under tmux (a real terminal) shows
//! the workload's hot function within seconds, `q` exits 0 and the
//! terminal is restored.

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
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut screen = capture();
    while !screen.contains("spin_forever") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        screen = capture();
    }
    let shown = screen.contains("spin_forever") && screen.contains("PerfTop:");
    tmux(&["-L", &socket, "send-keys", "-t", &session, "q"]);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut after = capture();
    while !after.contains("scry-exit=") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        after = capture();
    }
    tmux(&["-L", &socket, "kill-server"]);
    assert!(shown, "hot function not on screen within 3 s:\n{screen}");
    assert!(after.contains("scry-exit=0"), "q did not exit 0:\n{after}");
    // The alternate screen is gone: the table is no longer on the pane.
    assert!(
        !after.contains("PerfTop:"),
        "terminal not restored:\n{after}"
    );
}
