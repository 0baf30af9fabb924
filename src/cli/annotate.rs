//! `scry annotate [-i perf.data] [SYMBOL]`: each sample's address →
//! `analysis::annotate` (samples per function and offset) → each hot
//! function's code (`symbol::code`: the binary on disk, checked against the
//! build id the file recorded; kernel code from /proc/kcore; JIT code from
//! the bytes its process's jitdump file holds) →
//! `render::annotate` in `perf annotate --stdio`'s layout, hottest
//! function first.
//!
//! Code that cannot be read is named with the reason under its function's
//! header (kernel code without root, JIT code gone with its process when
//! only a perf map names it, a
//! binary rebuilt since the recording); samples in no named function are
//! counted at the end, per binary with that reason where it has one (a
//! rebuilt binary's symbols are not read, so its samples land there); a
//! SYMBOL without samples in the file is bad input (exit 2).

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use scry::analysis::annotate::{AddressCollector, FunctionHits};
use scry::data::reader::{PerfReader, Record};
use scry::model::sample::FrameKind;
use scry::render::annotate::{FunctionListing, SourceCache, write_function};
use scry::symbol::code::{
    CodeError, FunctionCode, JitDump, Unavailable, function_code, jit_code, kernel_code,
};
use scry::symbol::{Kallsyms, ResolveOptions, build_id_matches, read_build_id};

#[derive(Args, Debug)]
pub(crate) struct AnnotateArgs {
    /// Input file (perf.data format). Default perf.data.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// Annotate only this function (as `scry report` names it). Default:
    /// every sampled function, hottest first.
    symbol: Option<String>,
    /// perf's text layout on standard output (the only one: accepted so
    /// that perf's command lines work).
    #[arg(long)]
    stdio: bool,
    /// This event's samples. Default: the event of the first sample.
    #[arg(long = "event", value_name = "NAME")]
    event: Option<String>,
    /// At most N functions, the hottest. Default 0: all.
    #[arg(long = "top", value_name = "N", default_value_t = 0)]
    top: usize,
    /// Keep raw (mangled) symbol names.
    #[arg(long = "no-demangle")]
    no_demangle: bool,
}

pub(crate) fn run(args: AnnotateArgs) -> anyhow::Result<()> {
    let mut out = BufWriter::new(std::io::stdout().lock());
    write_annotation(&args, &mut out)?;
    out.flush()?;
    Ok(())
}

/// `scry annotate -i INPUT --event EVENT SYMBOL`'s text, as lines: what
/// `a` in the report browser shows (an error is its one line).
pub(crate) fn annotation_lines(
    input: &Path,
    symbol: &str,
    event: &str,
    demangle: bool,
) -> Vec<String> {
    let args = AnnotateArgs {
        input: input.to_path_buf(),
        symbol: Some(symbol.to_string()),
        stdio: true,
        event: Some(event.to_string()),
        top: 0,
        no_demangle: !demangle,
    };
    let mut text = Vec::new();
    match write_annotation(&args, &mut text) {
        Ok(()) => String::from_utf8_lossy(&text)
            .lines()
            .map(str::to_string)
            .collect(),
        Err(e) => vec![format!("scry: {e:#}")],
    }
}

fn write_annotation(args: &AnnotateArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let path = &args.input;
    // The reader's errors name the file.
    let mut reader = PerfReader::open(path)?;
    let names: Vec<String> = reader.events().iter().map(|e| e.name.clone()).collect();
    let event = match &args.event {
        Some(name) => Some(
            names
                .iter()
                .position(|n| n == name || n.split(':').next() == Some(name))
                .with_context(|| {
                    format!(
                        "--event: {} has no event '{name}' (it has: {})",
                        path.display(),
                        names.join(", ")
                    )
                })?,
        ),
        None => None,
    };
    let options = ResolveOptions {
        demangle: !args.no_demangle,
        ..ResolveOptions::default()
    };
    let mut collector = AddressCollector::new(&options, event);
    let build_ids = reader.build_ids_raw().unwrap_or_default();
    collector.set_header_build_ids(build_ids.clone());
    while let Some(record) = reader.next_record()? {
        if let Record::Event { attr_index, record } = record {
            collector.handle_record(attr_index, &record);
        }
    }
    let event_name = collector
        .event()
        .and_then(|e| names.get(e))
        .cloned()
        .unwrap_or_default();
    let profile = collector.finish();
    // Why samples are in no named function, where the file can say: a
    // binary rebuilt or gone since the recording.
    let unnamed_why: Vec<String> = profile
        .unnamed_in
        .iter()
        .filter_map(|(dso, n)| {
            check_build_id(dso, &build_ids)
                .err()
                .map(|why| format!("{n} in {dso}: {why}"))
        })
        .collect();
    let mut functions: Vec<&FunctionHits> = profile.functions.iter().collect();
    if functions.is_empty() {
        match unnamed_why.is_empty() {
            true => anyhow::bail!("{}: no samples in a named function", path.display()),
            false => anyhow::bail!(
                "{}: no samples in a named function ({})",
                path.display(),
                unnamed_why.join("; ")
            ),
        }
    }
    if let Some(symbol) = &args.symbol {
        let hottest: Vec<String> = functions
            .iter()
            .take(5)
            .filter_map(|f| f.frame.sym.as_deref().map(str::to_string))
            .collect();
        functions.retain(|f| {
            f.frame
                .sym
                .as_deref()
                .is_some_and(|s| names_match(s, symbol))
        });
        if functions.is_empty() {
            anyhow::bail!(
                "{}: no samples in function '{symbol}' (the hottest: {})",
                path.display(),
                hottest.join(", ")
            );
        }
    }
    if args.top > 0 {
        functions.truncate(args.top);
    }
    let mut readers = CodeReaders::default();
    let mut sources = SourceCache::default();
    for hits in functions {
        let code = read_code(hits, &build_ids, &mut readers);
        let listing = FunctionListing {
            hits,
            code: code.as_ref(),
            event: &event_name,
        };
        write_function(out, &listing, &mut sources)?;
    }
    if profile.unnamed > 0 {
        writeln!(
            out,
            "# {} of {} samples are in no named function (not shown)",
            profile.unnamed, profile.samples
        )?;
        for why in &unnamed_why {
            writeln!(out, "#   {why}")?;
        }
    }
    Ok(())
}

