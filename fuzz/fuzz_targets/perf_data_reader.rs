//! Fuzz target: arbitrary bytes as a perf.data file, through everything
//! `scry script` does with one: the checks, the header features (and scry's
//! own section, `record --profile`'s kernel function rows), every
//! record in time order parsed (samples with callchains and raw data printed
//! in perf script's layout) and the file-order walk of `-D`.
//!
//! The reader turns panics of the crates it wraps into errors
//! (`ParserPanic`, or a bad record whose reason says the parser panicked).
//! With `SCRY_FUZZ_STRICT=1` this target panics on those instead, so the
//! fuzzer reports the inputs that reach the last-resort `catch_unwind`,
//! except the known ones in `KNOWN_CRATE_PANICS`.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use scry::data::handler::dispatch;
use scry::data::reader::{EventRecord, PerfReader, ReadError, Record};
use scry::data::threads::ThreadNames;
use scry::render::script::{EventFormat, FieldSpec, ScriptPrinter, ScriptSample, Unresolved};

/// Panics of linux-perf-event-reader 0.10 found by this target, caught by
/// the reader: `SampleRecord::parse` computes `callchain_length * 8`
/// unchecked (overflow panics in builds with overflow checks; release builds
/// wrap and then fail the length check). The second find, an
/// `assert!(build_id_len <= 20)` on MMAP2 records, is checked before the
/// crate sees the record, except inside compressed data.
const KNOWN_CRATE_PANICS: &[&str] = &[
    "attempt to multiply with overflow",
    "assertion failed: build_id_len <= 20",
];

fn check(e: &ReadError) {
    check_text(&e.to_string(), matches!(e, ReadError::ParserPanic { .. }));
}

/// An error's text, or a line the reader printed: a panic the crate had
/// (an unknown one fails in strict mode), never a second line.
fn check_text(text: &str, panicked: bool) {
    let strict = std::env::var_os("SCRY_FUZZ_STRICT").is_some();
    let panicked = panicked || text.contains("panicked");
    if strict && panicked && !KNOWN_CRATE_PANICS.iter().any(|k| text.contains(k)) {
        panic!("{text}");
    }
    assert!(!text.contains('\n'), "multi-line error: {text}");
}

fn read(data: &[u8]) -> Result<(), ReadError> {
    let mut reader = PerfReader::from_bytes("fuzz", data.to_vec())?;
    reader.quiet();
    if let Err(e) = reader.info() {
        check(&e);
    }
    if let Err(e) = reader.function_rows() {
        check(&e);
    }
    let formats: Vec<EventFormat> = reader
        .events()
        .iter()
        .map(|e| EventFormat {
            name: e.name.clone(),
            is_tracepoint: false,
            has_tid: true,
            has_time: true,
            has_cpu: true,
            has_period: true,
            has_ip: true,
            has_callchain: true,
            has_raw: true,
        })
        .collect();
    let printer = ScriptPrinter::new(formats, &FieldSpec::Default).ok();
    let mut out = std::io::sink();
    let _ = reader.walk_file_order(|_, head, body| out.write_all(head).and(out.write_all(body)));
    let mut comms: ThreadNames = ThreadNames::default();
    let mut chain = Vec::new();
    while let Some((record, id)) = reader.next_record_with_id()? {
        let Record::Event { attr_index, record } = record else {
            continue;
        };
        dispatch(&mut comms, attr_index, &record, &id);
        let EventRecord::Sample(s) = &record else {
            continue;
        };
        chain.clear();
        if let Some(cc) = &s.callchain {
            chain.extend((0..cc.len()).filter_map(|i| cc.get(i)).map(|a| (a, false)));
        }
        let comm = comms.get(s.tid.unwrap_or(-1));
        let raw = s.raw.map(|r| r.as_slice());
        let sample = ScriptSample {
            event: attr_index,
            comm: &comm,
            pid: s.pid,
            tid: s.tid,
            cpu: s.cpu,
            time: s.timestamp,
            period: s.period,
            ip: s.ip,
            ip_kernel: false,
            callchain: Some(&chain),
            raw: raw.as_deref(),
        };
        if let Some(p) = &printer {
            let _ = p.write_sample(&mut out, &sample, &mut Unresolved);
        }
    }
    // A record the crate could not read in time order (compressed data)
    // ends the records with a line, not an error.
    for note in reader.notes() {
        check_text(&note, false);
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    if let Err(e) = read(data) {
        check(&e);
    }
});
