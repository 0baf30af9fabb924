//! `scry run`: a bpftrace program (`scry run 'PROG'`, `-e 'PROG'`, or a
//! `FILE.bt`) compiled to BPF by scry itself and run until it exits or
//! Ctrl-C. Errors in the program print as bpftrace prints them (place,
//! line, underline) and exit 2.
//!
//! As bpftrace: `-c CMD` forks CMD held before its exec, attaches (its
//! uprobes to CMD alone), runs BEGIN, then lets it exec, and the run ends
//! when it exits; `-p PID` scopes uprobes to PID and ends with it. The
//! words after the program are its positional parameters (`$1`, `$#`).
//! `-o FILE` takes what bpftrace's `-o` takes: everything but the two
//! newlines before the maps at the end, which stay on stdout.

use std::ffi::OsString;
use std::io::Write;

use anyhow::Context;
use clap::Args;

use super::Exit;
use scry::capture::bpf_run::Workload;
use scry::lang::run::{RunError, RunOptions, run as run_program};

#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    /// The program text (as `bpftrace -e`)
    #[arg(short = 'e', value_name = "PROGRAM")]
    expr: Option<String>,
    /// Print each probe's instruction count to stderr (default off)
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Compile the program and load it into the kernel (the verifier
    /// checks every probe's code) without attaching anything, then exit
    /// (default off): kprobes are checked so on a kernel without them
    #[arg(long)]
    dry_run: bool,
    /// List the probes matching the program argument as a pattern
    /// (`scry run -l 'tracepoint:sched:*'`; default: all), as bpftrace -l
    #[arg(short = 'l')]
    list: bool,
    /// Run CMD (split at spaces, no shell): every probe is attached
    /// before it execs, uprobes fire in it alone, and the run ends when
    /// it exits (default: no command)
    #[arg(short = 'c', value_name = "CMD", conflicts_with = "pid")]
    command: Option<String>,
    /// Uprobes fire in process PID alone, and the run ends when it exits
    /// (default: every process, until Ctrl-C or exit())
    #[arg(short = 'p', value_name = "PID")]
    pid: Option<u32>,
    /// Write the output to FILE (created 0600) instead of stdout (default:
    /// stdout)
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    /// No "Attaching N probes..." line (default off)
    #[arg(short = 'q')]
    quiet: bool,
    /// The program, or a file holding it (FILE.bt), unless -e gives it;
    /// then the program's positional parameters ($1, $2, ...)
    #[arg(value_name = "PROGRAM|FILE")]
    program: Vec<String>,
}

pub(crate) fn run(args: RunArgs) -> anyhow::Result<()> {
    if args.list {
        let pattern = args.program.first().map_or("*", String::as_str);
        let mut out = std::io::stdout().lock();
        for name in scry::lang::run::list_probes(pattern).context("cannot list the probes")? {
            writeln!(out, "{name}")?;
        }
        return Ok(());
    }
    let (origin, source, params) = match (&args.expr, args.program.split_first()) {
        (Some(e), _) => ("stdin".to_string(), e.clone(), &args.program[..]),
        (None, Some((p, params))) if std::path::Path::new(p).is_file() => {
            let bytes = std::fs::read(p).with_context(|| format!("cannot read {p}"))?;
            let text = String::from_utf8(bytes).with_context(|| format!("{p}: not UTF-8 text"))?;
            (p.clone(), text, params)
        }
        (None, Some((p, params))) => ("stdin".to_string(), p.clone(), params),
        (None, None) => anyhow::bail!("no program: scry run 'PROGRAM', -e 'PROGRAM' or FILE.bt"),
    };
    if let Some(pid) = args.pid {
        super::bpf_tool::check_pid("run", "-p", Some(pid))?;
    }
    let command = match &args.command {
        Some(cmd) => Some(command_words(cmd)?),
        None => None,
    };
    let mut workload = match &command {
        Some(words) => Some(Workload::fork(words).context("run: -c")?),
        None => None,
    };
    let options = RunOptions {
        verbose: args.verbose,
        dry_run: args.dry_run,
        origin: origin.clone(),
        pid: workload
            .as_ref()
            .map(Workload::pid)
            .or(args.pid.map(|p| p as i32)),
        child: workload.is_some(),
        quiet: args.quiet,
        params: params.to_vec(),
        gap_to_stdout: args.output.is_some(),
    };
    let mut out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(std::io::BufWriter::new(
            super::create_private(path).context("run: -o")?,
        )),
        None => Box::new(std::io::stdout().lock()),
    };
    let start = || match workload.as_mut() {
        Some(w) => w.start().map_err(std::io::Error::other),
        None => Ok(()),
    };
    match run_program(&source, &options, &mut out, start) {
        Ok(()) => Ok(out.flush()?),
        Err(RunError::Source(err)) => {
            let _ = out.flush();
            eprintln!("{}", err.render(&origin, &source));
            Err(Exit(2).into())
        }
        Err(err) => Err(err.into()),
    }
}

/// `-c CMD`'s words (split at spaces, as bpftrace splits it), its program
/// found in PATH (or named by a path) before anything is forked.
fn command_words(cmd: &str) -> anyhow::Result<Vec<OsString>> {
    let words: Vec<OsString> = cmd.split_whitespace().map(OsString::from).collect();
    if words.is_empty() {
        anyhow::bail!("run: -c: no command given");
    }
    super::target::check_command(&format!("run: -c {cmd}"), &words)?;
    Ok(words)
}
