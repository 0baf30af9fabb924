//! `perf script` over a perf.data file: the samples one per line in perf
//! script's layout (`script::ScriptPrinter`), each named as it comes by a
//! resolver that sees every record; `-D` dumps the records in file order,
//! `--header` writes the header features first. `scry script` calls it
//! with stdout; a web viewer can with a buffer.
//!
//! Callchains print as the file holds them, except the user stack copied
//! with `--call-graph dwarf` or `-g`'s fp+stack, which is unwound or joined
//! to the frame-pointer chain as `report` shows it.

use std::io::{self, Write};

use linux_perf_data::linux_perf_event_reader::constants::{
    PERF_CONTEXT_GUEST_KERNEL, PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX,
};
use linux_perf_data::linux_perf_event_reader::{
    CpuMode, EventRecord, PerfEventType, SampleFormat, SampleRecord,
};

use super::header::{HeaderError, write_header};
use super::script::{
    AddrResolver, EventFormat, FieldSpec, ResolvedAddr, ScriptError, ScriptPrinter, ScriptSample,
    write_raw_record,
};
use crate::data::handler::dispatch;
use crate::data::reader::{EventDesc, PerfReader, ReadError, Record, record_type_name};
use crate::data::threads::ThreadNames;
use crate::event::format::FormatError;
use crate::event::format_cache::FormatCache;
use crate::symbol::{ProcKallsyms, Reach, ResolveOptions, Resolver};

/// What `scry script` prints.
#[derive(Debug, Default)]
pub(crate) struct ScriptOptions {
    /// `-F`: the fields; none for perf's defaults of each event type.
    pub(crate) fields: Option<FieldSpec>,
    /// `-D`: every record in file order instead of the samples.
    pub(crate) dump_raw: bool,
    /// `--header`: the header features first.
    pub(crate) header: bool,
    /// `--header-only`: the header features alone.
    pub(crate) header_only: bool,
}

