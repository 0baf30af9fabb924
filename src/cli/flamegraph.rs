//! `scry flamegraph`: a perf.data file → `symbol::resolve_file` →
//! `analysis::folded` → `render::folded` / `render::flamegraph`. Live (`-a`,
//! `-p PID`, `-- COMMAND`), the stacks are counted in the kernel with BPF
//! (`cli::flamegraph_live`), or with `--no-bpf` (and where BPF does not
//! load) recorded first with `scry record -F 999 -g`.
//!
//! `--folded` writes the collapsed stacks `perf script | inferno-collapse-perf`
//! would (to standard output unless `-o` is given); otherwise an SVG goes to
//! `-o` (default `flamegraph.svg`; `-` for standard output) with kernel
//! frames suffixed `_[k]` so the palette colours them apart.
//!
//! Standard input, with `-i -` or when it is a pipe or a file and no `-i`
//! is given (perf report's rule for pipes), may hold `perf script` text,
//! folded stacks or a perf.data stream (`analysis::stack_text` tells them
//! apart): `perf script | scry flamegraph > out.svg` works as
//! `stackcollapse-perf.pl | flamegraph.pl` does, the SVG then going to
//! standard output unless `-o` is given.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Parser};

use scry::analysis::folded::{FoldOptions, FoldedStacks};
use scry::analysis::stack_text::{self, ScriptFoldOptions, StackInput};
use scry::data::reader::PerfReader;
use scry::render::export::{EventKind, Format};
use scry::render::flamegraph::{
    FlameOptions, parse_palette, write_diff_svg, write_paths_svg, write_svg,
};
use scry::render::folded::{FoldedOptions, FoldedPaths};
use scry::symbol::{ResolveOptions, Resolved, resolve_file, resolve_reader};

use super::flamegraph_live::{self, LiveOptions};
use super::offcputime::export_named;

#[derive(Args, Debug)]
#[command(mut_arg("all_cpus", |a| a.help("Sample every CPU (the idle task too) until Ctrl-C, or until the command exits; with --offcpu, watch every task")))]
#[command(mut_arg("pid", |a| a.help("Sample these processes (and what they fork) until Ctrl-C or the process's exit: PID[,PID...]. With --offcpu, watch them")))]
pub(crate) struct FlamegraphArgs {
    /// Input file; `-`: standard input (perf script text, folded stacks or
    /// perf.data). Default perf.data, or standard input when it is a pipe
    /// or a file (ignored when a command is given).
    #[arg(short = 'i', long = "input")]
    input: Option<PathBuf>,
    /// Output file; `-` for standard output. Default flamegraph.svg (with
    /// --folded: standard output).
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Colour palette: perl, java, js, python, rust, hot, mem, io, red, ...
    #[arg(long = "colors", visible_alias = "color", default_value = "perl")]
    colors: String,
    /// Write folded stacks (`comm;caller;...;leaf count`) instead of an SVG.
    #[arg(long)]
    folded: bool,
    /// Write this export instead of an SVG: pprof, firefox, speedscope,
    /// chrome-trace, folded (as `scry convert --to`; `-o` names the file,
    /// default per format). With --offcpu, the off-CPU stacks.
    #[arg(long = "to", value_name = "FORMAT", value_parser = super::convert::parse_format,
          conflicts_with_all = ["folded", "diff"])]
    to: Option<Format>,
    /// Icicle graph: roots at the top.
    #[arg(long)]
    inverted: bool,
    /// Reverse every stack (leaves at the bottom).
    #[arg(long)]
    reverse: bool,
    /// Differential flame graph against this earlier recording (red grew, blue shrank).
    #[arg(long = "diff", value_name = "BEFORE.data")]
    diff: Option<PathBuf>,
    /// Graph this event (default: the event of the first sample).
    #[arg(long = "event", value_name = "NAME")]
    event: Option<String>,
    /// Title of the SVG.
    #[arg(long, default_value = "Flame Graph")]
    title: String,
    /// Keep raw (mangled) symbol names.
    #[arg(long = "no-demangle")]
    no_demangle: bool,
    /// Off-CPU flame graph: time tasks spent blocked, by the stack where they
    /// switched out (as `scry offcpu --svg`), of the command, -p or -a.
    #[arg(long)]
    offcpu: bool,
    #[command(flatten)]
    watch: super::target::WatchArgs,
    /// Live samples per second on each CPU (-a, -p, a command). Default 999.
    #[arg(short = 'F', long = "freq", value_name = "HZ", default_value_t = 999,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    freq: u64,
    /// Live: stream the samples through the perf rings into a temporary
    /// recording (`scry record -F HZ -g`) instead of counting stacks in the
    /// kernel with BPF (default: BPF where it loads; this is also the
    /// fallback where it does not).
    #[arg(long = "no-bpf")]
    no_bpf: bool,
    /// Live: say which kernel hooks count the stacks, and when they were attached.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// With --offcpu: join each blocked stack with its waker's (offwaketime).
    #[arg(long, requires = "offcpu")]
    wakeup: bool,
    /// Record this command first (as `scry record -F 999 -g`), then draw it
    /// (`--` before it is optional). One word naming a file that is not
    /// executable is the input, as flamegraph.pl's FILE (`scry flamegraph folded.txt`).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// `scry flamegraph --offcpu`: `scry offcpu`'s capture, drawn.
