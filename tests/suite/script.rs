//! `scry script` against the oracle: files recorded by `perf record` (with
//! and without callchains, multi-threaded, multi-event, `-z` compressed, pipe
//! format) printed by `perf script` and by `scry script` must list the same
//! samples; with `-F comm,pid,tid,time` the text must be identical.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use inferno::collapse::Collapse;

/// `perf record ARGS -o DIR/NAME -- CMD`, or None (with the reason printed)
/// when this perf cannot record that way.
fn perf_record(dir: &Path, name: &str, args: &[&str], cmd: &[&str]) -> Option<PathBuf> {
    let out = dir.join(name);
    let result = common::output(
        common::perf()
            .arg("record")
            .args(args)
            .arg("-o")
            .arg(&out)
            .arg("--")
            .args(cmd),
    );
    if !result.status.success() {
        let err = String::from_utf8_lossy(&result.stderr);
        assert!(
            !common::kernel_tests_required() || args.contains(&"-z"),
            "perf record {args:?} failed: {err}"
        );
        eprintln!("skipping: perf record {args:?} failed: {err}");
        return None;
    }
    Some(out)
}

fn perf_script(file: &Path, extra: &[&str]) -> String {
    common::run_ok(common::perf().arg("script").arg("-i").arg(file).args(extra))
}

fn scry_script(file: &Path, extra: &[&str]) -> String {
    common::run_ok(common::scry().arg("script").arg("-i").arg(file).args(extra))
}

/// What the sample lines of `perf script` text say.
#[derive(Debug, PartialEq)]
struct Summary {
    count: usize,
    first_time: String,
    last_time: String,
    tids: BTreeSet<String>,
    comms: BTreeSet<String>,
    /// Frames per sample, in order (empty without callchains).
    depths: Vec<usize>,
}

fn summarize(text: &str) -> Summary {
    let mut times = Vec::new();
    let mut tids = BTreeSet::new();
    let mut comms = BTreeSet::new();
    let mut depths = Vec::new();
    for line in text.lines() {
        if line.starts_with('\t') {
            if let Some(d) = depths.last_mut() {
                *d += 1;
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let t = words
            .iter()
            .position(|w| w.ends_with(':') && w.trim_end_matches(':').parse::<f64>().is_ok())
            .unwrap_or_else(|| panic!("no time in {line:?}"));
        times.push(words[t].to_owned());
        let tid_at = if words[t - 1].starts_with('[') {
            t - 2
        } else {
            t - 1
        };
        tids.insert(words[tid_at].to_owned());
        comms.insert(words[..tid_at].join(" "));
        depths.push(0);
    }
    assert!(!times.is_empty(), "no samples in:\n{text}");
    Summary {
        count: times.len(),
        first_time: times[0].clone(),
        last_time: times[times.len() - 1].clone(),
        tids,
        comms,
        depths,
    }
}

/// The same file through both: same samples, identical `-F` text.
fn assert_same_samples(file: &Path, fields: &str) {
    let perf = summarize(&perf_script(file, &[]));
    let scry = summarize(&scry_script(file, &[]));
    assert_eq!(perf, scry, "default output of {}", file.display());
    let perf = perf_script(file, &["-F", fields]);
    let scry = scry_script(file, &["-F", fields]);
    assert!(
        perf == scry,
        "-F {fields} differs:\n--- perf\n{perf}\n--- scry\n{scry}"
    );
}

#[test]
fn callchains_match_perf() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let calls = common::workload("calls");
    let calls = calls.to_str().unwrap();
    let Some(file) = perf_record(
        dir.path(),
        "g.data",
        &["-g", "-F", "999"],
        &[calls, "3000000"],
    ) else {
        return;
    };
    assert_same_samples(&file, "comm,pid,tid,time");

    // FlameGraph's collapser reads scry's text as perf's: the folded
    // stacks, symbol names included, are identical.
    assert_same_folded(&file);
}

/// The folded stacks of perf's and scry's text, names included, agree for
/// all but a few samples: the symbol stage may still name a frame of the
/// dynamic loader's first instants differently (alias choice, a library
/// mapped a moment ago), which is its business, not script's layout.
fn assert_same_folded(file: &Path) {
    let fold = |text: &str| -> BTreeMap<String, u64> {
        let mut folded = Vec::new();
        inferno::collapse::perf::Folder::default()
            .collapse(text.as_bytes(), &mut folded)
            .unwrap();
        let folded = String::from_utf8(folded).unwrap();
        // A BPF program another process runs on the workload's path is
        // `[unknown]` to perf where the file has no KSYMBOL for it, and
        // named by scry from kallsyms while it is loaded: the frames are
        // compared as unknown (scry_recorded_file_names_bpf_programs_as_perf
        // compares their names where the file has them).
        let unnamed_bpf = |stack: &str| -> String {
            stack
                .split(';')
                .map(|f| {
                    if f.starts_with("bpf_prog_") {
                        "[unknown]"
                    } else {
                        f
                    }
                })
                .collect::<Vec<_>>()
                .join(";")
        };
        let mut stacks = BTreeMap::new();
        for (stack, n) in folded.lines().filter_map(|l| l.rsplit_once(' ')) {
            *stacks.entry(unnamed_bpf(stack)).or_default() += n.parse::<u64>().unwrap();
        }
        stacks
    };
    let perf = fold(&perf_script(file, &[]));
    let scry = fold(&scry_script(file, &[]));
    let total: u64 = perf.values().sum();
    assert_eq!(total, scry.values().sum::<u64>(), "total weight");
    assert!(perf.len() > 1, "{perf:?}");
    let differ: u64 = perf
        .iter()
        .filter(|(stack, n)| scry.get(*stack) != Some(n))
        .map(|(_, n)| n)
        .sum();
    let only_scry: Vec<_> = scry.keys().filter(|k| !perf.contains_key(*k)).collect();
    assert!(
        differ * 50 <= total,
        "inferno-collapse-perf differs for {differ} of {total}:\nperf only: {:#?}\nscry only: {only_scry:#?}",
        perf.keys()
            .filter(|k| !scry.contains_key(*k))
            .collect::<Vec<_>>()
    );
}

#[test]
fn threads_without_callchains_match_perf_byte_for_byte_up_to_the_address() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let threads = common::workload("threads");
    let threads = threads.to_str().unwrap();
    let Some(file) = perf_record(
        dir.path(),
        "t.data",
        &["-F", "999"],
        &[threads, "3", "0.1s"],
    ) else {
        return;
    };
    assert_same_samples(&file, "comm,pid,tid,time");
    let perf = summarize(&perf_script(&file, &[]));
    assert!(perf.tids.len() >= 3, "expected several threads: {perf:?}");
    // Everything before the address column is perf's text exactly.
    let prefix = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| {
                let cut = l.match_indices(": ").nth(1).map_or(l.len(), |(i, _)| i);
                l[..cut].to_owned()
            })
            .collect()
    };
    let p = prefix(&perf_script(&file, &[]));
    let s = prefix(&scry_script(&file, &[]));
    assert_eq!(p, s);
}

