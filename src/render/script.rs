//! `perf script` text: one line per sample in perf's default layout (or the
//! `-F` fields), callchains as indented frame lines, a raw record dump
//! (`-D`) and the header block (`--header`).
//!
//! The layout copies perf 6.1 byte for byte where it can, because
//! FlameGraph's `stackcollapse-perf.pl` and `inferno-collapse-perf` parse it:
//! `comm` right-aligned in 16 columns (unpadded when a callchain follows),
//! ` tid` in 5, `[cpu]` in 3 digits, `secs.usecs:` with `secs` in 5, the
//! period in 10, `event: `, then either ` addr sym+0xoff (dso)` on the same
//! line or, with a callchain, one `\t%16x sym+0xoff (dso)` line per frame and
//! an empty line after the sample.
//!
//! Names come from an [`AddrResolver`] so symbolization plugs in without this
//! module knowing how; [`Unresolved`] prints `[unknown]` for sym and dso as
//! perf does for addresses it cannot name. Samples arrive as plain
//! [`ScriptSample`]s: this module never reads the file.

use std::fmt;
use std::io::{self, Write};

/// A field of `-F` (perf's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    Comm,
    Tid,
    Pid,
    Time,
    Cpu,
    Event,
    Ip,
    Sym,
    SymOff,
    Dso,
    Period,
    Trace,
}

impl Field {
    /// Every field, in the enum's (and [`FIELD_NAMES`]') order.
    const ALL: [Field; 12] = {
        use Field::*;
        [
            Comm, Tid, Pid, Time, Cpu, Event, Ip, Sym, SymOff, Dso, Period, Trace,
        ]
    };

    /// perf's name of the field.
    fn name(self) -> &'static str {
        FIELD_NAMES[self as usize]
    }
}

/// perf's `-F` names, indexed by [`Field`].
const FIELD_NAMES: [&str; 12] = [
    "comm", "tid", "pid", "time", "cpu", "event", "ip", "sym", "symoff", "dso", "period", "trace",
];

/// A set of fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Fields(u32);

impl Fields {
    pub(crate) fn has(self, f: Field) -> bool {
        self.0 & (1 << f as u32) != 0
    }
    fn with(self, f: Field) -> Self {
        Fields(self.0 | 1 << f as u32)
    }
    fn without(self, f: Field) -> Self {
        Fields(self.0 & !(1 << f as u32))
    }
    fn of(list: &[Field]) -> Self {
        list.iter().fold(Fields(0), |s, &f| s.with(f))
    }
}

/// What `-F` asked for: perf's defaults, a list, or changes to the defaults
/// (`-F +cpu,-period`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum FieldSpec {
    /// perf's default fields for each event type.
    #[default]
    Default,
    /// Exactly these (an error if an event lacks one).
    Exactly(Fields),
    /// The defaults with these added and removed.
    Changed {
        /// Fields printed on top of the defaults (`+cpu`).
        add: Fields,
        /// Default fields left out (`-period`).
        remove: Fields,
    },
}

/// Why `-F` text does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FieldSpecError {
    #[error("unknown field '{0}' (known: {known})", known = FIELD_NAMES.join(","))]
    Unknown(String),
    #[error("mix of fields with and without +/- (use one or the other)")]
    Mixed,
}

impl FieldSpec {
    /// Parses `-F` text: `comm,tid,time` or `+cpu,-period`.
    pub(crate) fn parse(text: &str) -> Result<Self, FieldSpecError> {
        let mut list = Fields(0);
        let mut add = Fields(0);
        let mut remove = Fields(0);
        let mut changes = 0;
        let items: Vec<&str> = text.split(',').map(str::trim).collect();
        for item in &items {
            let (sign, name) = match item.as_bytes().first() {
                Some(b'+') => (Some(true), &item[1..]),
                Some(b'-') => (Some(false), &item[1..]),
                _ => (None, *item),
            };
            let field = Field::ALL
                .into_iter()
                .find(|f| f.name() == name)
                .ok_or_else(|| FieldSpecError::Unknown(name.to_string()))?;
            match sign {
                Some(true) => add = add.with(field),
                Some(false) => remove = remove.with(field),
                None => list = list.with(field),
            }
            changes += usize::from(sign.is_some());
        }
        match changes {
            0 => Ok(FieldSpec::Exactly(list)),
            n if n == items.len() => Ok(FieldSpec::Changed { add, remove }),
            _ => Err(FieldSpecError::Mixed),
        }
    }
}

