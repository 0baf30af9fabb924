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
//! With a target process (`-p PID`, `-c CMD`), a uprobe's event is opened
//! on that process (pid, every CPU) rather than on every process: the
//! kernel then fires it only in the process's memory (every thread of
//! it), as bpftrace's uprobes under `-p`. Other probes stay system-wide.
//!
//! kprobe.multi: the kprobes of one block (a wildcard, a list) get one
//! program and one BPF_TRACE_KPROBE_MULTI link for all their functions,
//! where the kernel has it (5.18+, CONFIG_FPROBE). That program is
//! compiled apart (`shared_sizes`): `probe` is the attach cookie, which
//! the link gives each function as its probe's index, and `func` the name
//! an array map holds at that index (`func_names`); printf formats are
//! interned, so every function's program comes out the same. Where the
//! kernel refuses the program or the link (6.1 without CONFIG_FPROBE),
//! each function gets its own program, `func` and `probe` constants in it.

use std::io;
use std::os::fd::OwnedFd;

use super::codegen::{Compiled, literal_size};
use super::probe::ProbeSpec;
use super::resolve::Concrete;
use crate::sys::bpf_raw::{self, Map, MapKind, ProgType};
use crate::sys::perf_event::{self, PerfEventFd};

/// An attachment: dropping it detaches.
pub(crate) type Attached = Result<PerfEventFd, OwnedFd>;

