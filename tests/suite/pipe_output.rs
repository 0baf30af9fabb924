//! `scry record -o -` writes perf's pipe format to standard output, which
//! `perf report -i -`, `perf script -i -` and scry's own readers take from a
//! shell pipe (issue 10): it used to write a file named `-`.

use crate::common;

use std::process::{Command, Stdio};

/// Runs `scry record ARGS -o - -- WORKLOAD` into `reader`'s standard input;
/// returns the reader's stdout and scry record's stderr.
fn piped(record_args: &[&str], workload: &[&str], reader: &mut Command) -> (String, String) {
    let dir = common::tempdir();
    let mut record = common::scry()
        .current_dir(dir.path())
        .arg("record")
        .args(record_args)
        .args(["-o", "-", "--"])
        .args(workload)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start scry record");
    let stream = record.stdout.take().unwrap();
    let out = reader
        .stdin(stream)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {reader:?}: {e}"));
    let rec = record.wait_with_output().unwrap();
    let rec_err = String::from_utf8_lossy(&rec.stderr).into_owned();
    assert!(rec.status.success(), "scry record: {rec_err}");
    assert!(
        !dir.path().join("-").exists(),
        "scry record -o - wrote a file named -"
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{reader:?}: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    (text, rec_err)
}

/// The samples of `perf script` / `scry script` text: the lines that are not
/// call-chain frames (those start with a tab). Not report's `# Samples:` line,
/// which abbreviates from 1000 on (`1K`), as perf's does.
fn script_samples(text: &str) -> u64 {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('\t'))
        .count() as u64
}

/// The samples scry record says it wrote are the ones perf script and scry
/// script read from the stream.
#[test]
fn record_to_stdout_is_read_by_perf_and_scry() {
    if !common::require_perf() || !common::require_perf_events() {
        return;
    }
    let calls = common::workload("calls");
    let calls = calls.to_str().unwrap();
    let said = |err: &str| -> u64 {
        err.lines()
            .find_map(|l| l.strip_prefix("[ scry record: "))
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no summary in {err}"))
    };
    let (perf_text, err) = piped(
        &["-F", "999", "-g"],
        &[calls, "300000"],
        common::perf().args(["script", "-i", "-"]),
    );
    assert!(said(&err) > 0, "{err}");
    assert_eq!(script_samples(&perf_text), said(&err), "{perf_text}");
    assert!(perf_text.contains("calls"), "{perf_text}");
    let (scry_text, err) = piped(
        &["-F", "999", "-g"],
        &[calls, "300000"],
        common::scry().args(["script", "-i", "-"]),
    );
    assert_eq!(script_samples(&scry_text), said(&err), "{scry_text}");
}

/// Tracepoints through the pipe: the formats travel in the stream, so both
/// scripts print the fields.
#[test]
fn tracepoints_through_the_pipe() {
    if !common::require_perf() || !common::require_perf_events() || !common::require_tracefs() {
        return;
    }
    let calls = common::workload("calls");
    let args = ["-e", "raw_syscalls:sys_enter"];
    let workload = [calls.to_str().unwrap(), "1000"];
    for reader in [common::perf(), common::scry()] {
        let mut reader = reader;
        let (text, _) = piped(&args, &workload, reader.args(["script", "-i", "-"]));
        assert!(
            text.lines().filter(|l| l.contains("NR 110")).count() >= 1000,
            "{reader:?}:\n{}",
            text.lines().take(5).collect::<Vec<_>>().join("\n")
        );
    }
}