/// What the printer needs to know about one event of the file.
#[derive(Clone, Debug)]
pub struct EventFormat {
    /// As perf prints it: `cpu-clock:ppp`, `sched:sched_switch`.
    pub name: String,
    /// The event is a tracepoint (`PERF_TYPE_TRACEPOINT`): its raw payload
    /// is printed through the tracepoint's format.
    pub is_tracepoint: bool,
    /// The samples carry pid and tid: `PERF_SAMPLE_TID` is in the
    /// attribute's sample_type (each `has_*` below reads its own bit).
    pub has_tid: bool,
    /// `PERF_SAMPLE_TIME`: the timestamp.
    pub has_time: bool,
    /// `PERF_SAMPLE_CPU`: the CPU the sample was taken on.
    pub has_cpu: bool,
    /// `PERF_SAMPLE_PERIOD`: the sample's weight.
    pub has_period: bool,
    /// `PERF_SAMPLE_IP`: the sampled instruction address.
    pub has_ip: bool,
    /// `PERF_SAMPLE_CALLCHAIN`: the stack (`-g`).
    pub has_callchain: bool,
    /// `PERF_SAMPLE_RAW`: the tracepoint payload.
    pub has_raw: bool,
}

/// An `-F` field the event's samples do not carry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// `-F` asked for a field the event's sample_type does not record.
    #[error("samples of event '{event}' do not have the {field} field (-F {field})")]
    MissingField {
        /// The event's name as printed (`cpu-clock:ppp`).
        event: String,
        /// The `-F` field's name (`cpu`, `period`, ...).
        field: &'static str,
    },
}

/// A sample as the printer needs it; absent values are `None`.
#[derive(Clone, Debug, Default)]
pub struct ScriptSample<'a> {
    /// Index into the printer's events.
    pub event: usize,
    /// The thread's name at the sample (from COMM records).
    pub comm: &'a str,
    /// Process id (thread group id), when the event samples `TID`.
    pub pid: Option<i32>,
    /// Thread id, when the event samples `TID`.
    pub tid: Option<i32>,
    /// CPU the sample was taken on, when the event samples `CPU`.
    pub cpu: Option<u32>,
    /// Nanoseconds.
    pub time: Option<u64>,
    /// The sample's weight (events or nanoseconds since the last sample),
    /// when the event samples `PERIOD`.
    pub period: Option<u64>,
    /// The sampled instruction address, when the event samples `IP`.
    pub ip: Option<u64>,
    /// True if `ip` is a kernel address (from the record's cpu mode).
    pub ip_kernel: bool,
    /// Leaf first, context markers removed: `(address, is_kernel)`.
    pub callchain: Option<&'a [(u64, bool)]>,
    /// Tracepoint payload.
    pub raw: Option<&'a [u8]>,
}

/// A name for an address, as perf prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedAddr {
    /// Symbol and the address's offset into it if known (`sym+0xoff`, or
    /// `sym` without it); `None` prints `[unknown]`.
    pub(crate) sym: Option<(String, Option<u64>)>,
    /// The binary: a path, `[kernel.kallsyms]`, `[unknown]`.
    pub(crate) dso: String,
    /// The address to print (perf prints callchain addresses of user
    /// binaries relative to the mapping: `addr - start + pgoff`).
    pub(crate) shown_addr: u64,
}

/// Turns addresses into names; implemented by the symbol stage.
pub trait AddrResolver {
    /// Names `addr` in process `pid`; `None` if it cannot.
    fn resolve(&mut self, pid: i32, addr: u64, kernel: bool) -> Option<ResolvedAddr>;
}

/// The resolver that knows nothing: every address is `[unknown]`.
pub struct Unresolved;

impl AddrResolver for Unresolved {
    fn resolve(&mut self, _pid: i32, _addr: u64, _kernel: bool) -> Option<ResolvedAddr> {
        None
    }
}

