//! The perf.data writer (`scry::data::writer`), proven against the oracle.
//!
//! Each test has Debian's `perf record` record a real workload, copies that
//! file's attrs and records through `PerfDataWriter` (features built by
//! scry itself: system info, build-ids read by `data::build_id`, tracing
//! data from tracefs), then asks `perf script` / `perf report` /
//! `perf evlist` / `perf buildid-list` to read both files and compares the
//! answers. The recorder is not needed: this is the writer alone.

use crate::common;

use std::collections::BTreeSet;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::process::Command;

use scry::data::build_id;
use scry::data::features::{BuildIdEntry, ClockData, Features, MISC_KERNEL, MISC_USER};
use scry::data::function_rows::{FunctionRow, FunctionRows};
use scry::data::pipe_writer::PerfPipeWriter;
use scry::data::reader::PerfReader;
use scry::data::tracing_data;
use scry::data::writer::{EventDesc, PerfDataWriter};

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}

/// What the test takes from perf's file: raw attrs with ids and names, the
/// data section's bytes, and a few feature values.
struct PerfFile {
    events: Vec<EventDesc>,
    data: Vec<u8>,
    cmdline: Vec<String>,
    sample_time: Option<(u64, u64)>,
    tracing_data: Option<Vec<u8>>,
    clock: Option<ClockData>,
}

/// Reads perf's file: attrs straight from the header (raw bytes, as the
/// kernel got them), names from EVENT_DESC via linux-perf-data.
fn read_perf_file(path: &Path) -> PerfFile {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"PERFILE2");
    let attr_entry = u64_at(&bytes, 16) as usize;
    let (attrs_off, attrs_len) = (u64_at(&bytes, 24) as usize, u64_at(&bytes, 32) as usize);
    let (data_off, data_len) = (u64_at(&bytes, 40) as usize, u64_at(&bytes, 48) as usize);

    let reader = linux_perf_data::PerfFileReader::parse_file(std::io::Cursor::new(&bytes)).unwrap();
    let pf = reader.perf_file;
    let names: Vec<String> = pf
        .event_attributes()
        .iter()
        .map(|a| a.name().unwrap_or("").to_string())
        .collect();

    let mut events = Vec::new();
    for (i, entry) in (attrs_off..attrs_off + attrs_len)
        .step_by(attr_entry)
        .enumerate()
    {
        let size = u32_at(&bytes, entry + 4) as usize;
        let attr = bytes[entry..entry + size].to_vec();
        let (ids_off, ids_len) = (
            u64_at(&bytes, entry + size) as usize,
            u64_at(&bytes, entry + size + 8) as usize,
        );
        let ids = (ids_off..ids_off + ids_len)
            .step_by(8)
            .map(|at| u64_at(&bytes, at))
            .collect();
        events.push(EventDesc {
            attr,
            ids,
            name: names[i].clone(),
        });
    }
    PerfFile {
        events,
        data: bytes[data_off..data_off + data_len].to_vec(),
        cmdline: pf
            .cmdline()
            .unwrap()
            .unwrap_or_default()
            .iter()
            .map(|s| s.to_string())
            .collect(),
        sample_time: pf
            .sample_time_range()
            .unwrap()
            .map(|t| (t.first_sample_time, t.last_sample_time)),
        tracing_data: pf
            .feature_section_data(linux_perf_data::Feature::TRACING_DATA)
            .map(<[u8]>::to_vec),
        clock: pf.clock_data().unwrap().map(|c| ClockData {
            clockid: c.clockid,
            res_ns: pf.clock_frequency().unwrap().unwrap(),
            tod_ns: c.wall_clock_ns,
            clockid_ns: c.clockid_time_ns,
        }),
    }
}

/// Splits a data section into its records (type, whole record bytes).
fn records(data: &[u8]) -> Vec<(u32, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let size = u16_at(data, at + 6) as usize;
        assert!(size >= 8, "record of size {size} at {at}");
        out.push((u32_at(data, at), &data[at..at + size]));
        at += size;
    }
    out
}

