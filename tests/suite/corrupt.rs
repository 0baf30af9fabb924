//! Bad perf.data files: empty, wrong magic, truncated at many offsets, and
//! hundreds of deterministic byte mutations of real `perf record` files.
//! `scry script` must answer each with exit 2 and exactly one stderr line
//! starting `scry: ` (or exit 0 when the damage happens to be harmless):
//! never a panic (exit 101), an abort (a signal) or a hang.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use scry::data::reader::{PerfReader, Record};

/// A small pseudo-random sequence (64-bit LCG, Knuth's constants): the
/// mutations are the same on every run and every machine.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 17
    }
}

/// Records `calls` with perf; None (skipped) without perf or perf events.
fn recorded(dir: &Path, name: &str, extra: &[&str]) -> Option<PathBuf> {
    if !common::require_perf() || !common::require_perf_events() {
        return None;
    }
    let file = dir.join(name);
    let calls = common::workload("calls");
    let out = common::output(
        common::perf()
            .args(["record", "-g", "-F", "2000"])
            .args(extra)
            .arg("-o")
            .arg(&file)
            .arg("--")
            .arg(&calls)
            .arg("400000"),
    );
    assert!(
        out.status.success(),
        "perf record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(file)
}

/// How one run ended, if it broke the rules, with how long it took. A
/// mutant of the `calls` recordings takes at most 0.5 s in a debug build
/// with both CPUs busy (a CPU hog beside 4 workers, 360 mutants): 30 s is a
/// hang, not a slow machine.
fn check_run(file: &Path, what: &str) -> Option<String> {
    let start = std::time::Instant::now();
    let mut child = common::scry()
        .args(["script", "-i"])
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start scry");
    let status = common::wait_timeout(&mut child, Duration::from_secs(30));
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        return Some(format!("{what}: hung (killed after 30 s)"));
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use std::io::Read;
        let _ = pipe.read_to_string(&mut stderr);
    }
    let took = start.elapsed().as_secs_f64();
    match status.code() {
        Some(0) if stderr.lines().all(|l| l.starts_with("scry: ")) => None,
        Some(2) if stderr.lines().count() == 1 && stderr.starts_with("scry: ") => None,
        code => Some(format!(
            "{what}: exit {code:?} after {took:.2} s, stderr: {stderr:?}"
        )),
    }
}

/// Keeps a mutant that broke the rules where the test's temporary
/// directory does not remove it: each run mutates a fresh recording, so a
/// failure is reproduced from the file, not from the seed. Returns where.
fn keep_failure(bytes: &[u8], n: usize) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("corrupt-failures");
    let file = dir.join(format!("mutant-{}-{n}.data", std::process::id()));
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, bytes)) {
        Ok(()) => format!("kept as {}", file.display()),
        Err(e) => format!("not kept: {e}"),
    }
}

/// Runs every case, a few at a time (each in its own file), and returns the
/// rule breaks.
fn run_all(cases: Vec<(String, Vec<u8>)>, dir: &Path) -> Vec<String> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let cases = std::sync::Mutex::new(cases.into_iter());
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for w in 0..workers {
            let (cases, failures) = (&cases, &failures);
            let path = dir.join(format!("case{w}.data"));
            scope.spawn(move || {
                loop {
                    let next = cases.lock().unwrap().next();
                    let Some((what, bytes)) = next else { break };
                    std::fs::write(&path, &bytes).unwrap();
                    if let Some(f) = check_run(&path, &what) {
                        let mut failures = failures.lock().unwrap();
                        let kept = keep_failure(&bytes, failures.len());
                        failures.push(format!("{f} ({kept})"));
                    }
                }
            });
        }
    });
    failures.into_inner().unwrap()
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Offsets where the file changes from one part to the next.
fn boundaries(b: &[u8]) -> Vec<usize> {
    let mut v = vec![8, 16, 104];
    let (data_off, data_size) = (u64_at(b, 40) as usize, u64_at(b, 48) as usize);
    v.extend([data_off, data_off + 8, data_off + data_size]);
    let nfeat: u32 = (0..4).map(|i| u64_at(b, 72 + 8 * i).count_ones()).sum();
    let table = data_off + data_size;
    for i in 0..nfeat as usize {
        let off = u64_at(b, table + 16 * i) as usize;
        let size = u64_at(b, table + 16 * i + 8) as usize;
        v.extend([table + 16 * i, off, off + size]);
    }
    v.into_iter()
        .flat_map(|x| [x.saturating_sub(1), x, x + 1])
        .filter(|&x| x < b.len())
        .collect()
}

