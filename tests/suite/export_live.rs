//! `--to FORMAT` on the commands that make profiles: `scry flamegraph`
//! (of a file: the same bytes as `scry convert`; of a command it records),
//! `scry offcpu`, `scry offcputime` and `scry wakeuptime` (their blocked
//! stacks, weights in nanoseconds), read
//! back by `go tool pprof` and as speedscope JSON.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

fn require_go() -> bool {
    common::require_go()
}

fn go_pprof(args: &[&str], profile: &Path) -> String {
    common::go_pprof(args, profile)
}

fn assert_private(path: &Path) {
    let mode = std::fs::metadata(path)
        .expect("export written")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{} is {mode:o}", path.display());
}

#[test]
fn flamegraph_to_exports_a_file_as_convert_does_and_a_command() {
    require_kernel!();
    if !require_go() {
        return;
    }
    let dir = common::tempdir();
    let data = common::scry_record_cpu7525(dir.path(), "cpu", true, "0.3s");
    let ours = dir.path().join("fg.json");
    let theirs = dir.path().join("convert.json");
    common::run_ok(
        common::scry()
            .args(["flamegraph", "--to", "speedscope", "-i"])
            .arg(&data)
            .arg("-o")
            .arg(&ours),
    );
    common::run_ok(
        common::scry()
            .args(["convert", "--to", "speedscope", "-i"])
            .arg(&data)
            .arg("-o")
            .arg(&theirs),
    );
    assert_private(&ours);
    assert_eq!(
        std::fs::read(&ours).expect("read"),
        std::fs::read(&theirs).expect("read")
    );

    // A command, recorded first.
    let out = dir.path().join("cmd.pb.gz");
    common::run_ok(
        common::scry()
            .args(["flamegraph", "--to", "pprof", "-o"])
            .arg(&out)
            .arg("--")
            .arg(common::workload("cpu7525"))
            .arg("0.4s"),
    );
    assert_private(&out);
    let top = go_pprof(&["-top"], &out);
    let names: Vec<&str> = top
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .filter_map(|l| l.split_whitespace().nth(5))
        .take(2)
        .collect();
    assert_eq!(names, ["hot_a", "hot_b"], "{top}");
}