#[derive(Parser, Debug)]
struct OffcpuWrap {
    #[command(flatten)]
    offcpu: super::offcpu::OffcpuArgs,
}

fn offcpu_flamegraph(args: &FlamegraphArgs) -> anyhow::Result<()> {
    if args.diff.is_some() {
        anyhow::bail!("--offcpu and --diff cannot be combined");
    }
    let mut argv: Vec<OsString> = vec!["offcpu".into()];
    if args.watch.all_cpus {
        argv.push("-a".into());
    }
    if let Some(pid) = &args.watch.pid.pid {
        argv.extend(["-p".into(), pid.into()]);
    }
    if args.wakeup {
        argv.push("--wakeup".into());
    }
    let svg_only = !args.folded;
    if let Some(format) = args.to {
        argv.extend(["--to".into(), format.name().into()]);
        if let Some(out) = &args.output {
            argv.extend(["-o".into(), out.clone().into_os_string()]);
        }
    } else if args.folded {
        argv.push("--folded".into());
    } else {
        let out = args
            .output
            .clone()
            .unwrap_or_else(|| PathBuf::from("offcpu.svg"));
        argv.extend(["--svg".into(), out.into_os_string()]);
    }
    if !args.command.is_empty() {
        argv.push("--".into());
        argv.extend(args.command.iter().cloned());
    }
    let mut wrap = OffcpuWrap::try_parse_from(argv).context("--offcpu")?;
    wrap.offcpu.svg_only = svg_only;
    super::offcpu::run(wrap.offcpu)
}

/// Wraps `scry record`'s own flags so a recording is made by exactly the
/// code path `scry record` uses.
#[derive(Parser, Debug)]
struct RecordWrap {
    #[command(flatten)]
    record: super::record::RecordArgs,
}

fn record_live(live: &LiveOptions<'_>, output: &Path) -> anyhow::Result<()> {
    let argv = super::flamegraph_live::record_argv(live, output);
    let wrap = RecordWrap::try_parse_from(argv).context("recording")?;
    super::record::run(wrap.record)
}

pub(super) fn event_index(resolved: &Resolved, name: &str, path: &Path) -> anyhow::Result<usize> {
    let base = |n: &str| n.split(':').next().unwrap_or(n).to_string();
    resolved
        .events
        .iter()
        .position(|e| e.name == name)
        .or_else(|| resolved.events.iter().position(|e| base(&e.name) == name))
        .with_context(|| {
            let names: Vec<&str> = resolved.events.iter().map(|e| e.name.as_str()).collect();
            format!(
                "--event: {} has no event '{name}' (it has: {})",
                path.display(),
                names.join(", ")
            )
        })
}

fn resolve_options(args: &FlamegraphArgs) -> ResolveOptions {
    ResolveOptions {
        demangle: !args.no_demangle,
        merge_samples: true,
        ..ResolveOptions::default()
    }
}

/// Folded stacks as their input gives them: by name from perf.data (drawn
/// without making their text), as lines from text.
enum Stacks {
    Paths(FoldedPaths),
    Lines(Vec<String>),
}

impl Stacks {
    fn is_empty(&self) -> bool {
        match self {
            Stacks::Paths(folded) => folded.paths.is_empty(),
            Stacks::Lines(lines) => lines.is_empty(),
        }
    }

    fn into_lines(self) -> Vec<String> {
        match self {
            Stacks::Paths(folded) => folded.lines(),
            Stacks::Lines(lines) => lines,
        }
    }
}

fn fold(path: &Path, args: &FlamegraphArgs, annotate_kernel: bool) -> anyhow::Result<Stacks> {
    // The reader's errors name the file.
    let resolved = resolve_file(path, &resolve_options(args))?;
    let stats = &resolved.stats;
    if stats.samples > 0 && stats.no_callchain == stats.samples {
        // As perf script | flamegraph.pl draws it: one frame per sample.
        eprintln!(
            "scry: {}: no call chains recorded (record with -g): the graph shows only the sampled functions",
            path.display()
        );
    }
    fold_resolved(&resolved, path, args, annotate_kernel)
}

