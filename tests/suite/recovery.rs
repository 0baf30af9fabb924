//! Nothing recorded is lost, whatever happened to the recorder or to one
//! record (issue 10): recordings killed mid-run (by perf and by scry), a
//! malformed record in the middle, samples with read values (hotspot's
//! `perf.data.PerfFormatLost` is one: perf's `{a,b}:S` groups make the same
//! kind), a pipe stream with perf's own messages after its records, the
//! COMPRESSED2 records of newer perf, and inputs that are not perf.data at
//! all, each said as what it is.
//!
//! The oracle for a recovered file is a check of its records made here,
//! independently of scry's reader: the 8-byte record headers walked from
//! the data offset to the first that does not fit.

use crate::common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// PERF_RECORD_SAMPLEs among the whole records from `start` on (a file's
/// data offset, 16 for a stream): the independent check.
fn samples_in(bytes: &[u8], start: usize) -> usize {
    let (mut at, mut n) = (start, 0);
    while at + 8 <= bytes.len() {
        let size = u16::from_le_bytes([bytes[at + 6], bytes[at + 7]]) as usize;
        if size < 8 || at + size > bytes.len() {
            break;
        }
        n += usize::from(bytes[at..at + 4] == 9u32.to_le_bytes());
        at += size;
    }
    n
}

/// Sample lines of `scry script -i file` and its stderr.
fn script(file: &Path) -> (usize, String) {
    let out = common::output(common::scry().args(["script", "-i"]).arg(file));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "scry script {file:?}: {err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let n = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(['\t', ' ']))
        .count();
    (n, err)
}

/// `scry report`'s sample count over all events, from its JSON (the text
/// header abbreviates as perf's does: `# Samples: 1K of event ...`).
fn report_samples(file: &Path) -> u64 {
    let text = common::run_ok(
        common::scry()
            .args(["report", "--format", "json", "-i"])
            .arg(file),
    );
    let report: serde_json::Value = serde_json::from_str(&text).expect("report JSON parses");
    report["events"]
        .as_array()
        .map(|events| events.iter().filter_map(|e| e["samples"].as_u64()).sum())
        .unwrap_or(0)
}

/// Starts `cmd` in a process group of its own, lets it run `secs`, and
/// SIGKILLs the whole group (recorder and workload).
fn kill_after(cmd: &mut Command, secs: f64) {
    let mut child = cmd
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the recorder");
    std::thread::sleep(Duration::from_secs_f64(secs));
    common::signal(child.id(), "KILL");
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
}

fn spinner_cmd(recorder: &mut Command, file: &Path) {
    recorder
        .args(["record", "-F", "999", "-g", "-o"])
        .arg(file)
        .arg("--")
        .arg(common::workload("spinner"));
}

/// perf killed mid-recording: its header still says 0 bytes of data and
/// its feature bits point into the records. scry used to refuse the file
/// ("feature table section ... runs past the end of the file").
#[test]
fn perf_killed_mid_recording_is_read() {
    if !common::require_perf() || !common::require_perf_events() {
        return;
    }
    let dir = common::tempdir();
    let file = dir.path().join("perf.data");
    // A small ring (-m 4) so that perf writes as it goes.
    let mut perf = common::perf();
    perf.args(["record", "-q", "-m", "4", "-F", "999", "-g", "-o"])
        .arg(&file)
        .arg("--")
        .arg(common::workload("spinner"));
    kill_after(&mut perf, 2.5);
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(u64_at(&bytes, 48), 0, "perf's header says no data yet");
    let expected = samples_in(&bytes, u64_at(&bytes, 40) as usize);
    // How many the spinner earned depends on the CPU it got (96 in 2.5 s
    // beside five builds): some must have reached the file.
    assert!(expected > 0, "perf wrote no sample in 2.5 s");
    let (n, err) = script(&file);
    assert_eq!(n, expected, "{err}");
    assert!(
        err.contains("the header was written before the recording ended")
            && err.contains("recovered "),
        "{err}"
    );
    assert_eq!(report_samples(&file), expected as u64);
}

/// scry killed mid-recording: every sample written to the file is read.
/// It used to leave 368 bytes (nothing written for 15 s) or a header that
/// said 104 bytes of data on a 12 MB file.
#[test]
fn scry_killed_mid_recording_is_read() {
    if !common::require_perf_events() {
        return;
    }
    let dir = common::tempdir();
    let file = dir.path().join("scry.data");
    let mut scry = common::scry();
    spinner_cmd(&mut scry, &file);
    kill_after(&mut scry, 3.0);
    let bytes = std::fs::read(&file).unwrap();
    let expected = samples_in(&bytes, u64_at(&bytes, 40) as usize);
    // How many the spinner earned depends on the CPU it got; before the
    // fix none reached the file (the ring woke the writer at a quarter
    // full, 4 MiB, and the buffer held 4 MiB more).
    assert!(
        expected > 0,
        "only {expected} samples reached the file in 3 s ({} bytes)",
        bytes.len()
    );
    let (n, err) = script(&file);
    assert_eq!(n, expected, "{err}");
    assert_eq!(report_samples(&file), expected as u64);
}

