//! Binaries the host cannot see: a workload in its own mount namespace,
//! chrooted into a tmpfs mounted only there (the kernel reports its maps
//! under a path that does not exist on the host). `scry record -a` names
//! it while it lives (through `/proc/PID/root`) and after it is gone (the
//! copies kept by build-id at the end of the recording).

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The pid of a process whose command line starts with `needle`.
fn running(needle: &str) -> Option<String> {
    let dir = std::fs::read_dir("/proc").ok()?;
    dir.flatten()
        .find(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).starts_with(needle))
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
}

/// Whether process `pid` still has mappings (an exiting one keeps them
/// until its memory is torn down).
fn has_maps(pid: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/map_files")).is_ok_and(|mut d| d.next().is_some())
}

/// `scry report` with `cache` as its cache folder, and a home without
/// perf's `~/.debug` (other tests' `perf record` put cpu7525 there).
fn report(data: &Path, cache: &Path) -> String {
    common::run_ok(
        common::scry()
            .args([
                "report",
                "--stdio",
                "--no-children",
                "--sort",
                "comm,sym",
                "-i",
            ])
            .arg(data)
            .env("XDG_CACHE_HOME", cache)
            .env("HOME", cache.join("home")),
    )
}

fn names_hot_a(text: &str) -> bool {
    text.lines()
        .any(|l| l.contains("cpu7525") && l.contains("hot_a"))
}

#[test]
fn binaries_inside_another_root_are_named_live_and_after() {
    if !common::require_perf_events()
        || !common::require_tool("unshare", "unshare (util-linux) is not installed")
    {
        return;
    }
    let dir = common::tempdir();
    let d = dir.path();
    let workload = common::workload("cpu7525");
    // The root's contents: the workload and what it links.
    let stage = d.join("stage");
    std::fs::create_dir_all(stage.join("w")).unwrap();
    std::fs::copy(&workload, stage.join("w/cpu7525")).unwrap();
    let ldd = common::run_ok(Command::new("ldd").arg(&workload));
    for lib in ldd.split_whitespace().filter(|w| w.starts_with('/')) {
        let to = stage.join(lib.trim_start_matches('/'));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(lib, &to).unwrap();
    }
    let root = d.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let script = format!(
        "mount -t tmpfs none {root} && cp -a {stage}/. {root}/ && exec chroot {root} /w/cpu7525 60s",
        root = root.display(),
        stage = stage.display()
    );
    let mut container = Command::new("unshare")
        .args([
            "--mount",
            "--pid",
            "--fork",
            "--kill-child",
            "sh",
            "-c",
            &script,
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("unshare");
    let started = Instant::now();
    let pid = loop {
        if let Some(pid) = running("/w/cpu7525") {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the container did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        !root.join("w/cpu7525").exists(),
        "the host sees the container's files"
    );
    let (cache, empty) = (d.join("cache"), d.join("empty"));
    let data = d.join("container.data");
    common::run_ok(
        common::scry()
            .args(["record", "-a", "-g", "-o"])
            .arg(&data)
            .args(["--", "sleep", "1"])
            .env("XDG_CACHE_HOME", &cache),
    );
    // Live, without the cache: through /proc/PID/root.
    let live = report(&data, &empty);
    let alive = container.try_wait().unwrap().is_none();
    assert!(alive, "the container ended before the live report");
    assert!(names_hot_a(&live), "live:\n{live}");
    let _ = container.kill();
    let _ = container.wait();
    let started = Instant::now();
    while has_maps(&pid) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the container's workload did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Gone: only the copies kept at the end of the recording name it.
    let without = report(&data, &empty);
    assert!(
        !names_hot_a(&without),
        "named without the cache:\n{without}"
    );
    let after = report(&data, &cache);
    assert!(names_hot_a(&after), "after:\n{after}");
    let kept = cache.join("scry/build-id");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}
