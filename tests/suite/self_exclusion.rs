//! System-wide, scry records the system, not itself: its own threads are
//! left out of the tracepoints and probes it records (an allocation probe
//! on libc's malloc was 99.8% scry's own allocations while draining). The
//! workload, recorded with everything else, stays.

use crate::common;

use std::collections::BTreeMap;
use std::process::Stdio;

#[test]
fn a_system_wide_malloc_probe_does_not_record_scry() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let dir = common::tempdir();
    let file = dir.path().join("perf.data");
    let scry = common::scry()
        .args([
            "record",
            "-e",
            "uprobe:libc:malloc",
            "-a",
            "-m",
            "1024",
            "-o",
        ])
        .arg(&file)
        .arg("--")
        .arg(common::workload("mallocs"))
        .arg("100000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("scry record starts");
    let scry_pid = scry.id();
    let out = scry.wait_with_output().expect("scry record ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = common::run_ok(
        common::perf()
            .args(["script", "-F", "comm,pid", "-i"])
            .arg(&file),
    );
    let mut by_pid: BTreeMap<u32, (String, u64)> = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(comm), Some(pid)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        by_pid.entry(pid).or_insert((comm.to_string(), 0)).1 += 1;
    }
    assert!(
        !by_pid.contains_key(&scry_pid),
        "scry ({scry_pid}) recorded itself: {:?}",
        by_pid.get(&scry_pid)
    );
    let workload: u64 = by_pid
        .values()
        .filter(|(comm, _)| comm == "mallocs")
        .map(|(_, n)| n)
        .sum();
    assert!(
        workload > 0,
        "no malloc of the workload recorded: {by_pid:?}"
    );
}
