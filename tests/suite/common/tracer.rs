//! The streaming BPF tools' test harness (tests/snoop.rs, tests/net.rs):
//! a tracer started with its stdout gathered by a thread, ready when it
//! holds its BPF links (scry: read from its fdinfo) or printed its header
//! (libbpf-tools prints it after attaching), stopped by SIGINT once it
//! printed what the workload should give, so no assertion waits on a
//! fixed time.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Root (the BPF programs need CAP_BPF and CAP_PERFMON) and libbpf-tools'
/// `tool`, or skip.
pub(crate) fn require_root_and(tool: &str) -> bool {
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    super::gate(if root {
        Ok(())
    } else {
        Err("BPF tool tests need root (CAP_BPF and CAP_PERFMON)".to_string())
    }) && super::require_tool(tool, "libbpf-tools is not installed (scripts/deps)")
}

/// A tracer running, its stdout lines gathered by a thread.
pub(crate) struct Tracer {
    pub(crate) child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: std::thread::JoinHandle<()>,
}

/// The BPF ids (`prog_id`, `link_id`) the process holds, from its fdinfo.
pub(crate) fn bpf_fd_ids(pid: u32) -> BTreeMap<&'static str, Vec<u32>> {
    let mut ids: BTreeMap<&'static str, Vec<u32>> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return ids;
    };
    for info in dir
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
    {
        for line in info.lines() {
            for key in ["prog_id", "link_id"] {
                if let Some(Ok(id)) = line
                    .strip_prefix(key)
                    .and_then(|r| r.strip_prefix(':'))
                    .map(|v| v.trim().parse())
                {
                    ids.entry(key).or_default().push(id);
                }
            }
        }
    }
    ids
}

impl Tracer {
    /// Starts `cmd`; returns once it is attached: scry holds `links` BPF
    /// links, a peer printed its first line.
    pub(crate) fn start(mut cmd: Command, links: usize) -> Tracer {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tracer starts");
        let out = BufReader::new(child.stdout.take().expect("piped"));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        let reader = std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                sink.lock().expect("lines").push(line);
            }
        });
        let tracer = Tracer {
            child,
            lines,
            reader,
        };
        let pid = tracer.child.id();
        tracer.wait_until(|lines| {
            if links == 0 {
                !lines.is_empty()
            } else {
                bpf_fd_ids(pid).get("link_id").map_or(0, Vec::len) >= links
            }
        });
        tracer
    }

    /// Waits (at most a minute: a bound, not a measure) until `done` holds
    /// for the lines so far.
    pub(crate) fn wait_until(&self, done: impl Fn(&[String]) -> bool) {
        let start = Instant::now();
        while !done(&self.lines.lock().expect("lines")) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "tracer {} never got there: {:?}",
                self.child.id(),
                self.lines.lock().expect("lines")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGINT; its lines and stderr once it ended (successfully).
    pub(crate) fn stop(self) -> (Vec<String>, String) {
        super::signal(self.child.id(), "INT");
        self.finish()
    }

    /// Its lines and stderr once it ended (successfully) by itself (a
    /// tracer of a process that exited), waiting at most 20 s.
    pub(crate) fn finish(mut self) -> (Vec<String>, String) {
        let status =
            super::wait_timeout(&mut self.child, Duration::from_secs(20)).expect("tracer ends");
        self.reader.join().expect("reader");
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut e, &mut err).expect("stderr");
        }
        assert!(status.success(), "tracer failed: {status}\n{err}");
        let lines = std::mem::take(&mut *self.lines.lock().expect("lines"));
        (lines, err)
    }
}

/// `program ARGS`, forked and stopped before its exec (sh stops itself,
/// then execs it once continued: same pid, nothing run yet), its stderr
/// going to `stderr`.
pub(crate) fn stopped_to(path: &Path, args: &[&str], stderr: Stdio) -> Child {
    let child = Command::new("sh")
        .arg("-c")
        .arg("kill -STOP $$; exec \"$0\" \"$@\"")
        .arg(path)
        .args(args)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("sh runs");
    let stat = format!("/proc/{}/stat", child.id());
    let start = Instant::now();
    while !std::fs::read_to_string(&stat).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('T'))
    }) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the workload never stopped"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