#[test]
fn system_wide_cpu_column_and_idle_thread() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let Some(file) = perf_record(
        dir.path(),
        "a.data",
        &["-a", "-F", "999"],
        &["sleep", "0.2"],
    ) else {
        return;
    };
    // Not the folded stacks: whatever else runs on the machine (a C++
    // compiler) brings demangling differences that are the symbol stage's.
    assert_same_samples(&file, "comm,pid,tid,cpu,time");
}

#[test]
fn multi_event_file_matches_perf() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let threads = common::workload("threads");
    let threads = threads.to_str().unwrap();
    let args = ["-e", "cpu-clock", "-e", "page-faults", "-F", "999"];
    let Some(file) = perf_record(dir.path(), "m.data", &args, &[threads, "2", "0.05s"]) else {
        return;
    };
    assert_same_samples(&file, "comm,pid,tid,time,event,period");
    let text = scry_script(&file, &["-F", "event"]);
    for name in ["cpu-clock", "page-faults"] {
        assert!(
            text.contains(&format!("{name}:")),
            "no {name} samples:\n{text}"
        );
    }
}

/// `perf record -z -g` of `calls` in `dir` (None: perf could not).
fn compressed_recording(dir: &Path) -> Option<PathBuf> {
    let calls = common::workload("calls");
    let calls = calls.to_str().unwrap();
    let args = ["-z", "-g", "-F", "999"];
    perf_record(dir, "z.data", &args, &[calls, "2000000"])
}

#[test]
fn compressed_file_matches_perf() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let Some(file) = compressed_recording(dir.path()) else {
        return;
    };
    let header = scry_script(&file, &["--header-only"]);
    assert!(header.contains("COMPRESSED"), "not compressed? {header}");
    assert_same_samples(&file, "comm,pid,tid,time");
    assert_same_folded(&file);
}

