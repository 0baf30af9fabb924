//! The command line: one file per subcommand, each holding its clap `*Args`,
//! the conversion into library options, and the wiring of the stages.
//!
//! Exit codes are interface: 0 success (a closed pipe too), 1 the target
//! failed, 2 bad input or usage. A subcommand returns `Err(Exit(code))` to
//! leave with a code and no message; every other error prints as
//! `scry: {chain}`, each cause once (`error_text`), and exits 2.

mod annotate;
mod bindsnoop;
mod biolatency;
mod biosnoop;
mod biotop;
mod bitesize;
mod bpf_tool;
mod cachestat;
mod convert;
mod cpudist;
mod execsnoop;
mod exitsnoop;
mod feed_consumer;
mod filetop;
mod flamegraph;
mod flamegraph_live;
mod fsslower;
mod func_probe;
mod funccount;
mod funclatency;
mod futexctn;
mod heatmap;
mod irqs;
mod klockstat;
mod list;
mod memleak;
mod memsnoop;
mod mountsnoop;
mod offcpu;
mod offcputime;
mod offwaketime;
mod oncpu;
mod opensnoop;
mod probe;
mod probe_kernel;
mod profile;
mod record;
mod report;
mod run;
mod runqlat;
mod runqlen;
mod runqslower;
mod sched;
mod script;
mod serve;
mod sigsnoop;
mod snoop;
mod solisten;
mod stat;
mod statsnoop;
mod swapin;
mod syscount;
mod target;
mod tcp;
mod tcpaccept;
mod tcpconnect;
mod tcplife;
mod tcpretrans;
mod tcprtt;
mod tcpstates;
mod tcptop;
mod threadsnoop;
mod top;
mod trace;
mod trace_functions;
mod vfsstat;
mod wakeuptime;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "scry", version, about = "Linux tracing and profiling", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a command (or watch a process or the system) and record samples into perf.data
    Record(record::RecordArgs),
    /// Count events while a command runs (or on CPUs, processes), as perf stat
    Stat(stat::StatArgs),
    /// List the events this machine offers (hardware, software, cache, PMUs, tracepoints, probes)
    List(list::ListArgs),
    /// Print the samples of a perf.data file, one per line, as `perf script` does
    Script(script::ScriptArgs),
    /// Summarize a perf.data file: hot functions, call chains
    Report(report::ReportArgs),
    /// Draw a flame graph (SVG) or write folded stacks from a perf.data file or a command
    Flamegraph(flamegraph::FlamegraphArgs),
    /// Convert a perf.data file for other viewers: pprof, Firefox Profiler, speedscope, Chrome trace, folded
    Convert(convert::ConvertArgs),
    /// Disassembly of the hottest functions with each instruction's share of the samples, as perf annotate --stdio
    Annotate(annotate::AnnotateArgs),
    /// Heat maps as one HTML page: sub-second offsets of samples (select cells for their flame graph), or latencies of event pairs
    Heatmap(heatmap::HeatmapArgs),
    /// A local web viewer of recordings: flame graph and icicle, heat map, functions, diff (127.0.0.1 unless --bind)
    Serve(serve::ServeArgs),
    /// Live view of the hottest functions, system-wide or of a process (perf top)
    Top(top::TopArgs),
    /// Trace system calls and events of a command, process or the system, live (perf trace, strace)
    Trace(trace::TraceArgs),
    /// Define, list and delete probes on user (-x BINARY) and kernel functions: probe_BINARY:FUNC and probe:FUNC events usable by record, stat and trace (perf probe)
    Probe(probe::ProbeArgs),
    /// scry profile's watchdog: restores the function tracer of tracefs ROOT when its stdin closes
    #[command(name = "__ftrace-restore", hide = true)]
    FtraceRestore { root: std::path::PathBuf },
    /// Off-CPU time by stack: where tasks waited, and who woke them (offcputime, offwaketime)
    Offcpu(offcpu::OffcpuArgs),
    /// Latency between paired events per task, with stacks (trace-cmd profile)
    Profile(profile::ProfileArgs),
    /// Scheduler analysis: runqlat (run-queue latency histogram), timehist (per-switch timeline)
    Sched(sched::SchedArgs),
    /// System calls counted in the kernel, per call or per process, with latency (bcc syscount)
    Syscount(syscount::SyscountArgs),
    /// Run-queue latency as a histogram, counted in the kernel (bcc runqlat)
    Runqlat(runqlat::RunqlatArgs),
    /// On-CPU or off-CPU time per stretch as a histogram, counted in the kernel (bcc cpudist)
    Cpudist(cpudist::CpudistArgs),
    /// Calls of user functions matching a pattern, counted in the kernel by uprobes (bcc funccount)
    Funccount(funccount::FunccountArgs),
    /// Latency of user functions matching a pattern as a histogram, timed in the kernel by uprobes (bcc funclatency)
    Funclatency(funclatency::FunclatencyArgs),
    /// Each run-queue wait longer than a threshold, streamed from the kernel (bcc runqslower)
    Runqslower(runqslower::RunqslowerArgs),
    /// Off-CPU time by stack (kernel and user), summed in the kernel (bcc offcputime)
    Offcputime(offcputime::OffcputimeArgs),
    /// User lock contention: time in futex waits per thread, lock and stack, summed in the kernel (libbpf-tools futexctn)
    Futexctn(futexctn::FutexctnArgs),
    /// Kernel lock contention from the lock:contention_* tracepoints, per caller and type, summed in the kernel (as perf lock contention -b)
    Klockstat(klockstat::KlockstatArgs),
    /// Blocked time by the blocked stack joined to the waker's stack, summed in the kernel (bcc offwaketime)
    Offwaketime(offcputime::OffcputimeArgs),
    /// On-CPU stacks sampled at -F HZ, counted in the kernel (bcc profile; `scry profile` is trace-cmd's)
    #[command(name = "profile-bpf", visible_alias = "oncpu")]
    ProfileBpf(oncpu::OncpuArgs),
    /// Blocked time by the waker's kernel stack, summed in the kernel (bcc wakeuptime)
    Wakeuptime(wakeuptime::WakeuptimeArgs),
    /// Each CPU's run-queue length, sampled in the kernel (bcc runqlen)
    Runqlen(runqlen::RunqlenArgs),
    /// Time in each hard interrupt handler, summed in the kernel (bcc hardirqs)
    Hardirqs(irqs::IrqsArgs),
    /// Time in each softirq vector, summed in the kernel (bcc softirqs)
    Softirqs(irqs::IrqsArgs),
    /// Each execve with its arguments and return code, streamed (bcc execsnoop)
    Execsnoop(execsnoop::ExecsnoopArgs),
    /// Each process exit with its age and exit code or signal, streamed (bcc exitsnoop)
    Exitsnoop(exitsnoop::ExitsnoopArgs),
    /// Each open and openat with its descriptor or error, streamed (bcc opensnoop)
    Opensnoop(opensnoop::OpensnoopArgs),
    /// Each kill, tkill and tgkill call with its result, streamed (bcc killsnoop)
    Killsnoop(sigsnoop::SigsnoopArgs),
    /// Each signal generated, who sent it and to whom, streamed (bcc sigsnoop)
    Sigsnoop(sigsnoop::SigsnoopArgs),
    /// Run a bpftrace program, compiled to BPF by scry itself (no LLVM): scry run 'PROGRAM' | -e 'PROGRAM' | FILE.bt
    Run(run::RunArgs),
    /// Each stat, lstat, statx, newfstatat and statfs with its path and result, streamed (bcc statsnoop)
    Statsnoop(statsnoop::StatsnoopArgs),
    /// Each TCP session when it closes: process, ends, bytes, duration (bcc tcplife)
    Tcplife(tcplife::TcplifeArgs),
    /// Each active TCP open (connect), or counts of them with -c (bcc tcpconnect)
    Tcpconnect(tcpconnect::TcpconnectArgs),
    /// Each accepted TCP connection, in the accepting process (bcc tcpaccept)
    Tcpaccept(tcpaccept::TcpacceptArgs),
    /// Each TCP state change, with the time spent in the state left (bcc tcpstates)
    Tcpstates(tcpstates::TcpstatesArgs),
    /// The TCP connections moving the most bytes, per process, every interval (bcc tcptop)
    Tcptop(tcptop::TcptopArgs),
    /// Smoothed TCP round-trip times as a histogram, counted in the kernel (bcc tcprtt)
    Tcprtt(tcprtt::TcprttArgs),
    /// Each retransmitted TCP segment, or counts per connection with -c (bcc tcpretrans)
    Tcpretrans(tcpretrans::TcpretransArgs),
    /// Each thread created, with its start function, streamed (bcc threadsnoop)
    Threadsnoop(threadsnoop::ThreadsnoopArgs),
    /// Each IPv4 and IPv6 bind: process, result, protocol, options, port, address (bcc bindsnoop)
    Bindsnoop(bindsnoop::BindsnoopArgs),
    /// Each listen on an IPv4 or IPv6 socket: process, result, backlog, port, address (bcc solisten)
    Solisten(solisten::SolistenArgs),
    /// Block I/O latency as a histogram, counted in the kernel (bcc biolatency)
    Biolatency(biolatency::BiolatencyArgs),
    /// Each block I/O request: process, disk, sector, bytes, latency, streamed (bcc biosnoop)
    Biosnoop(biosnoop::BiosnoopArgs),
    /// The processes doing the most block I/O, every interval (bcc biotop)
    Biotop(biotop::BiotopArgs),
    /// Block I/O request sizes per process name, as histograms counted in the kernel (bcc bitesize)
    Bitesize(bitesize::BitesizeArgs),
    /// Page-cache hits, misses and dirtied pages every interval (bcc cachestat)
    Cachestat(cachestat::CachestatArgs),
    /// Reads, writes, fsyncs, opens and creations per second, counted in the kernel (bcc vfsstat)
    Vfsstat(vfsstat::VfsstatArgs),
    /// Swap-ins per process every interval, counted in the kernel (bcc swapin)
    Swapin(swapin::SwapinArgs),
    /// Allocations not freed, by the stack that made them (bcc memleak)
    Memleak(memleak::MemleakArgs),
    /// Each OOM kill: who triggered it and who was killed, streamed (bcc oomkill)
    Oomkill(memsnoop::OomkillArgs),
    /// Each direct reclaim with its latency and pages, streamed (bcc drsnoop)
    Drsnoop(memsnoop::DrsnoopArgs),
    /// Each capability check with its verdict, streamed (bcc capable)
    Capable(memsnoop::CapableArgs),
    /// Each file deleted, with its age since its creation, streamed (bcc filelife)
    Filelife(statsnoop::FilelifeArgs),
    /// Each mount and umount with its arguments and result, streamed (bcc mountsnoop)
    Mountsnoop(mountsnoop::MountsnoopArgs),
    /// The files read and written the most, per thread, every interval (bcc filetop)
    Filetop(filetop::FiletopArgs),
    /// Each file system read, write, open and fsync slower than a threshold, streamed (bcc fsslower, ext4slower)
    Fsslower(fsslower::FsslowerArgs),
    /// List the BPF tools (each also runs through a symlink named after it)
    Tools,
}