/// A function name as given on the command line: the whole name, or the
/// name without its parameter list (`work::Hot<int>::spin`).
fn names_match(name: &str, wanted: &str) -> bool {
    name == wanted || name.split_once('(').is_some_and(|(base, _)| base == wanted)
}

/// What the functions' code is read from, read once per command: the
/// kernel's symbols, and each jitdump file parsed (None: unreadable).
#[derive(Default)]
struct CodeReaders {
    kallsyms: Option<Option<Kallsyms>>,
    jitdumps: HashMap<PathBuf, Option<JitDump>>,
}

/// The code of a sampled function, or why it cannot be shown.
fn read_code(
    hits: &FunctionHits,
    build_ids: &[(Vec<u8>, Vec<u8>)],
    readers: &mut CodeReaders,
) -> Result<FunctionCode, Unavailable> {
    let dso = &*hits.frame.dso;
    if hits.frame.kind == FrameKind::Kernel {
        let table = readers
            .kallsyms
            .get_or_insert_with(|| Kallsyms::from_proc().ok());
        let size = table
            .as_ref()
            .and_then(|k| k.next_start(hits.start))
            .map_or(4096, |next| next.saturating_sub(hits.start).min(1 << 16));
        return match kernel_code(hits.start, size) {
            Ok(bytes) => Ok(FunctionCode {
                symbol: hits.frame.sym.as_deref().unwrap_or("?").to_string(),
                svma: hits.start,
                bytes,
                lines: Vec::new(),
            }),
            Err(CodeError::Open { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Err(Unavailable::NoKcore)
            }
            Err(CodeError::Open { source, .. })
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                Err(Unavailable::KcoreNeedsRoot)
            }
            Err(e) => Err(Unavailable::Kernel(e)),
        };
    }
    if dso.starts_with('[') || dso.starts_with("/tmp/perf-") || dso.starts_with("//anon") {
        if let Some(jitdump) = hits.jitdump.as_deref() {
            let parsed = readers
                .jitdumps
                .entry(jitdump.to_path_buf())
                .or_insert_with(|| JitDump::read(jitdump));
            let code = parsed.as_ref().and_then(|p| jit_code(p, hits.start));
            return code.ok_or_else(|| Unavailable::NotInJitdump {
                dso: dso.to_owned(),
                jitdump: jitdump.display().to_string(),
                addr: hits.start,
            });
        }
        return Err(Unavailable::NotInAFile {
            dso: dso.to_owned(),
        });
    }
    check_build_id(dso, build_ids)?;
    function_code(Path::new(dso), hits.start).map_err(Unavailable::Code)
}

/// Whether the binary at `dso` is the one the file recorded (by the build
/// id its header holds for it): `Rebuilt` or `Missing` when not; fine when
/// the file recorded none.
fn check_build_id(dso: &str, build_ids: &[(Vec<u8>, Vec<u8>)]) -> Result<(), Unavailable> {
    let path = Path::new(dso);
    if let Some((_, recorded)) = build_ids.iter().find(|(file, _)| file == dso.as_bytes())
        && !recorded.iter().all(|&b| b == 0)
    {
        let hex = |id: &[u8]| id.iter().map(|b| format!("{b:02x}")).collect::<String>();
        match read_build_id(path) {
            Some(actual) if build_id_matches(recorded, &actual) => {}
            Some(actual) => {
                return Err(Unavailable::Rebuilt {
                    dso: dso.to_owned(),
                    now: hex(&actual),
                    recorded: hex(recorded).trim_end_matches('0').to_owned(),
                });
            }
            None => {
                return Err(Unavailable::Missing {
                    dso: dso.to_owned(),
                });
            }
        }
    }
    Ok(())
}