/// The file names of the MMAP/MMAP2 records, as the recorder will see them.
fn mapped_files(data: &[u8]) -> BTreeSet<String> {
    const MMAP: u32 = 1;
    const MMAP2: u32 = 10;
    const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
    let mut out = BTreeSet::new();
    for (kind, rec) in records(data) {
        let name_at = match kind {
            MMAP => 8 + 4 + 4 + 8 * 3,
            MMAP2 if u16_at(rec, 4) & MISC_MMAP_BUILD_ID == 0 => {
                8 + 4 + 4 + 8 * 3 + 4 * 2 + 8 * 2 + 4 * 2
            }
            MMAP2 => 8 + 4 + 4 + 8 * 3 + 24 + 4 * 2,
            _ => continue,
        };
        let name = &rec[name_at..];
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        out.insert(String::from_utf8_lossy(&name[..end]).into_owned());
    }
    out
}

/// Build-ids the way the recorder gets them: the kernel's from its notes,
/// the vDSO's from memory, every mapped file's from disk.
fn build_ids(data: &[u8]) -> Vec<BuildIdEntry> {
    let mut out = Vec::new();
    if let Some(id) = build_id::kernel_build_id().unwrap() {
        out.push(BuildIdEntry {
            pid: -1,
            misc: MISC_KERNEL,
            build_id: id,
            filename: "[kernel.kallsyms]".into(),
        });
    }
    for name in mapped_files(data) {
        let id = if name == "[vdso]" {
            build_id::vdso_build_id()
        } else if name.starts_with('/') {
            build_id::read_build_id(Path::new(&name)).ok().flatten()
        } else {
            None
        };
        if let Some(id) = id {
            out.push(BuildIdEntry {
                pid: -1,
                misc: MISC_USER,
                build_id: id,
                filename: name,
            });
        }
    }
    out
}

/// Tracepoints among the events, from their names (`sched:sched_switch`).
fn tracepoints(events: &[EventDesc]) -> Vec<(String, String)> {
    const PERF_TYPE_TRACEPOINT: u32 = 2;
    events
        .iter()
        .filter(|e| u32_at(&e.attr, 0) == PERF_TYPE_TRACEPOINT)
        .map(|e| {
            let (s, n) = e.name.split_once(':').expect("tracepoint name has a colon");
            (s.to_string(), n.to_string())
        })
        .collect()
}

fn features_for(theirs: &PerfFile) -> Features {
    let mut features = Features::from_system(theirs.cmdline.clone());
    features.build_ids = build_ids(&theirs.data);
    features.sample_time = theirs.sample_time;
    features.clock = theirs.clock;
    let tps = tracepoints(&theirs.events);
    if !tps.is_empty() {
        let root = scry::sys::tracefs::root().unwrap();
        features.tracing_data = Some(tracing_data::build(root, &tps).unwrap());
    }
    features
}

/// Which constructor: attrs after the data (`new`) or before (`with_events`).
#[derive(Clone, Copy)]
enum Layout {
    AttrsLast,
    AttrsFirst,
}

/// Copies perf's file through PerfDataWriter: records fed in batches of
/// whole records (about 64 KiB each, as a ring drain would), our features.
fn rewrite(theirs: &PerfFile, ours: &Path, layout: Layout) {
    rewrite_with(theirs, ours, layout, features_for(theirs));
}

/// [`rewrite`] with these features.
fn rewrite_with(theirs: &PerfFile, ours: &Path, layout: Layout, features: Features) {
    let file = BufWriter::new(File::create(ours).unwrap());
    let mut w = match layout {
        Layout::AttrsLast => PerfDataWriter::new(file).unwrap(),
        Layout::AttrsFirst => PerfDataWriter::with_events(file, &theirs.events).unwrap(),
    };
    let mut batch_start = 0;
    let mut at = 0;
    for (_, rec) in records(&theirs.data) {
        if at + rec.len() - batch_start > 64 << 10 {
            w.write_records(&theirs.data[batch_start..at]).unwrap();
            batch_start = at;
        }
        at += rec.len();
    }
    w.write_records(&theirs.data[batch_start..at]).unwrap();
    assert_eq!(w.data_size(), theirs.data.len() as u64);
    w.finish(&theirs.events, &features).unwrap();
}

fn perf_out(args: &[&str], file: &Path) -> (String, Vec<String>) {
    let out = common::output(common::perf().args(args).arg("-i").arg(file));
    assert!(
        out.status.success(),
        "perf {args:?} -i {} failed: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        common::perf_warnings(&out.stderr),
    )
}

