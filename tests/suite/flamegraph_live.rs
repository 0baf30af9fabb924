//! Live `scry flamegraph` (`-- COMMAND`, `-p`, `-a`) both ways: stacks
//! counted in the kernel (the default where BPF loads: `-v` names the
//! sampling hook) and streamed (`--no-bpf`), `perf record -g` the oracle:
//! the 75/25 workload splits 75/25 within 4 points both ways with perf's
//! chains; `-p` on a running process ends with Ctrl-C and holds its hot
//! function; `-a -- COMMAND` holds a busy process besides the command;
//! the children a command forks are counted (their fork and exec hooks an
//! object of their own); without CAP_BPF one line says so and the samples
//! are streamed.

use crate::common;
use crate::oncpu::{cpu_ticks, main_chain, major_chains, online_cpus, perf_chains, require_root};

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::tracer::bpf_fd_ids;

/// The hook line `-v` prints when the stacks are counted in the kernel.
const KERNEL_HOOK: &str = "flamegraph: hook scry_oc_sample: perf_event";

/// Folded lines (`comm;root;...;leaf WEIGHT`) into (frames root first,
/// comm, weight).
fn folded(text: &str) -> Vec<(Vec<String>, String, u64)> {
    text.lines()
        .filter_map(|line| {
            let (stack, weight) = line.rsplit_once(' ')?;
            let mut frames: Vec<String> = stack.split(';').map(str::to_string).collect();
            let comm = frames.remove(0);
            Some((frames, comm, weight.parse().ok()?))
        })
        .collect()
}

/// The weight of each `main;...` chain of cpu7525's lines.
fn chains(text: &str) -> BTreeMap<String, u64> {
    let mut chains = BTreeMap::new();
    for (frames, comm, weight) in folded(text) {
        if comm != "cpu7525" {
            continue;
        }
        if let Some(chain) = main_chain(frames.iter().rev().map(String::as_str)) {
            *chains.entry(chain).or_insert(0) += weight;
        }
    }
    chains
}

/// `scry flamegraph --folded -v ARGS` (and `--no-bpf`): stdout, stderr.
fn scry_folded(args: &[&str], no_bpf: bool) -> (String, String) {
    let mut cmd = common::scry();
    cmd.args(["flamegraph", "--folded", "-v"]);
    if no_bpf {
        cmd.arg("--no-bpf");
    }
    let out = common::output(cmd.args(args));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?} no_bpf={no_bpf}: {stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

/// Which way the stacks were taken, checked from `-v`'s lines.
fn assert_way(stderr: &str, no_bpf: bool) {
    assert_eq!(
        stderr.contains(KERNEL_HOOK),
        !no_bpf,
        "no_bpf={no_bpf}: {stderr}"
    );
}

#[test]
fn cpu7525_splits_75_25_both_ways_with_perfs_chains() {
    if !require_root() || !common::require_perf() {
        return;
    }
    let dir = common::tempdir();
    let perfs = major_chains(&perf_chains(dir.path()));
    let workload = common::workload("cpu7525");
    let workload = workload.to_str().expect("path");
    for no_bpf in [false, true] {
        let (text, stderr) = scry_folded(&["--", workload, "1s"], no_bpf);
        assert_way(&stderr, no_bpf);
        let scry = chains(&text);
        let ours = major_chains(&scry);
        let keys = |m: &BTreeMap<String, f64>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&ours),
            keys(&perfs),
            "no_bpf={no_bpf}: scry {scry:?}\nperf {perfs:?}"
        );
        let hot_a = ours.get("main;outer_a;hot_a").copied().unwrap_or(0.0);
        let hot_b = ours
            .get("main;outer_b;middle_b;hot_b")
            .copied()
            .unwrap_or(0.0);
        let share = hot_a / (hot_a + hot_b);
        assert!(
            (share - 0.75).abs() <= 0.04,
            "no_bpf={no_bpf}: hot_a {share:.3} of {scry:?}"
        );
    }
}

