//! The BPF tools on the real kernel, against Debian's libbpf-tools (bcc's
//! tools on libbpf) as the oracle: the same workload, started stopped so
//! that every tracer is attached before it makes its first call, traced by
//! scry and by the peer side by side. Also: the hook fallback (each
//! variant gives the same counts), runqslower's stream, SIGKILL leaving no
//! program or link,
//! the refusal as nobody, `scry tools` and the busybox symlink.

use crate::common;

use common::hist_total;
use common::tracer::{Tracer, run_piper, stopped_to};

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Root and libbpf-tools (`syscount`, `cpudist` in /usr/sbin), or skip.
fn require_bpf_oracle() -> bool {
    common::gate(match std::fs::read_to_string("/proc/self/status") {
        Ok(s)
            if s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0")) =>
        {
            Ok(())
        }
        _ => Err("BPF tool tests need root (CAP_BPF and CAP_PERFMON)".to_string()),
    }) && common::require_tool("syscount", "libbpf-tools is not installed (scripts/deps)")
}

/// `workload ARGS` forked and stopped before its exec (sh stops itself,
/// then execs it once continued: same pid, nothing run yet).
fn stopped_workload(name: &str, args: &[&str]) -> Child {
    stopped(&common::workload(name), args)
}

/// `program ARGS`, forked and stopped before its exec.
fn stopped(path: &Path, args: &[&str]) -> Child {
    stopped_to(path, args, Stdio::null())
}

/// A tracer started with its stdout piped, returned once it printed its
/// first line (which both scry and libbpf-tools print after attaching).
fn tracer(mut cmd: Command, ready: &str) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tracer starts");
    let mut out = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    out.read_line(&mut line).expect("tracer prints");
    assert!(line.contains(ready), "tracer's first line: {line:?}");
    (child, out)
}

/// libbpf-tools' `tool ARGS`, line-buffered so its first line arrives.
fn peer(tool: &str, args: &[String]) -> Command {
    let mut cmd = Command::new("stdbuf");
    cmd.arg("-oL").arg(tool).args(args);
    cmd
}

/// Ends a tracer with SIGINT (unless it ended by itself) and returns its
/// stdout and stderr.
fn finish(
    mut child: Child,
    mut out: BufReader<std::process::ChildStdout>,
    interrupt: bool,
) -> (String, String) {
    if interrupt {
        common::signal(child.id(), "INT");
    }
    let status = common::wait_timeout(&mut child, Duration::from_secs(20)).expect("tracer ends");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut out, &mut text).expect("read stdout");
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        std::io::Read::read_to_string(&mut e, &mut err).expect("read stderr");
    }
    assert!(status.success(), "tracer failed: {status}\n{text}\n{err}");
    (text, err)
}

fn count_of(table: &str, call: &str) -> Option<u64> {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(call))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
}

#[test]
fn syscount_counts_exactly_n_calls_as_libbpf_tools_on_every_hook() {
    if !require_bpf_oracle() {
        return;
    }
    const N: u64 = 20_000;
    let mut workload = stopped_workload("calls", &[&N.to_string()]);
    let pid = workload.id().to_string();
    let scry = |hooks: &str| {
        let mut cmd = common::scry();
        cmd.args(["syscount", "-v", "-p", &pid]);
        cmd.env("SCRY_BPF_HOOKS", hooks);
        tracer(cmd, "Tracing syscalls")
    };
    let best = scry("");
    let raw = scry("raw_tp");
    let classic = scry("tp");
    let (oracle, oracle_out) = tracer(
        peer("syscount", &["-p".into(), pid.clone()]),
        "Tracing syscalls",
    );
    common::signal(workload.id(), "CONT");
    assert!(workload.wait().expect("workload ends").success());
    // scry ends by itself when the -p process exits; the peer needs SIGINT.
    let (peer_text, _) = finish(oracle, oracle_out, true);
    assert_eq!(
        count_of(&peer_text, "getppid"),
        Some(N),
        "libbpf-tools:\n{peer_text}"
    );
    for ((child, out), hook) in [
        (best, "tp_btf/sys_exit"),
        (raw, "raw_tp/sys_exit"),
        (classic, "tracepoint/raw_syscalls/sys_exit"),
    ] {
        let (text, err) = finish(child, out, false);
        assert_eq!(
            count_of(&text, "getppid"),
            Some(N),
            "scry ({hook}):\n{text}\n{err}"
        );
        assert!(err.contains(&format!("hook scry_sc_exit: {hook}")), "{err}");
        assert!(text.contains("SYSCALL                   COUNT\n"), "{text}");
    }
}

/// The rows of a syscount table: (call, count).
fn rows_of(table: &str) -> Vec<(String, u64)> {
    table
        .lines()
        .skip_while(|l| !l.starts_with("SYSCALL"))
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((f.next()?.to_string(), f.next()?.parse().ok()?))
        })
        .collect()
}

/// bcc's -e (by name or number), --syscall and -t on `opens N K DIR` (N
/// openat, the first K of a missing file): the failures of one error as
/// libbpf-tools' -e counts them, of one call, the calls of one thread; -l
/// lists the calls; a bad error or call name is one line.
#[test]
fn syscount_counts_one_error_one_call_and_one_thread() {
    if !require_bpf_oracle() {
        return;
    }
    let (n, k) = (40u64, 7u64);
    let dir = common::tempdir();
    std::fs::write(dir.path().join("present"), b"").expect("present");
    let dir_arg = dir.path().to_str().expect("utf-8").to_string();
    let mut workload = stopped_workload("opens", &[&n.to_string(), &k.to_string(), &dir_arg]);
    let pid = workload.id().to_string();
    let scry = |args: &[&str]| {
        let mut cmd = common::scry();
        cmd.args(["syscount", "-p", &pid]).args(args);
        tracer(cmd, "Tracing syscalls")
    };
    let by_name = scry(&["-e", "ENOENT"]);
    let one_call = scry(&["--syscall", "openat", "-e", "2"]);
    let one_thread = scry(&["-t", &pid, "--syscall", "openat"]);
    let (oracle, oracle_out) = tracer(
        peer(
            "syscount",
            &["-p".into(), pid.clone(), "-e".into(), "ENOENT".into()],
        ),
        "Tracing syscalls",
    );
    common::signal(workload.id(), "CONT");
    assert!(workload.wait().expect("workload ends").success());
    let (peer_text, _) = finish(oracle, oracle_out, true);
    // The loader's failed opens (its search of the test's LD_LIBRARY_PATH)
    // come on top of the workload's K.
    let failed = count_of(&peer_text, "openat").expect("libbpf-tools saw the opens");
    assert!(failed >= k, "libbpf-tools:\n{peer_text}");
    let (text, err) = finish(by_name.0, by_name.1, false);
    assert_eq!(
        count_of(&text, "openat"),
        Some(failed),
        "{text}\n{err}\nlibbpf-tools:\n{peer_text}"
    );
    let (text, err) = finish(one_call.0, one_call.1, false);
    assert_eq!(
        rows_of(&text),
        vec![("openat".to_string(), failed)],
        "{text}\n{err}"
    );
    let (text, err) = finish(one_thread.0, one_thread.1, false);
    let rows = rows_of(&text);
    assert_eq!(rows.len(), 1, "{text}\n{err}");
    assert!(rows[0].0 == "openat" && rows[0].1 >= n, "{text}\n{err}");
    let list = common::run_ok(common::scry().args(["syscount", "-l"]));
    assert!(
        list.contains("getppid ") && list.contains("openat "),
        "{list}"
    );
    for (args, needle) in [
        (&["syscount", "-e", "ENOPE"][..], "-e ENOPE"),
        (&["syscount", "--syscall", "nosuch"][..], "--syscall nosuch"),
    ] {
        let out = common::output(common::scry().args(args));
        common::assert_bad_input(&out, needle, &args);
    }
}