/// Attaches `prog` as probe `c` says; a uprobe to process `target` only
/// when there is one.
pub(crate) fn attach(
    c: &Concrete,
    prog: &OwnedFd,
    target: Option<i32>,
    attached: &mut Vec<Attached>,
) -> io::Result<()> {
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
            let (path, file_offset) = match &c.uprobe_site {
                Some(found) => found.clone(),
                None => {
                    let path = probe_target::find_binary(binary).map_err(not_found)?;
                    let data = std::fs::read(&path)?;
                    // Static functions too, through the binary's debug file.
                    let site =
                        crate::symbol::debug_functions::find_function(&path, &data, function)
                            .map_err(not_found)?;
                    (path, site.file_offset)
                }
            };
            let pmu = crate::sys::uprobe::UprobePmu::detect()?;
            attr.type_ = pmu.type_;
            attr.config = pmu.config(*ret);
            attr.__bindgen_anon_4.config2 = file_offset;
            attr.__bindgen_anon_1.sample_period = 1;
            // One event for every process (the program runs for each hit,
            // on whichever CPU), or for the target on every CPU.
            let (pid, cpu) = target.map_or((-1, 0), |pid| (pid, -1));
            let fd = crate::sys::uprobe::open_at(&attr, &path, |a| PerfEventFd::open(a, pid, cpu))?;
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

/// For each probe that may share a kprobe.multi link (a kprobe of a block
/// with two or more, of entries or of returns), the size of the string
/// `func` is in that link's program: the group's longest name's.
pub(crate) fn shared_sizes(probes: &[Concrete]) -> Vec<Option<usize>> {
    let mut groups: std::collections::BTreeMap<(usize, bool), (usize, usize)> =
        std::collections::BTreeMap::new();
    for c in probes {
        if let ProbeSpec::Kprobe { function, ret } = &c.spec {
            let g = groups.entry((c.block, *ret)).or_default();
            g.0 += 1;
            g.1 = g.1.max(literal_size(function));
        }
    }
    probes
        .iter()
        .map(|c| match &c.spec {
            ProbeSpec::Kprobe { ret, .. } => groups
                .get(&(c.block, *ret))
                .filter(|(n, _)| *n >= 2)
                .map(|(_, size)| *size),
            _ => None,
        })
        .collect()
}

/// The array map `func` reads in a kprobe.multi link's program: the
/// function name of each probe `shared_sizes` gave a size, at its index.
pub(crate) fn func_names(probes: &[Concrete], sizes: &[Option<usize>]) -> io::Result<Option<Map>> {
    let Some(value_size) = sizes.iter().flatten().max().copied() else {
        return Ok(None);
    };
    let entries = u32::try_from(probes.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many probes"))?;
    let map = Map::create(MapKind::Array, "funcs", 4, value_size as u32, entries)?;
    for (i, (c, size)) in probes.iter().zip(sizes).enumerate() {
        if let (ProbeSpec::Kprobe { function, .. }, Some(_)) = (&c.spec, size) {
            let mut name = function.as_bytes().to_vec();
            name.resize(value_size, 0);
            map.set_all(&(i as u32).to_ne_bytes(), &name, false)?;
        }
    }
    Ok(Some(map))
}

/// Loads and attaches one kprobe.multi program for each group of kprobes
/// of one block with the same code (`shared`'s where compiled for a link,
/// else `compiled`'s; two functions at least), each function's cookie its
/// probe's index; a group the kernel refuses is left out (its probes go
/// the per-function way, with `compiled`).
pub(crate) fn attach_multi(
    probes: &[Concrete],
    compiled: &[Compiled],
    shared: &[Option<Compiled>],
    verbose: bool,
) -> Vec<MultiLink> {
    type Key = (usize, bool, Vec<[u8; 8]>);
    let mut groups: std::collections::BTreeMap<Key, Vec<usize>> = std::collections::BTreeMap::new();
    for (i, (c, code)) in probes.iter().zip(compiled).enumerate() {
        let code = shared.get(i).and_then(Option::as_ref).unwrap_or(code);
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
        let cookies: Vec<u64> = members.iter().map(|&i| i as u64).collect();
        let done = bpf_raw::load_program(ProgType::KprobeMulti, "scry_run", &bytes)
            .map_err(|e| e.error)
            .and_then(|prog| {
                let link = bpf_raw::attach_kprobe_multi(&prog, &functions, &cookies, ret)?;
                Ok((link, prog))
            });
        match done {
            Ok((link, prog)) => {
                if verbose {
                    // Whether the program reads its cookie (func, probe).
                    let by_cookie = members.iter().any(|&i| {
                        shared
                            .get(i)
                            .and_then(Option::as_ref)
                            .is_some_and(|s| s.insns != compiled[i].insns)
                    });
                    eprintln!(
                        "kprobe.multi: one link for {} functions{}",
                        functions.len(),
                        if by_cookie {
                            ", each function's probe index its attach cookie (func, probe)"
                        } else {
                            ""
                        }
                    );
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

#[cfg(test)]
mod tests {
    use super::super::btf::KernelTypes;
    use super::super::codegen::{Fds, ProbeEnv, ProgKind, Registry, compile_probe};
    use super::super::insn::Insn;
    use crate::lang::parser::parse;

    /// The code of `src`'s one block as the kprobe of probe index `id` on
    /// `func`, for a kprobe.multi link (`shared`) or not.
    fn code(
        reg: &mut Registry,
        src: &str,
        id: u64,
        func: &str,
        shared: Option<usize>,
    ) -> Vec<Insn> {
        let program = parse(src).expect("parses");
        let probe = &program.probes[0];
        let types = KernelTypes::default();
        let env = ProbeEnv {
            kind: ProgKind::Kprobe,
            format: None,
            probe_id: id,
            is_return: false,
            start_ns: 0,
            func: Some(func),
            shared,
            signature: None,
            types: &types,
            skip_tgid: None,
            cpid: None,
        };
        let fds = Fds::default();
        let compile = |reg: &mut Registry, discover| {
            compile_probe(
                reg,
                &env,
                &fds,
                discover,
                probe.predicate.as_ref(),
                &probe.body,
            )
            .expect("compiles")
        };
        compile(reg, true);
        compile(reg, false).insns
    }

    #[test]
    fn a_link_program_is_the_same_for_every_function() {
        let src =
            r#"kprobe:vfs_* { @[func, probe] = count(); printf("%s %s\n", func, probe); time(); }"#;
        let mut reg = Registry::default();
        let read = code(&mut reg, src, 0, "vfs_read", Some(16));
        let write = code(&mut reg, src, 1, "vfs_write", Some(16));
        assert_eq!(read, write, "one program for the link");
        // One printf and one time format for both functions.
        assert_eq!(reg.printfs.len(), 1);
        assert_eq!(reg.time_formats.len(), 1);
        // Per function, func and probe are constants: two programs.
        let mut reg = Registry::default();
        let read = code(&mut reg, src, 0, "vfs_read", None);
        let write = code(&mut reg, src, 1, "vfs_write", None);
        assert_ne!(read, write);
    }
}
