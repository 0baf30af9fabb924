//! `scry run`: a bpftrace program (`scry run 'PROG'`, `-e 'PROG'`, or a
//! `FILE.bt`) compiled to BPF by scry itself and run until it exits or
//! Ctrl-C. Errors in the program print as bpftrace prints them (place,
//! line, underline) and exit 2.

use std::io::Write;

use anyhow::Context;
use clap::Args;

use super::Exit;
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
    /// The program, or a file holding it (FILE.bt)
    #[arg(value_name = "PROGRAM|FILE")]
    program: Option<String>,
}

pub(crate) fn run(args: RunArgs) -> anyhow::Result<()> {
    if args.list {
        let pattern = args.program.as_deref().unwrap_or("*");
        let mut out = std::io::stdout().lock();
        for name in scry::lang::run::list_probes(pattern).context("cannot list the probes")? {
            writeln!(out, "{name}")?;
        }
        return Ok(());
    }
    let (origin, source) = match (&args.expr, &args.program) {
        (Some(e), None) => ("stdin".to_string(), e.clone()),
        (None, Some(p)) if std::path::Path::new(p).is_file() => {
            let bytes = std::fs::read(p).with_context(|| format!("cannot read {p}"))?;
            let text = String::from_utf8(bytes).with_context(|| format!("{p}: not UTF-8 text"))?;
            (p.clone(), text)
        }
        (None, Some(p)) => ("stdin".to_string(), p.clone()),
        (Some(_), Some(_)) => {
            anyhow::bail!("give the program either with -e or as an argument, not both")
        }
        (None, None) => anyhow::bail!("no program: scry run 'PROGRAM', -e 'PROGRAM' or FILE.bt"),
    };
    let options = RunOptions {
        verbose: args.verbose,
        dry_run: args.dry_run,
        origin: origin.clone(),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match run_program(&source, &options, &mut out) {
        Ok(()) => Ok(()),
        Err(RunError::Source(err)) => {
            let _ = out.flush();
            eprintln!("{}", err.render(&origin, &source));
            Err(Exit(2).into())
        }
        Err(err) => Err(err.into()),
    }
}