/// `-p`/`-t` lists: `1234,5678` → positive ids, or an error naming the flag.
pub(crate) fn parse_ids(text: &str, flag: &str) -> anyhow::Result<Vec<i32>> {
    use anyhow::Context;
    text.split(',')
        .map(|p| p.trim().parse::<i32>().ok().filter(|&n| n > 0))
        .collect::<Option<Vec<_>>>()
        .with_context(|| format!("{flag}: expected a comma-separated list of ids, got '{text}'"))
}

/// How a command's workload ended, as scry's exit: a signal's death in one
/// line (`scry: sh: Killed`, the words perf stat prints) and 128 + the
/// signal, the status a shell gives perf record (it dies of the same
/// signal); a non-zero exit is 1 (the target failed).
pub(crate) fn workload_exit(
    status: Option<scry::sys::process::ExitStatus>,
    command: &[std::ffi::OsString],
) -> anyhow::Result<()> {
    use scry::sys::process::ExitStatus;
    match status {
        Some(ExitStatus::Signal(sig)) => {
            let program = command
                .first()
                .map_or("the workload".into(), |p| p.to_string_lossy());
            eprintln!(
                "scry: {program}: {} (signal {sig})",
                scry::sys::signal::describe(sig)
            );
            Err(Exit(u8::try_from(128 + sig).unwrap_or(u8::MAX)).into())
        }
        Some(status) if !status.success() => Err(Exit(1).into()),
        _ => Ok(()),
    }
}