fn one_line_error(file: &Path) -> String {
    let out = common::output(common::scry().args(["script", "-i"]).arg(file));
    assert_eq!(out.status.code(), Some(2), "{file:?}");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("scry: "), "{err}");
    err
}

#[test]
fn empty_and_foreign_files() {
    let dir = common::tempdir();
    let f = dir.path().join("perf.data");
    std::fs::write(&f, b"").unwrap();
    assert!(one_line_error(&f).contains("empty file"));
    std::fs::write(&f, b"#!/bin/sh\necho not perf data\n").unwrap();
    let err = one_line_error(&f);
    assert!(
        err.contains("not a perf.data file (bad magic 0x2321"),
        "{err}"
    );
    std::fs::write(&f, b"PERF").unwrap();
    assert!(one_line_error(&f).contains("truncated header"));
    let mut header = b"PERFILE2".to_vec();
    header.extend(104u64.to_le_bytes());
    std::fs::write(&f, &header).unwrap();
    assert!(one_line_error(&f).contains("truncated header"));
}

#[test]
fn truncated_files() {
    let dir = common::tempdir();
    let Some(file) = recorded(dir.path(), "t.data", &[]) else {
        return;
    };
    let bytes = std::fs::read(&file).unwrap();
    let mut cuts: Vec<usize> = (0..64).map(|i| bytes.len() * i / 64).collect();
    cuts.extend(boundaries(&bytes));
    cuts.sort();
    cuts.dedup();
    let cases = cuts
        .iter()
        .map(|&n| (format!("truncated to {n} bytes"), bytes[..n].to_vec()))
        .collect();
    let failures = run_all(cases, dir.path());
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // A cut inside the data section (perf killed before it wrote its
    // features): the whole records before the cut are read, and one line
    // says what was recovered.
    let data_end = (u64_at(&bytes, 40) + u64_at(&bytes, 48)) as usize;
    let mut cut = bytes[..data_end].to_vec();
    cut.truncate(data_end - 3);
    let f = dir.path().join("cut.data");
    std::fs::write(&f, &cut).unwrap();
    let out = common::output(common::scry().args(["script", "-i"]).arg(&f));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("the header was written before the recording ended")
            && err.contains("the last ")
            && err.lines().count() == 1,
        "{err}"
    );
    assert!(count_samples(&f) + 1 >= count_samples(&file));
}

fn mutations(bytes: &[u8], seed: u64, n: usize) -> Vec<(String, Vec<u8>)> {
    let mut rng = Lcg(seed);
    (0..n)
        .map(|i| {
            let mut b = bytes.to_vec();
            // Half the mutations flip one byte anywhere; the others hit the
            // header and the start of the data, where the lengths live.
            let span = if i % 2 == 0 {
                b.len()
            } else {
                b.len().min(1024)
            };
            let at = (rng.next() % span as u64) as usize;
            let flip = (rng.next() % 255 + 1) as u8;
            b[at] ^= flip;
            (format!("mutation {i}: byte {at:#x} ^= {flip:#04x}"), b)
        })
        .collect()
}

