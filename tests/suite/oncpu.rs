//! On-CPU stacks counted in the kernel (`scry profile-bpf`, bcc's profile)
//! on the real kernel, `perf record -g` the oracle: the 75/25 workload
//! splits 75/25 within 4 points with perf's chains; `-p` on a process
//! already running; two busy processes system-wide, each counted for the
//! CPU time it used; `-f` read back by `scry flamegraph`; a symlink named
//! `profile` runs it; bad input; a start of every process reads no kernel
//! BTF and preallocates no hash map. (SIGKILL: bpf_tools.)

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::tracer::{Tracer, bpf_fd_ids, scry_tool, stopped_to};

/// Root (CAP_BPF and CAP_PERFMON), or skip.
pub(crate) fn require_root() -> bool {
    common::gate(
        if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
            Ok(())
        } else {
            Err("BPF tool tests need root (CAP_BPF and CAP_PERFMON)".to_string())
        },
    )
}

/// The online CPUs: profile-bpf holds one link per CPU once sampling.
pub(crate) fn online_cpus() -> usize {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").expect("online CPUs");
    text.trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<usize>().expect("cpu") - a.parse::<usize>().expect("cpu") + 1,
            None => 1,
        })
        .sum()
}

/// `program ARGS` forked and stopped before its exec.
fn stopped(program: &Path, args: &[&str]) -> Child {
    stopped_to(program, args, Stdio::inherit())
}

/// One entry of bcc's layout: frames (kernel then user, innermost first),
/// comm, pid, count.
#[derive(Debug)]
struct Entry {
    frames: Vec<String>,
    comm: String,
    pid: u32,
    count: u64,
}

/// bcc's multi-line layout (the banner line first) into entries.
fn entries(lines: &[String]) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut frames = Vec::new();
    let mut who: Option<(String, u32)> = None;
    for line in lines.iter().skip(1) {
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if let Some(rest) = text.strip_prefix("- ") {
            let rest = rest.trim();
            let open = rest.rfind(" (").expect("comm (pid)");
            let pid = rest[open + 2..].trim_end_matches(')').parse().expect("pid");
            who = Some((rest[..open].to_string(), pid));
        } else if let (Some((comm, pid)), Ok(count)) = (&who, text.parse::<u64>()) {
            out.push(Entry {
                frames: std::mem::take(&mut frames),
                comm: comm.clone(),
                pid: *pid,
                count,
            });
            who = None;
        } else {
            frames.push(text.to_string());
        }
    }
    out
}

/// A stack's user chain from `main` to the leaf (`main;outer_a;hot_a`),
/// if it has one.
pub(crate) fn main_chain<'a>(
    innermost_first: impl DoubleEndedIterator<Item = &'a str>,
) -> Option<String> {
    let outer_first: Vec<&str> = innermost_first.rev().collect();
    let at = outer_first.iter().position(|f| *f == "main")?;
    let user: Vec<&str> = outer_first[at..]
        .iter()
        .copied()
        .take_while(|f| {
            f.starts_with("main")
                || f.starts_with("outer")
                || f.starts_with("middle")
                || f.starts_with("hot")
        })
        .collect();
    Some(user.join(";"))
}

/// Chains holding at least 2% of the samples, with their shares.
pub(crate) fn major_chains(counts: &BTreeMap<String, u64>) -> BTreeMap<String, f64> {
    let total: u64 = counts.values().sum();
    counts
        .iter()
        .map(|(chain, &n)| (chain.clone(), n as f64 / total.max(1) as f64))
        .filter(|(_, share)| *share >= 0.02)
        .collect()
}

/// `perf record -F 999 -g` of cpu7525: samples per main chain.
pub(crate) fn perf_chains(dir: &Path) -> BTreeMap<String, u64> {
    let data = common::perf_record_g(dir, "cpu7525", &common::workload("cpu7525"), &["1s"]);
    let out = common::run_ok(
        common::perf()
            .args(["script", "-F", "comm,tid,ip,sym", "-i"])
            .arg(&data),
    );
    let mut chains = BTreeMap::new();
    for sample in out.split("\n\n") {
        let frames: Vec<&str> = sample
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(1))
            .collect();
        if let Some(chain) = main_chain(frames.iter().copied()) {
            *chains.entry(chain).or_insert(0) += 1;
        }
    }
    chains
}

