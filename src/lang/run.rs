//! Running a program: probes resolved against the kernel (tracepoint
//! formats, wildcards), maps created, programs generated, loaded and
//! attached, BEGIN run, events printed as they come, and at the end
//! (`exit()`, Ctrl-C, SIGTERM) END run and every map printed.
//!
//! Probes are resolved by `resolve` and attached by `attach`. BEGIN and
//! END are raw tracepoint programs run once with BPF_PROG_TEST_RUN.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::os::fd::OwnedFd;

use super::ast::{Probe, Program};
use super::attach::{attach, attach_multi, func_names, multi_prog, shared_sizes};
use super::btf::KernelTypes;
use super::calls::{JOIN_ARGS, JOIN_ARGSIZE, JOIN_HEADER};
use super::codegen::{Compiled, Fds, ProbeEnv, ProgKind, Registry, compile_probe, event_kind};
use super::error::LangError;
use super::insn::{R0, exit, mov_imm};
use super::output::{Entry, Resolve, c_str, print_map};
use super::printf::{Arg, format};
use super::probe::ProbeSpec;
use super::resolve::{Concrete, resolve_probes};
use super::stacks::{MAX_DEPTH, StackNames};
use super::types::Ty;
use crate::sys::bpf_raw::{self, EventRing, Map, ProgType};

pub(crate) use super::resolve::list_probes;

/// Why a run failed: bad input (with its place) or the system.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RunError {
    #[error("{0}")]
    Source(LangError),
    #[error("{0}")]
    System(#[from] io::Error),
}

impl From<LangError> for RunError {
    fn from(e: LangError) -> Self {
        RunError::Source(e)
    }
}

/// Max elements of each map (bpftrace's default).
const MAP_ENTRIES: u32 = 4096;
const RING_BYTES: u32 = 4 << 20;

fn prog_kind(spec: &ProbeSpec) -> ProgKind {
    match spec {
        ProbeSpec::Begin | ProbeSpec::End | ProbeSpec::RawTracepoint { .. } => {
            ProgKind::RawTracepoint
        }
        ProbeSpec::Tracepoint { .. } => ProgKind::Tracepoint,
        ProbeSpec::Uprobe { .. } | ProbeSpec::Kprobe { .. } => ProgKind::Kprobe,
        ProbeSpec::Fentry { .. } => ProgKind::Tracing,
        _ => ProgKind::PerfEvent,
    }
}

/// What every probe's compilation in one pass shares.
struct Pass<'a> {
    program: &'a Program,
    fds: &'a Fds,
    /// The first pass: maps are being discovered.
    discover: bool,
    start_ns: u64,
    types: &'a KernelTypes,
}

fn compile_all(
    pass: &Pass<'_>,
    probes: &[Concrete],
    reg: &mut Registry,
) -> Result<Vec<Compiled>, LangError> {
    (0..probes.len())
        .map(|id| compile_one(pass, probes, id, reg, None))
        .collect()
}

/// Compiles probe `id`; `shared`: for a kprobe.multi link (`ProbeEnv`).
fn compile_one(
    pass: &Pass<'_>,
    probes: &[Concrete],
    id: usize,
    reg: &mut Registry,
    shared: Option<usize>,
) -> Result<Compiled, LangError> {
    let c = &probes[id];
    let block: &Probe = &pass.program.probes[c.block];
    let env = ProbeEnv {
        kind: prog_kind(&c.spec),
        format: c.format.as_ref(),
        probe_id: id as u64,
        is_return: matches!(
            c.spec,
            ProbeSpec::Uprobe { ret: true, .. }
                | ProbeSpec::Kprobe { ret: true, .. }
                | ProbeSpec::Fentry { ret: true, .. }
        ),
        start_ns: pass.start_ns,
        func: match &c.spec {
            ProbeSpec::Uprobe { function, .. }
            | ProbeSpec::Kprobe { function, .. }
            | ProbeSpec::Fentry { function, .. } => Some(function.as_str()),
            _ => None,
        },
        signature: c.signature.as_ref(),
        shared,
        types: pass.types,
        // scry's own allocations are left out of uprobes: each event it
        // reads allocates, and on `uprobe:libc:malloc { printf(...) }`
        // every event read made another, without end.
        skip_tgid: matches!(c.spec, ProbeSpec::Uprobe { .. }).then(std::process::id),
    };
    compile_probe(
        reg,
        &env,
        pass.fds,
        pass.discover,
        block.predicate.as_ref(),
        &block.body,
    )
}