#[test]
fn mutated_files() {
    let dir = common::tempdir();
    let Some(file) = recorded(dir.path(), "m.data", &[]) else {
        return;
    };
    let bytes = std::fs::read(&file).unwrap();
    let failures = run_all(mutations(&bytes, 0x5c47, 160), dir.path());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn mutated_compressed_files() {
    let dir = common::tempdir();
    let Some(file) = recorded(dir.path(), "z.data", &["-z"]) else {
        return;
    };
    let bytes = std::fs::read(&file).unwrap();
    let failures = run_all(mutations(&bytes, 0x2a, 60), dir.path());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What made `mutated_compressed_files` fail about once in 120 runs (each
/// run's recording, and so its mutants, differs): a COMPRESSED record's
/// size grown onto the next records. The framing pass found the damage
/// further on and said so in a line ("the records from offset ... on are
/// not read"), then the crate failed to decompress the grown record and
/// that was an error: exit 2 with two lines. Built here from the file's
/// structure: the first COMPRESSED record's zstd magic broken (the crate's
/// decompression fails), then also the last record's size zeroed (the
/// framing's line first). A record the crate cannot read now ends the
/// records with one line, exit 0, whatever was said before.
#[test]
fn compressed_data_that_does_not_decompress_ends_the_records() {
    let dir = common::tempdir();
    let Some(file) = recorded(dir.path(), "zd.data", &["-z"]) else {
        return;
    };
    let (mut compressed, mut last) = (None, 0);
    PerfReader::open(&file)
        .unwrap()
        .walk_file_order(|frame, _, _| {
            if matches!(frame.record_type, 81 | 83) && compressed.is_none() {
                compressed = Some(frame);
            }
            last = frame.offset as usize;
            Ok(())
        })
        .unwrap();
    let compressed = compressed.expect("perf record -z wrote a COMPRESSED record");
    let magic_at = compressed.offset as usize + if compressed.record_type == 83 { 16 } else { 8 };
    let mut bytes = std::fs::read(&file).unwrap();
    assert_eq!(bytes[magic_at..magic_at + 4], [0x28, 0xb5, 0x2f, 0xfd]);
    bytes[magic_at] ^= 0xff;
    let zstd_line = "the records from record #0 in time order on are not read \
                     (I/O error: Zstd decompression failed: Unknown frame descriptor)";

    let bad = dir.path().join("bad-zstd.data");
    std::fs::write(&bad, &bytes).unwrap();
    let out = common::output(common::scry().args(["script", "-i"]).arg(&bad));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("scry: ") && err.contains(zstd_line),
        "{err}"
    );

    assert!(last > magic_at, "no record after the first COMPRESSED one");
    bytes[last + 6..last + 8].fill(0);
    let bad = dir.path().join("bad-zstd-and-size.data");
    std::fs::write(&bad, &bytes).unwrap();
    let out = common::output(common::scry().args(["script", "-i"]).arg(&bad));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].contains(&format!(
            "the records from offset {last:#x} on are not read"
        )),
        "{err}"
    );
    assert!(lines[1].contains(zstd_line), "{err}");
    assert!(lines.iter().all(|l| l.starts_with("scry: ")), "{err}");
}

/// Reads every record of `bytes` through the library, as `scry script` does.
/// Returns the events read and the lines the reader would print.
fn read_all(bytes: &[u8]) -> Result<(usize, Vec<String>), String> {
    let mut reader = PerfReader::from_bytes("mutant", bytes.to_vec()).map_err(|e| e.to_string())?;
    reader.quiet();
    let _ = reader.info();
    let mut n = 0;
    while let Some(record) = reader.next_record().map_err(|e| e.to_string())? {
        if let Record::Event { .. } = record {
            n += 1;
        }
    }
    Ok((n, reader.notes()))
}

#[test]
fn many_mutations_in_process_never_panic() {
    let dir = common::tempdir();
    let Some(file) = recorded(dir.path(), "p.data", &[]) else {
        return;
    };
    let bytes = std::fs::read(&file).unwrap();
    assert!(read_all(&bytes).is_ok_and(|(n, notes)| n > 0 && notes.is_empty()));
    let mut errors = 0;
    for (what, mutant) in mutations(&bytes, 0xdead_beef, 3000) {
        // A panic escaping the reader fails the test here, naming the case.
        let result = std::panic::catch_unwind(|| read_all(&mutant));
        match result {
            Ok(Ok((_, notes))) => {
                errors += usize::from(!notes.is_empty());
                assert!(notes.iter().all(|n| !n.contains('\n')), "{what}: {notes:?}");
            }
            Ok(Err(e)) => {
                errors += 1;
                assert!(
                    e.starts_with("mutant: "),
                    "{what}: error without the file name: {e}"
                );
                assert!(!e.contains('\n'), "{what}: multi-line error: {e}");
            }
            Err(_) => panic!("{what}: the reader panicked"),
        }
    }
    assert!(
        errors > 0,
        "no mutation was detected (an error or a skip): the test proves nothing"
    );
}

