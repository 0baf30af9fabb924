//! What `scry profile` runs in the kernel beside its capture: the BPF
//! program that sums the default hooks' system calls, page faults and
//! interrupts (`sys::bpf_profile`, instead of streaming millions of records
//! a second), and the function tracer (`sys::ftrace`, trace-cmd profile's
//! `function_graph` at depth 1 on the profiled tasks). Both are optional:
//! where one cannot run, the reason is data ([`BpfRefused`],
//! [`TracerRefused`]) that the command prints, and the rest runs.
//!
//! The decision: the two are read in the order the command always read
//! them, the tracer's text first, then the BPF sums (their programs
//! detached), so that what the kernel counts while the trace is read is
//! the same as before; joining them to the pairs is `analysis`'s.
//!
//! `scry record --profile` runs the same tracer ([`RecordFunctions`],
//! started and read by `capture::to_file`) and keeps its rows in the file;
//! its refusals are the same [`TracerRefused`] lines.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::data::function_rows::FunctionRow;

use crate::sys::bpf_profile::{Covered, KernelSums, ProfileBpf};
use crate::sys::ftrace::{FunctionTracer, TracerOptions};

/// Why the BPF program did not load: system calls, page faults and
/// interrupts are streamed instead.
#[derive(Debug, thiserror::Error)]
#[error(
    "BPF unavailable ({0}{hint}): system calls, page faults and irqs go through the perf rings (slower)",
    hint = if .0.kind() == io::ErrorKind::PermissionDenied {
        "; needs CAP_BPF and CAP_PERFMON"
    } else {
        ""
    }
)]
pub(crate) struct BpfRefused(io::Error);

/// Why the function tracer did not start: kernel functions are not
/// profiled.
#[derive(Debug, thiserror::Error)]
#[error("kernel functions not profiled: {0}")]
pub(crate) struct TracerRefused(io::Error);

impl TracerRefused {
    /// `record --profile -o -`: perf's pipe format has no section for the
    /// rows, so the tracer does not run.
    pub(crate) fn pipe() -> TracerRefused {
        TracerRefused(io::Error::other(
            "the pipe format (-o -) has no place for their rows",
        ))
    }

    /// The tracer ran but its text could not be read.
    pub(crate) fn unread(err: &ProfileKernelError) -> TracerRefused {
        let why = match std::error::Error::source(err) {
            Some(source) => format!("{err}: {source}"),
            None => err.to_string(),
        };
        TracerRefused(io::Error::other(why))
    }
}

/// `scry record --profile`'s function tracer: what it traces, and how its
/// text becomes the rows the file keeps.
pub(crate) struct RecordFunctions {
    /// tracefs.
    pub(crate) root: PathBuf,
    /// The tracer and its filters (the pids are chosen at the start).
    pub(crate) options: TracerOptions,
    /// The command that restores the tracer if scry is killed.
    pub(crate) watchdog: Option<Command>,
    /// The tracer's text summed per task and function: `analysis`'s, which
    /// `capture` may not name, handed down by the command.
    pub(crate) rows: fn(&str) -> Vec<FunctionRow>,
}

/// What went wrong with a program or tracer that did start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ProfileKernelError {
    /// A `-p` process could not be watched.
    #[error("watching process {pid} in BPF")]
    Watch {
        /// The process.
        pid: i32,
        /// The map's error.
        #[source]
        source: io::Error,
    },
    /// The command could not be watched.
    #[error("watching the workload in BPF")]
    WatchWorkload(#[source] io::Error),
    /// The tracer's text could not be read.
    #[error("reading the function tracer's trace")]
    Trace(#[source] io::Error),
    /// The program's sums could not be read.
    #[error("reading the BPF sums")]
    Sums(#[source] io::Error),
}

/// What the kernel read at the end.
#[derive(Debug, Default)]
pub(crate) struct KernelResults {
    /// The function tracer's text, when it ran.
    pub(crate) trace: Option<String>,
    /// The BPF program's sums and what they cover, when it ran.
    pub(crate) sums: Option<(KernelSums, Covered)>,
}

/// The BPF program and the function tracer of one `scry profile` run.
#[derive(Default)]
pub(crate) struct ProfileKernel {
    bpf: Option<ProfileBpf>,
    tracer: Option<FunctionTracer>,
    /// `-p`'s processes (their thread group ids in BPF).
    pids: Vec<i32>,
    /// `-a`: every task.
    all: bool,
}

impl ProfileKernel {
    /// The BPF program loaded when `bpf` is asked for (`all`: every task
    /// counts), else nothing; where it does not load, the reason.
    pub(crate) fn load(bpf: bool, all: bool) -> (ProfileKernel, Option<BpfRefused>) {
        let mut kernel = ProfileKernel {
            all,
            ..ProfileKernel::default()
        };
        if !bpf {
            return (kernel, None);
        }
        match ProfileBpf::load(all) {
            Ok(bpf) => kernel.bpf = Some(bpf),
            Err(err) => return (kernel, Some(BpfRefused(err))),
        }
        (kernel, None)
    }

    /// What the BPF program sums (nothing without it).
    pub(crate) fn covered(&self) -> Covered {
        self.bpf.as_ref().map(|b| b.covered).unwrap_or_default()
    }

    /// `-p`'s processes watched (with what they fork).
    pub(crate) fn watch(&mut self, pids: &[i32]) -> Result<(), ProfileKernelError> {
        self.pids = pids.to_vec();
        if let Some(bpf) = &mut self.bpf {
            for &pid in pids {
                let tgid = crate::sys::proc::tgid(pid).unwrap_or(pid);
                bpf.watch(tgid, false)
                    .map_err(|source| ProfileKernelError::Watch { pid, source })?;
            }
        }
        Ok(())
    }

    /// The command watched from its exec.
    pub(crate) fn watch_workload(&mut self, pid: i32) -> Result<(), ProfileKernelError> {
        if let Some(bpf) = &mut self.bpf {
            bpf.watch(pid, true)
                .map_err(ProfileKernelError::WatchWorkload)?;
        }
        Ok(())
    }

    /// The function tracer started on the profiled tasks (the command,
    /// else `-p`'s processes, else every task with `-a`), unless its
    /// tracer is `nop`; `watchdog` restores the kernel's tracer even if
    /// scry is killed.
    pub(crate) fn start_tracer(
        &mut self,
        root: &Path,
        mut opts: TracerOptions,
        workload: Option<i32>,
        watchdog: Option<Command>,
    ) -> Result<(), TracerRefused> {
        if opts.tracer == "nop" {
            return Ok(());
        }
        opts.pids = match workload {
            Some(pid) if self.pids.is_empty() => vec![pid],
            _ if self.all => Vec::new(),
            _ => self.pids.clone(),
        };
        let tracer = FunctionTracer::start(root, &opts, watchdog).map_err(TracerRefused)?;
        self.tracer = Some(tracer);
        Ok(())
    }

    /// The tracer's text, then the BPF sums (the programs detached).
    pub(crate) fn finish(mut self) -> Result<KernelResults, ProfileKernelError> {
        let trace = match self.tracer.take() {
            Some(tracer) => Some(tracer.finish().map_err(ProfileKernelError::Trace)?),
            None => None,
        };
        let sums = match &mut self.bpf {
            Some(bpf) => {
                bpf.detach();
                let sums = bpf.read().map_err(ProfileKernelError::Sums)?;
                Some((sums, bpf.covered))
            }
            None => None,
        };
        Ok(KernelResults { trace, sums })
    }
}