fn fold_resolved(
    resolved: &Resolved,
    path: &Path,
    args: &FlamegraphArgs,
    annotate_kernel: bool,
) -> anyhow::Result<Stacks> {
    let event = match &args.event {
        Some(name) => Some(event_index(resolved, name, path)?),
        None => None,
    };
    let folded = FoldedStacks::build(&resolved.samples, &FoldOptions { event });
    Ok(Stacks::Paths(FoldedPaths::build(
        &folded,
        &resolved.frames,
        FoldedOptions { annotate_kernel },
    )))
}

/// Whether standard input was redirected from a pipe or a file: then it is
/// the input when no `-i` is given (a terminal or /dev/null never is).
fn stdin_is_data() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return false;
    };
    File::from(fd)
        .metadata()
        .is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_file())
}

/// The folded stacks of standard input: perf script text, folded lines or
/// a perf.data stream.
fn fold_stdin(args: &FlamegraphArgs, annotate_kernel: bool) -> anyhow::Result<Stacks> {
    const NAME: &str = "<stdin>";
    // Not locked: the perf.data reader may hand a stream to a thread.
    let mut input = std::io::BufReader::new(std::io::stdin());
    let (kind, head) = stack_text::sniff(&mut input).context("reading <stdin>")?;
    let input = stack_text::rejoin(head, input);
    match kind {
        StackInput::PerfData => {
            let reader = PerfReader::from_stream(NAME, input)?;
            let resolved = resolve_reader(reader, &resolve_options(args))
                .with_context(|| format!("reading {NAME}"))?;
            fold_resolved(&resolved, Path::new(NAME), args, annotate_kernel)
        }
        kind => Ok(Stacks::Lines(fold_text(
            NAME,
            kind,
            input,
            args,
            annotate_kernel,
        )?)),
    }
}

/// Stack text folded: perf script's, or folded lines taken as they are.
fn fold_text(
    name: &str,
    kind: StackInput,
    input: impl std::io::BufRead,
    args: &FlamegraphArgs,
    annotate_kernel: bool,
) -> anyhow::Result<Vec<String>> {
    match kind {
        StackInput::ScriptText => {
            let options = ScriptFoldOptions {
                annotate_kernel,
                event: args.event.clone(),
            };
            Ok(stack_text::fold_script(name, input, &options)?)
        }
        _ => Ok(stack_text::read_folded(name, input)?),
    }
}

/// A file's folded stacks, and whether it was text: a perf.data file as
/// `fold` reads it; perf script text or folded lines (flamegraph.pl's
/// FILE) as standard input's.
fn fold_file(
    path: &Path,
    args: &FlamegraphArgs,
    annotate_kernel: bool,
) -> anyhow::Result<(Stacks, bool)> {
    // A file that does not open is `fold`'s to report, as a missing perf.data.
    let Ok(file) = File::open(path) else {
        return Ok((fold(path, args, annotate_kernel)?, false));
    };
    let name = path.display().to_string();
    let mut input = std::io::BufReader::new(file);
    let (kind, head) = stack_text::sniff(&mut input).with_context(|| format!("reading {name}"))?;
    match kind {
        StackInput::PerfData => Ok((fold(path, args, annotate_kernel)?, false)),
        kind => {
            let input = stack_text::rejoin(head, input);
            let lines = fold_text(&name, kind, input, args, annotate_kernel)?;
            Ok((Stacks::Lines(lines), true))
        }
    }
}

/// flamegraph.pl's `FILE`: the one word after the flags, when it names a
/// file that is not executable (a program to record would be).
fn input_word(args: &mut FlamegraphArgs) {
    use std::os::unix::fs::PermissionsExt;
    let [word] = args.command.as_slice() else {
        return;
    };
    let is_text =
        std::fs::metadata(word).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 == 0);
    if args.input.is_none() && is_text {
        args.input = args.command.pop().map(PathBuf::from);
    }
}

fn open_output(path: &Path) -> anyhow::Result<Box<dyn Write>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufWriter::with_capacity(
            1 << 16,
            std::io::stdout().lock(),
        )));
    }
    let file = super::create_private(path)?;
    Ok(Box::new(BufWriter::with_capacity(1 << 16, file)))
}

