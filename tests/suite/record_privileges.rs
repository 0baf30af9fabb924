//! `scry record` without privileges: as an unprivileged user (root drops to
//! `nobody` with setpriv), system-wide recording is refused with a line that
//! names the sysctl and the capability, and per-process recording falls back
//! to user space with a note, as perf does.

use crate::common;

/// A temporary directory that `nobody` may write the perf.data file into.
fn writable_by_nobody() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("scry-priv")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    dir
}

#[test]
fn system_wide_without_privileges_names_the_sysctl() {
    require_kernel!();
    if common::perf_event_paranoid() < 1 {
        eprintln!("skipping: perf_event_paranoid < 1 lets anyone record system-wide");
        return;
    }
    let dir = writable_by_nobody();
    let out_file = dir.path().join("x.data");
    let Some(out) = common::scry_as_nobody(&[
        "record",
        "-a",
        "-o",
        out_file.to_str().unwrap(),
        "--",
        "true",
    ]) else {
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("scry: permission denied"), "{stderr}");
    assert!(
        last.contains("/proc/sys/kernel/perf_event_paranoid"),
        "{stderr}"
    );
    assert!(last.contains("CAP_PERFMON"), "{stderr}");
}

#[test]
fn own_process_without_privileges_records_user_space() {
    require_kernel!();
    if common::perf_event_paranoid() < 2 {
        eprintln!("skipping: perf_event_paranoid < 2 lets users sample the kernel");
        return;
    }
    let workload = common::workload("cpu7525");
    let dir = writable_by_nobody();
    let out_file = dir.path().join("u.data");
    let Some(out) = common::scry_as_nobody(&[
        "record",
        "-F",
        "999",
        "-o",
        out_file.to_str().unwrap(),
        "--",
        workload.to_str().unwrap(),
        "0.2s",
    ]) else {
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(stderr.contains("user space only"), "{stderr}");
    // perf reads it, and every sample is a user-space one.
    let script = common::run_ok(
        common::perf()
            .args(["script", "-f", "-F", "ip,sym", "-i"])
            .arg(&out_file),
    );
    let lines: Vec<&str> = script.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() > 20, "too few samples: {script}");
    assert!(lines.iter().any(|l| l.contains("hot_a")), "{script}");
    assert!(
        !lines.iter().any(|l| l.trim_start().starts_with("ffffffff")),
        "kernel sample in a user-only file: {script}"
    );
}