/// `perf record -z`'s file with each PERF_RECORD_COMPRESSED (81) record
/// rewritten as the PERF_RECORD_COMPRESSED2 (83) that newer perf writes
/// (added in 2025: the compressed size in a u64 after the header, the
/// record padded to 8 bytes), split in two where it would not fit a record: zstd's
/// stream is the records' bytes one after the other, however cut. The
/// feature sections after the data move by what the records grew. The perf
/// here (6.1) writes only type 81 and cannot read 83. fuzz/run.sh makes its
/// seed the same way, in Python (it runs before any binary of ours exists).
fn as_compressed2(bytes: &[u8]) -> Vec<u8> {
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (offset, size) = (u64_at(bytes, 40) as usize, u64_at(bytes, 48) as usize);
    let mut out = bytes[..offset].to_vec();
    let mut at = offset;
    while at < offset + size {
        let kind = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let len = u16::from_le_bytes(bytes[at + 6..at + 8].try_into().unwrap()) as usize;
        assert!(len >= 8, "a record of {len} bytes at {at:#x}");
        let record = &bytes[at..at + len];
        if kind == 81 {
            for part in record[8..].chunks(u16::MAX as usize - 8 - 8 - 7) {
                let padded = (16 + part.len()).next_multiple_of(8);
                out.extend_from_slice(&83u32.to_le_bytes());
                out.extend_from_slice(&record[4..6]);
                out.extend_from_slice(&(padded as u16).to_le_bytes());
                out.extend_from_slice(&(part.len() as u64).to_le_bytes());
                out.extend_from_slice(part);
                out.resize(out.len() + padded - 16 - part.len(), 0);
            }
        } else {
            out.extend_from_slice(record);
        }
        at += len;
    }
    let grown = out.len() - (offset + size);
    out[48..56].copy_from_slice(&((size + grown) as u64).to_le_bytes());
    // The feature table: a section (offset, size) per feature bit set.
    let features: u32 = bytes[72..104].iter().map(|b| b.count_ones()).sum();
    let table = out.len();
    out.extend_from_slice(&bytes[offset + size..]);
    for i in 0..features as usize {
        let entry = table + 16 * i;
        let moved = u64_at(&out, entry) + grown as u64;
        out[entry..entry + 8].copy_from_slice(&moved.to_le_bytes());
    }
    out
}

/// COMPRESSED2 records read as their COMPRESSED originals: the same
/// samples, the same stacks.
#[test]
fn compressed2_records_read_as_compressed_ones() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let Some(file) = compressed_recording(dir.path()) else {
        return;
    };
    let bytes = std::fs::read(&file).unwrap();
    let rewritten = as_compressed2(&bytes);
    assert_ne!(rewritten, bytes, "no COMPRESSED record to rewrite");
    let file2 = dir.path().join("z2.data");
    std::fs::write(&file2, &rewritten).unwrap();
    let mut kinds = BTreeSet::new();
    scry::data::reader::PerfReader::open(&file2)
        .unwrap()
        .walk_file_order(|frame, _, _| {
            kinds.insert(frame.record_type);
            Ok(())
        })
        .unwrap();
    assert!(kinds.contains(&83) && !kinds.contains(&81), "{kinds:?}");
    let fields = ["-F", "comm,pid,tid,time,ip,sym"];
    let (one, two) = (scry_script(&file, &fields), scry_script(&file2, &fields));
    // Samples of the workload, however fast this machine runs it.
    assert!(one.lines().any(|l| l.starts_with("calls ")), "{one}");
    assert_eq!(one, two);
    let report = |f: &Path| common::run_ok(common::scry().args(["report", "--stdio", "-i"]).arg(f));
    assert_eq!(report(&file), report(&file2));
}

#[test]
fn pipe_format_file_and_stdin() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let calls = common::workload("calls");
    let file = dir.path().join("pipe.data");
    let out = common::output(
        common::perf()
            .args(["record", "-F", "999", "-o", "-", "--"])
            .arg(&calls)
            .arg("2000000"),
    );
    assert!(out.status.success(), "perf record -o - failed");
    std::fs::write(&file, &out.stdout).unwrap();
    // perf pads differently in pipe mode; compare what the lines say.
    let perf = summarize(&perf_script(&file, &[]));
    let scry = summarize(&scry_script(&file, &[]));
    assert_eq!(perf, scry);
    let stdin = common::run_ok(
        common::scry()
            .args(["script", "-i", "-"])
            .stdin(std::fs::File::open(&file).unwrap()),
    );
    assert_eq!(summarize(&stdin), scry);
}

