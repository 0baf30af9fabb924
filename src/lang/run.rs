//! Running a program: probes resolved against the kernel (tracepoint
//! formats, wildcards), maps created, programs generated, loaded and
//! attached, BEGIN run, events printed as they come, and at the end
//! (`exit()`, Ctrl-C, SIGTERM) END run and every map printed.
//!
//! Attachment: a tracepoint program is attached to one perf event (CPU
//! 0, every process): the kernel runs a tracepoint's programs for its
//! events on every CPU, and one attachment per CPU would run the program
//! once per CPU for each event. `profile` opens a cpu-clock event per CPU;
//! `interval` one on CPU 0. BEGIN and END are raw tracepoint programs run
//! once with BPF_PROG_TEST_RUN.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::os::fd::OwnedFd;

use super::ast::{Probe, Program};
use super::btf::KernelTypes;
use super::calls::{JOIN_ARGS, JOIN_ARGSIZE, JOIN_HEADER};
use super::codegen::{Compiled, Fds, ProbeEnv, ProgKind, Registry, compile_probe, event_kind};
use super::error::{LangError, Span};
use super::output::{Entry, Resolve, c_str, print_map};
use super::printf::{Arg, format};
use super::probe::{ProbeSpec, parse_probe};
use super::stacks::{MAX_DEPTH, StackNames};
use super::types::Ty;
use crate::event::format::{EventFormat, load_format};
use crate::sys::bpf_raw::{self, EventRing, Map, ProgType};
use crate::sys::perf_event::{self, PerfEventFd};

/// Why a run failed: bad input (with its place) or the system.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
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

/// One attach point, resolved.
struct Concrete {
    spec: ProbeSpec,
    span: Span,
    format: Option<EventFormat>,
    /// Index into `Program::probes`.
    block: usize,
}

/// Max elements of each map (bpftrace's default).
const MAP_ENTRIES: u32 = 4096;
const RING_BYTES: u32 = 4 << 20;

fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            let Some(rest) = text.strip_prefix(head) else {
                return false;
            };
            (0..=rest.len()).any(|i| rest.is_char_boundary(i) && glob(tail, &rest[i..]))
        }
    }
}

/// The probes of the program, wildcards expanded, formats loaded.
fn resolve_probes(program: &Program) -> Result<Vec<Concrete>, RunError> {
    let mut out = Vec::new();
    for (block, probe) in program.probes.iter().enumerate() {
        for ap in &probe.attach {
            let spec = parse_probe(&ap.text, ap.span)?;
            let specs = match &spec {
                ProbeSpec::Tracepoint { system, event }
                    if system.contains('*') || event.contains('*') =>
                {
                    let found: Vec<ProbeSpec> = crate::sys::tracefs::list_events()?
                        .into_iter()
                        .filter(|(s, e)| glob(system, s) && glob(event, e))
                        .map(|(system, event)| ProbeSpec::Tracepoint { system, event })
                        .collect();
                    if found.is_empty() {
                        return Err(LangError::new(
                            ap.span,
                            format!("No probes matched the wildcard: {system}:{event}"),
                        )
                        .into());
                    }
                    found
                }
                _ => vec![spec],
            };
            for spec in specs {
                let format = match &spec {
                    ProbeSpec::Tracepoint { system, event } => {
                        let root = crate::sys::tracefs::root()?;
                        Some(load_format(root, system, event).map_err(|_| {
                            LangError::new(
                                ap.span,
                                format!("tracepoint not found: {system}:{event}"),
                            )
                        })?)
                    }
                    ProbeSpec::Kprobe { .. } => {
                        crate::sys::uprobe::UprobePmu::detect_kprobe().map_err(|e| {
                            LangError::new(
                                ap.span,
                                format!(
                                    "{}: this kernel has no kprobes (the kprobe PMU, \
                                     /sys/bus/event_source/devices/kprobe: {e}; CONFIG_KPROBE_EVENTS)",
                                    spec.name()
                                ),
                            )
                        })?;
                        None
                    }
                    _ => None,
                };
                out.push(Concrete {
                    spec,
                    span: ap.span,
                    format,
                    block,
                });
            }
        }
    }
    Ok(out)
}