/// Lines of `perf report --stdio` without its `#` header comments.
fn report_body(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with('#')).collect()
}

/// Every record linux-perf-data (samply's reader) yields, in its order:
/// (attr index or none for user records, type, bytes).
fn lpd_records(path: &Path) -> Vec<(Option<usize>, u32, Vec<u8>)> {
    use linux_perf_data::{PerfFileReader, PerfFileRecord};
    let file = std::io::BufReader::new(File::open(path).unwrap());
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(file).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = record_iter.next_record(&mut perf_file).unwrap() {
        out.push(match rec {
            PerfFileRecord::EventRecord { attr_index, record } => (
                Some(attr_index),
                record.record_type.0,
                record.data.as_slice().to_vec(),
            ),
            PerfFileRecord::UserRecord(r) => (
                None,
                r.record_type.record_type().0,
                r.data.as_slice().to_vec(),
            ),
        });
    }
    out
}

/// The same answers from perf on both files: script, report, evlist, and
/// every build-id perf found is one we wrote.
fn assert_perf_agrees(theirs: &Path, ours: &Path) -> String {
    // perf's own file may hold lost records (a loaded machine): perf then
    // warns on both alike, and only a warning of ours alone is a fault.
    let (script_theirs, warn_theirs) = perf_out(&["script"], theirs);
    let (script_ours, warn) = perf_out(&["script"], ours);
    assert_eq!(warn, warn_theirs, "perf script warns on our file only");
    assert!(
        script_theirs.lines().count() > 10,
        "too few lines:\n{script_theirs}"
    );
    assert_eq!(script_ours, script_theirs, "perf script differs");

    let report = ["report", "--stdio", "--sort", "comm,dso,sym"];
    let (report_theirs, _) = perf_out(&report, theirs);
    let (report_ours, warn) = perf_out(&report, ours);
    assert!(warn.is_empty(), "perf report warns on our file: {warn:?}");
    assert_eq!(
        report_body(&report_ours),
        report_body(&report_theirs),
        "perf report differs"
    );

    let (evlist_theirs, _) = perf_out(&["evlist", "-v"], theirs);
    let (evlist_ours, _) = perf_out(&["evlist", "-v"], ours);
    assert_eq!(evlist_ours, evlist_theirs);

    let ours_records = lpd_records(ours);
    assert!(
        ours_records == lpd_records(theirs),
        "linux-perf-data reads other records"
    );

    let (ids_theirs, _) = perf_out(&["buildid-list"], theirs);
    let (ids_ours, _) = perf_out(&["buildid-list"], ours);
    let ours_set: BTreeSet<&str> = ids_ours.lines().collect();
    for line in ids_theirs.lines() {
        assert!(
            ours_set.contains(line),
            "perf found build-id {line:?}; we wrote:\n{ids_ours}"
        );
    }
    script_ours
}

#[test]
fn perf_reads_a_cpu_clock_profile_we_rewrote() {
    require_kernel!();
    require_perf!();
    let dir = common::tempdir();
    let (theirs, ours) = (dir.path().join("theirs.data"), dir.path().join("ours.data"));
    let workload = common::workload("cpu7525");
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-g", "-F", "999", "-o"])
            .arg(&theirs)
            .arg("--")
            .arg(&workload)
            .arg("30"),
    );
    let perf_file = read_perf_file(&theirs);
    rewrite(&perf_file, &ours, Layout::AttrsFirst);
    let script = assert_perf_agrees(&theirs, &ours);
    assert!(
        script.contains("hot_a"),
        "callchains resolve to the workload's symbols:\n{script}"
    );

    let (header, warn) = perf_out(&["report", "--header-only"], &ours);
    assert!(warn.is_empty(), "{warn:?}");
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for want in [
        format!("# hostname : {}", hostname.trim()),
        format!("# perf version : scry {}", env!("CARGO_PKG_VERSION")),
        "# arch : x86_64".to_string(),
        "# nrcpus online :".to_string(),
        "# total memory :".to_string(),
        "# cmdline : ".to_string(),
        "# time of first sample :".to_string(),
        "# event : name = cpu-clock".to_string(),
    ] {
        assert!(
            header.contains(&want),
            "no {want:?} in our header:\n{header}"
        );
    }
}

