//! The block I/O tools (biolatency, biosnoop) on the real kernel: N
//! direct writes of a known size (`workloads/dwrites`, O_DIRECT, one at a
//! time) to a loop device the test makes on a temporary file (a real
//! block device no one else writes to, so the counts are exact), traced at
//! once by scry and by libbpf-tools' biolatency (the oracle; its biosnoop
//! needs a kprobe and cannot load here). Also: an unknown disk, and
//! SIGKILL leaving nothing attached.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::hist_total;
use common::tracer::{Tracer, assert_each_bad_input, peer, require_root_and, scry_tool};

/// A loop device on a 16 MiB temporary file, detached when dropped.
struct LoopDevice {
    dev: PathBuf,
    _dir: tempfile::TempDir,
}

impl LoopDevice {
    fn new() -> LoopDevice {
        let dir = common::tempdir();
        let file = dir.path().join("disk");
        std::fs::File::create(&file)
            .and_then(|f| f.set_len(16 << 20))
            .expect("backing file");
        let out = common::output(
            Command::new("losetup")
                .arg("--find")
                .arg("--show")
                .arg(&file),
        );
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        LoopDevice { dev, _dir: dir }
    }

    /// Its name in /proc/partitions (`loop0`).
    fn name(&self) -> String {
        let name = self.dev.file_name().expect("a device name");
        name.to_string_lossy().into_owned()
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

/// Root, libbpf-tools' biolatency and losetup, or skip.
fn require_loop_and_oracle() -> bool {
    require_root_and("biolatency")
        && common::require_tool(
            "losetup",
            "util-linux's losetup is not installed (scripts/deps)",
        )
}

#[test]
fn biolatency_and_biosnoop_count_n_direct_writes_as_libbpf_tools() {
    if !require_loop_and_oracle() {
        return;
    }
    let (n, size) = (40u64, 65536u64);
    let disk = LoopDevice::new();
    let name = disk.name();
    // Programs: issue and complete (biolatency); and block_io_start (biosnoop).
    let latency = Tracer::start(scry_tool(&["biolatency", "-d", &name]), 2);
    let per_disk = Tracer::start(scry_tool(&["biolatency", "-D", "--json"]), 2);
    let snoop = Tracer::start(scry_tool(&["biosnoop", "-d", &name, "--json"]), 3);
    let oracle = Tracer::start(peer(&["biolatency", "-d", &name]), 0);
    let mut writes = Command::new(common::workload("dwrites"))
        .arg(&disk.dev)
        .args([n.to_string(), size.to_string()])
        .spawn()
        .expect("dwrites runs");
    let pid = writes.id();
    assert!(writes.wait().expect("dwrites ends").success());
    let ours = |l: &[String]| {
        l.iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["pid"] == pid)
            .collect::<Vec<_>>()
    };
    snoop.wait_until(|l| ours(l).len() >= n as usize);
    let (snooped, _) = snoop.stop();
    let (text, _) = latency.stop();
    let (peer_text, _) = oracle.stop();
    let (json, _) = per_disk.stop();

    // The loop device sees only the test's writes (and, at most, a probe
    // of udev's when it appeared): both count the same requests.
    let (scry_total, peer_total) = (
        hist_total(&text.join("\n")),
        hist_total(&peer_text.join("\n")),
    );
    eprintln!("biolatency on {name}: scry {scry_total}, libbpf-tools {peer_total}");
    assert!(scry_total >= n, "{text:?}");
    assert_eq!(
        scry_total, peer_total,
        "scry:\n{text:?}\nlibbpf-tools:\n{peer_text:?}"
    );
    assert!(
        text.iter()
            .any(|l| l == "     usecs               : count    distribution")
    );

    let writes = ours(&snooped);
    assert_eq!(writes.len(), n as usize, "{snooped:?}");
    for (i, w) in writes.iter().enumerate() {
        assert_eq!(
            (
                w["comm"].as_str(),
                w["disk"].as_str(),
                w["bytes"].as_u64(),
                w["sector"].as_u64()
            ),
            (
                Some("dwrites"),
                Some(name.as_str()),
                Some(size),
                Some(i as u64 * size / 512)
            ),
            "{w}"
        );
        assert!(
            w["rwbs"].as_str().is_some_and(|r| r.starts_with('W')),
            "{w}"
        );
    }

    // -D: the loop device's histogram has them too.
    let doc: serde_json::Value = serde_json::from_str(&json.join("\n")).expect("one JSON document");
    let label = format!("disk = {name}\t");
    let mine = doc
        .as_array()
        .and_then(|a| a.iter().find(|h| h["label"] == label.as_str()))
        .expect("a histogram for the loop device");
    assert!(mine["total"].as_u64().is_some_and(|t| t >= n), "{mine}");
}

#[test]
fn an_unknown_disk_is_one_line_and_exit_2() {
    if !require_root_and("biolatency") {
        return;
    }
    assert_each_bad_input(&[
        (
            &["biolatency", "-d", "scry-no-disk"],
            None,
            "-d scry-no-disk: no such disk",
        ),
        (&["biosnoop", "-d", "scry-no-disk"], None, "no such disk"),
        (&["biolatency", "-D", "-F"], None, "-D and -F together"),
        (&["biosnoop"], Some("kprobe"), "no hook"),
    ]);
}

#[test]
fn sigkill_leaves_no_program_or_link() {
    if !require_root_and("biolatency") {
        return;
    }
    common::tracer::sigkill_frees_everything(&["biolatency", "-Q"], 3);
    common::tracer::sigkill_frees_everything(&["biosnoop"], 3);
}