fn prog_kind(spec: &ProbeSpec) -> ProgKind {
    match spec {
        ProbeSpec::Begin | ProbeSpec::End | ProbeSpec::RawTracepoint { .. } => {
            ProgKind::RawTracepoint
        }
        ProbeSpec::Tracepoint { .. } => ProgKind::Tracepoint,
        ProbeSpec::Uprobe { .. } | ProbeSpec::Kprobe { .. } => ProgKind::Kprobe,
        _ => ProgKind::PerfEvent,
    }
}

fn compile_all(
    program: &Program,
    probes: &[Concrete],
    reg: &mut Registry,
    fds: &Fds,
    discover: bool,
    start_ns: u64,
    types: &KernelTypes,
) -> Result<Vec<Compiled>, LangError> {
    let mut out = Vec::new();
    for (id, c) in probes.iter().enumerate() {
        let block: &Probe = &program.probes[c.block];
        let env = ProbeEnv {
            kind: prog_kind(&c.spec),
            format: c.format.as_ref(),
            probe_id: id as u64,
            is_return: matches!(
                c.spec,
                ProbeSpec::Uprobe { ret: true, .. } | ProbeSpec::Kprobe { ret: true, .. }
            ),
            start_ns,
            func: match &c.spec {
                ProbeSpec::Uprobe { function, .. } | ProbeSpec::Kprobe { function, .. } => {
                    Some(function.as_str())
                }
                _ => None,
            },
            types,
        };
        out.push(compile_probe(
            reg,
            &env,
            fds,
            discover,
            block.predicate.as_ref(),
            &block.body,
        )?);
    }
    Ok(out)
}

/// The instruction a verifier log last names, mapped to its span, and the
/// log's last lines (the reason).
pub fn verifier_error(log: &str, compiled: &Compiled, probe: &str, err: &io::Error) -> LangError {
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

/// What the run holds while it runs.
struct Runtime<'a> {
    reg: Registry,
    maps: Vec<Map>,
    per_cpu: Vec<bool>,
    stacks: StackNames<'a>,
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
            _ => String::new(),
        }
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
                        Ty::Int | Ty::Ptr(_) => Arg::Int(word(at) as i64),
                        Ty::Str(_) => Arg::Str(c_str(bytes)),
                        _ => Arg::Str(self.text(*ty, bytes)),
                    });
                    at += ty.size();
                }
                out.write_all(format(&spec.format, &args).as_bytes())?;
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
pub struct RunOptions {
    /// Print the generated instructions count per probe to stderr.
    pub verbose: bool,
}