/// The fuzzer's first find: a sample whose callchain length overflows
/// `length * 8` in linux-perf-event-reader. It must be an error naming the
/// record and its offset, whether the build checks overflow (the crate
/// panics; the reader catches it) or not (the length check fails).
#[test]
fn huge_callchain_length_is_an_error_not_a_panic() {
    use linux_perf_data::linux_perf_event_reader::SampleFormat;
    let dir = common::tempdir();
    let Some(file) = recorded(dir.path(), "cc.data", &[]) else {
        return;
    };
    let mut reader = PerfReader::open(&file).unwrap();
    let st = reader.events()[0].attr.sample_format;
    assert!(!st.contains(SampleFormat::READ) && st.contains(SampleFormat::CALLCHAIN));
    let before = [
        SampleFormat::IDENTIFIER,
        SampleFormat::IP,
        SampleFormat::TID,
        SampleFormat::TIME,
        SampleFormat::ADDR,
        SampleFormat::ID,
        SampleFormat::STREAM_ID,
        SampleFormat::CPU,
        SampleFormat::PERIOD,
    ];
    let nr_at = 8 + 8 * before.iter().filter(|f| st.contains(**f)).count() as u64;
    let mut sample = None;
    reader
        .walk_file_order(|frame, _, _| {
            if frame.record_type == 9 && sample.is_none() {
                sample = Some(frame.offset);
            }
            Ok(())
        })
        .unwrap();
    let offset = sample.expect("a sample record");
    let mut bytes = std::fs::read(&file).unwrap();
    let at = (offset + nr_at) as usize;
    bytes[at..at + 8].copy_from_slice(&0x7fff_ffff_ffff_ffffu64.to_le_bytes());
    let bad = dir.path().join("bad.data");
    std::fs::write(&bad, &bytes).unwrap();
    let (samples, skipped) = skipped_one_record(&bad, offset, "PERF_RECORD_SAMPLE");
    assert_eq!(samples + 1, count_samples(&file), "{skipped}");
}

/// The fuzzer's second find: an MMAP2 record claiming a build-id longer
/// than 20 bytes makes linux-perf-event-reader assert; the reader checks it
/// first.
#[test]
fn long_mmap2_build_id_is_an_error() {
    let dir = common::tempdir();
    let Some(file) = recorded(dir.path(), "mm.data", &[]) else {
        return;
    };
    let mut mmap2 = None;
    PerfReader::open(&file)
        .unwrap()
        .walk_file_order(|frame, _, _| {
            if frame.record_type == 10 && mmap2.is_none() {
                mmap2 = Some(frame.offset as usize);
            }
            Ok(())
        })
        .unwrap();
    let offset = mmap2.expect("an MMAP2 record");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[offset + 5] |= 0x40; // misc |= PERF_RECORD_MISC_MMAP_BUILD_ID
    bytes[offset + 8 + 32] = 254; // build_id_size
    let bad = dir.path().join("bad.data");
    std::fs::write(&bad, &bytes).unwrap();
    let (samples, line) = skipped_one_record(&bad, offset as u64, "PERF_RECORD_MMAP2");
    assert!(line.contains("build-id size 254"), "{line}");
    assert_eq!(samples, count_samples(&file));
}

/// Samples `scry script` prints for `file`.
fn count_samples(file: &Path) -> usize {
    let out = common::output(common::scry().args(["script", "-i"]).arg(file));
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with(['\t', ' ']) && !l.is_empty())
        .count()
}

/// Runs `scry script` on a file with one bad record at `offset`: exit 0,
/// the other records shown, and one stderr line naming the record. Returns
/// the samples shown and that line.
fn skipped_one_record(file: &Path, offset: u64, record_type: &str) -> (usize, String) {
    let out = common::output(common::scry().args(["script", "-i"]).arg(file));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let want = "skipped 1 malformed record";
    let at = format!("the first at offset {offset:#x}: {record_type}");
    assert!(
        err.starts_with("scry: ") && err.contains(want) && err.contains(&at),
        "{err}"
    );
    (count_samples(file), err)
}