/// The cgroup v2 hierarchy's mount point, from /proc/mounts.
fn cgroup2_root() -> Option<std::path::PathBuf> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(2) == Some(&"cgroup2")).then(|| std::path::PathBuf::from(f[1]))
    })
}

/// libbpf-tools' -c: `calls N` run in a cgroup of its own while scry's
/// and libbpf-tools' syscount -c watch it: both count its N getppid and
/// no other process's.
#[test]
fn syscount_counts_one_cgroup_as_libbpf_tools() {
    if !require_bpf_oracle() {
        return;
    }
    let Some(root) = cgroup2_root() else {
        assert!(!common::kernel_tests_required(), "no cgroup v2 hierarchy");
        return;
    };
    const N: u64 = 7_777;
    let cg = root.join(format!("scry-syscount-{}", std::process::id()));
    std::fs::create_dir(&cg).expect("a cgroup");
    let cg_arg = cg.to_str().expect("utf-8").to_string();
    let mut cmd = common::scry();
    cmd.args(["syscount", "-c", &cg_arg]);
    let ours = tracer(cmd, "Tracing syscalls");
    let theirs = tracer(
        peer("syscount", &["-c".into(), cg_arg.clone()]),
        "Tracing syscalls",
    );
    let calls = common::workload("calls");
    let status = Command::new("sh")
        .arg("-c")
        .arg("echo $$ > \"$1/cgroup.procs\" && exec \"$2\" \"$3\"")
        .args([
            "sh",
            &cg_arg,
            calls.to_str().expect("utf-8"),
            &N.to_string(),
        ])
        .status()
        .expect("sh runs");
    assert!(status.success());
    let (text, err) = finish(ours.0, ours.1, true);
    let (peer_text, _) = finish(theirs.0, theirs.1, true);
    let _ = std::fs::remove_dir(&cg);
    assert_eq!(count_of(&peer_text, "getppid"), Some(N), "{peer_text}");
    assert_eq!(count_of(&text, "getppid"), Some(N), "{text}\n{err}");
    let out = common::output(common::scry().args(["syscount", "-c", "/nonexistent-cg"]));
    common::assert_bad_input(&out, "--cgroup /nonexistent-cg", &"-c /nonexistent-cg");
}

/// bcc's --ppid (its -c; scry's -c is libbpf-tools' cgroup): a stopped sh
/// runs `calls 700` then `calls 300`, its children, while `calls 500`, a
/// child of this test, runs beside them: syscount --ppid SH counts the
/// children's 1000 getppid and not the other 500. libbpf-tools' syscount
/// has no --ppid: the workload's own answer.
#[test]
fn syscount_ppid_counts_the_children_of_one_process() {
    if !require_bpf_oracle() {
        return;
    }
    let calls = common::workload("calls");
    let calls = calls.to_str().expect("utf-8 path");
    // `exit 0` last: sh would exec a last command in its own process.
    let script = "\"$0\" 700; \"$0\" 300; exit 0";
    let mut parent = stopped(Path::new("/bin/sh"), &["-c", script, calls]);
    let mut other = stopped_workload("calls", &["500"]);
    let ppid = parent.id().to_string();
    let mut cmd = common::scry();
    cmd.args(["syscount", "--ppid", &ppid, "--syscall", "getppid"]);
    let (child, out) = tracer(cmd, "Tracing syscalls");
    common::signal(other.id(), "CONT");
    common::signal(parent.id(), "CONT");
    assert!(parent.wait().expect("sh ends").success());
    assert!(other.wait().expect("calls ends").success());
    let (text, err) = finish(child, out, true);
    assert_eq!(count_of(&text, "getppid"), Some(1000), "{text}\n{err}");
    let out = common::output(common::scry().args(["syscount", "--ppid", "999999999"]));
    common::assert_bad_input(&out, "--ppid 999999999: no such process", &"--ppid");
}

/// A cgroup v2 directory of this test's own, removed when dropped.
pub(crate) struct TestCgroup(pub(crate) std::path::PathBuf);

