//! pprof: a gzipped `perftools.profiles.Profile` (profile.proto), what
//! `go tool pprof` and Pyroscope read.
//!
//! Each event gives two sample values: how many samples (`samples`/`count`)
//! and their summed periods (`cpu`/`nanoseconds` for clock events, whose
//! periods are nanoseconds; `EVENT`/`events` otherwise). The default sample
//! type is the first event's periods, so pprof's percentages are the
//! period-weighted ones `scry report` prints. With several events the
//! value names are prefixed with the event (`cycles_samples`).
//!
//! One location per resolved frame (function, and file and line when the
//! recording was resolved with source lines); one mapping per binary, with
//! its build id when the file recorded one. Frames carry no address (the
//! resolver names locations and forgets them), so locations have address 0
//! and mappings no range: pprof reads functions, not addresses. Inlined
//! frames are locations of their own. Samples carry `pid`, `tid` and `comm`
//! labels. Tracepoints are not profiles: pprof leaves them out.

use std::collections::HashMap;
use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;

use super::pprof_proto as pb;
use super::{
    EventKind, ExportError, ExportInput, ExportResult, ExportSummary, Exporter, function_name,
    partition_events, source_location,
};
use crate::model::sample::FrameId;

/// The pprof exporter.
pub(crate) struct Pprof;

/// The profile's string table: index 0 is "".
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings {
            table: Vec::new(),
            index: HashMap::new(),
        };
        s.get("");
        s
    }

    fn get(&mut self, text: &str) -> i64 {
        if let Some(&i) = self.index.get(text) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(text.to_string());
        self.index.insert(text.to_string(), i);
        i
    }

    fn value_type(&mut self, kind: &str, unit: &str) -> pb::ValueType {
        pb::ValueType {
            r#type: self.get(kind),
            unit: self.get(unit),
        }
    }
}

/// Locations, functions and mappings, built as frames are met.
struct Tables {
    locations: Vec<pb::Location>,
    location_of: HashMap<FrameId, u64>,
    functions: Vec<pb::Function>,
    function_of: HashMap<(i64, i64), u64>,
    mappings: Vec<pb::Mapping>,
    mapping_of: HashMap<String, u64>,
}

impl Tables {
    fn location(&mut self, id: FrameId, input: &ExportInput, strings: &mut Strings) -> u64 {
        if let Some(&loc) = self.location_of.get(&id) {
            return loc;
        }
        let frame = input.resolved.frames.get(id);
        let name = strings.get(&function_name(frame));
        let (file, line) = match source_location(frame) {
            Some((file, line)) => (strings.get(file), i64::from(line)),
            None => (0, 0),
        };
        let function_id = *self.function_of.entry((name, file)).or_insert_with(|| {
            let fid = self.functions.len() as u64 + 1;
            self.functions.push(pb::Function {
                id: fid,
                name,
                system_name: name,
                filename: file,
                start_line: 0,
            });
            fid
        });
        let dso: &str = &frame.dso;
        let mapping_id = match self.mapping_of.get(dso) {
            Some(&m) => m,
            None => {
                let mid = self.mappings.len() as u64 + 1;
                let build_id = input
                    .build_ids
                    .iter()
                    .find(|(path, _)| path == dso)
                    .map_or(0, |(_, id)| strings.get(id));
                self.mappings.push(pb::Mapping {
                    id: mid,
                    filename: strings.get(dso),
                    build_id,
                    has_functions: true,
                    has_filenames: file != 0,
                    has_line_numbers: line != 0,
                    ..pb::Mapping::default()
                });
                self.mapping_of.insert(dso.to_string(), mid);
                mid
            }
        };
        let loc = self.locations.len() as u64 + 1;
        self.locations.push(pb::Location {
            id: loc,
            mapping_id,
            address: 0,
            line: vec![pb::Line { function_id, line }],
            is_folded: false,
        });
        self.location_of.insert(id, loc);
        loc
    }
}

/// The profile of an input (not yet encoded).
fn build(input: &ExportInput) -> Result<(pb::Profile, ExportSummary), ExportError> {
    let (kept, summary) = partition_events(input, "pprof", |k| k != EventKind::Tracepoint)?;
    let mut strings = Strings::new();
    let kept_count = kept.iter().filter(|&&k| k).count();
    // Columns: per kept event, (samples, periods).
    let mut column_of = vec![None; kept.len()];
    let mut sample_type = Vec::new();
    for (i, _) in kept.iter().enumerate().filter(|(_, k)| **k) {
        let event = input.event(i);
        let (period_kind, unit) = match event.kind {
            EventKind::Clock => ("cpu", "nanoseconds"),
            EventKind::OffCpu => ("off_cpu", "nanoseconds"),
            _ => (event.base_name(), "events"),
        };
        let (count_name, period_name) = if kept_count == 1 {
            ("samples".to_string(), period_kind.to_string())
        } else {
            let base = event.base_name();
            (format!("{base}_samples"), format!("{base}_{period_kind}"))
        };
        column_of[i] = Some(sample_type.len());
        sample_type.push(strings.value_type(&count_name, "count"));
        sample_type.push(strings.value_type(&period_name, unit));
    }
    let first_period = sample_type[1];
    let mut tables = Tables {
        locations: Vec::new(),
        location_of: HashMap::new(),
        functions: Vec::new(),
        function_of: HashMap::new(),
        mappings: Vec::new(),
        mapping_of: HashMap::new(),
    };
    let (pid_key, tid_key, comm_key) =
        (strings.get("pid"), strings.get("tid"), strings.get("comm"));
    let mut samples = Vec::with_capacity(input.resolved.samples.len());
    for s in &input.resolved.samples {
        let Some(col) = column_of.get(s.event).copied().flatten() else {
            continue;
        };
        let location_id = s
            .stack
            .iter()
            .map(|&id| tables.location(id, input, &mut strings))
            .collect();
        let mut value = vec![0i64; sample_type.len()];
        value[col] = i64::try_from(s.count).unwrap_or(i64::MAX);
        value[col + 1] = i64::try_from(s.period).unwrap_or(i64::MAX);
        let label = vec![
            pb::Label {
                key: pid_key,
                num: i64::from(s.pid),
                ..pb::Label::default()
            },
            pb::Label {
                key: tid_key,
                num: i64::from(s.tid),
                ..pb::Label::default()
            },
            pb::Label {
                key: comm_key,
                str: strings.get(&s.comm),
                ..pb::Label::default()
            },
        ];
        samples.push(pb::Sample {
            location_id,
            value,
            label,
        });
    }
    let profile = pb::Profile {
        sample_type,
        sample: samples,
        mapping: tables.mappings,
        location: tables.locations,
        function: tables.functions,
        period_type: Some(first_period),
        default_sample_type: first_period.r#type,
        string_table: strings.table,
        ..pb::Profile::default()
    };
    Ok((profile, summary))
}

impl Exporter for Pprof {
    fn write(&self, input: &ExportInput, out: &mut dyn Write) -> ExportResult {
        let (profile, summary) = build(input)?;
        let bytes = profile.encode_to_vec();
        let mut gz = GzEncoder::new(out, Compression::default());
        gz.write_all(&bytes)?;
        gz.finish()?.flush()?;
        Ok(summary)
    }
}