/// Samples with read values (group sampling: `{cpu-clock,task-clock}:S`,
/// read_format ID|GROUP|LOST, as in hotspot's PerfFormatLost file) were all
/// "malformed" and the file read as nothing.
#[test]
fn group_samples_with_read_values_are_read() {
    if !common::require_perf() || !common::require_perf_events() {
        return;
    }
    let dir = common::tempdir();
    let file = dir.path().join("group.data");
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-e", "{cpu-clock,task-clock}:S", "-g", "-o"])
            .arg(&file)
            .arg("--")
            .arg(common::workload("calls"))
            .arg("300000"),
    );
    let header = common::run_ok(
        common::perf()
            .args(["report", "--header-only", "-i"])
            .arg(&file),
    );
    assert!(header.contains("GROUP"), "not a group file:\n{header}");
    let perf_script = common::run_ok(common::perf().args(["script", "-F", "ip", "-i"]).arg(&file));
    let bytes = std::fs::read(&file).unwrap();
    let expected = samples_in(&bytes, u64_at(&bytes, 40) as usize);
    assert!(expected > 10);
    let (n, err) = script(&file);
    assert_eq!(n, expected, "{err}");
    assert!(err.is_empty(), "{err}");
    assert!(perf_script.lines().count() >= expected);
}

/// One malformed record (a callchain whose count runs past the record) in
/// the middle: everything else is read, and one line says where and how
/// much was skipped.
#[test]
fn one_bad_record_loses_only_itself() {
    if !common::require_perf() || !common::require_perf_events() {
        return;
    }
    let dir = common::tempdir();
    let file = common::perf_record_g(dir.path(), "g", &common::workload("calls"), &["400000"]);
    let mut bytes = std::fs::read(&file).unwrap();
    let data = u64_at(&bytes, 40) as usize;
    let expected = samples_in(&bytes, data);
    // The middle sample: IP|TID|TIME|CALLCHAIN|PERIOD (perf's -g default
    // with -F): the callchain count follows ip, tid, time, period.
    let (mut at, mut seen, mut target) = (data, 0, None);
    while at + 8 <= data + u64_at(&bytes, 48) as usize {
        let size = u16::from_le_bytes([bytes[at + 6], bytes[at + 7]]) as usize;
        if bytes[at..at + 4] == 9u32.to_le_bytes() {
            seen += 1;
            if seen == expected / 2 {
                target = Some(at);
                break;
            }
        }
        at += size;
    }
    let at = target.expect("a sample in the middle");
    let nr_at = at + 8 + 8 * 4;
    bytes[nr_at..nr_at + 8].copy_from_slice(&1_000_000u64.to_le_bytes());
    let bad = dir.path().join("bad.data");
    std::fs::write(&bad, &bytes).unwrap();
    let (n, err) = script(&bad);
    assert_eq!(n, expected - 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "skipped 1 malformed record ({} bytes), the first at offset {at:#x}: PERF_RECORD_SAMPLE",
            u16::from_le_bytes([bytes[at + 6], bytes[at + 7]])
        )),
        "{err}"
    );
}

/// A pipe-format stream (`perf record -o -`) with perf's own messages
/// after its records, as `2>&1` leaves them (linux-perf-data's
/// sleep.compressed2.pipe.data is one): the records are read, from a file
/// and from standard input, and the rest is said to be skipped. The same
/// stream with its COMPRESSED records rewritten as COMPRESSED2 (newer
/// perf's, with their data size) reads the same.
#[test]
fn pipe_streams_with_trailing_text_and_compressed2() {
    if !common::require_perf() || !common::require_perf_events() {
        return;
    }
    let dir = common::tempdir();
    let out = common::output(
        common::perf()
            .args(["record", "-q", "-z", "-F", "999", "-g", "-o", "-", "--"])
            .arg(common::workload("calls"))
            .arg("300000"),
    );
    assert!(out.status.success());
    let plain = dir.path().join("z.pipe");
    std::fs::write(&plain, &out.stdout).unwrap();
    let (expected, err) = script(&plain);
    assert!(expected > 10 && err.is_empty(), "{expected}: {err}");

    let mut with_text = out.stdout.clone();
    with_text.extend(b"[ perf record: Woken up 1 times to write data ]\n");
    let text_file = dir.path().join("text.pipe");
    std::fs::write(&text_file, &with_text).unwrap();
    let (n, err) = script(&text_file);
    assert_eq!(n, expected, "{err}");
    assert!(
        err.contains(&format!(
            "skipped 48 bytes that are not whole records (1 stretch), the first at offset {:#x}",
            out.stdout.len()
        )),
        "{err}"
    );
    let piped = common::output(
        common::scry()
            .args(["script", "-i", "-"])
            .stdin(std::fs::File::open(&text_file).unwrap()),
    );
    assert!(piped.status.success());

    // COMPRESSED (81): header, zstd data. COMPRESSED2 (83): header, u64
    // data size, zstd data, padded to 8 bytes.
    let mut v2 = out.stdout[..16].to_vec();
    let (mut at, mut converted) = (16, 0);
    let s = &out.stdout;
    while at + 8 <= s.len() {
        let size = u16::from_le_bytes([s[at + 6], s[at + 7]]) as usize;
        if s[at..at + 4] == 81u32.to_le_bytes() {
            let data = &s[at + 8..at + size];
            let new_size = (16 + data.len()).next_multiple_of(8);
            v2.extend(83u32.to_le_bytes());
            v2.extend(0u16.to_le_bytes());
            v2.extend(u16::try_from(new_size).unwrap().to_le_bytes());
            v2.extend((data.len() as u64).to_le_bytes());
            v2.extend(data);
            v2.resize(v2.len() + new_size - 16 - data.len(), 0);
            converted += 1;
        } else {
            v2.extend(&s[at..at + size]);
        }
        at += size;
    }
    assert!(converted > 0, "perf -z -o - wrote no COMPRESSED record");
    let v2_file = dir.path().join("v2.pipe");
    std::fs::write(&v2_file, &v2).unwrap();
    let (n, err) = script(&v2_file);
    assert_eq!(n, expected, "{err}");
    assert!(err.is_empty(), "{err}");
}