/// An output file holding other processes' data, created 0600
/// (`sys::private_file`).
pub(crate) fn create_private(path: &std::path::Path) -> anyhow::Result<std::fs::File> {
    use anyhow::Context;
    scry::sys::private_file::create(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

impl Command {
    /// The BPF tools and `scry run`: each ends in a run loop that waits on
    /// the stop signals, so catching them before it loads is safe (a
    /// command that never waits on them must not: Ctrl-C would not stop it).
    fn catches_stop_signals_early(&self) -> bool {
        use Command::*;
        matches!(
            self,
            Syscount(_)
                | Runqlat(_)
                | Cpudist(_)
                | Funccount(_)
                | Funclatency(_)
                | Runqslower(_)
                | Offcputime(_)
                | Futexctn(_)
                | Klockstat(_)
                | Offwaketime(_)
                | ProfileBpf(_)
                | Wakeuptime(_)
                | Runqlen(_)
                | Hardirqs(_)
                | Softirqs(_)
                | Execsnoop(_)
                | Exitsnoop(_)
                | Opensnoop(_)
                | Killsnoop(_)
                | Sigsnoop(_)
                | Run(_)
                | Statsnoop(_)
                | Tcplife(_)
                | Tcpconnect(_)
                | Tcpaccept(_)
                | Tcpstates(_)
                | Tcptop(_)
                | Tcprtt(_)
                | Tcpretrans(_)
                | Threadsnoop(_)
                | Bindsnoop(_)
                | Solisten(_)
                | Biolatency(_)
                | Biosnoop(_)
                | Biotop(_)
                | Bitesize(_)
                | Cachestat(_)
                | Vfsstat(_)
                | Swapin(_)
                | Memleak(_)
                | Oomkill(_)
                | Drsnoop(_)
                | Capable(_)
                | Filelife(_)
                | Filetop(_)
                | Fsslower(_)
        )
    }
}

/// The command that puts the kernel's function tracer back if scry dies
/// while it runs (`scry __ftrace-restore ROOT`, see `sys::ftrace`).
pub(crate) fn ftrace_watchdog(root: &std::path::Path) -> Option<std::process::Command> {
    std::env::current_exe().ok().map(|exe| {
        let mut cmd = std::process::Command::new(exe);
        cmd.arg("__ftrace-restore").arg(root);
        cmd
    })
}

/// Leave with this exit code and no further message (the cause was printed).
#[derive(Debug, thiserror::Error)]
#[error("exit status {0}")]
pub(crate) struct Exit(pub(crate) u8);

/// The `scry` binary's entry point: parses the command line, runs the
/// command and turns its result into the exit code (0, 1 target failed, 2
/// bad input or usage).
pub fn main() -> ExitCode {
    let args = bpf_tool::busybox_args(std::env::args_os());
    let parsed = Cli::try_parse_from(&args).or_else(|err| {
        bpf_tool::bcc_profile_args(&args, &err)
            .and_then(|bcc| Cli::try_parse_from(bcc).ok())
            .ok_or(err)
    });
    let cli = match parsed {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // The BPF tools and `scry run` catch the stop signals before they load
    // and attach: a Ctrl-C or SIGTERM that comes while they set up ends the
    // run cleanly (links closed, summary printed) instead of killing scry.
    let _early = cli
        .command
        .catches_stop_signals_early()
        .then(scry::sys::signal::RunStop::install);
    let result = match cli.command {
        Command::Record(args) => record::run(args),
        Command::Stat(args) => stat::run(args),
        Command::List(args) => list::run(args),
        Command::Script(args) => script::run(args),
        Command::Report(args) => report::run(args),
        Command::Flamegraph(args) => flamegraph::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Heatmap(args) => heatmap::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Annotate(args) => annotate::run(args),
        Command::Top(args) => top::run(args),
        Command::Offcpu(args) => offcpu::run(args),
        Command::Profile(args) => profile::run(args),
        Command::FtraceRestore { root } => {
            // Ctrl-C reaches the whole process group: outlive it, as scry may.
            let _signals = scry::sys::signal::RunStop::install();
            scry::sys::ftrace::watchdog(&root);
            Ok(())
        }
        Command::Sched(args) => sched::run(args),
        Command::Trace(args) => trace::run(args),
        Command::Probe(args) => probe::run(args),
        Command::Syscount(args) => syscount::run(args),
        Command::Cpudist(args) => cpudist::run(args),
        Command::Funccount(args) => funccount::run(args),
        Command::Funclatency(args) => funclatency::run(args),
        Command::Runqlat(args) => runqlat::run(args),
        Command::Runqslower(args) => runqslower::run(args),
        Command::Offcputime(args) => offcputime::run(args),
        Command::Futexctn(args) => futexctn::run(args),
        Command::Klockstat(args) => klockstat::run(args),
        Command::Offwaketime(args) => offwaketime::run(args),
        Command::ProfileBpf(args) => oncpu::run(args),
        Command::Wakeuptime(args) => wakeuptime::run(args),
        Command::Runqlen(args) => runqlen::run(args),
        Command::Hardirqs(args) => irqs::run(scry::sys::bpf_irqs::IrqKind::Hard, args),
        Command::Softirqs(args) => irqs::run(scry::sys::bpf_irqs::IrqKind::Soft, args),
        Command::Execsnoop(args) => execsnoop::run(args),
        Command::Exitsnoop(args) => exitsnoop::run(args),
        Command::Opensnoop(args) => opensnoop::run(args),
        Command::Killsnoop(args) => sigsnoop::run_kill(args),
        Command::Sigsnoop(args) => sigsnoop::run(args),
        Command::Run(args) => run::run(args),
        Command::Statsnoop(args) => statsnoop::run(args),
        Command::Tcplife(args) => tcplife::run(args),
        Command::Tcpconnect(args) => tcpconnect::run(args),
        Command::Tcpaccept(args) => tcpaccept::run(args),
        Command::Tcpstates(args) => tcpstates::run(args),
        Command::Tcpretrans(args) => tcpretrans::run(args),
        Command::Tcptop(args) => tcptop::run(args),
        Command::Tcprtt(args) => tcprtt::run(args),
        Command::Threadsnoop(args) => threadsnoop::run(args),
        Command::Biolatency(args) => biolatency::run(args),
        Command::Biosnoop(args) => biosnoop::run(args),
        Command::Bindsnoop(args) => bindsnoop::run(args),
        Command::Solisten(args) => solisten::run(args),
        Command::Biotop(args) => biotop::run(args),
        Command::Bitesize(args) => bitesize::run(args),
        Command::Cachestat(args) => cachestat::run(args),
        Command::Vfsstat(args) => vfsstat::run(args),
        Command::Swapin(args) => swapin::run(args),
        Command::Memleak(args) => memleak::run(args),
        Command::Oomkill(args) => memsnoop::run_oomkill(args),
        Command::Drsnoop(args) => memsnoop::run_drsnoop(args),
        Command::Capable(args) => memsnoop::run_capable(args),
        Command::Filelife(args) => statsnoop::run_filelife(args),
        Command::Mountsnoop(args) => mountsnoop::run(args),
        Command::Filetop(args) => filetop::run(args),
        Command::Fsslower(args) => fsslower::run(args),
        Command::Tools => bpf_tool::list(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => exit_code_for(&err),
    }
}

fn exit_code_for(err: &anyhow::Error) -> ExitCode {
    if let Some(Exit(code)) = err.downcast_ref::<Exit>() {
        return ExitCode::from(*code);
    }
    // A reader that closed the pipe (`scry script | head`) is not a failure.
    let broken_pipe = err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    });
    if broken_pipe {
        return ExitCode::SUCCESS;
    }
    eprintln!("scry: {}", error_text(err));
    ExitCode::from(2)
}

/// The error chain as one line, each cause said once: a cause whose text
/// its parent already ends with (`#[error("{path}: {source}")]` displays
/// the source it also chains) is skipped, and the OS error number that
/// `io::Error` appends (`(os error 2)`) is dropped, its words stay.
fn error_text(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = without_os_error_numbers(&cause.to_string());
        if text.is_empty() || line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// `No such file or directory (os error 2)` → `No such file or directory`,
/// wherever in the text.
fn without_os_error_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" (os error ") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + " (os error ".len()..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[digits..].starts_with(')') {
            rest = &tail[digits + 1..];
        } else {
            out.push_str(" (os error ");
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cause_is_said_once_without_errno_numbers() {
        #[derive(Debug, thiserror::Error)]
        #[error("{path}: {source}")]
        struct Doubled {
            path: String,
            source: std::io::Error,
        }
        let err = anyhow::Error::new(Doubled {
            path: "x.data".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOENT),
        })
        .context("reading input");
        assert_eq!(
            error_text(&err),
            "reading input: x.data: No such file or directory"
        );
        assert_eq!(
            without_os_error_numbers("a (os error 21): b (os error x)"),
            "a: b (os error x)"
        );
    }
}