/// The instruction a verifier log last names, mapped to its span, and the
/// log's last lines (the reason).
pub(crate) fn verifier_error(
    log: &str,
    compiled: &Compiled,
    probe: &str,
    err: &io::Error,
) -> LangError {
    let insn = log
        .lines()
        .rev()
        .filter_map(|l| {
            l.split_once(": (")
                .and_then(|(n, _)| n.trim().parse::<usize>().ok())
        })
        .next();
    let span = insn
        .and_then(|i| compiled.spans.get(i).copied())
        .unwrap_or_default();
    let tail: Vec<&str> = log
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("processed "))
        .take(3)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    LangError::new(
        span,
        format!(
            "the BPF verifier refused the program of {probe} ({err}): {}",
            tail.join(" / ")
        ),
    )
}

/// Loads the program of probe `c`.
fn load(c: &Concrete, code: &Compiled, verbose: bool) -> Result<OwnedFd, RunError> {
    let prog_type = match (prog_kind(&c.spec), &c.spec, &c.signature) {
        (_, ProbeSpec::Fentry { ret, .. }, Some(sig)) if *ret => ProgType::Fexit(sig.func),
        (_, ProbeSpec::Fentry { .. }, Some(sig)) => ProgType::Fentry(sig.func),
        (ProgKind::RawTracepoint, ..) => ProgType::RawTracepoint,
        (ProgKind::Tracepoint, ..) => ProgType::Tracepoint,
        (ProgKind::Kprobe, ..) => ProgType::Kprobe,
        _ => ProgType::PerfEvent,
    };
    let insns: Vec<[u8; 8]> = code.insns.iter().map(|i| i.to_bytes()).collect();
    if verbose {
        eprintln!("{}: {} instructions", c.spec.name(), insns.len());
    }
    match bpf_raw::load_program(prog_type, "scry_run", &insns) {
        Ok(fd) => Ok(fd),
        Err(e) if matches!(c.spec, ProbeSpec::Fentry { .. }) && !verifier_ran(&e.log) => {
            Err(fentry_refused(c, &e))
        }
        Err(e) if e.error.kind() == io::ErrorKind::PermissionDenied => {
            Err(RunError::System(io::Error::new(
                e.error.kind(),
                "loading a BPF program needs CAP_BPF and CAP_PERFMON (or root)",
            )))
        }
        Err(e) => Err(RunError::Source(verifier_error(
            &e.log,
            code,
            &c.spec.name(),
            &e.error,
        ))),
    }
}

/// A refusal of an optional probe (of a wildcard or a list) is skipped
/// (None; the reason kept in `why`); any other error is returned.
fn skip_refused<T>(
    c: &Concrete,
    result: Result<T, RunError>,
    why: &mut Option<RunError>,
) -> Result<Option<T>, RunError> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e @ RunError::Source(_)) if c.optional => {
            why.get_or_insert(e);
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The refusal of the first probe of a block whose every probe was
/// refused: a block must run somewhere.
fn block_refused(
    probes: &[Concrete],
    progs: &[Option<OwnedFd>],
    refused: &mut [Option<RunError>],
) -> Option<RunError> {
    let dead = |block: usize| {
        probes
            .iter()
            .zip(progs)
            .all(|(c, p)| c.block != block || p.is_none())
    };
    let first = probes.iter().position(|c| dead(c.block))?;
    refused.get_mut(first)?.take()
}

/// Whether a load's log shows the verifier walking the code (a refusal of
/// the program, not of its kind of attachment).
fn verifier_ran(log: &str) -> bool {
    log.lines().any(|l| {
        l.split_once(": (")
            .is_some_and(|(n, _)| n.trim().parse::<usize>().is_ok())
    })
}

/// The kernel refused an fentry/fexit program before verifying it: its
/// kind of program (no BPF trampolines: CONFIG_FUNCTION_TRACER,
/// CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS; or a security policy), or the
/// function. A refusal for want of privilege says so: then the smallest
/// raw tracepoint program does not load either.
fn fentry_refused(c: &Concrete, e: &bpf_raw::LoadError) -> RunError {
    let smallest = [mov_imm(R0, 0).to_bytes(), exit().to_bytes()];
    if e.error.kind() == io::ErrorKind::PermissionDenied
        && bpf_raw::load_program(ProgType::RawTracepoint, "scry_probe", &smallest).is_err()
    {
        return RunError::System(io::Error::new(
            e.error.kind(),
            "loading a BPF program needs CAP_BPF and CAP_PERFMON (or root)",
        ));
    }
    let said = e
        .log
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(|l| format!(": {l}"))
        .unwrap_or_default();
    RunError::Source(LangError::new(
        c.span,
        format!(
            "{}: the kernel refused fentry/fexit ({}{said}); other BPF programs load: \
             use kprobe:/kretprobe: or tracepoints on this kernel",
            c.spec.name(),
            errno_text(&e.error)
        ),
    ))
}

/// An error's text, with the kernel's ENOTSUPP (524, not in libc) named.
fn errno_text(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(524) => "ENOTSUPP: operation not supported".into(),
        _ => e.to_string(),
    }
}