/// Inputs that are not perf.data files are said as what they are, at once:
/// a gzip file, a character device, standard input of zeros (bad magic
/// after 8 bytes, not after reading gigabytes), a FIFO with no writer.
#[test]
fn inputs_are_named_for_what_they_are() {
    let dir = common::tempdir();
    let gz = dir.path().join("perf.data.gz");
    std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3]).unwrap();
    let out = common::output(common::scry().args(["script", "-i"]).arg(&gz));
    common::assert_bad_input(&out, "gzip-compressed: decompress it first (gunzip)", &gz);
    let out = common::output(common::scry().args(["report", "--stdio", "-i", "/dev/zero"]));
    common::assert_bad_input(
        &out,
        "/dev/zero: a character device, not a perf.data file",
        &"/dev/zero",
    );
    let out = common::output(
        common::scry()
            .args(["script", "-i", "-"])
            .stdin(std::fs::File::open("/dev/zero").unwrap()),
    );
    common::assert_bad_input(
        &out,
        "<stdin>: not a perf.data file (bad magic 0x0000000000000000)",
        &"stdin",
    );

    let fifo: PathBuf = dir.path().join("fifo");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let mut child = common::scry()
        .args(["script", "-i"])
        .arg(&fifo)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut said = String::new();
    use std::io::{BufRead, Read};
    std::io::BufReader::new(&mut stderr)
        .read_line(&mut said)
        .unwrap();
    assert!(said.contains("waiting for a writer on this FIFO"), "{said}");
    // A writer of something else: scry reads it and says what it is. The
    // writer stays open until scry is done, so scry's open cannot miss it.
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    use std::io::Write;
    writer.write_all(b"#!/bin/sh\necho hi\n").unwrap();
    let status = common::wait_timeout(&mut child, Duration::from_secs(10));
    drop(writer);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{rest}");
    assert!(rest.contains("bad magic 0x2321"), "{rest}");
}

/// "# Total Lost Samples: N" of `report --stdio` (perf's or scry's).
fn total_lost(cmd: &mut Command) -> u64 {
    let text = common::run_ok(cmd);
    text.lines()
        .find_map(|l| l.strip_prefix("# Total Lost Samples: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Total Lost Samples line in:\n{text}"))
}

/// Lost events counted as perf counts them, for perf's files (scry added
/// PERF_RECORD_LOST and LOST_SAMPLES: twice the loss) and for scry's (which
/// now carry LOST_SAMPLES: perf said 0). A one-page ring and a storm of
/// system calls lose events on any machine.
#[test]
fn lost_events_are_counted_as_perf_counts_them() {
    if !common::require_perf() || !common::require_perf_events() || !common::require_tracefs() {
        return;
    }
    let dir = common::tempdir();
    let storm = common::workload("storm");
    for (name, recorder) in [("perf", common::perf()), ("scry", common::scry())] {
        let file = dir.path().join(format!("{name}.data"));
        let mut recorder = recorder;
        common::run_ok(
            recorder
                .args(["record", "-m", "1", "-e", "raw_syscalls:*", "-o"])
                .arg(&file)
                .arg("--")
                .arg(&storm)
                .args(["300000", "0"]),
        );
        let report =
            |cmd: &mut Command| total_lost(cmd.args(["report", "--stdio", "-i"]).arg(&file));
        let by_perf = report(&mut common::perf());
        let by_scry = report(&mut common::scry());
        assert!(
            by_perf > 0,
            "{name}'s recording lost nothing: the test proves nothing"
        );
        assert_eq!(by_scry, by_perf, "{name}'s recording");
    }
}