#[test]
fn cpu7525_splits_75_25_with_perfs_chains() {
    if !require_root() || !common::require_perf() {
        return;
    }
    let dir = common::tempdir();
    let mut workload = stopped(&common::workload("cpu7525"), &["1s"]);
    let pid = workload.id().to_string();
    let tracer = Tracer::start(
        scry_tool(&["profile-bpf", "-F", "999", "-p", &pid]),
        online_cpus(),
    );
    common::signal(workload.id(), "CONT");
    assert!(workload.wait().expect("workload ends").success());
    let (lines, _) = tracer.finish();
    assert!(
        lines[0].starts_with(&format!(
            "Sampling at 999 Hertz of PID {pid} by user + kernel stack"
        )),
        "{}",
        lines[0]
    );
    let mut scry = BTreeMap::new();
    for e in entries(&lines) {
        // The same pid runs sh until its exec: a sample may land there.
        assert!(
            ["cpu7525", "sh"].contains(&e.comm.as_str()) && e.pid.to_string() == pid,
            "{e:?}"
        );
        if let Some(chain) = main_chain(e.frames.iter().map(String::as_str)) {
            *scry.entry(chain).or_insert(0) += e.count;
        }
    }
    let ours = major_chains(&scry);
    let perfs = major_chains(&perf_chains(dir.path()));
    let keys = |m: &BTreeMap<String, f64>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&ours), keys(&perfs), "scry {scry:?}\nperf {perfs:?}");
    let hot_a = ours.get("main;outer_a;hot_a").copied().unwrap_or(0.0);
    let hot_b = ours
        .get("main;outer_b;middle_b;hot_b")
        .copied()
        .unwrap_or(0.0);
    let share = hot_a / (hot_a + hot_b);
    assert!((share - 0.75).abs() <= 0.04, "hot_a {share:.3} of {scry:?}");
}

/// A running `spinner`, its pid, and its CPU time so far (utime + stime,
/// in clock ticks).
pub(crate) fn spinner() -> Child {
    Command::new(common::workload("spinner"))
        .stdout(Stdio::null())
        .spawn()
        .expect("spinner runs")
}

pub(crate) fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .expect("stat")
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

#[test]
fn pid_of_a_running_process_through_a_symlink_named_profile() {
    if !require_root() {
        return;
    }
    let mut spin = spinner();
    std::thread::sleep(Duration::from_millis(200));
    let dir = common::tempdir();
    let link = dir.path().join("profile");
    std::os::unix::fs::symlink(Path::new(env!("CARGO_BIN_EXE_scry")), &link).expect("symlink");
    let pid = spin.id().to_string();
    let mut cmd = Command::new(&link);
    cmd.args(["-F", "199", "-p", &pid, "1"]);
    let tracer = Tracer::start(cmd, online_cpus());
    let (lines, _) = tracer.finish();
    let _ = spin.kill();
    let _ = spin.wait();
    assert!(
        lines[0].contains(&format!("of PID {pid} by user + kernel stack for 1 secs.")),
        "{}",
        lines[0]
    );
    let all = entries(&lines);
    assert!(all.iter().all(|e| e.pid.to_string() == pid), "{all:?}");
    let spinning: u64 = all
        .iter()
        .filter(|e| e.frames.iter().any(|f| f == "spin_forever"))
        .map(|e| e.count)
        .sum();
    let total: u64 = all.iter().map(|e| e.count).sum();
    assert!(
        total > 0 && spinning * 10 >= total * 9,
        "{spinning} of {total}: {all:?}"
    );
}

#[test]
fn every_cpu_counts_two_busy_processes_for_their_cpu_time() {
    if !require_root() {
        return;
    }
    let mut spins = [spinner(), spinner()];
    let hz = 199u64;
    let tracer = Tracer::start(scry_tool(&["profile-bpf", "-F", "199", "2"]), online_cpus());
    // Sampling from here (its links are attached) until they are gone:
    // the CPU time the spinners used in that window.
    let before: Vec<u64> = spins.iter().map(|s| cpu_ticks(s.id())).collect();
    let start = Instant::now();
    while bpf_fd_ids(tracer.child.id())
        .get("link_id")
        .is_some_and(|l| !l.is_empty())
    {
        assert!(start.elapsed() < Duration::from_secs(60), "never detached");
        std::thread::sleep(Duration::from_millis(5));
    }
    let used: Vec<u64> = spins
        .iter()
        .zip(&before)
        .map(|(s, b)| cpu_ticks(s.id()) - b)
        .collect();
    let (lines, _) = tracer.finish();
    for s in &mut spins {
        let _ = s.kill();
        let _ = s.wait();
    }
    assert!(
        lines[0]
            .starts_with("Sampling at 199 Hertz of all threads by user + kernel stack for 2 secs."),
        "{}",
        lines[0]
    );
    let all = entries(&lines);
    // /proc's clock ticks: USER_HZ, 100 on Linux.
    let tick_hz = 100u64;
    for (spin, ticks) in spins.iter().zip(&used) {
        let counted: u64 = all
            .iter()
            .filter(|e| e.pid == spin.id())
            .map(|e| e.count)
            .sum();
        let expected = ticks * hz / tick_hz;
        // Sampling is statistical, the ticks are 10 ms: within a third,
        // and a tenth of a second's samples.
        let slack = expected / 3 + hz / 10;
        assert!(
            counted.abs_diff(expected) <= slack,
            "pid {}: {counted} samples, {ticks} ticks of CPU (expected {expected} ± {slack})",
            spin.id()
        );
    }
}