/// A perf record: type, misc 0, size, body.
fn rec(record_type: u32, body: &[u8]) -> Vec<u8> {
    let mut r = record_type.to_le_bytes().to_vec();
    r.extend(0u16.to_le_bytes());
    r.extend(u16::try_from(8 + body.len()).unwrap().to_le_bytes());
    r.extend(body);
    r
}

/// A pipe-format file: one cpu-clock event (IP|TID|TIME, id 7), the given
/// HEADER_FEATURE records `(feature id, section bytes)`, then one sample.
fn pipe_file(features: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut file = b"PERFILE2".to_vec();
    file.extend(16u64.to_le_bytes());
    let mut attr = vec![0u8; 128];
    attr[0..4].copy_from_slice(&1u32.to_le_bytes()); // PERF_TYPE_SOFTWARE
    attr[4..8].copy_from_slice(&128u32.to_le_bytes());
    attr[16..24].copy_from_slice(&1000u64.to_le_bytes());
    attr[24..32].copy_from_slice(&7u64.to_le_bytes()); // IP | TID | TIME
    attr.extend(7u64.to_le_bytes());
    file.extend(rec(64, &attr)); // PERF_RECORD_HEADER_ATTR
    for (id, section) in features {
        let mut body = id.to_le_bytes().to_vec();
        body.extend(section);
        file.extend(rec(80, &body)); // PERF_RECORD_HEADER_FEATURE
    }
    let mut sample = 0x1234u64.to_le_bytes().to_vec();
    sample.extend([42, 0, 0, 0, 42, 0, 0, 0]);
    sample.extend(1_000_000u64.to_le_bytes());
    file.extend(rec(9, &sample));
    file
}

/// A record the crate cannot parse where there is no file offset (a
/// stream, compressed data) is counted with its size, as in a plain file:
/// the line said "(0 bytes)".
#[test]
fn unparsable_record_in_a_stream_counts_its_bytes() {
    let dir = common::tempdir();
    let mut bytes = pipe_file(&[]);
    // The sample (IP | TID | TIME: 24 bytes of body) cut before its time.
    let at = bytes.len() - 32;
    bytes.truncate(bytes.len() - 8);
    bytes[at + 6..at + 8].copy_from_slice(&24u16.to_le_bytes());
    let file = dir.path().join("cut-sample.pipe");
    std::fs::write(&file, &bytes).unwrap();
    let out = common::output(common::scry().args(["script", "-i"]).arg(&file));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "skipped 1 malformed record (24 bytes), the first: PERF_RECORD_SAMPLE (record #"
        ),
        "{err}"
    );
}

/// The fuzzer's find of issue 10: a HEADER_FEATURE whose id has high bits
/// set passed the EVENT_DESC check (which compared the whole u64 with 12),
/// and the crate, which keeps the low 32 bits, read it as EVENT_DESC and
/// reserved room for 4 billion events: an abort (SIGABRT) in report, script
/// and flamegraph. Now the record is refused, by name.
#[test]
fn feature_id_with_high_bits_is_not_event_desc() {
    let dir = common::tempdir();
    let mut desc = u32::MAX.to_le_bytes().to_vec(); // nr of events
    desc.extend(128u32.to_le_bytes()); // attr size
    desc.extend([0u8; 64]);
    let file = dir.path().join("feature.data");
    std::fs::write(&file, pipe_file(&[(0x0000_0008_0000_000c, desc)])).unwrap();
    let svg = dir.path().join("f.svg");
    let svg = svg.to_str().unwrap();
    let commands: [&[&str]; 3] = [
        &["report", "--stdio"],
        &["script"],
        &["flamegraph", "-o", svg],
    ];
    for args in commands {
        let out = common::output(common::scry().args(args).arg("-i").arg(&file));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code().is_some(),
            "{args:?} died of a signal: {:?}, stderr {err}",
            out.status
        );
        assert!(
            err.contains("feature id 0x80000000c"),
            "{args:?}: {:?}: {err}",
            out.status
        );
        assert!(err.lines().all(|l| l.starts_with("scry: ")), "{err}");
    }
}
