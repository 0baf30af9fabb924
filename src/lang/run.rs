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
use super::codegen::{Compiled, Fds, ProbeEnv, ProgKind, Registry, compile_probe};
use super::error::LangError;
use super::insn::{R0, exit, mov_imm};
use super::probe::ProbeSpec;
use super::resolve::{Concrete, resolve_probes};
use super::runtime::{Runtime, lost_count};
use super::stacks::{MAX_DEPTH, StackNames};
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
    /// `-c`'s command's pid (`cpid`).
    cpid: Option<u32>,
    /// Uprobes fire in one process (`-p`, `-c`), never scry's own.
    one_process: bool,
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
        // every event read made another, without end. (Not needed where
        // the kernel fires them in one other process alone: -p, -c.)
        skip_tgid: (matches!(c.spec, ProbeSpec::Uprobe { .. }) && !pass.one_process)
            .then(std::process::id),
        cpid: pass.cpid,
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
    /// The process of `-p PID` or `-c CMD`: uprobes fire in it alone, and
    /// the run ends when it exits (default: none, every process).
    pub(crate) pid: Option<i32>,
    /// `pid` is `-c`'s command, which `cpid` names (default off).
    pub(crate) child: bool,
    /// No "Attaching N probes..." line (`-q`; default off).
    pub(crate) quiet: bool,
    /// The positional parameters, `$1` first (default: none).
    pub(crate) params: Vec<String>,
    /// The two newlines before the maps at the end go to stdout, not to
    /// `out`: bpftrace's `-o FILE` leaves them there (default off).
    pub(crate) gap_to_stdout: bool,
}

/// Compiles and runs `source`, printing to `out` until the program exits,
/// a stop signal comes or the target process (`RunOptions::pid`) exits.
/// `started` runs once every probe is attached and BEGIN ran: it lets
/// `-c`'s command exec.
pub(crate) fn run(
    source: &str,
    options: &RunOptions,
    out: &mut impl Write,
    started: impl FnOnce() -> io::Result<()>,
) -> Result<(), RunError> {
    let program = super::parser::parse_with(source, &options.params)?;
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
        cpid: options.pid.filter(|_| options.child).map(|p| p as u32),
        one_process: options.pid.is_some(),
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
        users: std::cell::OnceCell::new(),
    };
    let n = probes.len();
    let counted = n + resolved.missing_tracepoints.len();
    if !options.quiet {
        writeln!(
            out,
            "Attaching {counted} probe{}...",
            if counted == 1 { "" } else { "s" }
        )?;
    }
    out.flush()?;
    let run_stop = crate::sys::signal::RunStop::install()?.until_exit(options.pid)?;
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
        let done = attach(c, fd, options.pid, &mut attached).map_err(|e| {
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
    if !stop {
        started()?;
    }
    while !stop {
        let mut fds = [crate::sys::signal::PollFd {
            fd: ring.fd(),
            revents: 0,
        }];
        let ended = run_stop.wait(&mut fds, 1000)?.is_some();
        stop = drain(out)? || ended;
    }
    drop(attached);
    drop(multi);
    drain(out)?;
    run_once(&ProbeSpec::End)?;
    drain(out)?;
    let mut text = Vec::new();
    if options.gap_to_stdout {
        io::stdout().write_all(b"\n\n")?;
    } else {
        text.extend_from_slice(b"\n\n");
    }
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