/// `scry record --profile`'s kernel function rows in scry's own feature
/// section (bit 240, past perf's last feature): perf script, report,
/// evlist and the header read the file as they read perf's own, without a
/// warning, and scry's reader gives the rows back as written.
#[test]
fn perf_ignores_the_function_rows_section_scry_reads() {
    require_kernel!();
    require_perf!();
    let dir = common::tempdir();
    let (theirs, ours) = (dir.path().join("theirs.data"), dir.path().join("ours.data"));
    let workload = common::workload("cpu7525");
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-F", "999", "-o"])
            .arg(&theirs)
            .arg("--")
            .arg(&workload)
            .arg("30"),
    );
    let perf_file = read_perf_file(&theirs);
    let rows = FunctionRows {
        tracer: "function_graph".into(),
        rows: vec![
            FunctionRow {
                tid: 4242,
                function: "__do_sys_getppid".into(),
                sums: [300, 180_000, 1_408, 13_475_800_000, 592, 13_475_733_000],
            },
            FunctionRow {
                tid: 4243,
                function: "x".repeat(600),
                sums: [1, 2, 3, 4, 5, 6],
            },
        ],
    };
    let mut features = features_for(&perf_file);
    features.function_rows = Some(rows.clone());
    rewrite_with(&perf_file, &ours, Layout::AttrsFirst, features);
    assert_perf_agrees(&theirs, &ours);
    let (header, warn) = perf_out(&["report", "--header-only"], &ours);
    assert!(warn.is_empty(), "{warn:?}");
    assert!(header.contains("# event : name = cpu-clock"), "{header}");

    let reader = PerfReader::open(&ours).expect("scry reads the file");
    let back = reader.function_rows().expect("rows decode").expect("rows");
    assert_eq!(back.tracer, rows.tracer);
    assert_eq!(back.rows[0], rows.rows[0]);
    assert_eq!(
        back.rows[1].function.len(),
        512,
        "a name is cut at KSYM_NAME_LEN"
    );
    let header = common::run_ok(
        common::scry()
            .args(["script", "--header-only", "-i"])
            .arg(&ours),
    );
    assert!(header.contains(" SCRY_FUNCTION_ROWS"), "{header}");
}

#[test]
fn perf_decodes_tracepoint_fields_we_wrote() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let dir = common::tempdir();
    let (theirs, ours) = (dir.path().join("theirs.data"), dir.path().join("ours.data"));
    common::run_ok(
        common::perf()
            .args([
                "record",
                "-q",
                "-e",
                "sched:sched_switch",
                "-e",
                "sched:sched_wakeup",
                "-a",
                "-o",
            ])
            .arg(&theirs)
            .args(["--", "sleep", "0.5"]),
    );
    let perf_file = read_perf_file(&theirs);
    rewrite(&perf_file, &ours, Layout::AttrsLast);
    let script = assert_perf_agrees(&theirs, &ours);
    let switch = script
        .lines()
        .find(|l| l.contains("sched:sched_switch:"))
        .expect("a sched_switch line");
    assert!(
        switch.contains("prev_comm=") && switch.contains(" ==> next_comm="),
        "{switch}"
    );
    assert!(
        script
            .lines()
            .any(|l| l.contains("sched:sched_wakeup:") && l.contains("target_cpu="))
    );

    // Our tracing data holds what perf's does: same headers, same formats.
    let ours_blob = features_for(&perf_file).tracing_data.unwrap();
    let theirs_blob = perf_file
        .tracing_data
        .as_deref()
        .expect("perf wrote TRACING_DATA");
    assert_eq!(
        parse_tracing_data(&ours_blob),
        parse_tracing_data(theirs_blob)
    );
}

/// The parts of a tracing data blob that must agree between perf and us:
/// header bytes, header files, ftrace formats, per-system formats (as sets;
/// directory order is perf's and arbitrary), and printk formats.
/// (header bytes, header files, per-system formats, printk formats).
type TracingParts = (Vec<u8>, Vec<Vec<u8>>, BTreeSet<(String, Vec<u8>)>, Vec<u8>);

