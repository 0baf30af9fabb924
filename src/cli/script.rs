//! `scry script`: the samples of a perf.data file, one per line, in perf
//! script's layout; `-D` dumps the records in file order, `--header` prints
//! the header features first.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use linux_perf_data::linux_perf_event_reader::constants::{
    PERF_CONTEXT_GUEST_KERNEL, PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX,
};
use linux_perf_data::linux_perf_event_reader::{
    CpuMode, EventRecord, PerfEventType, SampleFormat, SampleRecord,
};

use scry::data::handler::dispatch;
use scry::data::reader::{EventDesc, PerfReader, Record, record_type_name};
use scry::data::threads::ThreadNames;
use scry::render::script::{
    AddrResolver, EventFormat, FieldSpec, ResolvedAddr, ScriptPrinter, ScriptSample,
    write_raw_record,
};
use scry::symbol::ProcKallsyms;
use scry::symbol::{Reach, ResolveOptions, Resolver};

#[derive(Args, Debug)]
pub(crate) struct ScriptArgs {
    /// Input file; `-` reads the pipe format from stdin
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// Fields to print (perf's names): comm,tid,pid,time,cpu,event,ip,sym,
    /// symoff,dso,period,trace; or +field,-field to change the defaults.
    /// Default: perf's default fields for each event type
    #[arg(short = 'F', long = "fields", value_parser = FieldSpec::parse)]
    fields: Option<FieldSpec>,
    /// Dump every record in file order: offset, size, hex bytes, type
    #[arg(short = 'D', long = "dump-raw-trace")]
    dump_raw: bool,
    /// Print the header (host, kernel, command line, events) before the samples
    #[arg(long)]
    header: bool,
    /// Print only the header
    #[arg(long = "header-only")]
    header_only: bool,
}

pub(crate) fn run(args: ScriptArgs) -> anyhow::Result<()> {
    // `-` is standard input (a file redirected, or a pipe read as it comes).
    let mut reader = PerfReader::open(&args.input)?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.header || args.header_only {
        super::header::write_header(&mut out, &reader)?;
        if args.header_only {
            out.flush()?;
            return Ok(());
        }
    }
    if args.dump_raw {
        let file = reader.file_name().to_owned();
        reader.walk_file_order(|frame, head, body| {
            let name = record_type_name(frame.record_type);
            write_raw_record(
                &mut out,
                &file,
                frame.offset,
                head,
                body,
                frame.record_type,
                &name,
            )
        })?;
        out.flush()?;
        return Ok(());
    }
    let spec = args.fields.unwrap_or_default();
    let formats = reader.events().iter().map(event_format).collect();
    let mut printer = ScriptPrinter::new(formats, &spec).context("-F")?;
    if let Some(blob) = reader.tracing_data().map(<[u8]>::to_vec) {
        // `%pS` resolves with this machine's kallsyms, as perf script does.
        let formats = scry::event::format_cache::FormatCache::from_tracing_data(&blob)
            .with_context(|| format!("{}: TRACING_DATA section", reader.file_name()))?
            .with_kernel_symbols(Box::new(ProcKallsyms::default()));
        printer = printer.with_tracepoint_formats(formats);
    }
    let mut comms: ThreadNames = ThreadNames::default();
    let mut chain = Vec::new();
    let mut symbols = SampleSymbols::new(&reader);
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
        printer.write_sample(&mut out, &s, &mut symbols)?;
    }
    out.flush()?;
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
