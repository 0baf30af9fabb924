//! The file tools on the real kernel (filelife, cachestat, filetop,
//! fsslower): workloads with known answers (`workloads/lifes`: N files
//! created, kept MS ms, deleted; a file of N pages read after its cache
//! is dropped; `workloads/fileio`: W writes, R reads, W fsyncs of a named
//! file), SIGKILL leaving no program or link, bad input. libbpf-tools'
//! filelife, cachestat, filetop and fsslower probe kernel functions
//! (refused here): the workload's own answer is asserted.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common;
use crate::common::tracer::{Tracer, assert_each_bad_input, scry_tool, sigkill_frees_everything};

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
    sigkill_frees_everything(&["filetop", "1"], 20);
    sigkill_frees_everything(&["fsslower"], 32);
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

/// `fileio FILE W R SIZE [sync]` started, past its "ready" (waiting for
/// its go byte on stdin).
fn fileio(file: &std::path::Path, w: u64, r: u64, size: u64, sync: bool) -> std::process::Child {
    let mut cmd = Command::new(common::workload("fileio"));
    cmd.arg(file)
        .args([w.to_string(), r.to_string(), size.to_string()])
        .args(sync.then_some("sync"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().expect("fileio starts");
    let mut out = std::io::BufReader::new(child.stdout.as_mut().expect("piped"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).expect("ready");
    assert_eq!(line, "ready\n");
    child
}

/// Sends fileio its go byte and waits for its successful end.
fn run_fileio(mut child: std::process::Child) {
    let mut stdin = child.stdin.take().expect("piped");
    stdin.write_all(b"g").expect("go");
    drop(stdin);
    assert!(child.wait().expect("fileio ends").success());
}

/// The JSON rows of filetop's intervals (one array per line).
fn filetop_rows(lines: &[String]) -> Vec<serde_json::Value> {
    lines
        .iter()
        .flat_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON");
            v.as_array().expect("an array per interval").clone()
        })
        .collect()
}

/// (reads, writes, read bytes, write bytes) summed over `rows` of `file`.
fn filetop_sums(rows: &[serde_json::Value], file: &str) -> (u64, u64, u64, u64) {
    let mut sums = (0, 0, 0, 0);
    for row in rows.iter().filter(|r| r["file"] == file) {
        sums.0 += row["reads"].as_u64().expect("reads");
        sums.1 += row["writes"].as_u64().expect("writes");
        sums.2 += row["read_bytes"].as_u64().expect("read_bytes");
        sums.3 += row["write_bytes"].as_u64().expect("write_bytes");
    }
    sums
}

/// libbpf-tools' filetop needs kprobes on vfs_read and vfs_write (refused
/// here): the workload's own answer is asserted. W writes and R reads of
/// SIZE bytes on a named file: filetop (JSON, the table through a symlink
/// named filetop, and -a) shows that file with exactly those calls and
/// bytes, for the workload's thread, and nothing else of it but, with
/// -a, its stdout pipe.
#[test]
fn filetop_counts_the_calls_and_bytes_of_a_named_file() {
    if !require_root() {
        return;
    }
    let dir = common::tempdir();
    let file = dir.path().join("filetop_data");
    let (w, r, size) = (8u64, 5u64, 4096u64);
    let child = fileio(&file, w, r, size, false);
    let pid = child.id().to_string();
    let link = dir.path().join("filetop");
    std::os::unix::fs::symlink(std::path::Path::new(env!("CARGO_BIN_EXE_scry")), &link)
        .expect("symlink");
    let json = Tracer::start(scry_tool(&["filetop", "-p", &pid, "--json", "1"]), 20);
    let mut linked = Command::new(&link);
    linked.args(["-C", "-p", &pid, "1"]);
    let text = Tracer::start(linked, 20);
    let all = Tracer::start(scry_tool(&["filetop", "-a", "-p", &pid, "--json", "1"]), 20);
    run_fileio(child);
    let (lines, err) = json.finish();
    let rows = filetop_rows(&lines);
    assert_eq!(
        filetop_sums(&rows, "filetop_data"),
        (r, w, r * size, w * size),
        "{lines:?}\n{err}"
    );
    for row in &rows {
        assert_eq!(row["file"], "filetop_data", "{row}");
        assert_eq!(
            row["tid"].as_u64(),
            Some(u64::from(child_pid(&pid))),
            "{row}"
        );
        assert_eq!(
            (&row["comm"], &row["type"]),
            (&"fileio".into(), &"R".into())
        );
    }
    let (lines, _) = all.finish();
    let rows = filetop_rows(&lines);
    assert_eq!(
        filetop_sums(&rows, "filetop_data"),
        (r, w, r * size, w * size)
    );
    assert!(
        rows.iter()
            .any(|row| row["type"] == "O" && row["writes"] == 1 && row["write_bytes"] == 5),
        "-a shows the stdout pipe's write: {rows:?}"
    );
    let (lines, err) = text.finish();
    assert!(
        lines
            .iter()
            .any(|l| l == "TID     COMM             READS  WRITES R_Kb    W_Kb    T FILE"),
        "{lines:?}\n{err}"
    );
    let mut sums = [0u64; 4];
    for l in lines.iter().filter(|l| l.ends_with(" R filetop_data")) {
        let cols: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(cols[..2], [pid.as_str(), "fileio"], "{l}");
        for (sum, col) in sums.iter_mut().zip(&cols[2..6]) {
            *sum += col.parse::<u64>().expect("a count");
        }
    }
    assert_eq!(sums, [r, w, r * size / 1024, w * size / 1024], "{lines:?}");
}

/// bcc's `filetop --read-only` and `--write-only`: the fileio workload's
/// W writes and R reads of SIZE bytes on one file; each counts its own
/// direction's calls and bytes exactly, the other's none.
#[test]
fn filetop_read_only_and_write_only_count_one_direction() {
    if !require_root() {
        return;
    }
    let dir = common::tempdir();
    let file = dir.path().join("filetop_data");
    let (w, r, size) = (9u64, 6u64, 4096u64);
    let child = fileio(&file, w, r, size, false);
    let pid = child.id().to_string();
    let reads = Tracer::start(
        scry_tool(&["filetop", "--read-only", "-p", &pid, "--json", "1"]),
        20,
    );
    let writes = Tracer::start(
        scry_tool(&["filetop", "--write-only", "-p", &pid, "--json", "1"]),
        20,
    );
    run_fileio(child);
    let (lines, err) = reads.finish();
    let sums = filetop_sums(&filetop_rows(&lines), "filetop_data");
    assert_eq!(sums, (r, 0, r * size, 0), "{lines:?}\n{err}");
    let (lines, err) = writes.finish();
    let sums = filetop_sums(&filetop_rows(&lines), "filetop_data");
    assert_eq!(sums, (0, w, 0, w * size), "{lines:?}\n{err}");
}

/// bcc's `filetop -d DIR`: three fileio runs at once, one on a file
/// directly in DIR (4 writes, 2 reads of 4096 bytes), one in a
/// subdirectory of DIR, one in a sibling directory: -d DIR shows the first
/// file's calls and bytes exactly and nothing of the others (bcc keeps
/// the files whose parent is DIR). libbpf-tools' filetop has no -d (and
/// needs kprobes here).
#[test]
fn filetop_d_keeps_the_files_directly_in_one_directory() {
    if !require_root() {
        return;
    }
    let root = common::tempdir();
    let (watched, other) = (root.path().join("watched"), root.path().join("other"));
    std::fs::create_dir_all(watched.join("sub")).expect("mkdir");
    std::fs::create_dir(&other).expect("mkdir");
    let size = 4096u64;
    let children = [
        fileio(&watched.join("in_dir"), 4, 2, size, false),
        fileio(&watched.join("sub").join("nested"), 5, 3, size, false),
        fileio(&other.join("beside"), 6, 1, size, false),
    ];
    let dir = watched.to_str().expect("utf-8 path");
    let tracer = Tracer::start(scry_tool(&["filetop", "-d", dir, "--json", "1"]), 20);
    children.into_iter().for_each(run_fileio);
    let (lines, err) = tracer.stop();
    let rows = filetop_rows(&lines);
    assert_eq!(
        filetop_sums(&rows, "in_dir"),
        (2, 4, 2 * size, 4 * size),
        "{lines:?}\n{err}"
    );
    assert!(rows.iter().all(|r| r["file"] == "in_dir"), "{rows:?}");
    let text = common::output(&mut scry_tool(&["filetop", "-d", dir, "1", "1"]));
    let first = String::from_utf8_lossy(&text.stdout)
        .lines()
        .next()
        .map(str::to_string);
    let wanted = format!("Tracing directory: {dir} (Inode: ");
    assert!(first.is_some_and(|l| l.starts_with(&wanted)), "{text:?}");
    assert_each_bad_input(&[
        (
            &["filetop", "-d", "/nonexistent-dir"][..],
            None,
            "-d /nonexistent-dir",
        ),
        (
            &["filetop", "-d", "/etc/passwd"][..],
            None,
            "not a directory",
        ),
    ]);
}

fn child_pid(pid: &str) -> u32 {
    pid.parse().expect("a pid")
}

/// An fsslower JSON event's (op, bytes, offset).
fn fs_op(v: &serde_json::Value) -> (String, i64, i64) {
    (
        v["op"].as_str().expect("op").to_string(),
        v["bytes"].as_i64().expect("bytes"),
        v["offset"].as_i64().expect("offset"),
    )
}

/// libbpf-tools' fsslower needs a file system's functions by fentry or
/// kprobe (refused here): the workload's own answer is asserted. One
/// open, W writes each followed by an fsync, R reads of a named file:
/// `fsslower 0` lists each, in order, with its bytes and offset; a 1 ms
/// threshold keeps every operation the unfiltered run measured well over
/// it and drops every one well under it.
#[test]
fn fsslower_lists_each_operation_and_a_threshold_filters() {
    if !require_root() {
        return;
    }
    let dir = common::tempdir();
    let file = dir.path().join("fsslower_data");
    let (w, r, size) = (6u64, 3u64, 4096i64);
    let child = fileio(&file, w, r, size as u64, true);
    let pid = child.id().to_string();
    let every = Tracer::start(scry_tool(&["fsslower", "-p", &pid, "--json", "0"]), 32);
    let slow = Tracer::start(
        scry_tool(&["fsslower", "-p", &pid, "--json", "-m", "1"]),
        32,
    );
    let text = Tracer::start(scry_tool(&["fsslower", "-p", &pid, "0"]), 32);
    run_fileio(child);
    let (lines, err) = every.finish();
    let events: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let mut want = vec![("O".to_string(), 0, 0)];
    for i in 0..w as i64 {
        want.push(("W".into(), size, i * size));
        want.push(("F".into(), 0, (i + 1) * size));
    }
    for i in 0..r as i64 {
        want.push(("R".into(), size, i * size));
    }
    let got: Vec<(String, i64, i64)> = events.iter().map(fs_op).collect();
    assert_eq!(got, want, "{lines:?}\n{err}");
    assert!(
        events
            .iter()
            .all(|e| e["file"] == "fsslower_data" && e["comm"] == "fileio"),
        "{lines:?}"
    );
    assert_eq!(err.lines().count(), 1, "the blind spots, said once: {err}");
    let (slow_lines, _) = slow.finish();
    let slow: Vec<serde_json::Value> = slow_lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    for e in &slow {
        assert!(e["latency_us"].as_u64().expect("latency") > 1000, "{e}");
        assert!(got.contains(&fs_op(e)), "{e} not in {got:?}");
    }
    let slow_ops: Vec<(String, i64, i64)> = slow.iter().map(fs_op).collect();
    for e in &events {
        let latency = e["latency_us"].as_u64().expect("latency");
        if latency > 2000 {
            assert!(slow_ops.contains(&fs_op(e)), "{e} missing over 1 ms");
        } else if latency < 500 {
            assert!(!slow_ops.contains(&fs_op(e)), "{e} kept under 1 ms");
        }
    }
    let (lines, _) = text.finish();
    assert_eq!(lines[0], "Tracing file system operations");
    assert_eq!(
        lines[1],
        "TIME     COMM             PID     T BYTES   OFF_KB   LAT(ms) FILENAME"
    );
    let named = lines.iter().filter(|l| l.ends_with(" fsslower_data"));
    assert_eq!(named.count(), want.len(), "{lines:?}");
}

#[test]
fn file_tools_bad_input_is_one_line_and_exit_2() {
    if !require_root() {
        return;
    }
    crate::common::tracer::assert_each_bad_input(&[
        (&["filetop", "-p", "4194304"], None, "no such process"),
        (&["fsslower", "-p", "4194304"], None, "no such process"),
        (
            &["fsslower", "-t", "a/b"],
            None,
            "-t a/b: a file system type",
        ),
        // A kernel without the hooks: none of the kinds the programs come in.
        (&["filetop"], Some("kprobe"), "filetop"),
        (&["fsslower"], Some("kprobe"), "fsslower"),
    ]);
}

#[test]
fn tools_lists_filetop_and_fsslower() {
    let list = common::run_ok(common::scry().arg("tools"));
    for tool in ["filetop ", "fsslower "] {
        assert!(list.lines().any(|l| l.starts_with(tool)), "{list}");
    }
}