/// Prints samples of a file's events.
pub struct ScriptPrinter {
    events: Vec<(EventFormat, Fields)>,
    /// perf right-aligns event names to the longest name in the file.
    name_width: usize,
    /// Tracepoint formats (the file's TRACING_DATA) to render `trace` with.
    tracepoints: Option<crate::event::format_cache::FormatCache>,
}

impl ScriptPrinter {
    /// Decides the fields of each event; an `-F` field an event lacks is an
    /// error, as in perf.
    pub fn new(events: Vec<EventFormat>, spec: &FieldSpec) -> Result<Self, ScriptError> {
        let events = events
            .into_iter()
            .map(|e| {
                let fields = fields_for(&e, spec)?;
                Ok((e, fields))
            })
            .collect::<Result<Vec<_>, ScriptError>>()?;
        let name_width = events.iter().map(|(e, _)| e.name.len()).max().unwrap_or(0);
        Ok(ScriptPrinter {
            events,
            name_width,
            tracepoints: None,
        })
    }

    /// Renders tracepoint payloads with these formats (else their size).
    pub(crate) fn with_tracepoint_formats(
        mut self,
        formats: crate::event::format_cache::FormatCache,
    ) -> Self {
        self.tracepoints = Some(formats);
        self
    }

    /// Writes one sample: a line, or a line, its frames and an empty line.
    pub fn write_sample(
        &self,
        out: &mut impl Write,
        s: &ScriptSample<'_>,
        resolver: &mut dyn AddrResolver,
    ) -> io::Result<()> {
        let Some((event, f)) = self.events.get(s.event) else {
            return Ok(());
        };
        let chain = s
            .callchain
            .filter(|_| event.has_callchain && f.has(Field::Ip));
        if f.has(Field::Comm) {
            if chain.is_some() {
                write!(out, "{} ", s.comm)?;
            } else {
                write!(out, "{:>16} ", s.comm)?;
            }
        }
        let pid = s.pid.unwrap_or(-1);
        let tid = s.tid.unwrap_or(-1);
        match (f.has(Field::Pid), f.has(Field::Tid)) {
            (true, true) => write!(out, "{pid:>5}/{tid:<5} ")?,
            (true, false) => write!(out, "{pid:>5} ")?,
            (false, true) => write!(out, "{tid:>5} ")?,
            (false, false) => {}
        }
        if f.has(Field::Cpu) {
            write!(out, "[{:03}] ", s.cpu.unwrap_or(0))?;
        }
        if f.has(Field::Time) {
            let t = s.time.unwrap_or(0);
            write!(
                out,
                "{:>5}.{:06}: ",
                t / 1_000_000_000,
                t % 1_000_000_000 / 1000
            )?;
        }
        if f.has(Field::Period) {
            write!(out, "{:>10} ", s.period.unwrap_or(0))?;
        }
        if f.has(Field::Event) {
            write!(out, "{:>w$}: ", event.name, w = self.name_width)?;
        }
        if f.has(Field::Trace)
            && let Some(raw) = s.raw
        {
            match &self.tracepoints {
                Some(formats) => {
                    let mut text = String::new();
                    formats.render(raw, &mut text);
                    out.write_all(text.as_bytes())?;
                }
                // Without the file's formats the payload size says what is there.
                None => write!(out, "[{} bytes of raw data]", raw.len())?,
            }
        }
        let frame = Frame {
            f: *f,
            pid,
            absolute: false,
        };
        match chain {
            Some(chain) => {
                writeln!(out)?;
                // A chain the kernel left empty prints the sampled IP.
                let ip_alone = s.ip.filter(|_| chain.is_empty());
                let lines = ip_alone.map(|ip| (ip, s.ip_kernel));
                for (addr, kernel) in lines.into_iter().chain(chain.iter().copied()) {
                    write!(out, "\t")?;
                    frame.write(out, addr, kernel, resolver)?;
                    writeln!(out)?;
                }
                writeln!(out)
            }
            None => {
                if f.has(Field::Ip)
                    && let Some(ip) = s.ip
                {
                    write!(out, " ")?;
                    // perf prints the sampled IP itself, not relative to
                    // its binary as in callchains.
                    let frame = Frame {
                        absolute: true,
                        ..frame
                    };
                    frame.write(out, ip, s.ip_kernel, resolver)?;
                }
                writeln!(out)
            }
        }
    }
}