/// What the run holds while it runs.
struct Runtime<'a> {
    reg: Registry,
    maps: Vec<Map>,
    per_cpu: Vec<bool>,
    stacks: StackNames<'a>,
    /// The wall-clock time of the boot (ns), for `strftime()`.
    boot_ns: u64,
}

impl Resolve for Runtime<'_> {
    fn text(&self, ty: Ty, bytes: &[u8]) -> String {
        let word = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        match ty {
            Ty::Probe => self
                .reg
                .probe_names
                .get(word as usize)
                .cloned()
                .unwrap_or_default(),
            Ty::Kstack => self.stacks.kernel(word),
            Ty::Ksym => self.stacks.ksym(word),
            Ty::Usym => {
                let pid = bytes
                    .get(8..12)
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, u32::from_le_bytes);
                StackNames::usym(word, pid)
            }
            Ty::Ustack => {
                let pid = bytes
                    .get(8..12)
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, u32::from_le_bytes);
                self.stacks.user(word, pid)
            }
            Ty::Inet => inet_text(bytes),
            Ty::Username => user_name(word),
            Ty::Tuple { id, .. } => {
                let tys = self
                    .reg
                    .tuples
                    .get(id as usize)
                    .map_or(&[][..], |t| t.as_slice());
                let mut at = 0;
                let mut parts = Vec::new();
                for ty in tys {
                    let part = bytes.get(at..at + ty.size()).unwrap_or(&[]);
                    parts.push(crate::lang::output::value_text(*ty, part, self));
                    at += ty.size();
                }
                format!("({})", parts.join(", "))
            }
            Ty::Buf(n) => {
                let len = (word as usize).min(n);
                hex_escaped(bytes.get(8..8 + len).unwrap_or(&[]))
            }
            Ty::Strftime(id) => {
                let fmt = self
                    .reg
                    .time_formats
                    .get(id as usize)
                    .map_or("", |f| f.as_str());
                strftime_since_boot(fmt, self.boot_ns, word)
            }
            _ => String::new(),
        }
    }
}

/// `cat(path)`: the first `CAT_BYTES` of the file as they are (bpftrace's
/// `cat_file`); a file that cannot be read is said on stderr, as
/// bpftrace says it.
fn cat(path: &str, out: &mut impl Write) -> io::Result<()> {
    const CAT_BYTES: u64 = 10240;
    let mut text = Vec::new();
    let read = std::fs::File::open(path)
        .and_then(|f| io::Read::read_to_end(&mut io::Read::take(f, CAT_BYTES), &mut text));
    if let Err(e) = read {
        let why = e.to_string();
        let why = why.split(" (os error").next().unwrap_or(&why);
        eprintln!("ERROR: failed to open file '{path}': {why}");
        return Ok(());
    }
    out.write_all(&text)
}

