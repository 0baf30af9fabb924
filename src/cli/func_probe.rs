//! What `scry funccount` and `scry funclatency` share: bcc's pattern
//! argument with `-x BINARY`, `-p PID` or a command to run (`--
//! COMMAND`), `-r` (the pattern a regular expression), `-i`/`-d`/`-T`,
//! the functions found (`symbol::func_sites`),
//! the uprobes loaded (`sys::bpf_funcs`), bcc's header and closing line,
//! and the run loop. Kernel functions, tracepoints and USDT probes are
//! refused in one line naming what they would need.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::Path;

use anyhow::{anyhow, bail};
use clap::Args;

use scry::capture::bpf_run::{self, EndReason, Workload};
use scry::symbol::func_sites::{self, FuncPattern, NameMatch};
use scry::sys::bpf_funcs::{FuncSites, FuncsBpf, FuncsMode};
use scry::sys::signal::RunStop;

use super::bpf_tool::{self, TableArgs};
use super::target::PidArg;

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only this process (ends when it exits)")))]
pub(crate) struct FuncProbeArgs {
    /// Functions: `LIB:PATTERN` (`c:malloc`, `/path/bin:read*`), `:PATTERN`
    /// (the traced process's binary), or PATTERN with -x. `*` and `?` are
    /// wildcards.
    #[arg(value_name = "PATTERN")]
    pattern: String,
    /// The binary (path, or library name such as `c`) PATTERN's functions
    /// are in; the whole PATTERN is then the function glob.
    #[arg(short = 'x', long = "binary", value_name = "BINARY")]
    binary: Option<String>,
    /// PATTERN's function part is a regular expression, matched at the
    /// start of each name as bcc's -r (default: `*` and `?` wildcards).
    #[arg(short = 'r', long = "regexp")]
    regexp: bool,
    #[command(flatten)]
    target: PidArg,
    #[command(flatten)]
    times: bpf_tool::TimedArgs,
    /// Print the time with each interval.
    #[arg(short = 'T', long = "timestamp")]
    pub(crate) timestamp: bool,
    #[command(flatten)]
    pub(crate) table: TableArgs,
    /// A command to run and trace (after `--`); ends when it exits.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// The functions probed, loaded and waiting for the run.
pub(crate) struct Probed {
    pub(crate) bpf: FuncsBpf,
    /// The functions' names, by index.
    pub(crate) names: Vec<String>,
    /// The process traced (-p or the command), if any.
    pub(crate) pid: Option<u32>,
    workload: Option<Workload>,
    stop: RunStop,
}

/// Parses and finds the functions, forks the command (if any) and loads
/// the probes on them.
/// `cgroup`: funclatency's `-c` (only that cgroup's tasks are timed).
pub(crate) fn load(
    tool: &str,
    args: &FuncProbeArgs,
    mode: FuncsMode,
    cgroup: &bpf_tool::CgroupArg,
) -> anyhow::Result<Probed> {
    if args.target.pid.is_some() && !args.command.is_empty() {
        bail!("{tool}: -p and a command exclude each other");
    }
    bpf_tool::check_pid(tool, "-p", args.target.pid)?;
    super::target::check_command(tool, &args.command)?;
    let parsed = func_sites::parse(&args.pattern, args.binary.as_deref())
        .map_err(|e| anyhow!("{tool}: {e}"))?;
    let (binary, glob) = match parsed {
        FuncPattern::User { binary, glob } => (binary, glob),
        other => bail!("{tool}: {}", refusal(&other)),
    };
    let cgroup = cgroup.open(tool)?;
    let names = NameMatch::new(&glob, args.regexp).map_err(|e| anyhow!("{tool}: {e}"))?;
    let program = args.command.first().map(Path::new);
    let path = func_sites::find_binary(&binary, &args.pattern, args.target.pid, program)
        .map_err(|e| anyhow!("{tool}: {e}"))?;
    let found = func_sites::find(&path, &names).map_err(|e| anyhow!("{tool}: {e}"))?;
    let stop = RunStop::install()?;
    let workload = match args.command.is_empty() {
        true => None,
        false => Some(Workload::fork(&args.command)?),
    };
    let pid = args
        .target
        .pid
        .or(workload.as_ref().map(|w| w.pid() as u32));
    let sites = FuncSites {
        pid: pid.map_or(-1, |p| p as i32),
        sites: found
            .functions
            .iter()
            .map(|f| (found.path.clone(), f.file_offset))
            .collect(),
    };
    let bpf = bpf_tool::load(tool, || FuncsBpf::load(mode, &sites, cgroup.as_ref()))?;
    bpf_tool::print_hooks(tool, &bpf.hooks(), args.table.verbose);
    Ok(Probed {
        bpf,
        names: found.functions.into_iter().map(|f| f.symbol).collect(),
        pid,
        workload,
        stop,
    })
}

/// What a pattern that names no user function would need.
fn refusal(pattern: &FuncPattern) -> String {
    match pattern {
        FuncPattern::Kernel { glob } => match scry::sys::uprobe::UprobePmu::detect_kprobe() {
            Err(e) => format!(
                "'{glob}' names kernel functions, which need kprobes, and this kernel has none \
                 (the kprobe PMU, /sys/bus/event_source/devices/kprobe: {e}); user functions \
                 are LIB:PATTERN or -x BINARY PATTERN"
            ),
            Ok(_) => format!(
                "'{glob}' names kernel functions, not counted by this tool yet (user functions \
                 are LIB:PATTERN or -x BINARY PATTERN); scry run 'kprobe:FUNC {{ @ = count(); }}' \
                 counts one"
            ),
        },
        FuncPattern::Tracepoint(tp) => {
            format!(
                "t:{tp}: tracepoints are not counted by this tool; scry stat -e {tp} counts them"
            )
        }
        FuncPattern::Usdt(probe) => format!("u:{probe}: USDT probes are not supported"),
        FuncPattern::User { .. } => String::new(),
    }
}

impl Probed {
    /// bcc's header (not with --json): `Tracing N functions for "PATTERN"...`.
    pub(crate) fn header(&self, out: &mut impl Write, args: &FuncProbeArgs) -> io::Result<()> {
        if !args.table.json {
            writeln!(
                out,
                "Tracing {} functions for \"{}\"... Hit Ctrl-C to end.",
                self.names.len(),
                args.pattern
            )?;
        }
        out.flush()
    }

    /// Starts the command, runs until the end (calling `tick(bpf, last)`
    /// at each interval and at the end), prints bcc's `Detaching...`;
    /// the command's failure is the tool's.
    pub(crate) fn run(
        mut self,
        args: &FuncProbeArgs,
        mut tick: impl FnMut(&mut FuncsBpf, bool) -> io::Result<()>,
    ) -> anyhow::Result<()> {
        if let Some(w) = &mut self.workload {
            w.start()?;
        }
        let opts = args.times.run_options(self.pid);
        let bpf = &mut self.bpf;
        let end = bpf_run::run_with(&opts, self.stop, |last| {
            if last {
                bpf.detach();
            }
            tick(bpf, last)
        })?;
        if !args.table.json {
            let mut out = io::stdout().lock();
            writeln!(out, "Detaching...")?;
            out.flush()?;
        }
        let status = match (&mut self.workload, end) {
            (Some(w), EndReason::TargetExited) => w.wait()?,
            _ => None,
        };
        super::workload_exit(status, &args.command)
    }
}