struct Frame {
    f: Fields,
    pid: i32,
    /// Print the address as it is, not `ResolvedAddr::shown_addr`.
    absolute: bool,
}

impl Frame {
    /// `%16x sym+0xoff (dso)`, each part as the fields ask.
    fn write(
        &self,
        out: &mut impl Write,
        addr: u64,
        kernel: bool,
        resolver: &mut dyn AddrResolver,
    ) -> io::Result<()> {
        let resolved = resolver.resolve(self.pid, addr, kernel);
        let shown = match &resolved {
            Some(r) if !self.absolute => r.shown_addr,
            _ => addr,
        };
        write!(out, "{shown:>16x}")?;
        if self.f.has(Field::Sym) {
            match resolved.as_ref().and_then(|r| r.sym.as_ref()) {
                Some((name, Some(off))) if self.f.has(Field::SymOff) => {
                    write!(out, " {name}+0x{off:x}")?
                }
                Some((name, _)) => write!(out, " {name}")?,
                None => write!(out, " [unknown]")?,
            }
        }
        if self.f.has(Field::Dso) {
            let dso = resolved.as_ref().map_or("[unknown]", |r| r.dso.as_str());
            write!(out, " ({dso})")?;
        }
        Ok(())
    }
}

fn fields_for(e: &EventFormat, spec: &FieldSpec) -> Result<Fields, ScriptError> {
    use Field::*;
    let available = [
        (Comm, true),
        (Tid, e.has_tid),
        (Pid, e.has_tid),
        (Time, e.has_time),
        (Cpu, e.has_cpu),
        (Event, true),
        (Ip, e.has_ip || e.has_callchain),
        (Sym, e.has_ip || e.has_callchain),
        (SymOff, e.has_ip || e.has_callchain),
        (Dso, e.has_ip || e.has_callchain),
        (Period, e.has_period),
        (Trace, e.has_raw),
    ];
    // perf adds the frames to a tracepoint's line when it has a callchain.
    let defaults = if e.is_tracepoint && e.has_callchain {
        Fields::of(&[Comm, Tid, Cpu, Time, Event, Trace, Ip, Sym, SymOff, Dso])
    } else if e.is_tracepoint {
        Fields::of(&[Comm, Tid, Cpu, Time, Event, Trace])
    } else {
        Fields::of(&[Comm, Tid, Cpu, Time, Period, Event, Ip, Sym, SymOff, Dso])
    };
    let drop_missing = |mut fields: Fields| {
        for (field, ok) in available {
            if !ok {
                fields = fields.without(field);
            }
        }
        fields
    };
    match spec {
        FieldSpec::Default => Ok(drop_missing(defaults)),
        FieldSpec::Changed { add, remove } => {
            let fields = drop_missing(Fields(defaults.0 | add.0));
            Ok(Fields(fields.0 & !remove.0))
        }
        FieldSpec::Exactly(fields) => {
            for (field, ok) in available {
                // Tracepoints without raw data have nothing to print for
                // `trace`; everything else must be in the sample.
                if fields.has(field) && !ok && field != Trace {
                    return Err(ScriptError::MissingField {
                        event: e.name.clone(),
                        field: field.name(),
                    });
                }
            }
            Ok(*fields)
        }
    }
}

/// `perf script -D`: one record in file order, with its offset, a hex dump
/// and its type.
pub(crate) fn write_raw_record(
    out: &mut impl Write,
    file: &str,
    offset: u64,
    header: &[u8],
    body: &[u8],
    record_type: u32,
    type_name: &str,
) -> io::Result<()> {
    let size = header.len() + body.len();
    writeln!(
        out,
        "\n0x{offset:x}@{file} [0x{size:x}]: event: {record_type}"
    )?;
    writeln!(out, ".\n. ... raw event: size {size} bytes")?;
    let bytes: Vec<u8> = header.iter().chain(body).copied().collect();
    for (i, chunk) in bytes.chunks(16).enumerate() {
        write!(out, ".  {:04x}: ", i * 16)?;
        for b in chunk {
            write!(out, " {b:02x}")?;
        }
        for _ in chunk.len()..16 {
            write!(out, "   ")?;
        }
        write!(out, "  ")?;
        for &b in chunk {
            let c = if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '.'
            };
            write!(out, "{c}")?;
        }
        writeln!(out, "{}", " ".repeat(16 - chunk.len()))?;
    }
    writeln!(out, "\n0x{offset:x} [0x{size:x}]: {type_name}")
}

