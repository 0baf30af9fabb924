//! The file tools on the real kernel (filelife, cachestat): workloads
//! with known answers (`workloads/lifes`: N files created, kept MS ms,
//! deleted; a file of N pages read after its cache is dropped), SIGKILL
//! leaving no program or link. libbpf-tools' filelife and cachestat probe
//! kernel functions (refused here): the workload's own answer is
//! asserted.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common;
use crate::common::tracer::{Tracer, scry_tool, sigkill_frees_everything};

/// Root, or skip (fail under SCRY_KERNEL_TESTS=required).
fn require_root() -> bool {
    let root =
        std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0);
    common::gate(if root {
        Ok(())
    } else {
        Err("BPF tool tests need root (CAP_BPF and CAP_PERFMON)".to_string())
    })
}

#[test]
fn filelife_lists_each_deleted_file_with_its_age() {
    if !require_root() {
        return;
    }
    let dir = common::tempdir();
    let dir_text = dir.path().to_str().expect("utf-8 path").to_string();
    let (n, ms) = (6usize, 300u64);
    let mut lifes = Command::new(common::workload("lifes"))
        .args([&n.to_string(), dir_text.as_str(), &ms.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("lifes starts");
    let mut out = std::io::BufReader::new(lifes.stdout.take().expect("piped"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).expect("ready");
    let pid = lifes.id().to_string();
    let json = Tracer::start(scry_tool(&["filelife", "-p", &pid, "--json"]), 12);
    let text = Tracer::start(scry_tool(&["filelife", "-p", &pid]), 12);
    let mut stdin = lifes.stdin.take().expect("piped");
    stdin.write_all(b"go\n").expect("go");
    drop(stdin);
    assert!(lifes.wait().expect("lifes ends").success());
    let (lines, err) = json.finish();
    let mut files: Vec<String> = Vec::new();
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).expect("JSON");
        assert_eq!(v["comm"], "lifes", "{l}");
        assert!(
            v["age_s"].as_f64().expect("age") >= ms as f64 / 1000.0,
            "{l}"
        );
        files.push(v["file"].as_str().expect("file").to_string());
    }
    files.sort();
    let mut want: Vec<String> = (0..n).map(|i| format!("{dir_text}/life_{i}")).collect();
    want.sort();
    assert_eq!(files, want, "{lines:?}\n{err}");
    let (lines, _) = text.finish();
    assert_eq!(lines[0], "TIME     PID    COMM             AGE(s)  FILE");
    assert_eq!(lines.len(), n + 1, "{lines:?}");
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.contains(&format!(" {pid} ")) && l.contains(" lifes "))
    );
}

#[test]
fn sigkill_leaves_no_program_or_link() {
    if !require_root() {
        return;
    }
    sigkill_frees_everything(&["filelife"], 12);
    sigkill_frees_everything(&["cachestat", "1"], 5);
}

/// A file of N pages, written, synced and dropped from the cache (dd's
/// `iflag=nocache count=0`: posix_fadvise DONTNEED on the whole file),
/// then read twice: its N pages are added to the cache on the first read,
/// so cachestat's misses over the run are at least N (the machine's
/// other I/O only adds to them).
#[test]
fn cachestat_counts_the_pages_a_dropped_file_reads_back_as_misses() {
    if !require_root() {
        return;
    }
    let dir = common::tempdir();
    let path = dir.path().join("pages");
    let pages = 2048usize;
    let mut file = std::fs::File::create(&path).expect("create");
    let chunk: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    for _ in 0..pages {
        file.write_all(&chunk).expect("write");
    }
    file.sync_all().expect("fsync");
    drop(file);
    let tracer = Tracer::start(scry_tool(&["cachestat", "--json", "1"]), 5);
    let dropped = Command::new("dd")
        .arg(format!("if={}", path.display()))
        .args(["iflag=nocache", "count=0", "status=none"])
        .status()
        .expect("dd runs");
    assert!(dropped.success());
    for _ in 0..2 {
        assert_eq!(std::fs::read(&path).expect("read").len(), pages * 4096);
    }
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let (lines, err) = tracer.stop();
    let mut misses = 0;
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).expect("JSON");
        misses += v["misses"].as_u64().expect("misses");
        assert!(v["cached_mb"].as_u64().expect("cached_mb") > 0, "{l}");
    }
    assert!(
        misses >= pages as u64,
        "{misses} < {pages}: {lines:?}\n{err}"
    );
    assert!(err.contains("cachestat: HITS are"), "{err}");
}