/// A `buf()`'s bytes as bpftrace prints them: printable ASCII as it is,
/// every other byte as `\xNN`.
fn hex_escaped(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes {
        if (32..=126).contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// The name of user `uid` in /etc/passwd, empty when it has none (as
/// bpftrace's `username` prints it).
fn user_name(uid: u64) -> String {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let uid = uid.to_string();
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.len() >= 3 && f[2] == uid)
        .map(|f| f[0].to_string())
        .unwrap_or_default()
}

/// `strftime(fmt, nsecs)`: `nsecs` since boot as local time, with
/// bpftrace's `%f` (microseconds, 6 digits).
fn strftime_since_boot(fmt: &str, boot_ns: u64, nsecs: u64) -> String {
    let at = boot_ns.saturating_add(nsecs);
    let fmt = fmt.replace("%f", &format!("{:06}", at % 1_000_000_000 / 1000));
    crate::sys::localtime::strftime_at(&fmt, at / 1_000_000_000)
}

/// An `ntop()` value as `inet_ntop` writes it (IPv4-mapped IPv6 addresses
/// as `::ffff:a.b.c.d`, the longest zero run as `::`).
fn inet_text(bytes: &[u8]) -> String {
    let family = bytes.first().copied().unwrap_or(0);
    let addr = bytes.get(8..24).unwrap_or(&[]);
    if i32::from(family) == 10
        && let Ok(v6) = <[u8; 16]>::try_from(addr)
    {
        return std::net::Ipv6Addr::from(v6).to_string();
    }
    match addr.get(..4).and_then(|a| <[u8; 4]>::try_from(a).ok()) {
        Some(v4) => std::net::Ipv4Addr::from(v4).to_string(),
        None => String::new(),
    }
}

impl Runtime<'_> {
    fn entries(&self, map: usize) -> Vec<Entry> {
        let m = &self.maps[map];
        m.keys()
            .into_iter()
            .filter_map(|key| {
                let values = m.lookup(&key, self.per_cpu[map]).ok()??;
                Some(Entry { key, values })
            })
            .collect()
    }

    /// Map `map` as bpftrace prints it; `top` > 0 keeps the last (largest)
    /// `top` elements.
    fn print(&self, map: usize, top: usize, out: &mut impl Write) -> io::Result<()> {
        let text = print_map(&self.reg.maps[map], &self.entries(map), top, self);
        out.write_all(text.as_bytes())
    }

    fn clear(&self, map: usize, zero: bool) {
        let m = &self.maps[map];
        let size = self.reg.maps[map].kind.value_size();
        for key in m.keys() {
            let _ = if zero {
                m.set_all(&key, &vec![0; size], self.per_cpu[map])
            } else {
                m.delete(&key)
            };
        }
    }

    /// Handles one event; true when it asks to exit.
    fn event(&self, data: &[u8], out: &mut impl Write) -> io::Result<bool> {
        let word = |at: usize| {
            data.get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_le_bytes)
        };
        let index = word(8) as usize;
        match word(0) {
            event_kind::PRINTF => {
                let Some(spec) = self.reg.printfs.get(index) else {
                    return Ok(false);
                };
                let mut at = 16;
                let mut args = Vec::new();
                for ty in &spec.args {
                    let bytes = data.get(at..at + ty.size()).unwrap_or(&[]);
                    args.push(match ty {
                        Ty::Int | Ty::Uint | Ty::Ptr(_) => Arg::Int(word(at) as i64),
                        Ty::Str(_) => Arg::Str(c_str(bytes)),
                        _ => Arg::Str(self.text(*ty, bytes)),
                    });
                    at += ty.size();
                }
                let text = format(&spec.format, &args);
                if spec.cat {
                    cat(&text, out)?;
                } else {
                    out.write_all(text.as_bytes())?;
                }
            }
            event_kind::EXIT => return Ok(true),
            event_kind::JOIN => {
                let delim = self.reg.join_delims.get(index).map_or(" ", |d| d.as_str());
                let count = (word(16) as usize).min(JOIN_ARGS);
                // bpftrace's join ends at the first empty string too.
                let parts: Vec<String> = (0..count)
                    .map(|i| {
                        let at = JOIN_HEADER + i * JOIN_ARGSIZE;
                        c_str(data.get(at..at + JOIN_ARGSIZE).unwrap_or(&[]))
                    })
                    .take_while(|s| !s.is_empty())
                    .collect();
                writeln!(out, "{}", parts.join(delim))?;
            }
            event_kind::PRINT if index & 0xffff_ffff < self.maps.len() => {
                self.print(index & 0xffff_ffff, index >> 32, out)?
            }
            event_kind::CLEAR if index < self.maps.len() => self.clear(index, false),
            event_kind::ZERO if index < self.maps.len() => self.clear(index, true),
            event_kind::TIME => {
                let fmt = self.reg.time_formats.get(index).map_or("", |f| f.as_str());
                out.write_all(crate::sys::localtime::strftime_now(fmt).as_bytes())?;
            }
            _ => {}
        }
        Ok(false)
    }
}

/// Options of a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunOptions {
    /// Print the generated instructions count per probe to stderr.
    pub(crate) verbose: bool,
    /// Compile and load every program (the verifier checks each), attach
    /// nothing, and say so (default off).
    pub(crate) dry_run: bool,
    /// Where the program came from, as its messages name it: `stdin` (a
    /// program on the command line, bpftrace's word) or the file's name.
    pub(crate) origin: String,
}