/// The `--header` block's lines, each printed as `# {line}`.
pub(crate) struct HeaderBlock<'a> {
    pub(crate) lines: &'a [(String, String)],
}

impl fmt::Display for HeaderBlock<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "# ========")?;
        for (key, value) in self.lines {
            writeln!(f, "# {key} : {value}")?;
        }
        writeln!(f, "# ========")?;
        writeln!(f, "#")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw_event() -> EventFormat {
        EventFormat {
            name: "cpu-clock:ppp".into(),
            is_tracepoint: false,
            has_tid: true,
            has_time: true,
            has_cpu: false,
            has_period: true,
            has_ip: true,
            has_callchain: false,
            has_raw: false,
        }
    }

    /// A sample of thread `tid` at `time` (ns), nothing else known.
    fn sample(comm: &str, tid: i32, time: u64) -> ScriptSample<'_> {
        ScriptSample {
            comm,
            tid: Some(tid),
            time: Some(time),
            ..Default::default()
        }
    }

    /// One sample as `spec` prints it for `event`.
    fn render(event: EventFormat, spec: &FieldSpec, s: &ScriptSample<'_>) -> String {
        let p = ScriptPrinter::new(vec![event], spec).unwrap();
        let mut out = Vec::new();
        p.write_sample(&mut out, s, &mut Unresolved).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn default_line_matches_perf_layout() {
        let s = ScriptSample {
            pid: Some(13429),
            period: Some(1001001),
            ip: Some(0x7f1d817cb829),
            ..sample("calls", 13429, 614_927_935_123)
        };
        // perf 6.1 prints (with symbols) "... (/usr/lib/.../libc.so.6)".
        assert_eq!(
            render(sw_event(), &FieldSpec::Default, &s),
            "           calls 13429   614.927935:    1001001 cpu-clock:ppp:      7f1d817cb829 [unknown] ([unknown])\n"
        );
    }

    #[test]
    fn callchain_sample_has_frame_lines_and_blank_line() {
        let mut e = sw_event();
        e.has_callchain = true;
        let chain = [(0xffffffff8138639f, true), (0x101829, false)];
        let s = ScriptSample {
            period: Some(1001001),
            ip: Some(0xffffffff8138639f),
            callchain: Some(&chain),
            ..sample("calls", 13162, 600_855_999_000)
        };
        assert_eq!(
            render(e, &FieldSpec::Default, &s),
            "calls 13162   600.855999:    1001001 cpu-clock:ppp: \n\
             \tffffffff8138639f [unknown] ([unknown])\n\
             \t          101829 [unknown] ([unknown])\n\n"
        );
    }

    #[test]
    fn pid_tid_fields() {
        let spec = FieldSpec::parse("comm,pid,tid,time").unwrap();
        let s = ScriptSample {
            pid: Some(13396),
            ..sample("threads", 13399, 613_352_178_999)
        };
        let line = render(sw_event(), &spec, &s);
        assert_eq!(line, "         threads 13396/13399   613.352178: \n");
    }

    #[test]
    fn field_spec_errors_and_changes() {
        assert!(FieldSpec::parse("comm,bogus").is_err());
        assert!(FieldSpec::parse("+cpu,comm").is_err());
        let spec = FieldSpec::parse("-period").unwrap();
        let s = ScriptSample {
            ip: Some(1),
            ..sample("x", 1, 0)
        };
        assert!(!render(sw_event(), &spec, &s).contains("    0 cpu"));
        let cpu = FieldSpec::parse("comm,cpu").unwrap();
        let err = ScriptPrinter::new(vec![sw_event()], &cpu).err().unwrap();
        assert!(err.to_string().contains("cpu"), "{err}");
    }
}