impl TestCgroup {
    /// None (after the gate said why) without a cgroup v2 hierarchy.
    pub(crate) fn new(name: &str) -> Option<TestCgroup> {
        let Some(root) = cgroup2_root() else {
            assert!(!common::kernel_tests_required(), "no cgroup v2 hierarchy");
            return None;
        };
        let dir = root.join(format!("scry-{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("a cgroup");
        Some(TestCgroup(dir))
    }

    pub(crate) fn arg(&self) -> String {
        self.0.to_str().expect("utf-8").to_string()
    }
}

/// The peer installed and a cgroup of the test's own, or None (skipped,
/// said why).
fn oracle_and_cgroup(name: &str) -> Option<TestCgroup> {
    if !require_bpf_oracle() {
        return None;
    }
    TestCgroup::new(name)
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// libbpf-tools' `exitsnoop -c CG`: `execs 20 /bin/true` moved (stopped)
/// into a cgroup of its own, another `execs` outside it; scry's and the
/// peer's `-c CG` side by side list the same exits: the 20 children and
/// the workload itself, none of the other's.
#[test]
fn exitsnoop_lists_one_cgroups_exits_as_libbpf_tools() {
    let Some(cg) = oracle_and_cgroup("cg-exit") else {
        return;
    };
    let mut inside = stopped_workload("execs", &["20", "/bin/true"]);
    std::fs::write(cg.0.join("cgroup.procs"), inside.id().to_string())
        .expect("moved into the cgroup");
    let args: Vec<String> = vec!["-c".into(), cg.arg()];
    let mut cmd = common::scry();
    cmd.arg("exitsnoop").args(&args);
    let scry = Tracer::start(cmd, 0);
    let oracle = Tracer::start(peer("exitsnoop", &args), 0);
    let mut outside = Command::new(common::workload("execs"))
        .args(["20", "/bin/true"])
        .stdout(Stdio::null())
        .spawn()
        .expect("execs runs");
    common::signal(inside.id(), "CONT");
    assert!(inside.wait().expect("workload ends").success());
    assert!(outside.wait().expect("workload ends").success());
    let pids = |lines: &[String]| {
        let mut pids: Vec<(String, u32)> = lines
            .iter()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                Some((f.first()?.to_string(), f.get(1)?.parse().ok()?))
            })
            .collect();
        pids.sort();
        pids
    };
    // Both printed the 21 exits (each reads its ring on its own time:
    // libbpf-tools' exitsnoop does not read it again at Ctrl-C).
    scry.wait_until(|l| pids(l).len() >= 21);
    oracle.wait_until(|l| pids(l).len() >= 21);
    let (ours, _) = scry.stop();
    let (theirs, _) = oracle.stop();
    let ours = pids(&ours);
    assert_eq!(ours.len(), 21, "{ours:?}");
    assert!(
        ours.contains(&("execs".to_string(), inside.id())),
        "{ours:?}"
    );
    assert!(!ours.iter().any(|p| p.1 == outside.id()), "{ours:?}");
    assert_eq!(ours, pids(&theirs));
}

/// The `pid = N` labels of per-process histograms, in order.
fn pid_labels(text: &str) -> Vec<u32> {
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("pid = ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// libbpf-tools' `-c CG` of cpudist and runqlat: pingpong moved (stopped)
/// into a cgroup of its own, another pingpong outside it, scry's and the
/// peer's `-P -c CG` side by side. Both filter on the task current at each
/// event, so both print the same processes and the same totals (neither
/// window is closed by a process exit: both are interrupted after the
/// workloads ended, and nothing in the cgroup runs outside them). cpudist
/// runs with `-O`: pingpong blocks rather than being preempted, and
/// on-CPU cpudist only counts preempted stretches.
#[test]
fn cgroup_filters_cpudist_and_runqlat_as_libbpf_tools() {
    let Some(cg) = oracle_and_cgroup("cg-sched") else {
        return;
    };
    for (tool, ready, extra) in [
        ("cpudist", "CPU time", Some("-O")),
        ("runqlat", "run queue latency", None),
    ] {
        let mut inside = stopped_workload("pingpong", &["1000"]);
        std::fs::write(cg.0.join("cgroup.procs"), inside.id().to_string())
            .expect("moved into the cgroup");
        let mut args: Vec<String> = vec!["-P".into(), "-c".into(), cg.arg()];
        args.extend(extra.map(String::from));
        let mut cmd = common::scry();
        cmd.arg(tool).args(&args);
        let (scry, scry_out) = tracer(cmd, ready);
        let (oracle, oracle_out) = tracer(peer(tool, &args), ready);
        let mut outside = Command::new(common::workload("pingpong"))
            .arg("1000")
            .stdout(Stdio::null())
            .spawn()
            .expect("pingpong runs");
        common::signal(inside.id(), "CONT");
        assert!(inside.wait().expect("workload ends").success());
        assert!(outside.wait().expect("workload ends").success());
        let (peer_text, _) = finish(oracle, oracle_out, true);
        let (text, err) = finish(scry, scry_out, true);
        let (ours, theirs) = (hist_total(&text), hist_total(&peer_text));
        eprintln!("{tool} -c: scry {ours}, libbpf-tools {theirs}");
        let report = format!("scry:\n{text}\n{err}\nlibbpf-tools:\n{peer_text}");
        assert!(theirs >= 100, "{report}");
        assert!(ours.abs_diff(theirs) <= 2, "{report}");
        let mut labels = pid_labels(&text);
        let mut peer_labels = pid_labels(&peer_text);
        labels.sort_unstable();
        peer_labels.sort_unstable();
        assert_eq!(labels, peer_labels, "{report}");
        assert!(labels.contains(&inside.id()), "{report}");
    }
}

/// hardirqs `-c`: counted during fsyncer's disk interrupts by three scry
/// runs side by side: `-c` the cgroup v2 root (every task is under it:
/// the unfiltered events), `-c` an empty cgroup (no task is current in it:
/// nothing), each as libbpf-tools' hardirqs `-c` says for the empty one.
#[test]
fn hardirqs_cgroup_counts_only_the_cgroups_tasks() {
    if !require_bpf_oracle() {
        return;
    }
    let Some(empty) = TestCgroup::new("cg-empty") else {
        return;
    };
    let root = cgroup2_root().expect("a cgroup v2 root");
    let root = root.to_str().expect("utf-8").to_string();
    let run = |cg: &str| {
        let mut cmd = common::scry();
        cmd.args(["hardirqs", "-C", "-c", cg]);
        tracer(cmd, "irq events")
    };
    let (all, all_out) = run(&root);
    let (none, none_out) = run(&empty.arg());
    let (oracle, oracle_out) = tracer(
        peer("hardirqs", &["-C".into(), "-c".into(), empty.arg()]),
        "irq events",
    );
    let workload = Command::new(common::workload("fsyncer"))
        .arg("100")
        .stderr(Stdio::null())
        .status()
        .expect("fsyncer runs");
    assert!(workload.success());
    let (peer_text, _) = finish(oracle, oracle_out, true);
    let (none_text, none_err) = finish(none, none_out, true);
    let (all_text, all_err) = finish(all, all_out, true);
    // Rows: `NAME COUNT` under the `HARDIRQ TOTAL_count` head.
    let events = |t: &str| -> u64 {
        t.lines()
            .skip_while(|l| !l.starts_with("HARDIRQ"))
            .skip(1)
            .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
            .sum()
    };
    let report = format!(
        "root:\n{all_text}\n{all_err}\nempty:\n{none_text}\n{none_err}\n\
         libbpf-tools empty:\n{peer_text}"
    );
    assert!(events(&all_text) >= 50, "{report}");
    assert_eq!(events(&none_text), 0, "{report}");
    assert_eq!(events(&peer_text), 0, "{report}");
    assert!(none_text.contains("HARDIRQ"), "{report}");
    let out = common::output(common::scry().args(["runqlat", "-c", "/nonexistent-cg"]));
    common::assert_bad_input(&out, "--cgroup /nonexistent-cg", &"-c /nonexistent-cg");
}

/// Both tools count the stretches of the workload's tasks between their
/// attach and their end; the workload only starts (SIGCONT) once both are
/// attached, so both windows open before its first stretch. They close
/// differently: the peer is interrupted after the workload was reaped,
/// scry ends when the process's pidfd reports the exit, which the kernel
/// does in the last thread's exit path, before that thread's final
/// switch: a preemption there (one switch-out, then one switch-in, of that
/// thread) is in the peer's window and not in scry's. So scry's total is
/// the peer's, or at most 2 below it. (Off-CPU, a stretch is counted at
/// the switch-in that ends it; the first switch-in after SIGCONT has no
/// start in either tool.) On-CPU, both count only stretches a preemption
/// ends (libbpf-tools' rule: the task leaves the CPU still runnable), which
/// an idle machine may never give pingpong: that run is three compute
/// threads pinned to one CPU, which preempt one another.
#[test]
fn cpudist_totals_agree_with_libbpf_tools() {
    if !require_bpf_oracle() {
        return;
    }
    let threads = common::workload("threads");
    let threads = threads.to_str().expect("utf-8 path");
    for offcpu in [true, false] {
        let mut workload = if offcpu {
            stopped_workload("pingpong", &["2000"])
        } else {
            let cpu = common::first_allowed_cpu();
            stopped(Path::new("taskset"), &["-c", &cpu, threads, "3", "0.2s"])
        };
        let pid = workload.id().to_string();
        let mut args: Vec<String> = vec!["-p".into(), pid.clone()];
        if offcpu {
            args.push("-O".into());
        }
        let mut cmd = common::scry();
        cmd.arg("cpudist").args(&args);
        let (scry, scry_out) = tracer(cmd, "CPU time");
        let (oracle, oracle_out) = tracer(peer("cpudist", &args), "CPU time");
        common::signal(workload.id(), "CONT");
        assert!(workload.wait().expect("workload ends").success());
        let (peer_text, _) = finish(oracle, oracle_out, true);
        let (text, err) = finish(scry, scry_out, false);
        let (ours, theirs) = (hist_total(&text), hist_total(&peer_text));
        eprintln!("cpudist offcpu={offcpu}: scry {ours}, libbpf-tools {theirs}");
        if offcpu {
            assert!(
                theirs >= 2000,
                "pingpong blocks at least 2000 times:\n{peer_text}"
            );
        } else {
            assert!(
                theirs >= 3,
                "three threads sharing a CPU preempt one another:\n{peer_text}"
            );
        }
        assert!(
            ours <= theirs && theirs <= ours + 2,
            "offcpu={offcpu}\nscry:\n{text}\n{err}\nlibbpf-tools:\n{peer_text}"
        );
        assert!(
            text.contains("     usecs               : count    distribution\n"),
            "{text}"
        );
    }
}

/// bcc's `-e` on cpudist: pingpong's off-CPU stretches (it blocks at
/// least 2000 times), counted by scry with -e and by libbpf-tools beside
/// it: the average line's count is scry's histogram's total (libbpf-tools'
/// or at most 2 below, as above), avg is total / count, and the total lies
/// between what the histogram's slots allow (each count times its slot's
/// low and high bound).
#[test]
fn cpudist_e_prints_bccs_average_line() {
    if !require_bpf_oracle() {
        return;
    }
    let mut workload = stopped_workload("pingpong", &["2000"]);
    let pid = workload.id().to_string();
    let mut cmd = common::scry();
    cmd.args(["cpudist", "-O", "-e", "-p", &pid]);
    let (scry, scry_out) = tracer(cmd, "CPU time");
    let (oracle, oracle_out) = tracer(
        peer("cpudist", &["-O".into(), "-p".into(), pid]),
        "CPU time",
    );
    common::signal(workload.id(), "CONT");
    assert!(workload.wait().expect("workload ends").success());
    let (peer_text, _) = finish(oracle, oracle_out, true);
    let (text, err) = finish(scry, scry_out, false);
    let (line, [avg, total, count]) = common::average_line(&text);
    let theirs = hist_total(&peer_text);
    eprintln!("cpudist -O -e: {line}; libbpf-tools counted {theirs}");
    assert!(line.contains(" usecs, total: "), "{line}");
    assert_eq!(count, hist_total(&text), "{text}\n{err}");
    assert!(
        count >= 2000 && count <= theirs && theirs <= count + 2,
        "{text}\n{peer_text}"
    );
    assert_eq!(avg, total / count, "{line}");
    let slots = common::hist_slots(&text);
    let low: u64 = slots.iter().map(|s| s.0 * s.2).sum();
    let high: u64 = slots.iter().map(|s| s.1 * s.2).sum();
    assert!(
        low <= total && total <= high,
        "{total} outside {low}..{high}:\n{text}"
    );
}

/// bcc's `-I`: the idle task (pid 0) is left out unless asked for. In one
/// window, off-CPU (the idle task's stretch away from its CPU, whatever
/// its state), scry's cpudist -O -P, scry's cpudist -O -I -P and
/// libbpf-tools' cpudist -O -P (which always counts it): scry's without
/// -I never has a `pid = 0` histogram; once libbpf-tools' counts 10
/// stretches or more of pid 0 (an idle CPU in the window), scry's with -I
/// has one too. A machine whose CPUs never idle (other work on both) has
/// no such window: then only the first half is checked, and said.
#[test]
fn cpudist_counts_the_idle_task_only_with_i() {
    if !require_bpf_oracle() {
        return;
    }
    // The count of pid 0's histogram, if there is one.
    let idle = |text: &str| {
        let at = text.find("\npid = 0 ")?;
        let end = text[at + 1..]
            .find("\npid = ")
            .map_or(text.len(), |e| at + 1 + e);
        Some(hist_total(&text[at..end]))
    };
    for window in 1..=10 {
        let run = |cmd: &mut Command| {
            cmd.stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("cpudist starts")
        };
        let without = run(common::scry().args(["cpudist", "-O", "-P", "1", "1"]));
        let with = run(common::scry().args(["cpudist", "-O", "-I", "-P", "1", "1"]));
        let args: Vec<String> = ["-O", "-P", "1", "1"].map(String::from).to_vec();
        let oracle = run(&mut peer("cpudist", &args));
        let text = |child: Child| {
            let out = child.wait_with_output().expect("cpudist ends");
            assert!(out.status.success(), "{out:?}");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let (without, with, theirs) = (text(without), text(with), text(oracle));
        assert_eq!(idle(&without), None, "pid 0 without -I:\n{without}");
        if idle(&theirs).is_some_and(|n| n >= 10) {
            assert!(
                idle(&with).is_some_and(|n| n > 0),
                "libbpf-tools counted pid 0, scry -I did not:\n{with}\n{theirs}"
            );
            eprintln!(
                "cpudist -I: pid 0 in window {window}: {:?} (libbpf-tools {:?})",
                idle(&with),
                idle(&theirs)
            );
            return;
        }
    }
    eprintln!("cpudist -I: no CPU idled in 10 one-second windows: only the exclusion was checked");
}

/// runqlat on the same run as libbpf-tools' runqlat, both with `-p` and
/// `-P`: the windows open before the workload's first wait (it starts on
/// SIGCONT once both are attached) and close as cpudist's do (scry at the
/// pidfd's exit report, a wait in the last thread's exit path only in the
/// peer's), so scry's total is the peer's or at most 2 below it; the
/// labels and layout are the peer's.
#[test]
fn runqlat_totals_agree_with_libbpf_tools() {
    if !require_bpf_oracle() {
        return;
    }
    let mut workload = stopped_workload("pingpong", &["2000"]);
    let pid = workload.id().to_string();
    let args: Vec<String> = vec!["-P".into(), "-p".into(), pid.clone()];
    let mut cmd = common::scry();
    cmd.arg("runqlat").args(&args);
    let (scry, scry_out) = tracer(cmd, "Tracing run queue latency");
    let (oracle, oracle_out) = tracer(peer("runqlat", &args), "Tracing run queue latency");
    common::signal(workload.id(), "CONT");
    assert!(workload.wait().expect("workload ends").success());
    let (peer_text, _) = finish(oracle, oracle_out, true);
    let (text, err) = finish(scry, scry_out, false);
    let (ours, theirs) = (hist_total(&text), hist_total(&peer_text));
    eprintln!("runqlat: scry {ours}, libbpf-tools {theirs}");
    assert!(
        theirs >= 2000,
        "pingpong waits at least 2000 times:\n{peer_text}"
    );
    assert!(
        ours <= theirs && theirs <= ours + 2,
        "scry:\n{text}\n{err}\nlibbpf-tools:\n{peer_text}"
    );
    // The name is the task's when its histogram opened (sh, before the
    // exec, in both).
    let labels = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("pid = "))
            .map(String::from)
            .collect()
    };
    assert_eq!(labels(&text), labels(&peer_text));
    assert!(
        labels(&text)
            .iter()
            .any(|l| l.starts_with(&format!("pid = {pid} "))),
        "{text}"
    );
    assert!(
        text.contains("\n     usecs               : count    distribution\n"),
        "{text}"
    );
}

/// The ids of the BPF programs and links a process holds (its fdinfo).
fn bpf_ids(pid: u32) -> Vec<(String, u32)> {
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .expect("fdinfo")
        .flatten()
    {
        let Ok(info) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        for key in ["prog_id", "link_id"] {
            if let Some(id) = info
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{key}:"))?.trim().parse().ok())
            {
                ids.push((key.to_string(), id));
            }
        }
    }
    ids.sort();
    ids.dedup();
    ids
}

fn link_exists(id: u32) -> bool {
    libbpf_rs::query::LinkInfoIter::default().any(|l| l.id == id)
}

fn prog_exists(id: u32) -> bool {
    libbpf_rs::query::ProgInfoIter::default().any(|p| p.id == id)
}

#[test]
fn sigkill_leaves_no_program_or_link_attached() {
    if !require_bpf_oracle() {
        return;
    }
    for tool in [
        &["syscount", "-L"][..],
        &["cpudist", "-O"][..],
        &["runqlat", "-P"][..],
        &["runqslower"][..],
        &["hardirqs", "-d"][..],
        &["softirqs", "-C"][..],
        &["offcputime"][..],
        &["runqlen", "-C"][..],
        &["wakeuptime"][..],
        &["offwaketime"][..],
        &["futexctn"][..],
        &["profile-bpf"][..],
        &["klockstat"][..],
    ] {
        let pinned = pinned_bpf();
        let mut cmd = common::scry();
        cmd.args(tool);
        // Each tool's first line: "Tracing ..." (runqlen: "Sampling ...").
        let (mut child, _out) = tracer(cmd, "ing ");
        let ids = bpf_ids(child.id());
        let progs: Vec<u32> = ids
            .iter()
            .filter(|(k, _)| k == "prog_id")
            .map(|(_, id)| *id)
            .collect();
        let links: Vec<u32> = ids
            .iter()
            .filter(|(k, _)| k == "link_id")
            .map(|(_, id)| *id)
            .collect();
        assert!(
            !links.is_empty() && progs.iter().all(|&id| prog_exists(id)),
            "{tool:?}: {ids:?}"
        );
        assert!(links.iter().all(|&id| link_exists(id)), "{tool:?}: {ids:?}");
        common::signal(child.id(), "KILL");
        let _ = child.wait();
        // The kernel frees them when the last descriptor closes (after an
        // RCU grace period): wait for that, boundedly.
        let start = Instant::now();
        while progs.iter().any(|&id| prog_exists(id)) || links.iter().any(|&id| link_exists(id)) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{tool:?}: still loaded after SIGKILL: {ids:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            pinned_bpf(),
            pinned,
            "{tool:?} left something in /sys/fs/bpf"
        );
    }
}

/// What /sys/fs/bpf holds (nothing scry makes is pinned there).
fn pinned_bpf() -> Vec<std::path::PathBuf> {
    let mut names: Vec<_> = std::fs::read_dir("/sys/fs/bpf")
        .map(|dir| dir.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn as_nobody_one_line_names_what_is_needed() {
    let Some(out) = common::scry_as_nobody(&["syscount", "-d", "1"]) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("CAP_BPF")
            && err.contains("CAP_PERFMON")
            && err.contains("kernel.unprivileged_bpf_disabled"),
        "{err}"
    );
}

#[test]
fn tools_lists_them_and_a_symlink_runs_one() {
    let list = common::run_ok(common::scry().arg("tools"));
    assert!(list.lines().any(|l| l.starts_with("syscount ")), "{list}");
    assert!(list.lines().any(|l| l.starts_with("cpudist ")), "{list}");
    if !require_bpf_oracle() {
        return;
    }
    let dir = common::tempdir();
    let link = dir.path().join("syscount");
    std::os::unix::fs::symlink(Path::new(env!("CARGO_BIN_EXE_scry")), &link).expect("symlink");
    let mut workload = stopped_workload("calls", &["500"]);
    let mut cmd = Command::new(&link);
    cmd.args(["-p", &workload.id().to_string()]);
    let (child, out) = tracer(cmd, "Tracing syscalls, printing top 10");
    common::signal(workload.id(), "CONT");
    assert!(workload.wait().expect("workload ends").success());
    let (text, _) = finish(child, out, false);
    assert_eq!(count_of(&text, "getppid"), Some(500), "{text}");
}

/// The waits a runqslower printed: (tid, latency in µs).
fn slow_waits(text: &str) -> Vec<(u32, u64)> {
    text.lines()
        .skip(2)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // TIME COMM TID LAT(us) ...: COMM may hold spaces, so count
            // from the TID that precedes the latency.
            let lat = f.iter().position(|x| x.parse::<u64>().is_ok())?;
            Some((f[lat].parse().ok()?, f.get(lat + 1)?.parse().ok()?))
        })
        .collect()
}

/// Three threads that only compute (0.2 s of CPU each), pinned to one CPU: each waits in the
/// run queue while the others run (preemptions), for milliseconds. Both
/// tools time the same waits (wakeup or preemption to switch-in) from
/// their own clock reads, nanoseconds apart, so a wait within those
/// nanoseconds of the threshold may be on one side only: the counts agree
/// within a fifth (or 3), and every wait scry reports is above the
/// threshold.
#[test]
fn runqslower_reports_the_waits_libbpf_tools_reports() {
    if !require_bpf_oracle() {
        return;
    }
    let threads = common::workload("threads");
    let threads = threads.to_str().expect("utf-8 path");
    let cpu = common::first_allowed_cpu();
    let mut workload = stopped(Path::new("taskset"), &["-c", &cpu, threads, "3", "0.2s"]);
    let pid = workload.id().to_string();
    let mut cmd = common::scry();
    cmd.args(["runqslower", "-P", "-p", &pid, "1000"]);
    let (scry, scry_out) = tracer(cmd, "Tracing run queue latency higher than 1000 us");
    let (oracle, oracle_out) = tracer(
        peer("runqslower", &["-p".into(), pid.clone(), "1000".into()]),
        "Tracing run queue latency",
    );
    common::signal(workload.id(), "CONT");
    assert!(workload.wait().expect("workload ends").success());
    let (peer_text, _) = finish(oracle, oracle_out, true);
    let (text, err) = finish(scry, scry_out, false);
    let (ours, theirs) = (slow_waits(&text), slow_waits(&peer_text));
    eprintln!(
        "runqslower: scry {} waits, libbpf-tools {}",
        ours.len(),
        theirs.len()
    );
    assert!(theirs.len() >= 3, "libbpf-tools saw no waits:\n{peer_text}");
    let slack = (theirs.len() / 5).max(3);
    assert!(
        ours.len().abs_diff(theirs.len()) <= slack,
        "scry:\n{text}\n{err}\nlibbpf-tools:\n{peer_text}"
    );
    assert!(ours.iter().all(|&(_, lat)| lat > 1000), "{text}");
    assert!(
        text.contains(
            "TIME     COMM             TID           LAT(us) PREV COMM        PREV TID\n"
        ),
        "{text}"
    );
}

/// The events per interrupt in `-d` output (`hardirq = NAME` or `softirq
/// = NAME`, then a histogram): the histogram's total, by name.
fn irq_events(text: &str, label: &str) -> std::collections::BTreeMap<String, u64> {
    let mut events = std::collections::BTreeMap::new();
    let mut name = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix(label) {
            name = Some(n.to_string());
        } else if let Some(n) = &name {
            *events.entry(n.clone()).or_insert(0) += hist_total(line);
        }
    }
    events
}