fn parse_tracing_data(b: &[u8]) -> TracingParts {
    let mut at = 10 + 4 + 2 + 4;
    let head = b[..at].to_vec();
    let take_file = |at: &mut usize, len_size: usize| {
        let len = if len_size == 8 {
            u64_at(b, *at) as usize
        } else {
            u32_at(b, *at) as usize
        };
        *at += len_size;
        let bytes = b[*at..*at + len].to_vec();
        *at += len;
        bytes
    };
    let mut headers = Vec::new();
    for name in [&b"header_page\0"[..], b"header_event\0"] {
        assert_eq!(&b[at..at + name.len()], name);
        at += name.len();
        headers.push(take_file(&mut at, 8));
    }
    let mut formats = BTreeSet::new();
    let n = u32_at(b, at);
    at += 4;
    for _ in 0..n {
        formats.insert(("ftrace".to_string(), take_file(&mut at, 8)));
    }
    let systems = u32_at(b, at);
    at += 4;
    for _ in 0..systems {
        let end = at + b[at..].iter().position(|&c| c == 0).unwrap();
        let system = String::from_utf8_lossy(&b[at..end]).into_owned();
        at = end + 1;
        let n = u32_at(b, at);
        at += 4;
        for _ in 0..n {
            formats.insert((system.clone(), take_file(&mut at, 8)));
        }
    }
    let kallsyms = take_file(&mut at, 4);
    assert!(kallsyms.is_empty());
    let printk = take_file(&mut at, 4);
    let _saved_cmdlines = take_file(&mut at, 8);
    assert_eq!(at, b.len(), "nothing after saved_cmdlines");
    (head, headers, formats, printk)
}

/// A recorder that dies mid-recording leaves a file perf can still read:
/// everything up to the last checkpoint, with no warning.
#[test]
fn a_file_cut_after_a_checkpoint_is_readable_by_perf() {
    require_kernel!();
    require_perf!();
    let dir = common::tempdir();
    let (theirs, cut) = (dir.path().join("theirs.data"), dir.path().join("cut.data"));
    // On one CPU, so that the file's order is time order: perf writes each
    // CPU's buffer whole in turn, and a cut between two CPUs' runs would keep
    // samples whose earlier COMM or MMAP (in the other CPU's run) is gone, a
    // file no recorder's checkpoint makes (seen beside a CPU hog: a sample
    // named perf-exec, the workload's exec cut away).
    common::run_ok(
        Command::new("taskset")
            .args(["-c", &common::first_allowed_cpu()])
            .arg(common::perf_path())
            .args(["record", "-q", "-g", "-F", "999", "-o"])
            .arg(&theirs)
            .arg("--")
            .arg(common::workload("cpu7525"))
            .arg("0.2s"),
    );
    let perf_file = read_perf_file(&theirs);
    let recs = records(&perf_file.data);
    let half: usize = recs[..recs.len() / 2].iter().map(|(_, r)| r.len()).sum();

    let mut w =
        PerfDataWriter::with_events(File::create(&cut).unwrap(), &perf_file.events).unwrap();
    w.write_records(&perf_file.data[..half]).unwrap();
    w.checkpoint().unwrap();
    // More data reaches the disk, then the process "dies": no finish.
    w.write_records(&perf_file.data[half..]).unwrap();
    drop(w);

    let (full, _) = perf_out(&["script"], &theirs);
    let (partial, warn) = perf_out(&["script"], &cut);
    assert!(
        warn.is_empty(),
        "perf warns on a checkpointed file: {warn:?}"
    );
    let full_lines: BTreeSet<&str> = full.lines().collect();
    let samples = partial.lines().filter(|l| l.contains("cpu-clock")).count();
    assert!(samples > 3, "perf read samples of the cut file:\n{partial}");
    for line in partial.lines() {
        assert!(
            full_lines.contains(line),
            "line not in the full output: {line:?}"
        );
    }
    assert!(partial.len() < full.len());
}