/// A command's children count in the kernel way: the fork and exec hooks
/// (an object of their own, loaded only to watch processes) are attached
/// and the children's work is in the stacks, weighed as their CPU time
/// (two children 0.4 s each, the parent a quarter of one's).
#[test]
fn forked_children_count_through_their_own_hooks() {
    if !require_root() {
        return;
    }
    let workload = common::workload("forker");
    let workload = workload.to_str().expect("path");
    let (text, stderr) = scry_folded(&["-F", "499", "--", workload, "2", "0.4s"], false);
    assert_way(&stderr, false);
    for hook in [
        "flamegraph: hook scry_tg_fork: raw_tp/sched_process_fork",
        "flamegraph: hook scry_tg_exec: raw_tp/sched_process_exec",
    ] {
        assert!(stderr.contains(hook), "{hook}: {stderr}");
    }
    let weight = |leaf: &str| -> u64 {
        folded(&text)
            .iter()
            .filter(|(frames, comm, _)| comm == "forker" && frames.iter().any(|f| f == leaf))
            .map(|l| l.2)
            .sum()
    };
    let (children, parent) = (weight("child_work"), weight("parent_work"));
    assert!(
        children > 0 && children >= 2 * parent,
        "child_work {children}, parent_work {parent}: {text}"
    );
}

/// Whether process `pid` holds a perf_event descriptor.
fn holds_perf_events(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|dir| {
        dir.flatten().any(|e| {
            std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("perf_event"))
        })
    })
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn pid_of_a_running_process_until_ctrl_c_both_ways() {
    if !require_root() {
        return;
    }
    let spin = Killed(crate::oncpu::spinner());
    let pid = spin.0.id();
    for no_bpf in [false, true] {
        let mut cmd = common::scry();
        cmd.args(["flamegraph", "--folded", "-v", "-F", "499", "-p"])
            .arg(pid.to_string());
        if no_bpf {
            cmd.arg("--no-bpf");
        }
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("scry runs");
        let me = child.id();
        // Sampling once it holds its links (one per CPU) or its events.
        let start = Instant::now();
        while !(if no_bpf {
            holds_perf_events(me)
        } else {
            bpf_fd_ids(me).get("link_id").map_or(0, Vec::len) >= online_cpus()
        }) {
            assert!(start.elapsed() < Duration::from_secs(60), "never sampled");
            std::thread::sleep(Duration::from_millis(10));
        }
        // A third of a second of the spinner's CPU time, whatever the load.
        let before = cpu_ticks(pid);
        while cpu_ticks(pid) < before + 33 {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "spinner starved"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        common::signal(me, "INT");
        let out = child.wait_with_output().expect("scry ends");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "no_bpf={no_bpf}: {stderr}");
        assert_way(&stderr, no_bpf);
        let lines = folded(&String::from_utf8_lossy(&out.stdout));
        assert!(
            lines.iter().all(|(_, comm, _)| comm == "spinner"),
            "{lines:?}"
        );
        let total: u64 = lines.iter().map(|l| l.2).sum();
        let spinning: u64 = lines
            .iter()
            .filter(|(frames, ..)| frames.iter().any(|f| f == "spin_forever"))
            .map(|l| l.2)
            .sum();
        assert!(
            total > 0 && spinning * 10 >= total * 9,
            "no_bpf={no_bpf}: {spinning} of {total}: {lines:?}"
        );
    }
}

#[test]
fn all_cpus_while_a_command_runs_both_ways() {
    if !require_root() {
        return;
    }
    let spin = Killed(crate::oncpu::spinner());
    let spin_comm = "spinner";
    let workload = common::workload("cpu7525");
    let workload = workload.to_str().expect("path");
    for no_bpf in [false, true] {
        let (text, stderr) = scry_folded(&["-a", "-F", "499", "--", workload, "0.5s"], no_bpf);
        assert_way(&stderr, no_bpf);
        let lines = folded(&text);
        let has = |comm: &str, function: &str| {
            lines
                .iter()
                .any(|(frames, c, _)| c == comm && frames.iter().any(|f| f == function))
        };
        assert!(has("cpu7525", "hot_a"), "no_bpf={no_bpf}: {text}");
        assert!(has(spin_comm, "spin_forever"), "no_bpf={no_bpf}: {text}");
    }
    drop(spin);
}

#[test]
fn without_cap_bpf_one_line_and_streamed() {
    if !require_root() || !common::require_tool("setpriv", "setpriv is not installed (util-linux)")
    {
        return;
    }
    if common::perf_event_paranoid() > 2 {
        common::gate(Err(
            "kernel.perf_event_paranoid > 2: no unprivileged perf events to fall back to"
                .to_string(),
        ));
        return;
    }
    let out = common::output(
        Command::new("setpriv")
            .args(["--inh-caps=-all", "--bounding-set=-all", "--"])
            .arg(env!("CARGO_BIN_EXE_scry"))
            .args(["flamegraph", "--folded", "-v", "--"])
            .arg(common::workload("cpu7525"))
            .arg("0.3s"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let said: Vec<&str> = stderr.lines().collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains("CAP_BPF") && said[0].contains("perf rings"),
        "{stderr}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(";main;outer_a;hot_a "), "{text}");
}