/// hardirqs and softirqs side by side with libbpf-tools' (`-d`: each
/// histogram's total is the interrupt's events), while fsyncer makes disk
/// interrupts and block softirqs. scry attaches first and is interrupted
/// after the peer has printed, so its window holds the peer's: per name it
/// counts at least the peer's events (less at most one per CPU: the peer
/// counts an exit whose entry came before its attach, scry does not), and
/// at most the peer's plus what that name's rate (measured in this run)
/// gives in the time scry's window is longer, tripled, plus 3. Except rcu's
/// upper bound: the peer's exit frees its BPF programs and maps through
/// RCU, a burst of rcu softirqs inside scry's longer window (61 against 29
/// once, at load 10), not at the run's rate.
#[test]
fn hardirqs_and_softirqs_count_the_events_libbpf_tools_counts() {
    if !require_bpf_oracle() {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    for (tool, label) in [("hardirqs", "hardirq = "), ("softirqs", "softirq = ")] {
        let mut cmd = common::scry();
        cmd.args([tool, "-d"]);
        let scry_start = Instant::now();
        let (scry, scry_out) = tracer(cmd, "irq event time");
        let (oracle, oracle_out) = tracer(peer(tool, &["-d".into()]), "irq event time");
        let peer_ready = Instant::now();
        let workload = Command::new(common::workload("fsyncer"))
            .arg("100")
            .stderr(Stdio::null())
            .status()
            .expect("fsyncer runs");
        assert!(workload.success());
        let peer_end = Instant::now();
        let (peer_text, _) = finish(oracle, oracle_out, true);
        let (text, err) = finish(scry, scry_out, true);
        let scry_end = Instant::now();
        let (ours, theirs) = (irq_events(&text, label), irq_events(&peer_text, label));
        let longer = (peer_ready - scry_start) + (scry_end - peer_end);
        let window = (scry_end - scry_start).as_secs_f64();
        eprintln!(
            "{tool}: scry {ours:?}, libbpf-tools {theirs:?}, scry's window {window:.2} s, \
             {:.3} s longer",
            longer.as_secs_f64()
        );
        let report = format!("scry:\n{text}\n{err}\nlibbpf-tools:\n{peer_text}");
        assert!(
            theirs.values().any(|&n| n >= 50),
            "the workload made few interrupts:\n{report}"
        );
        for (name, &peer_n) in &theirs {
            let n = ours.get(name).copied().unwrap_or(0);
            let rate = n as f64 / window;
            let slack = (rate * longer.as_secs_f64() * 3.0) as u64 + 3;
            let bounded = !(tool == "softirqs" && name == "rcu");
            assert!(
                n + cpus >= peer_n && (n <= peer_n + slack || !bounded),
                "{name}: scry {n}, libbpf-tools {peer_n} (slack {slack})\n{report}"
            );
        }
        if tool == "softirqs" {
            assert!(ours.contains_key("block"), "{text}");
        }
        assert!(text.contains(&format!("\n{label}")), "{text}");
    }
}

/// Per name, the per-CPU counts of /proc/softirqs (`NAME: c0 c1 ...`,
/// lowercased) or /proc/interrupts (the numbered lines, named by their
/// last word: the handler's name, as hardirqs names its rows).
fn proc_irq_counts(path: &str) -> std::collections::HashMap<String, Vec<u64>> {
    let text = std::fs::read_to_string(path).expect("/proc irq counts");
    let cpus = text
        .lines()
        .next()
        .map_or(0, |l| l.split_whitespace().count());
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let first = words.next()?.trim_end_matches(':');
            let counts: Vec<u64> = words.take(cpus).map_while(|w| w.parse().ok()).collect();
            let name = match path {
                "/proc/softirqs" => first.to_lowercase(),
                _ if first.parse::<u32>().is_ok() => l.split_whitespace().last()?.to_string(),
                _ => return None,
            };
            (counts.len() == cpus).then_some((name, counts))
        })
        .collect()
}