#[test]
fn read_build_id_agrees_with_readelf() {
    // readelf (binutils) is a second opinion on the note of a system binary.
    let Ok(out) = Command::new("readelf").args(["-n", "/bin/sh"]).output() else {
        eprintln!("skipping: readelf is not installed");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let want = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .expect("/bin/sh has a build-id")
        .to_string();
    let got = build_id::read_build_id(Path::new("/bin/sh"))
        .unwrap()
        .expect("a build-id");
    assert_eq!(build_id::to_hex(&got), want);
}

/// Without a checkpoint the header says `data.size = 0`. perf 6.1 then
/// names the problem ("not properly terminated") and shows no records, so
/// checkpoints are what make a crashed recording readable by perf; but the
/// file is still structurally sound: attrs and ids are in place and the
/// records from the data offset to the end of the file are all there, bar
/// the torn last one, for a recovering reader to take.
#[test]
fn a_file_cut_before_any_checkpoint_is_recoverable() {
    require_kernel!();
    require_perf!();
    let dir = common::tempdir();
    let (theirs, cut) = (dir.path().join("theirs.data"), dir.path().join("cut.data"));
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-F", "999", "-o"])
            .arg(&theirs)
            .arg("--")
            .arg(common::workload("cpu7525"))
            .arg("0.2s"),
    );
    let perf_file = read_perf_file(&theirs);
    let mut w =
        PerfDataWriter::with_events(File::create(&cut).unwrap(), &perf_file.events).unwrap();
    w.write_records(&perf_file.data).unwrap();
    drop(w);
    // Tear the last record, as a crash mid-write would.
    let last = records(&perf_file.data).last().unwrap().1.len() as u64;
    let len = std::fs::metadata(&cut).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&cut).unwrap();
    file.set_len(len - last / 2).unwrap();

    let out = common::output(common::perf().args(["script", "-i"]).arg(&cut));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("data size field is 0"),
        "perf's warning: {stderr}"
    );

    let bytes = std::fs::read(&cut).unwrap();
    assert_eq!(u64_at(&bytes, 48), 0, "data size not published");
    let data_off = u64_at(&bytes, 40) as usize;
    let (attrs_off, attrs_len) = (u64_at(&bytes, 24) as usize, u64_at(&bytes, 32) as usize);
    assert_eq!(
        attrs_off + attrs_len,
        data_off,
        "attrs right before the data"
    );
    let attr_size = u32_at(&bytes, attrs_off + 4) as usize;
    assert_eq!(
        &bytes[attrs_off..attrs_off + attr_size],
        &perf_file.events[0].attr[..]
    );
    let mut at = data_off;
    let mut whole = 0;
    while at + 8 <= bytes.len() {
        let size = u16_at(&bytes, at + 6) as usize;
        if at + size > bytes.len() {
            break;
        }
        whole += 1;
        at += size;
    }
    assert_eq!(
        whole + 1,
        records(&perf_file.data).len(),
        "all records but the torn one"
    );
}

/// `perf record -k mono`: CLOCKID and CLOCK_DATA let perf print wall-clock
/// times (`-F tod`) and the clock's name and resolution.
#[test]
fn perf_reads_the_clock_features_we_wrote() {
    require_kernel!();
    require_perf!();
    let dir = common::tempdir();
    let (theirs, ours) = (dir.path().join("theirs.data"), dir.path().join("ours.data"));
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-k", "mono", "-F", "999", "-o"])
            .arg(&theirs)
            .arg("--")
            .arg(common::workload("cpu7525"))
            .arg("0.1s"),
    );
    let perf_file = read_perf_file(&theirs);
    assert!(perf_file.clock.is_some(), "perf wrote CLOCK_DATA");
    rewrite(&perf_file, &ours, Layout::AttrsFirst);
    assert_perf_agrees(&theirs, &ours);
    let tod = ["script", "-F", "comm,tid,time,tod"];
    let (tod_ours, warn) = perf_out(&tod, &ours);
    assert!(warn.is_empty(), "{warn:?}");
    assert_eq!(tod_ours, perf_out(&tod, &theirs).0);
    assert!(
        tod_ours.lines().any(|l| l.contains(" 20")),
        "wall-clock dates:\n{tod_ours}"
    );
    let (header, _) = perf_out(&["report", "--header-only"], &ours);
    assert!(header.contains("# clockid: monotonic (1)"), "{header}");
    assert!(header.contains("# clockid frequency: "), "{header}");
}