/// Continues a workload started by [`stopped_to`] (its stderr piped) and
/// waits for its successful end: what it said on stderr.
pub(crate) fn run_stopped(mut workload: Child) -> String {
    super::signal(workload.id(), "CONT");
    let mut said = String::new();
    if let Some(mut e) = workload.stderr.take() {
        std::io::Read::read_to_string(&mut e, &mut said).expect("the workload's stderr");
    }
    assert!(
        workload.wait().expect("the workload ends").success(),
        "{said}"
    );
    said
}

/// The numbers a workload said after `name` (`tid=12 blocked_us=5`:
/// `said_numbers(said, "tid=")` is `[12]`), in order.
pub(crate) fn said_numbers(said: &str, name: &str) -> Vec<u64> {
    said.split_whitespace()
        .filter_map(|w| w.strip_prefix(name)?.parse().ok())
        .collect()
}

/// Continues piper (started by [`stopped_to`], its stderr piped) and
/// waits for its end: (its main thread's tid, the µs it measured blocked
/// in wait_for_reply, what it said).
pub(crate) fn run_piper(piper: Child) -> (u32, u64, String) {
    let said = run_stopped(piper);
    let field = |name: &str| -> u64 {
        said_numbers(&said, name)
            .first()
            .copied()
            .unwrap_or_else(|| panic!("piper said {said:?}"))
    };
    (field("tid=") as u32, field("blocked_us="), said)
}

pub(crate) fn scry_tool(args: &[&str]) -> Command {
    let mut cmd = super::scry();
    cmd.args(args);
    cmd
}

/// libbpf-tools' `tool ARGS`, line-buffered.
pub(crate) fn peer(args: &[&str]) -> Command {
    let mut cmd = Command::new("stdbuf");
    cmd.arg("-oL").args(args);
    cmd
}

/// Starts `scry ARGS`, which holds `links` BPF links once attached, kills
/// it with SIGKILL, and checks that none of its programs and links is
/// left (the kernel frees them when the last descriptor closes, after an
/// RCU grace period: waited for, boundedly).
pub(crate) fn sigkill_frees_everything(args: &[&str], links: usize) {
    let mut tracer = Tracer::start(scry_tool(args), links);
    let ids = bpf_fd_ids(tracer.child.id());
    let progs = ids.get("prog_id").cloned().unwrap_or_default();
    let held = ids.get("link_id").cloned().unwrap_or_default();
    assert_eq!(held.len(), links, "{args:?}: {ids:?}");
    super::signal(tracer.child.id(), "KILL");
    let _ = tracer.child.wait();
    let start = Instant::now();
    loop {
        let live_progs: Vec<u32> = libbpf_rs::query::ProgInfoIter::default()
            .map(|p| p.id)
            .filter(|id| progs.contains(id))
            .collect();
        let live_links: Vec<u32> = libbpf_rs::query::LinkInfoIter::default()
            .map(|l| l.id)
            .filter(|id| held.contains(id))
            .collect();
        if live_progs.is_empty() && live_links.is_empty() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{args:?}: still there after SIGKILL: {live_progs:?} {live_links:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Each case (`scry ARGS`, with `SCRY_BPF_HOOKS` when given) is bad input:
/// one line on stderr containing the needle, exit 2.
pub(crate) fn assert_each_bad_input(cases: &[(&[&str], Option<&str>, &str)]) {
    for &(args, hooks, needle) in cases {
        let mut cmd = scry_tool(args);
        if let Some(kinds) = hooks {
            cmd.env("SCRY_BPF_HOOKS", kinds);
        }
        let out = super::output(&mut cmd);
        super::assert_bad_input(&out, needle, &(args, hooks));
    }
}