/// bcc's `-c CPU` (`--cpu` here: `-c` is libbpf-tools' cgroup) on
/// hardirqs and softirqs: one `-C --cpu N` run per online CPU side by side
/// while fsyncer makes disk interrupts and block softirqs, with the
/// kernel's own per-CPU counts (/proc/softirqs, /proc/interrupts) read
/// before the first starts and after the last ends: each CPU's count of
/// each interrupt is at most what the kernel counted on that CPU in the
/// window (unfiltered, a CPU's run would count the others' too), and the
/// runs counted something (timer softirqs on every CPU; fsyncer's disk
/// interrupts on the CPUs they are routed to, maybe one).
/// libbpf-tools' have no CPU filter: the kernel's counts are the oracle.
#[test]
fn hardirqs_and_softirqs_cpu_count_one_cpus_interrupts() {
    if !require_bpf_oracle() {
        return;
    }
    let online: Vec<usize> = (0..64)
        .filter(|c| std::path::Path::new(&format!("/sys/devices/system/cpu/cpu{c}")).exists())
        .filter(|c| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{c}/online"))
                .map_or(true, |s| s.trim() == "1")
        })
        .collect();
    for (tool, proc_file, head) in [
        ("softirqs", "/proc/softirqs", "SOFTIRQ"),
        ("hardirqs", "/proc/interrupts", "HARDIRQ"),
    ] {
        let before = proc_irq_counts(proc_file);
        let runs: Vec<_> = online
            .iter()
            .map(|cpu| {
                let mut cmd = common::scry();
                cmd.args([tool, "-C", "--cpu", &cpu.to_string()]);
                (*cpu, tracer(cmd, "irq events"))
            })
            .collect();
        let workload = Command::new(common::workload("fsyncer"))
            .arg("50")
            .stderr(Stdio::null())
            .status()
            .expect("fsyncer runs");
        assert!(workload.success());
        let texts: Vec<(usize, String)> = runs
            .into_iter()
            .map(|(cpu, (child, out))| (cpu, finish(child, out, true).0))
            .collect();
        let after = proc_irq_counts(proc_file);
        let mut counted = 0;
        for (cpu, text) in &texts {
            let rows: Vec<(String, u64)> = text
                .lines()
                .skip_while(|l| !l.starts_with(head))
                .skip(1)
                .filter_map(|l| {
                    let (name, n) = l.trim().rsplit_once(char::is_whitespace)?;
                    Some((name.trim().to_string(), n.parse().ok()?))
                })
                .collect();
            let total: u64 = rows.iter().map(|r| r.1).sum();
            counted += total;
            assert!(
                total > 0 || tool == "hardirqs",
                "{tool} --cpu {cpu} counted nothing:\n{text}"
            );
            for (name, n) in &rows {
                let (Some(b), Some(a)) = (before.get(name), after.get(name)) else {
                    continue;
                };
                let kernel = a[*cpu].saturating_sub(b[*cpu]);
                assert!(
                    *n <= kernel,
                    "{tool} --cpu {cpu}: {name} {n}, the kernel counted {kernel} on CPU {cpu} \
                     (all CPUs: {:?} -> {a:?}):\n{text}",
                    b
                );
            }
        }
        assert!(
            counted > 0,
            "{tool}: no CPU's run counted anything: {texts:?}"
        );
    }
    let out = common::output(common::scry().args(["softirqs", "--cpu", "4096"]));
    common::assert_bad_input(&out, "--cpu 4096: no such CPU online", &"--cpu 4096");
}