#[test]
fn folded_reads_back_into_scry_flamegraph() {
    if !require_root() {
        return;
    }
    let mut workload = stopped(&common::workload("cpu7525"), &["0.5s"]);
    let pid = workload.id().to_string();
    let mut cmd = scry_tool(&["profile-bpf", "-F", "999", "-f", "-d", "-p", &pid]);
    cmd.arg("-v");
    // -f prints no banner: ready once it holds its links.
    let tracer = Tracer::start(cmd, online_cpus());
    common::signal(workload.id(), "CONT");
    assert!(workload.wait().expect("workload ends").success());
    let (lines, _) = tracer.finish();
    // The same pid runs sh until its exec: a sample may land there.
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("cpu7525;") || l.starts_with("sh;")),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.contains(";main;outer_a;hot_a ")),
        "{lines:?}"
    );
    let dir = common::tempdir();
    let folded = dir.path().join("out.folded");
    std::fs::write(&folded, lines.join("\n") + "\n").expect("write");
    let back = common::run_ok(
        common::scry()
            .args(["flamegraph", "--folded"])
            .stdin(std::fs::File::open(&folded).expect("open")),
    );
    let sum = |text: &str| -> u64 {
        text.lines()
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    assert_eq!(sum(&back), sum(&lines.join("\n")), "{back}");
    let svg = dir.path().join("out.svg");
    common::run_ok(
        common::scry()
            .args(["flamegraph", "-o"])
            .arg(&svg)
            .stdin(std::fs::File::open(&folded).expect("open")),
    );
    assert!(
        std::fs::read_to_string(&svg)
            .expect("svg")
            .contains("hot_a")
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    common::tracer::assert_each_bad_input(&[
        (
            &["profile-bpf", "-C", "4096"],
            None,
            "-C: CPU 4096 is not online",
        ),
        (
            &["profile-bpf", "-p", "999999999"],
            None,
            "-p 999999999: no such process",
        ),
    ]);
}

/// The start of a run of every process holds no kernel work it has no use
/// for (strace the oracle: the files it opens, the maps it creates): the
/// kernel's BTF is not read (the fork and exec hooks' CO-RE read is in an
/// object loaded only to watch processes) and the hash maps are not
/// preallocated (perf_event programs take that from kernel 6.1).
#[test]
fn a_start_of_every_process_reads_no_kernel_btf_and_preallocates_no_hash() {
    if !require_root() || !common::require_tool("strace", "no strace (scripts/deps)") {
        return;
    }
    let dir = common::tempdir();
    let log = dir.path().join("strace");
    let out = common::output(
        Command::new("strace")
            .args(["-f", "-e", "trace=openat,bpf", "-o"])
            .arg(&log)
            .arg(env!("CARGO_BIN_EXE_scry"))
            .args(["profile-bpf", "-F", "99", "1"]),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = std::fs::read_to_string(&log).expect("strace log");
    let btf: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("openat(") && l.contains("/sys/kernel/btf/vmlinux"))
        .collect();
    assert!(btf.is_empty(), "{btf:?}");
    let hashes: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("BPF_MAP_CREATE") && l.contains("map_type=BPF_MAP_TYPE_HASH"))
        .collect();
    for name in ["counts", "seen", "fresh", "targets"] {
        let map = hashes
            .iter()
            .find(|l| l.contains(&format!("map_name=\"{name}\"")))
            .unwrap_or_else(|| panic!("no map {name} created: {hashes:?}"));
        assert!(map.contains("BPF_F_NO_PREALLOC"), "{map}");
    }
}
