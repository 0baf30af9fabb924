//! Attaching a loaded probe's program to the kernel, by the kind of its
//! probe; each attachment is a descriptor that detaches when dropped.
//!
//! A tracepoint program is attached to one perf event (CPU 0, every
//! process): the kernel runs a tracepoint's programs for its events on
//! every CPU, and one attachment per CPU would run the program once per
//! CPU for each event. `profile` and `software` open an event per CPU;
//! `interval` one on CPU 0; a kprobe or uprobe one event for every CPU
//! (the probe goes with its descriptor); fentry/fexit a BPF link to the
//! trampoline of its function; a raw tracepoint its own descriptor.
//!
//! kprobe.multi: the kprobes of one block (a wildcard, a list) whose
//! programs came out the same (the block reads neither `func` nor `probe`,
//! which are constants in each, and prints nothing: each printf has its
//! own index) get one program and one BPF_TRACE_KPROBE_MULTI link for all
//! their functions, where the kernel has it (5.18+, CONFIG_FPROBE); where
//! it refuses the program or the link, they go the per-function way.

use std::io;
use std::os::fd::OwnedFd;

use super::codegen::Compiled;
use super::probe::ProbeSpec;
use super::resolve::Concrete;
use crate::sys::bpf_raw::{self, ProgType};
use crate::sys::perf_event::{self, PerfEventFd};

/// An attachment: dropping it detaches.
pub(crate) type Attached = Result<PerfEventFd, OwnedFd>;

pub(crate) fn attach(c: &Concrete, prog: &OwnedFd, attached: &mut Vec<Attached>) -> io::Result<()> {
    let mut attr = perf_event::new_attr();
    let cpus: Vec<i32> = match &c.spec {
        ProbeSpec::Begin | ProbeSpec::End => return Ok(()),
        ProbeSpec::RawTracepoint { event } => {
            attached.push(Err(bpf_raw::attach_raw_tracepoint(event, prog)?));
            return Ok(());
        }
        ProbeSpec::Fentry { .. } => {
            attached.push(Err(bpf_raw::attach_tracing(prog)?));
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

/// One kprobe.multi link: its program serves the probes of `members`.
pub(crate) struct MultiLink {
    pub(crate) members: Vec<usize>,
    pub(crate) prog: OwnedFd,
    /// Dropping it detaches every function at once.
    _link: OwnedFd,
}

/// The program the probe of index `i` runs through a kprobe.multi link.
pub(crate) fn multi_prog(links: &[MultiLink], i: usize) -> Option<&OwnedFd> {
    links
        .iter()
        .find(|l| l.members.contains(&i))
        .map(|l| &l.prog)
}

/// Loads and attaches one kprobe.multi program for each group of kprobes
/// of one block with the same code (two functions at least); a group the
/// kernel refuses is left out (its probes go the per-function way).
pub(crate) fn attach_multi(
    probes: &[Concrete],
    compiled: &[Compiled],
    verbose: bool,
) -> Vec<MultiLink> {
    type Key = (usize, bool, Vec<[u8; 8]>);
    let mut groups: std::collections::BTreeMap<Key, Vec<usize>> = std::collections::BTreeMap::new();
    for (i, (c, code)) in probes.iter().zip(compiled).enumerate() {
        if let ProbeSpec::Kprobe { ret, .. } = c.spec {
            groups
                .entry((
                    c.block,
                    ret,
                    code.insns.iter().map(|i| i.to_bytes()).collect(),
                ))
                .or_default()
                .push(i);
        }
    }
    let mut links = Vec::new();
    for ((_, ret, bytes), members) in groups {
        if members.len() < 2 {
            continue;
        }
        let functions: Vec<&str> = members
            .iter()
            .filter_map(|&i| match &probes[i].spec {
                ProbeSpec::Kprobe { function, .. } => Some(function.as_str()),
                _ => None,
            })
            .collect();
        let done = bpf_raw::load_program(ProgType::KprobeMulti, "scry_run", &bytes)
            .map_err(|e| e.error)
            .and_then(|prog| Ok((bpf_raw::attach_kprobe_multi(&prog, &functions, ret)?, prog)));
        match done {
            Ok((link, prog)) => {
                if verbose {
                    eprintln!("kprobe.multi: one link for {} functions", functions.len());
                }
                links.push(MultiLink {
                    members,
                    prog,
                    _link: link,
                });
            }
            Err(e) if verbose => {
                eprintln!("kprobe.multi refused ({e}): one program per function");
            }
            Err(_) => {}
        }
    }
    links
}

fn online() -> io::Result<Vec<i32>> {
    Ok(crate::sys::proc::online_cpus()?
        .into_iter()
        .map(|c| c as i32)
        .collect())
}