/// Pipe mode: the same records streamed through `PerfPipeWriter` into
/// `perf script -i -` give the same lines as perf's own file.
#[test]
fn perf_reads_our_pipe_stream() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let dir = common::tempdir();
    let cpu = dir.path().join("cpu.data");
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-g", "-F", "999", "-o"])
            .arg(&cpu)
            .arg("--")
            .arg(common::workload("cpu7525"))
            .arg("0.2s"),
    );
    let sched = dir.path().join("sched.data");
    common::run_ok(
        common::perf()
            .args([
                "record",
                "-q",
                "-e",
                "sched:sched_switch",
                "-e",
                "sched:sched_wakeup",
                "-a",
                "-o",
            ])
            .arg(&sched)
            .args(["--", "sleep", "0.3"]),
    );
    for theirs in [cpu, sched] {
        let perf_file = read_perf_file(&theirs);
        let mut features = features_for(&perf_file);
        features.build_ids.clear();
        let mut w = PerfPipeWriter::new(Vec::new(), &perf_file.events, &features).unwrap();
        w.write_records(&perf_file.data).unwrap();
        let stream = w.finish().unwrap();

        let mut child = common::perf()
            .args(["script", "-i", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || {
            use std::io::Write;
            stdin.write_all(&stream).unwrap();
        });
        let out = child.wait_with_output().unwrap();
        feeder.join().unwrap();
        let warn = common::perf_warnings(&out.stderr);
        let (want, warn_theirs) = perf_out(&["script"], &theirs);
        // As above: lost records in perf's own file warn on both alike.
        assert!(
            out.status.success() && warn == warn_theirs,
            "perf script -i - on our stream: {warn:?}, on perf's file: {warn_theirs:?}"
        );
        assert!(want.lines().count() > 10);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            want,
            "{}",
            theirs.display()
        );
    }
}

/// A hostile file's sample periods (each 2^63) sum past `u64`: every
/// command that adds them up still ends with a report, never the overflow
/// panic a debug build (this suite's) would raise.
#[test]
fn periods_that_overflow_their_sum_are_no_panic() {
    require_kernel!();
    require_perf!();
    const SAMPLE: u32 = 9;
    let dir = common::tempdir();
    let (theirs, huge) = (dir.path().join("theirs.data"), dir.path().join("huge.data"));
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-g", "-F", "999", "-o"])
            .arg(&theirs)
            .arg("--")
            .arg(common::workload("cpu7525"))
            .arg("0.2s"),
    );
    let mut perf_file = read_perf_file(&theirs);
    let sample_type = u64::from_le_bytes(perf_file.events[0].attr[24..32].try_into().unwrap());
    assert!(sample_type & (1 << 8) != 0, "perf's samples have a period");
    // The fields before PERIOD, in the kernel's order: IDENTIFIER, IP,
    // TID, TIME, ADDR, ID, STREAM_ID, CPU.
    let before = [16, 0, 1, 2, 3, 6, 9, 7]
        .iter()
        .filter(|&&bit| sample_type & (1 << bit) != 0)
        .count();
    let offsets: Vec<usize> = {
        let mut at = 0;
        records(&perf_file.data)
            .into_iter()
            .filter_map(|(kind, rec)| {
                let here = at;
                at += rec.len();
                (kind == SAMPLE).then_some(here + 8 + 8 * before)
            })
            .collect()
    };
    assert!(offsets.len() > 3, "perf took samples");
    for at in offsets {
        perf_file.data[at..at + 8].copy_from_slice(&(1u64 << 63).to_le_bytes());
    }
    rewrite(&perf_file, &huge, Layout::AttrsFirst);

    let out = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (svg, html) = (out("huge.svg"), out("huge.html"));
    let runs: Vec<Vec<&str>> = vec![
        vec!["report", "--stdio"],
        vec!["report", "--stdio", "--no-children"],
        vec!["report", "--stdio", "--sort", "comm,dso"],
        vec!["script", "-F", "comm,period"],
        vec!["flamegraph", "-o", &svg],
        vec!["annotate", "--stdio"],
        vec!["heatmap", "-o", &html],
    ];
    let formats = ["pprof", "firefox", "speedscope", "folded"];
    let converted: Vec<String> = formats.iter().map(|f| out(f)).collect();
    let runs = runs.into_iter().chain(
        formats
            .iter()
            .zip(&converted)
            .map(|(f, o)| vec!["convert", "--to", f, "-o", o]),
    );
    for args in runs {
        let run = common::output(common::scry().args(&args).arg("-i").arg(&huge));
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(
            run.status.success() && !stderr.contains("panicked"),
            "scry {args:?}: {:?}\n{stderr}",
            run.status
        );
    }
}