/// Compiles and runs `source`, printing to `out` until the program exits
/// or a stop signal comes.
pub fn run(source: &str, options: &RunOptions, out: &mut impl Write) -> Result<(), RunError> {
    let program = super::parser::parse(source)?;
    let probes = resolve_probes(&program)?;
    let start_ns = crate::sys::uprobe::monotonic_ns();
    let mut reg = Registry {
        probe_names: probes.iter().map(|p| p.spec.name()).collect(),
        ..Registry::default()
    };
    // Pass 1: discover the maps.
    let types = KernelTypes::default();
    compile_all(
        &program,
        &probes,
        &mut reg,
        &Fds::default(),
        true,
        start_ns,
        &types,
    )?;
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
    let fds = Fds {
        maps: maps.iter().map(|m| m.raw_fd()).collect(),
        events: events.raw_fd(),
        stacks: stacks.as_ref().map_or(0, |m| m.raw_fd()),
        lost: lost.raw_fd(),
    };
    // Pass 2: the code that is loaded.
    reg.printfs.clear();
    reg.time_formats.clear();
    reg.join_delims.clear();
    let compiled = compile_all(&program, &probes, &mut reg, &fds, false, start_ns, &types)?;
    let mut progs = Vec::new();
    for (c, code) in probes.iter().zip(&compiled) {
        let prog_type = match prog_kind(&c.spec) {
            ProgKind::RawTracepoint => ProgType::RawTracepoint,
            ProgKind::Tracepoint => ProgType::Tracepoint,
            ProgKind::PerfEvent => ProgType::PerfEvent,
            ProgKind::Kprobe => ProgType::Kprobe,
        };
        let insns: Vec<[u8; 8]> = code.insns.iter().map(|i| i.to_bytes()).collect();
        if options.verbose {
            eprintln!("{}: {} instructions", c.spec.name(), insns.len());
        }
        let fd = bpf_raw::load_program(prog_type, "scry_run", &insns).map_err(|e| {
            if e.error.kind() == io::ErrorKind::PermissionDenied {
                return RunError::System(io::Error::new(
                    e.error.kind(),
                    "loading a BPF program needs CAP_BPF and CAP_PERFMON (or root)",
                ));
            }
            RunError::Source(verifier_error(&e.log, code, &c.spec.name(), &e.error))
        })?;
        progs.push(fd);
    }
    let runtime = Runtime {
        reg,
        maps,
        per_cpu,
        stacks: StackNames::new(stacks.as_ref()),
    };
    let n = probes.len();
    writeln!(
        out,
        "Attaching {n} probe{}...",
        if n == 1 { "" } else { "s" }
    )?;
    out.flush()?;
    let signals = crate::sys::signal::SignalPipe::install(&crate::sys::signal::STOP_SIGNALS)?;
    let queue: RefCell<Vec<Vec<u8>>> = RefCell::new(Vec::new());
    let ring = EventRing::new(&events, |data| {
        queue.borrow_mut().push(data.to_vec());
        0
    })?;
    let mut attached = Vec::new();
    for (c, prog) in probes.iter().zip(&progs) {
        attach(c, prog, &mut attached).map_err(|e| {
            RunError::Source(LangError::new(
                c.span,
                format!("cannot attach {}: {e}", c.spec.name()),
            ))
        })?;
    }
    let run_once = |which: &ProbeSpec| -> io::Result<()> {
        for (c, prog) in probes.iter().zip(&progs) {
            if &c.spec == which {
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
    while !stop && signals.received().is_none() {
        let mut fds = [
            crate::sys::signal::PollFd {
                fd: ring.fd(),
                revents: 0,
            },
            crate::sys::signal::PollFd {
                fd: signals.fd(),
                revents: 0,
            },
        ];
        crate::sys::signal::poll(&mut fds, 1000)?;
        stop = drain(out)?;
    }
    drop(attached);
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

/// An attachment: dropping it detaches.
type Attached = Result<PerfEventFd, OwnedFd>;

fn attach(c: &Concrete, prog: &OwnedFd, attached: &mut Vec<Attached>) -> io::Result<()> {
    let mut attr = perf_event::new_attr();
    let cpus: Vec<i32> = match &c.spec {
        ProbeSpec::Begin | ProbeSpec::End => return Ok(()),
        ProbeSpec::RawTracepoint { event } => {
            attached.push(Err(bpf_raw::attach_raw_tracepoint(event, prog)?));
            return Ok(());
        }
        ProbeSpec::Tracepoint { .. } => {
            let format = c.format.as_ref().map_or(0, |f| f.id);
            attr.type_ = perf_event::PERF_TYPE_TRACEPOINT;
            attr.config = format;
            attr.__bindgen_anon_1.sample_period = 1;
            vec![0]
        }
        ProbeSpec::Interval { period_ns } => {
            attr.type_ = perf_event::PERF_TYPE_SOFTWARE;
            attr.config = perf_event_open_sys::bindings::PERF_COUNT_SW_CPU_CLOCK as u64;
            attr.__bindgen_anon_1.sample_period = *period_ns;
            vec![0]
        }
        ProbeSpec::Profile { hz } => {
            attr.type_ = perf_event::PERF_TYPE_SOFTWARE;
            attr.config = perf_event_open_sys::bindings::PERF_COUNT_SW_CPU_CLOCK as u64;
            attr.set_freq(1);
            attr.__bindgen_anon_1.sample_freq = *hz;
            online()?
        }
        ProbeSpec::Software { event, period } => {
            use perf_event_open_sys::bindings as b;
            let config = match event.as_str() {
                "cpu-clock" | "cpu" => b::PERF_COUNT_SW_CPU_CLOCK,
                "task-clock" => b::PERF_COUNT_SW_TASK_CLOCK,
                "page-faults" | "faults" => b::PERF_COUNT_SW_PAGE_FAULTS,
                "context-switches" | "cs" => b::PERF_COUNT_SW_CONTEXT_SWITCHES,
                "cpu-migrations" | "migrations" => b::PERF_COUNT_SW_CPU_MIGRATIONS,
                "minor-faults" => b::PERF_COUNT_SW_PAGE_FAULTS_MIN,
                "major-faults" => b::PERF_COUNT_SW_PAGE_FAULTS_MAJ,
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("unknown software event '{event}'"),
                    ));
                }
            };
            attr.type_ = perf_event::PERF_TYPE_SOFTWARE;
            attr.config = config as u64;
            attr.__bindgen_anon_1.sample_period = *period;
            online()?
        }
        ProbeSpec::Uprobe {
            binary,
            function,
            ret,
        } => {
            use crate::symbol::probe_target;
            let not_found = |e: probe_target::ProbeTargetError| {
                io::Error::new(io::ErrorKind::NotFound, e.to_string())
            };
            let path = probe_target::find_binary(binary).map_err(not_found)?;
            let data = std::fs::read(&path)?;
            let site = probe_target::find_function(&data, &path.to_string_lossy(), function)
                .map_err(not_found)?;
            let pmu = crate::sys::uprobe::UprobePmu::detect()?;
            attr.type_ = pmu.type_;
            attr.config = pmu.config(*ret);
            attr.__bindgen_anon_4.config2 = site.file_offset;
            attr.__bindgen_anon_1.sample_period = 1;
            // One event for every process (the program runs for each hit,
            // on whichever CPU).
            let fd = crate::sys::uprobe::open_at(&attr, &path, |a| PerfEventFd::open(a, -1, 0))?;
            bpf_raw::attach_perf_event(&fd, prog)?;
            attached.push(Ok(fd));
            return Ok(());
        }
        ProbeSpec::Kprobe { function, ret } => {
            // The kprobe PMU: `config1` names the function, `config2` the
            // offset in it. One event: its program runs for every hit, on
            // whichever CPU; the probe goes with the descriptor.
            let pmu = crate::sys::uprobe::UprobePmu::detect_kprobe()?;
            attr.type_ = pmu.type_;
            attr.config = pmu.config(*ret);
            attr.__bindgen_anon_4.config2 = 0;
            attr.__bindgen_anon_1.sample_period = 1;
            let fd = crate::sys::uprobe::open_at(&attr, std::path::Path::new(function), |a| {
                PerfEventFd::open(a, -1, 0)
            })?;
            bpf_raw::attach_perf_event(&fd, prog)?;
            attached.push(Ok(fd));
            return Ok(());
        }
    };
    for cpu in cpus {
        let fd = PerfEventFd::open(&attr, -1, cpu)?;
        bpf_raw::attach_perf_event(&fd, prog)?;
        attached.push(Ok(fd));
    }
    Ok(())
}

/// The probes `scry run -l PATTERN` lists (tracepoints and software
/// events, as bpftrace names them), those matching the glob `pattern`.
pub fn list_probes(pattern: &str) -> io::Result<Vec<String>> {
    let pattern = pattern
        .strip_prefix("t:")
        .map(|rest| format!("tracepoint:{rest}"))
        .unwrap_or_else(|| pattern.to_string());
    let mut names: Vec<String> = [
        "cpu-clock",
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
        "minor-faults",
        "major-faults",
    ]
    .iter()
    .map(|e| format!("software:{e}:"))
    .collect();
    names.extend(
        crate::sys::tracefs::list_events()?
            .into_iter()
            .map(|(system, event)| format!("tracepoint:{system}:{event}")),
    );
    Ok(names.into_iter().filter(|n| glob(&pattern, n)).collect())
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

fn online() -> io::Result<Vec<i32>> {
    Ok(crate::sys::proc::online_cpus()?
        .into_iter()
        .map(|c| c as i32)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifier_refusal_points_at_the_instruction_it_names() {
        use crate::lang::insn::{R0, exit, mov_imm};
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

    #[test]
    fn globs() {
        assert!(glob("sys_enter_*", "sys_enter_read"));
        assert!(glob("*", "x"));
        assert!(glob("a*c*e", "abcde"));
        assert!(!glob("sys_exit_*", "sys_enter_read"));
    }
}