/// One entry of offcputime's output (bcc's and libbpf-tools' layout): its
/// frames (the tracer's own `bpf_*` and `__traceiter_*` ones left out),
/// thread and total.
#[derive(Debug, Default)]
struct OffcpuEntry {
    frames: Vec<String>,
    tid: u32,
    us: u64,
}

fn offcpu_entries(text: &str) -> Vec<OffcpuEntry> {
    let mut entries = Vec::new();
    let mut current = OffcpuEntry::default();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("    -   ") {
            let tid = rest
                .rsplit('(')
                .next()
                .and_then(|t| t.trim_end_matches(')').parse().ok());
            let us = lines.next().and_then(|l| l.trim().parse().ok());
            if let (Some(tid), Some(us)) = (tid, us) {
                current.tid = tid;
                current.us = us;
                entries.push(std::mem::take(&mut current));
            }
        } else if let Some(frame) = line.strip_prefix("    ")
            && !frame.starts_with("bpf_")
            && !frame.starts_with("__traceiter_")
        {
            current.frames.push(frame.to_string());
        }
    }
    entries
}

/// libbpf-tools' `tool -p PID ARGS`, which prints nothing before the end,
/// returned once it holds a BPF link (attached).
fn silent_peer(
    tool: &str,
    pid: &str,
    args: &[&str],
) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut all = vec!["-p".to_string(), pid.to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    let mut oracle = peer(tool, &all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the peer starts");
    let start = Instant::now();
    while !bpf_ids(oracle.id()).iter().any(|(k, _)| k == "link_id") {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "libbpf-tools' {tool} never attached"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = BufReader::new(oracle.stdout.take().expect("piped"));
    (oracle, out)
}

/// piper blocks 50 times in wait_for_reply, 10 ms each, and measures it:
/// scry's sums over the stacks through wait_for_reply come within 10% of
/// that; its largest stack of that thread has libbpf-tools' kernel frames
/// (the same stack map), and the user frames too: wait_for_reply, main.
/// (libbpf-tools reads a process's maps only when it prints: piper has
/// exited by then, and it prints no user frames, "failed to get syms";
/// scry read them while piper ran.) Both count sleeps only (`--state 1`)
/// in a stack map of 16384: a stack whose bucket another stack holds is
/// "[Missed User Stack]" in both tools, and on a loaded machine piper's
/// preemptions (distinct user stacks each) filled bcc's default of 1024
/// buckets enough to take the pipe read's bucket (1 run in ~30).
#[test]
fn offcputime_sums_piper_blocked_time_with_libbpf_tools_stacks() {
    if !require_bpf_oracle()
        || !common::require_tool("offcputime", "libbpf-tools is not installed (scripts/deps)")
    {
        return;
    }
    let workload = stopped_to(&common::workload("piper"), &["50", "10"], Stdio::piped());
    let pid = workload.id().to_string();
    let mut cmd = common::scry();
    let only_sleeps = ["--state", "1", "--stack-storage-size", "16384"];
    cmd.args(["offcputime", "-p", &pid]).args(only_sleeps);
    let (scry, scry_out) = tracer(cmd, "Tracing off-CPU time (us) of PID");
    let (oracle, oracle_out) = silent_peer("offcputime", &pid, &only_sleeps);
    let (tid, blocked_us, said) = run_piper(workload);
    let (peer_text, _) = finish(oracle, oracle_out, true);
    let (text, err) = finish(scry, scry_out, false);
    let report = format!("piper: {said}\nscry:\n{text}\n{err}\nlibbpf-tools:\n{peer_text}");
    let ours: Vec<OffcpuEntry> = offcpu_entries(&text)
        .into_iter()
        .filter(|e| e.tid == tid)
        .collect();
    let theirs: Vec<OffcpuEntry> = offcpu_entries(&peer_text)
        .into_iter()
        .filter(|e| e.tid == tid)
        .collect();
    let in_wait: u64 = ours
        .iter()
        .filter(|e| e.frames.iter().any(|f| f == "wait_for_reply"))
        .map(|e| e.us)
        .sum();
    // The largest total by frames (libbpf-tools prints each stack id
    // apart, and two ids may name the same functions).
    let top = |entries: &[OffcpuEntry]| -> Option<(Vec<String>, u64)> {
        let mut by_frames: std::collections::BTreeMap<&[String], u64> = Default::default();
        for e in entries {
            *by_frames.entry(&e.frames).or_insert(0) += e.us;
        }
        let (frames, us) = by_frames.into_iter().max_by_key(|&(_, us)| us)?;
        Some((frames.to_vec(), us))
    };
    let (ours_top, theirs_top) = (top(&ours), top(&theirs));
    eprintln!(
        "offcputime: piper blocked {blocked_us} us; scry {in_wait} us through wait_for_reply, \
         top stack {ours_top:?}; libbpf-tools top stack {theirs_top:?}"
    );
    assert!(
        in_wait.abs_diff(blocked_us) * 10 <= blocked_us,
        "scry {in_wait} us, piper {blocked_us} us\n{report}"
    );
    let ((ours_frames, ours_us), (theirs_frames, theirs_us)) =
        (ours_top.expect(&report), theirs_top.expect(&report));
    let user_at = ours_frames
        .iter()
        .position(|f| f == "wait_for_reply")
        .expect(&report);
    assert_eq!(
        ours_frames.get(user_at + 1).map(String::as_str),
        Some("main"),
        "{report}"
    );
    // libbpf-tools' kernel frames: all it printed, its user frames missing.
    assert_eq!(ours_frames[..user_at], theirs_frames[..], "{report}");
    assert!(ours_us.abs_diff(theirs_us) * 10 <= theirs_us, "{report}");
}

/// The rows of runqlen's `-C` output: per CPU, (run-queue length, samples).
fn runqlen_rows(text: &str) -> std::collections::BTreeMap<u32, Vec<(u64, u64)>> {
    let mut rows: std::collections::BTreeMap<u32, Vec<(u64, u64)>> = Default::default();
    let mut cpu = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("cpu = ") {
            cpu = n.trim().parse().ok();
            continue;
        }
        let mut fields = line.split(':');
        let (Some(len), Some(count), Some(cpu)) = (fields.next(), fields.next(), cpu) else {
            continue;
        };
        let count = count.split_whitespace().next().and_then(|c| c.parse().ok());
        if let (Ok(len), Some(count)) = (len.trim().parse(), count) {
            rows.entry(cpu).or_default().push((len, count));
        }
    }
    rows
}

/// Four threads that only compute, pinned to one CPU (the first this
/// process may use) for 1 s of CPU each (4 s or more of wall time,
/// whatever the load): while they run, that CPU's run queue holds at least
/// those four, so every sample runqlen takes there in a 1-second interval
/// inside that time says 3 or more waiting (other load only adds), and
/// `-O` says 100% for it. libbpf-tools'
/// runqlen does not load on this kernel (its cfs_rq.nr_running is
/// nr_queued since 6.14), so the workload is the oracle.
#[test]
fn runqlen_sees_the_threads_pinned_to_a_cpu() {
    if !require_bpf_oracle() {
        return;
    }
    let threads = common::workload("threads");
    let threads = threads.to_str().expect("utf-8 path");
    let cpu = common::first_allowed_cpu();
    let mut workload = Command::new("taskset")
        .args(["-c", &cpu, threads, "4", "1s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("taskset runs");
    std::thread::sleep(Duration::from_millis(300));
    let hists = common::run_ok(common::scry().args(["runqlen", "-C", "1", "1"]));
    let occupancy = common::run_ok(common::scry().args(["runqlen", "-C", "-O", "1", "1"]));
    let still_running = workload.try_wait().expect("wait").is_none();
    assert!(workload.wait().expect("workload ends").success());
    assert!(still_running, "the threads ended before runqlen did");
    let rows = runqlen_rows(&hists);
    let n: u32 = cpu.parse().expect("a CPU number");
    eprintln!("runqlen: CPU {cpu} {:?}\n{occupancy}", rows.get(&n));
    let pinned = rows
        .get(&n)
        .unwrap_or_else(|| panic!("no cpu = {cpu}:\n{hists}"));
    let samples: u64 = pinned.iter().map(|&(_, n)| n).sum();
    assert!(samples >= 50, "{samples} samples in 1 s at 99 Hz:\n{hists}");
    assert!(pinned.iter().all(|&(len, _)| len >= 3), "{hists}");
    assert!(
        hists.starts_with("Sampling run queue length... Hit Ctrl-C to end.\n\ncpu = 0\n     runqlen       : count     distribution\n"),
        "{hists}"
    );
    assert!(
        occupancy.contains(&format!("runqocc, CPU {cpu:<3} 100.00%\n")),
        "{occupancy}"
    );
}

/// One entry of wakeuptime's output (bcc's layout, or libbpf-tools', whose
/// frames carry their address first): target, waker, the waker's frames
/// (the tracer's own left out), total.
#[derive(Debug, Default)]
struct WakeupEntry {
    target: String,
    waker: String,
    frames: Vec<String>,
    us: u64,
}

fn wakeup_entries(text: &str) -> Vec<WakeupEntry> {
    let mut entries = Vec::new();
    let mut current = WakeupEntry::default();
    for line in text.lines().map(str::trim) {
        if let Some(target) = line.strip_prefix("target:") {
            current = WakeupEntry {
                target: target.trim().to_string(),
                ..Default::default()
            };
        } else if let Some(waker) = line.strip_prefix("waker:") {
            current.waker = waker.trim().to_string();
        } else if !current.target.is_empty()
            && let Ok(us) = line.parse::<u64>()
        {
            current.us = us;
            entries.push(std::mem::take(&mut current));
        } else if let Some(name) = line.split_whitespace().last()
            && !current.target.is_empty()
            && !name.starts_with("bpf_")
            && !name.starts_with("__traceiter_")
        {
            current.frames.push(name.to_string());
        }
    }
    entries
}

/// piper's main thread, woken 50 times by its answerer writing to a pipe:
/// scry's largest piper-by-answerer entry has the waker stack of
/// libbpf-tools' (pipe_write waking the reader) and a total within 10% of
/// its (both time switch-out to wakeup, from their own clock reads).
#[test]
fn wakeuptime_names_the_writer_as_libbpf_tools_does() {
    if !require_bpf_oracle()
        || !common::require_tool("wakeuptime", "libbpf-tools is not installed (scripts/deps)")
    {
        return;
    }
    let mut workload = stopped_workload("piper", &["50", "10"]);
    let pid = workload.id().to_string();
    let mut cmd = common::scry();
    cmd.args(["wakeuptime", "-p", &pid]);
    let (scry, scry_out) = tracer(cmd, "Tracing blocked time (us) by kernel stack");
    let (oracle, oracle_out) = silent_peer("wakeuptime", &pid, &[]);
    common::signal(workload.id(), "CONT");
    assert!(workload.wait().expect("piper ends").success());
    let (peer_text, _) = finish(oracle, oracle_out, true);
    let (text, err) = finish(scry, scry_out, false);
    let report = format!("scry:\n{text}\n{err}\nlibbpf-tools:\n{peer_text}");
    let top = |entries: Vec<WakeupEntry>| {
        entries
            .into_iter()
            .filter(|e| e.target == "piper" && e.waker == "answerer")
            .max_by_key(|e| e.us)
    };
    let ours = top(wakeup_entries(&text)).expect(&report);
    let theirs = top(wakeup_entries(&peer_text)).expect(&report);
    eprintln!("wakeuptime: scry {ours:?}\nlibbpf-tools {theirs:?}");
    assert_eq!(ours.frames, theirs.frames, "{report}");
    assert!(
        ours.frames.iter().any(|f| f.contains("pipe_write")),
        "{report}"
    );
    assert!(ours.us.abs_diff(theirs.us) * 10 <= theirs.us, "{report}");
}

/// bcc's hooks on kernel functions (the engine's kernel-function groups),
/// or why not: with -v, vfsstat, cachestat, tcptop and tcpconnect name for
/// a kernel-function group the fentry or kprobe hook in use, their
/// tracepoint group then on standby; or, where none attaches (this
/// machine: fentry refused, no kprobes), each refusal, fentry then kprobe,
/// and the tracepoint group attached. The guest of kernel_matrix checks
/// the counts of both paths.
#[test]
fn kernel_function_hooks_used_or_each_refusal_said() {
    if !require_bpf_oracle() {
        return;
    }
    for (tool, args, function, fentry, tracepoint) in [
        (
            "vfsstat",
            &["1", "1"][..],
            "scry_k_vfs_read",
            "fentry/vfs_read",
            "scry_vfs_read",
        ),
        (
            "cachestat",
            &["1", "1"],
            "scry_k_cache_added",
            "fentry/filemap_add_folio",
            "scry_cache_add",
        ),
        (
            "tcptop",
            &["1", "1"],
            "scry_k_tcp_send",
            "fentry/tcp_sendmsg",
            "scry_tcptop_send",
        ),
        (
            "tcpconnect",
            &["-d", "1"],
            "scry_k_connect4",
            "fentry/tcp_v4_connect",
            "scry_tcp_state",
        ),
    ] {
        let out = common::output(common::scry().arg(tool).arg("-v").args(args));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{tool}: {err}");
        let hook = |group: &str| {
            let prefix = format!("{tool}: hook {group}: ");
            err.lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .unwrap_or_else(|| panic!("{tool}: no -v line for {group}: {err}"))
                .to_string()
        };
        let (function, tracepoint) = (hook(function), hook(tracepoint));
        if function.starts_with("fentry/") || function.starts_with("kprobe/") {
            assert_eq!(
                tracepoint, "not attached (the kernel-function hooks count)",
                "{tool}: {err}"
            );
        } else {
            let refused = format!("not attached ({fentry} refused: ");
            assert!(
                function.starts_with(&refused) && function.contains("kprobe/"),
                "{tool}: {function}"
            );
            assert!(
                tracepoint.starts_with("tp_btf/")
                    || tracepoint.starts_with("raw_tp/")
                    || tracepoint.starts_with("tracepoint/"),
                "{tool}: {err}"
            );
        }
    }
}