pub(crate) fn run(mut args: FlamegraphArgs) -> anyhow::Result<()> {
    input_word(&mut args);
    super::target::check_command("flamegraph", &args.command)?;
    if args.offcpu {
        return offcpu_flamegraph(&args);
    }
    let palette = parse_palette(&args.colors).context("--colors")?;
    if args.folded && args.diff.is_some() {
        anyhow::bail!("--folded and --diff cannot be combined");
    }

    // Live (-a, -p, a command): the stacks counted in the kernel where
    // only they are needed (no --event) and BPF loads, else recorded into
    // a temporary file first.
    let pids = args.watch.pid.pids()?;
    if let Some(pid) = pids.iter().find(|&&pid| !scry::sys::proc::exists(pid)) {
        anyhow::bail!("-p: no such process: {pid}");
    }
    let live = LiveOptions {
        all_cpus: args.watch.all_cpus,
        pids,
        command: &args.command,
        frequency: args.freq,
        verbose: args.verbose,
    };
    let is_live = !args.command.is_empty() || args.watch.all_cpus || !live.pids.is_empty();
    let kernel = match is_live && !args.no_bpf && args.event.is_none() {
        true => flamegraph_live::count_in_kernel(&live, &resolve_options(&args))?,
        false => None,
    };
    let tempdir;
    let from_stdin = !is_live
        && match &args.input {
            Some(path) => path.as_os_str() == "-",
            None => stdin_is_data(),
        };
    let input = if kernel.is_some() {
        PathBuf::from("the run")
    } else if is_live {
        tempdir = tempfile_dir()?;
        let path = tempdir.join("perf.data");
        record_live(&live, &path)?;
        path
    } else if from_stdin {
        PathBuf::from("<stdin>")
    } else {
        args.input
            .clone()
            .unwrap_or_else(|| PathBuf::from("perf.data"))
    };

    if let Some(format) = args.to {
        if from_stdin {
            anyhow::bail!("--to reads a perf.data file or records a command, not standard input");
        }
        if let Some(kernel) = kernel {
            let to = super::convert::ToArgs {
                to: Some(format),
                output: args.output.clone(),
            };
            // The periods are nanoseconds already.
            let event = ("cpu-clock", EventKind::Clock, 1);
            return export_named(&to, Some(kernel.named), event, "flamegraph");
        }
        return super::convert::convert_file(
            &input,
            format,
            args.output.as_deref(),
            !args.no_demangle,
        );
    }
    let mut text_file = false;
    let after = if let Some(kernel) = &kernel {
        Stacks::Lines(kernel.folded(!args.folded))
    } else if from_stdin {
        fold_stdin(&args, !args.folded)?
    } else {
        let (folded, text) = fold_file(&input, &args, !args.folded)?;
        text_file = text;
        folded
    };
    if args.folded {
        let out_path = args.output.clone().unwrap_or_else(|| PathBuf::from("-"));
        let mut out = open_output(&out_path)?;
        for line in &after.into_lines() {
            writeln!(out, "{line}")?;
        }
        out.flush()?;
        return Ok(());
    }

    let options = FlameOptions {
        palette,
        title: args.title.clone(),
        inverted: args.inverted,
        reverse: args.reverse,
        ..FlameOptions::default()
    };
    // A pipeline's SVG goes down the pipe, and a text file's to standard
    // output, as flamegraph.pl's do.
    let default_out = if from_stdin || text_file {
        "-"
    } else {
        "flamegraph.svg"
    };
    let out_path = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(default_out));
    if after.is_empty() {
        anyhow::bail!("{}: no samples with stacks to draw", input.display());
    }
    let mut out = open_output(&out_path)?;
    match &args.diff {
        Some(before_path) => {
            let before = fold(before_path, &args, true)?.into_lines();
            write_diff_svg(&before, &after.into_lines(), &options, &mut out)
        }
        None => match after {
            Stacks::Paths(folded) => write_paths_svg(&folded, &options, &mut out),
            Stacks::Lines(lines) => write_svg(&lines, &options, &mut out),
        },
    }
    .with_context(|| format!("writing {}", out_path.display()))?;
    out.flush()
        .with_context(|| format!("writing {}", out_path.display()))?;
    if out_path.as_os_str() != "-" {
        eprintln!("scry: wrote {}", out_path.display());
    }
    Ok(())
}

/// A private temporary directory, removed when the guard drops.
fn tempfile_dir() -> anyhow::Result<TempDir> {
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let path = base.join(format!("scry-flamegraph-{}-{attempt}", std::process::id()));
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(TempDir(path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create {}", path.display()));
            }
        }
    }
    anyhow::bail!("cannot create a temporary directory in {}", base.display())
}

struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