#[test]
fn offcpu_to_exports_blocked_time_in_nanoseconds() {
    require_kernel!();
    require_tracefs!();
    if !require_go() {
        return;
    }
    let dir = common::tempdir();
    let out = dir.path().join("off.pb.gz");
    common::run_ok(
        common::scry()
            .args(["offcpu", "--to", "pprof", "-o"])
            .arg(&out)
            .arg("--")
            .arg(common::workload("sleeper"))
            .args(["20", "5"]),
    );
    assert_private(&out);
    let top = go_pprof(&["-top", "-unit=ms"], &out);
    assert!(top.contains("Type: off_cpu"), "{top}");
    // 20 sleeps of at least 5 ms each: at least 100 ms off CPU.
    let total: f64 = top
        .lines()
        .find_map(|l| {
            l.split(" of ")
                .nth(1)?
                .split("ms total")
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("{top}"));
    assert!(total >= 100.0, "{total} ms off CPU\n{top}");
    let traces = go_pprof(&["-traces"], &out);
    assert!(traces.contains("clock_nanosleep"), "{traces}");

    // The same through flamegraph --offcpu, as speedscope JSON.
    let json = dir.path().join("off.json");
    common::run_ok(
        common::scry()
            .args(["flamegraph", "--offcpu", "--to", "speedscope", "-o"])
            .arg(&json)
            .arg("--")
            .arg(common::workload("sleeper"))
            .args(["20", "5"]),
    );
    let file: Value = serde_json::from_slice(&std::fs::read(&json).expect("read")).expect("JSON");
    let profiles = file["profiles"].as_array().expect("profiles");
    let ns: u64 = profiles
        .iter()
        .inspect(|p| assert_eq!(p["unit"], "nanoseconds", "{p}"))
        .flat_map(|p| p["weights"].as_array().expect("weights").clone())
        .map(|w| w.as_u64().expect("weight"))
        .sum();
    assert!(ns >= 100_000_000, "{ns} ns off CPU");
}

#[test]
fn to_bad_input_is_one_line() {
    let out = common::output(common::scry().args(["flamegraph", "--to", "svg"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown format 'svg'"));
    let out = common::output(common::scry().args(["offcpu", "-o", "x.pb.gz", "-a"]));
    assert_eq!(out.status.code(), Some(2), "-o without --to");
    let out = common::output(
        common::scry()
            .args(["flamegraph", "--to", "pprof", "-i", "-"])
            .stdin(std::process::Stdio::null()),
    );
    common::assert_bad_input(&out, "not standard input", &"--to from stdin");
}

/// The summed blocked nanoseconds of a speedscope export, and its frame
/// names.
fn speedscope_ns_and_frames(path: &Path) -> (u64, Vec<String>) {
    let file: Value = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON");
    let ns = file["profiles"]
        .as_array()
        .expect("profiles")
        .iter()
        .inspect(|p| assert_eq!(p["unit"], "nanoseconds", "{p}"))
        .flat_map(|p| p["weights"].as_array().expect("weights").clone())
        .map(|w| w.as_u64().expect("weight"))
        .sum();
    let frames = file["shared"]["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .filter_map(|f| f["name"].as_str().map(str::to_string))
        .collect();
    (ns, frames)
}

/// offcputime, wakeuptime, offwaketime and profile-bpf (the BPF stack tools) `--to
/// speedscope -o`:
/// sleeper's 2 s of 5 ms sleeps, watched for 1 s with -p, are blocked
/// under clock_nanosleep (offcputime) and woken by the timer (wakeuptime),
/// in nanoseconds, in files made 0600, nothing on standard output.
#[test]
fn bpf_stack_tools_to_export_their_stacks() {
    require_kernel!();
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    });
    if !common::gate(if root {
        Ok(())
    } else {
        Err("BPF tools need root (CAP_BPF and CAP_PERFMON)".into())
    }) {
        return;
    }
    let dir = common::tempdir();
    // offwaketime's samples are bcc's folded chains: the blocked stack,
    // `--`, the waker's stack and name (the timer's softirq or interrupt).
    for (tool, want) in [
        ("offcputime", &["nanosleep"][..]),
        ("wakeuptime", &["hrtimer"][..]),
        ("offwaketime", &["nanosleep", "--"][..]),
    ] {
        let mut sleeper = std::process::Command::new(common::workload("sleeper"))
            .args(["400", "5"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("sleeper");
        let out = dir.path().join(format!("{tool}.json"));
        let pid = sleeper.id().to_string();
        let result = common::output(
            common::scry()
                .args([tool, "-p", &pid, "--to", "speedscope", "-o"])
                .arg(&out)
                .arg("1"),
        );
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        assert!(
            result.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        assert!(result.stdout.is_empty(), "{tool} printed its report too");
        assert_private(&out);
        let (ns, frames) = speedscope_ns_and_frames(&out);
        // At least 10 of the sleeps, however loaded the machine.
        assert!(ns >= 50_000_000, "{tool}: {ns} ns blocked");
        for want in want {
            assert!(
                frames.iter().any(|f| f.contains(want)),
                "{tool}: no {want} frame in {frames:?}"
            );
        }
    }

    // profile-bpf (the in-kernel on-CPU profile): spinner's second of CPU
    // at 99 Hz, a sample 1/99 s, in spin_forever.
    let mut spinner = std::process::Command::new(common::workload("spinner"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spinner");
    let out = dir.path().join("oncpu.json");
    let pid = spinner.id().to_string();
    let result = common::output(
        common::scry()
            .args([
                "profile-bpf",
                "-F",
                "99",
                "-p",
                &pid,
                "--to",
                "speedscope",
                "-o",
            ])
            .arg(&out)
            .arg("1"),
    );
    let _ = spinner.kill();
    let _ = spinner.wait();
    assert!(
        result.status.success() && result.stdout.is_empty(),
        "profile-bpf: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert_private(&out);
    let (ns, frames) = speedscope_ns_and_frames(&out);
    // At least 5 samples, however loaded the machine.
    assert!(
        ns >= 5 * (1_000_000_000 / 99),
        "profile-bpf: {ns} ns on CPU"
    );
    assert!(frames.iter().any(|f| f == "spin_forever"), "{frames:?}");
}