/// Compiles and runs `source`, printing to `out` until the program exits
/// or a stop signal comes.
pub(crate) fn run(
    source: &str,
    options: &RunOptions,
    out: &mut impl Write,
) -> Result<(), RunError> {
    let program = super::parser::parse(source)?;
    let types = KernelTypes::default();
    let resolved = resolve_probes(&program, &types, options.dry_run)?;
    for warning in &resolved.missing_tracepoints {
        eprintln!("{}", warning.render_warning(&options.origin, source));
    }
    let probes = resolved.probes;
    let start_ns = crate::sys::uprobe::monotonic_ns();
    let mut reg = Registry {
        probe_names: probes.iter().map(|p| p.spec.name()).collect(),
        ..Registry::default()
    };
    // Pass 1: discover the maps.
    let discovery = Pass {
        program: &program,
        fds: &Fds::default(),
        discover: true,
        start_ns,
        types: &types,
    };
    compile_all(&discovery, &probes, &mut reg)?;
    let mut maps = Vec::new();
    let mut per_cpu = Vec::new();
    for info in &reg.maps {
        let kind = if info.kind.per_cpu() {
            bpf_raw::MapKind::PerCpuHash
        } else {
            bpf_raw::MapKind::Hash
        };
        maps.push(Map::create(
            kind,
            &info.name,
            info.key_size() as u32,
            info.kind.value_size() as u32,
            MAP_ENTRIES,
        )?);
        per_cpu.push(info.kind.per_cpu());
    }
    let events = Map::create(bpf_raw::MapKind::RingBuf, "events", 0, 0, RING_BYTES)?;
    let stacks = if reg.uses_stacks {
        Some(Map::create(
            bpf_raw::MapKind::StackTrace,
            "stacks",
            4,
            MAX_DEPTH as u32 * 8,
            MAP_ENTRIES,
        )?)
    } else {
        None
    };
    let lost = Map::create(bpf_raw::MapKind::PerCpuArray, "lost", 4, 8, 1)?;
    let sizes = shared_sizes(&probes);
    let funcs = func_names(&probes, &sizes)?;
    let fds = Fds {
        maps: maps.iter().map(|m| m.raw_fd()).collect(),
        events: events.raw_fd(),
        stacks: stacks.as_ref().map_or(0, |m| m.raw_fd()),
        lost: lost.raw_fd(),
        funcs: funcs.as_ref().map_or(0, |m| m.raw_fd()),
    };
    // Pass 2: the code that is loaded, per function and for kprobe.multi.
    reg.printfs.clear();
    reg.time_formats.clear();
    reg.join_delims.clear();
    let pass = Pass {
        discover: false,
        fds: &fds,
        ..discovery
    };
    let compiled = compile_all(&pass, &probes, &mut reg)?;
    let shared = (0..probes.len())
        .map(|id| {
            sizes[id]
                .map(|size| compile_one(&pass, &probes, id, &mut reg, Some(size)))
                .transpose()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let multi = if options.dry_run {
        Vec::new()
    } else {
        attach_multi(&probes, &compiled, &shared, options.verbose)
    };
    let mut progs = Vec::new();
    // Why each optional probe left out was refused.
    let mut refused: Vec<Option<RunError>> = probes.iter().map(|_| None).collect();
    for (i, ((c, code), why)) in probes.iter().zip(&compiled).zip(&mut refused).enumerate() {
        let loaded = match multi_prog(&multi, i) {
            Some(prog) => Ok(prog.try_clone()?),
            None => load(c, code, options.verbose),
        };
        progs.push(skip_refused(c, loaded, why)?);
    }
    if let Some(err) = block_refused(&probes, &progs, &mut refused) {
        return Err(err);
    }
    if options.dry_run {
        let loaded = progs.iter().filter(|p| p.is_some()).count();
        writeln!(
            out,
            "Dry run: {loaded} of {} probe programs compiled and loaded, none attached",
            probes.len()
        )?;
        return Ok(());
    }
    let runtime = Runtime {
        reg,
        maps,
        per_cpu,
        stacks: StackNames::new(stacks.as_ref()),
        boot_ns: crate::sys::localtime::boot_realtime_ns(),
    };
    let n = probes.len();
    let counted = n + resolved.missing_tracepoints.len();
    writeln!(
        out,
        "Attaching {counted} probe{}...",
        if counted == 1 { "" } else { "s" }
    )?;
    out.flush()?;
    let run_stop = crate::sys::signal::RunStop::install()?;
    let queue: RefCell<Vec<Vec<u8>>> = RefCell::new(Vec::new());
    let ring = EventRing::new(&events, |data| {
        queue.borrow_mut().push(data.to_vec());
        0
    })?;
    let mut attached = Vec::new();
    for (i, ((c, prog), why)) in probes
        .iter()
        .zip(progs.iter_mut())
        .zip(&mut refused)
        .enumerate()
    {
        let Some(fd) = prog else {
            continue;
        };
        if multi_prog(&multi, i).is_some() {
            continue;
        }
        let done = attach(c, fd, &mut attached).map_err(|e| {
            RunError::Source(LangError::new(
                c.span,
                format!("cannot attach {}: {e}", c.spec.name()),
            ))
        });
        if skip_refused(c, done, why)?.is_none() {
            *prog = None;
        }
    }
    if let Some(err) = block_refused(&probes, &progs, &mut refused) {
        return Err(err);
    }
    let skipped = progs.iter().filter(|p| p.is_none()).count();
    if skipped > 0 {
        eprintln!(
            "WARNING: {skipped} of the {n} probes were refused by the kernel and left out (functions it does not have or does not let be traced)"
        );
    }
    let run_once = |which: &ProbeSpec| -> io::Result<()> {
        for (c, prog) in probes.iter().zip(&progs) {
            if let (true, Some(prog)) = (&c.spec == which, prog) {
                bpf_raw::test_run(prog)?;
            }
        }
        Ok(())
    };
    let lost_seen = std::cell::Cell::new(0u64);
    let drain = |out: &mut dyn Write| -> io::Result<bool> {
        ring.consume()?;
        let batch = std::mem::take(&mut *queue.borrow_mut());
        let mut exit = false;
        let mut w = io::BufWriter::new(out);
        // Records the ring had no room for, as bpftrace reports its perf
        // buffer's.
        let lost_now = lost_count(&lost);
        if lost_now > lost_seen.get() {
            writeln!(w, "Lost {} events", lost_now - lost_seen.get())?;
            lost_seen.set(lost_now);
        }
        for data in batch {
            if !exit && runtime.event(&data, &mut w)? {
                exit = true;
            }
        }
        w.flush()?;
        Ok(exit)
    };
    run_once(&ProbeSpec::Begin)?;
    let mut stop = drain(out)?;
    while !stop && run_stop.caught().is_none() {
        let mut fds = [crate::sys::signal::PollFd {
            fd: ring.fd(),
            revents: 0,
        }];
        run_stop.wait(&mut fds, 1000)?;
        stop = drain(out)?;
    }
    drop(attached);
    drop(multi);
    drain(out)?;
    run_once(&ProbeSpec::End)?;
    drain(out)?;
    let mut text = Vec::new();
    text.extend_from_slice(b"\n\n");
    let by_name: BTreeMap<&str, usize> = runtime
        .reg
        .maps
        .iter()
        .enumerate()
        .map(|(i, m)| (m.name.as_str(), i))
        .collect();
    for i in by_name.values() {
        runtime.print(*i, 0, &mut text)?;
    }
    out.write_all(&text)?;
    out.flush()?;
    Ok(())
}

/// The records lost so far, summed over the CPUs.
fn lost_count(lost: &Map) -> u64 {
    lost.lookup(&0u32.to_le_bytes(), true)
        .ok()
        .flatten()
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.get(..8).and_then(|b| b.try_into().ok()))
        .map(u64::from_le_bytes)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::error::Span;

    #[test]
    fn verifier_refusal_points_at_the_instruction_it_names() {
        let compiled = Compiled {
            insns: vec![mov_imm(R0, 0), mov_imm(R0, 0), exit()],
            spans: vec![Span::new(0, 1), Span::new(10, 14), Span::new(20, 21)],
        };
        let log =
            "0: (b7) r0 = 0\n1: (b7) r0 = 0\ninvalid mem access 'scalar'\nprocessed 2 insns\n";
        let err = verifier_error(log, &compiled, "BEGIN", &io::Error::from_raw_os_error(13));
        assert_eq!(err.span, Span::new(10, 14));
        assert!(
            err.message
                .contains("the BPF verifier refused the program of BEGIN"),
            "{}",
            err.message
        );
        assert!(
            err.message.ends_with("invalid mem access 'scalar'"),
            "{}",
            err.message
        );
    }
}