#[test]
fn raw_dump_lists_every_record_at_perfs_offsets() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let calls = common::workload("calls");
    let calls = calls.to_str().unwrap();
    let Some(file) = perf_record(
        dir.path(),
        "d.data",
        &["-g", "-F", "999"],
        &[calls, "500000"],
    ) else {
        return;
    };
    let heads = |text: &str| -> Vec<String> {
        let mut v: Vec<String> = text
            .lines()
            .filter(|l| l.starts_with("0x") && l.contains("]: event: "))
            .map(str::to_owned)
            .collect();
        v.sort();
        v
    };
    let perf = heads(&perf_script(&file, &["-D"]));
    let scry = heads(&scry_script(&file, &["-D"]));
    assert!(perf.len() > 10, "{perf:?}");
    assert_eq!(perf, scry);
}

#[test]
fn header_features_match_perf() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let Some(file) = perf_record(dir.path(), "h.data", &["-F", "999"], &["true"]) else {
        return;
    };
    let pick = |text: &str| common::header_lines(text, &[]);
    let perf = pick(&perf_script(&file, &["--header-only"]));
    let scry = pick(&scry_script(&file, &["--header-only"]));
    assert_eq!(perf.len(), common::HEADER_KEYS.len(), "{perf:?}");
    assert_eq!(perf, scry);
}

#[test]
fn bad_field_and_missing_file_are_one_line_errors() {
    let out = common::output(common::scry().args(["script", "-i", "/nonexistent/perf.data"]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("scry: /nonexistent/perf.data: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = common::output(common::scry().args(["script", "-F", "comm,bogus"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bogus"));
}

#[test]
fn scry_recorded_file_matches_perf() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let calls = common::workload("calls");
    let file = dir.path().join("scry.data");
    // Frame pointers only: `-g`'s stack copy perf unwinds on its own and
    // appends to the chain (tests/stack_join.rs checks perf reads those).
    common::run_ok(
        common::scry()
            .args(["record", "--call-graph", "fp", "-F", "999", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&calls)
            .arg("2000000"),
    );
    assert_same_samples(&file, "comm,pid,tid,time");
    assert_same_folded(&file);
}

/// A BPF program another tool loaded runs on the workload's system calls
/// (here `scry syscount`'s, on raw_syscalls:sys_enter): scry's file
/// carries a KSYMBOL for it, as perf's does, so `perf script` names its
/// frames `bpf_prog_<tag>_<name>` (not `[unknown]`), and so does scry's,
/// from the file: the program is unloaded before either reads it.
#[test]
fn scry_recorded_file_names_bpf_programs_as_perf() {
    require_perf!();
    require_kernel!();
    let dir = common::tempdir();
    let calls = common::workload("calls");
    let file = dir.path().join("scry.data");
    let mut foreign = common::scry()
        .arg("syscount")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start scry syscount");
    // Its banner comes once its programs are attached; the table it prints
    // when stopped goes to the pipe, read by nobody (a few lines).
    let mut banner = String::new();
    let mut stdout = std::io::BufReader::new(foreign.stdout.take().expect("piped stdout"));
    std::io::BufRead::read_line(&mut stdout, &mut banner).expect("read scry syscount's banner");
    assert!(banner.starts_with("Tracing"), "scry syscount: {banner}");
    let recorded = common::output(
        common::scry()
            .args(["record", "--call-graph", "fp", "-F", "999", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&calls)
            .arg("2000000"),
    );
    common::signal(foreign.id(), "INT");
    let stopped = common::wait_timeout(&mut foreign, std::time::Duration::from_secs(30));
    if stopped.is_none() {
        let _ = foreign.kill();
        let _ = foreign.wait();
    }
    assert!(recorded.status.success(), "scry record: {recorded:?}");

    let bpf_frames = |text: &str| -> BTreeMap<String, u64> {
        let mut frames = BTreeMap::new();
        for line in text.lines().filter(|l| l.contains("bpf_prog_")) {
            let frame = line
                .split_whitespace()
                .skip(1)
                .collect::<Vec<_>>()
                .join(" ");
            *frames.entry(frame).or_default() += 1;
        }
        frames
    };
    let perf = perf_script(&file, &[]);
    let scry = scry_script(&file, &[]);
    let perf_bpf = bpf_frames(&perf);
    assert!(
        perf_bpf.keys().any(|f| f.contains("(bpf_prog_")),
        "perf script names no BPF program in scry's file; its kernel frames outside any map:\n{}",
        perf.lines()
            .filter(|l| l.contains("([unknown])") && l.trim_start().starts_with("ffff"))
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(perf_bpf, bpf_frames(&scry), "BPF frames, perf vs scry");
    assert_same_samples(&file, "comm,pid,tid,time");
    assert_same_folded(&file);
}
