//! The header block `perf script --header` and `perf report --header`
//! print before their output (`# hostname : ...`, `# cmdline : ...`,
//! `# event : name = ...`), from the file's header features; lines of
//! features the file lacks are left out.

use std::io::Write;

use super::script::HeaderBlock;
use crate::data::reader::{PerfReader, ReadError};

/// Why the header block cannot be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum HeaderError {
    /// The file's features (its errors name it).
    #[error("{0}")]
    Read(#[from] ReadError),
    /// Writing the block.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// perf's names for the `sample_type` bits, in bit order.
const SAMPLE_TYPE_NAMES: [&str; 25] = [
    "IP",
    "TID",
    "TIME",
    "ADDR",
    "READ",
    "CALLCHAIN",
    "ID",
    "CPU",
    "PERIOD",
    "STREAM_ID",
    "RAW",
    "BRANCH_STACK",
    "REGS_USER",
    "STACK_USER",
    "WEIGHT",
    "DATA_SRC",
    "IDENTIFIER",
    "TRANSACTION",
    "REGS_INTR",
    "PHYS_ADDR",
    "AUX",
    "CGROUP",
    "DATA_PAGE_SIZE",
    "CODE_PAGE_SIZE",
    "WEIGHT_STRUCT",
];

/// The block of `reader`'s header features, `# key : value` lines.
pub(crate) fn write_header(out: &mut impl Write, reader: &PerfReader) -> Result<(), HeaderError> {
    let info = reader.info()?;
    let layout = reader.layout();
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut line = |k: &str, v: String| lines.push((k.to_owned(), v));
    if !layout.pipe {
        line("data offset", layout.data.offset.to_string());
        line("data size", layout.data.size.to_string());
        line("feat offset", layout.features_offset().to_string());
    }
    let strings = [
        ("hostname", &info.hostname),
        ("os release", &info.os_release),
        ("perf version", &info.perf_version),
        ("arch", &info.arch),
    ];
    for (key, value) in strings {
        if let Some(v) = value {
            line(key, v.clone());
        }
    }
    if let Some((online, avail)) = info.nr_cpus {
        line("nrcpus online", online.to_string());
        line("nrcpus avail", avail.to_string());
    }
    if let Some(v) = &info.cpu_desc {
        line("cpudesc", v.clone());
    }
    if let Some(v) = &info.cpu_id {
        line("cpuid", v.clone());
    }
    if let Some(kb) = info.total_mem_kb {
        line("total memory", format!("{kb} kB"));
    }
    if let Some(argv) = &info.cmdline {
        line("cmdline", argv.join(" "));
    }
    for e in reader.events() {
        let bits = e.attr.sample_format.bits();
        let sample_type: Vec<&str> = SAMPLE_TYPE_NAMES
            .iter()
            .enumerate()
            .filter(|(i, _)| bits >> i & 1 == 1)
            .map(|(_, n)| *n)
            .collect();
        let ids: Vec<String> = e.ids.iter().map(u64::to_string).collect();
        line(
            "event",
            format!(
                "name = {}, id = {{ {} }}, sample_type = {}",
                e.name,
                ids.join(", "),
                sample_type.join("|")
            ),
        );
    }
    for (path, build_id) in &info.build_ids {
        line("build id", format!("{build_id} {path}"));
    }
    if let Some((first, last)) = info.sample_time {
        let secs = |t: u64| format!("{}.{:06}", t / 1_000_000_000, t % 1_000_000_000 / 1000);
        line("time of first sample", secs(first));
        line("time of last sample", secs(last));
        let ms = last.saturating_sub(first) as f64 / 1e6;
        line("sample duration", format!("{ms:10.3} ms"));
    }
    line("features", info.features.join(" "));
    write!(out, "{}", HeaderBlock { lines: &lines })?;
    Ok(())
}