/// Why the script cannot be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ScriptFileError {
    /// The file (its errors name it).
    #[error("{0}")]
    Read(#[from] ReadError),
    /// The header block.
    #[error("{0}")]
    Header(#[from] HeaderError),
    /// `-F` asks for what an event's samples lack.
    #[error("-F")]
    Fields(#[source] ScriptError),
    /// The file's tracepoint formats do not parse.
    #[error("{file}: TRACING_DATA section")]
    TracingData {
        /// The file.
        file: String,
        /// What is wrong in the section.
        #[source]
        err: FormatError,
    },
    /// Writing the lines.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Writes `reader`'s samples (or its records with `dump_raw`, or its
/// header) to `out`, as `opts` asks.
pub(crate) fn write_script(
    reader: &mut PerfReader,
    out: &mut impl Write,
    opts: &ScriptOptions,
) -> Result<(), ScriptFileError> {
    if opts.header || opts.header_only {
        write_header(out, reader)?;
        if opts.header_only {
            return Ok(());
        }
    }
    if opts.dump_raw {
        let file = reader.file_name().to_owned();
        reader.walk_file_order(|frame, head, body| {
            let name = record_type_name(frame.record_type);
            write_raw_record(
                out,
                &file,
                frame.offset,
                head,
                body,
                frame.record_type,
                &name,
            )
        })?;
        return Ok(());
    }
    let default = FieldSpec::default();
    let spec = opts.fields.as_ref().unwrap_or(&default);
    let formats = reader.events().iter().map(event_format).collect();
    let mut printer = ScriptPrinter::new(formats, spec).map_err(ScriptFileError::Fields)?;
    if let Some(blob) = reader.tracing_data().map(<[u8]>::to_vec) {
        // `%pS` resolves with this machine's kallsyms, as perf script does.
        let formats = FormatCache::from_tracing_data(&blob)
            .map_err(|err| ScriptFileError::TracingData {
                file: reader.file_name().to_string(),
                err,
            })?
            .with_kernel_symbols(Box::new(ProcKallsyms::default()));
        printer = printer.with_tracepoint_formats(formats);
    }
    let mut comms: ThreadNames = ThreadNames::default();
    let mut chain = Vec::new();
    let mut symbols = SampleSymbols::new(reader);
    while let Some((record, id)) = reader.next_record_with_id()? {
        let Record::Event { attr_index, record } = record else {
            continue;
        };
        dispatch(&mut comms, attr_index, &record, &id);
        dispatch(&mut symbols.resolver, attr_index, &record, &id);
        let EventRecord::Sample(sample) = &record else {
            continue;
        };
        let comm = comms.get(sample.tid.unwrap_or(-1));
        let callchain = if sample.user_stack.is_some() && sample.user_regs.is_some() {
            // The user stack as report shows it: unwound (`--call-graph
            // dwarf`) or joined to the frame-pointer chain (`-g`).
            let pid = sample.pid.unwrap_or(-1);
            let reach = symbols.resolver.sample_addresses(pid, sample, &mut chain);
            reach != Reach::NoCallchain
        } else {
            callchain(sample, &mut chain)
        };
        let raw = sample.raw.map(|r| r.as_slice());
        let s = ScriptSample {
            event: attr_index,
            comm: &comm,
            pid: sample.pid,
            tid: sample.tid,
            cpu: sample.cpu,
            time: sample.timestamp,
            period: sample.period,
            ip: sample.ip,
            ip_kernel: is_kernel(sample.cpu_mode),
            callchain: callchain.then_some(chain.as_slice()),
            raw: raw.as_deref(),
        };
        symbols.take_sample();
        printer.write_sample(out, &s, &mut symbols)?;
    }
    Ok(())
}

/// The symbol stage behind the printer's per-address interface: the
/// resolver sees every record (maps, comms) and resolves each sample as it
/// comes; each address of the sample is then looked up by itself
/// (`Resolver::address`), with its offset into the function (`sym+0xoff`)
/// and the binary-relative address perf prints in callchains. Addresses
/// it cannot name print as `[unknown]`, as perf does.
struct SampleSymbols {
    resolver: Resolver,
}

impl SampleSymbols {
    fn new(reader: &PerfReader) -> Self {
        let mut resolver = Resolver::new(&ResolveOptions::default());
        if let Ok(info) = reader.build_ids_raw() {
            resolver.set_header_build_ids(info);
        }
        SampleSymbols { resolver }
    }

    /// Names the addresses of the sample the resolver was just fed.
    fn take_sample(&mut self) {
        self.resolver.take_samples();
    }
}

impl AddrResolver for SampleSymbols {
    fn resolve(&mut self, pid: i32, addr: u64, kernel: bool) -> Option<ResolvedAddr> {
        let named = self.resolver.address(pid, addr, kernel)?;
        let frame = self.resolver.frames().get(named.frame);
        Some(ResolvedAddr {
            sym: frame
                .sym
                .as_ref()
                .map(|name| (name.to_string(), named.symoff)),
            dso: frame.dso.to_string(),
            shown_addr: named.shown,
        })
    }
}

fn is_kernel(mode: CpuMode) -> bool {
    matches!(mode, CpuMode::Kernel | CpuMode::GuestKernel)
}

/// Fills `chain` with the sample's frames, leaf first, without the context
/// markers; false if the sample has no callchain.
fn callchain(sample: &SampleRecord<'_>, chain: &mut Vec<(u64, bool)>) -> bool {
    let Some(raw) = &sample.callchain else {
        return false;
    };
    chain.clear();
    let mut kernel = is_kernel(sample.cpu_mode);
    for i in 0..raw.len() {
        let Some(addr) = raw.get(i) else { break };
        if addr >= PERF_CONTEXT_MAX {
            kernel = addr == PERF_CONTEXT_KERNEL || addr == PERF_CONTEXT_GUEST_KERNEL;
            continue;
        }
        chain.push((addr, kernel));
    }
    true
}

fn event_format(e: &EventDesc) -> EventFormat {
    let st = e.attr.sample_format;
    EventFormat {
        name: e.name.clone(),
        is_tracepoint: matches!(e.attr.type_, PerfEventType::Tracepoint(_)),
        has_tid: st.contains(SampleFormat::TID),
        has_time: st.contains(SampleFormat::TIME),
        has_cpu: st.contains(SampleFormat::CPU),
        has_period: st.contains(SampleFormat::PERIOD),
        has_ip: st.contains(SampleFormat::IP),
        has_callchain: st.contains(SampleFormat::CALLCHAIN),
        has_raw: st.contains(SampleFormat::RAW),
    }
}
