//! The file tools on the real kernel (filelife): workloads with known
//! answers (`workloads/lifes`: N files created, kept MS ms, deleted),
//! SIGKILL leaving no program or link. libbpf-tools' filelife probes
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
}
