//! `scry probe`: perf probe. With `-x BINARY`, persistent uprobes in
//! tracefs `uprobe_events` (named `probe_BINARY:FUNC` as perf names them,
//! usable by record, stat and trace like any tracepoint), a function's
//! variables (`-V`) and source lines (`-L`) from DWARF. Without `-x`,
//! kernel functions: kprobes, their arguments from BTF (`cli::probe_kernel`;
//! where the kernel has no kprobe_events one line says so). `-l` and `-d`
//! cover both kinds.
//!
//! Argument syntax (perf's): `%di`, `+8(%sp):u64`, `$retval`, `NAME=ARG`,
//! and with debug info a parameter name (`count`, `buf:string`), fetched
//! at the entry from its System V argument register.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;

use scry::event::name::{
    self, EventError, EventSpec, LocateError, LocatedFunction, ResolvedEvent, UprobeLocator,
    matches_glob,
};
use scry::symbol::probe_spec::{self, Defined, matches, parse_defined};
use scry::symbol::probe_target::{self, FunctionInfo, FunctionSite, ParamPlace};
use scry::sys::uprobe;

use super::probe_kernel;

#[derive(Args, Debug)]
pub(crate) struct ProbeArgs {
    /// The binary or library to probe (a path, or a name such as libc).
    #[arg(short = 'x', long = "exec", value_name = "BINARY")]
    exec: Option<String>,
    /// Add a probe: '[EVENT=]FUNC[%return] [ARG...]' (also the positional words).
    #[arg(short = 'a', long = "add", value_name = "PROBE")]
    add: Vec<String>,
    /// Delete the probes matching GROUP:EVENT or EVENT (globs allowed).
    #[arg(short = 'd', long = "del", value_name = "EVENT")]
    del: Vec<String>,
    /// List the probes defined in uprobe_events and kprobe_events (optionally matching a glob).
    #[arg(short = 'l', long = "list")]
    list: bool,
    /// Dry run: print the kprobe_events line of each kernel probe, add nothing.
    #[arg(short = 'n', long = "dry-run")]
    dry_run: bool,
    /// Show the variables available at FUNC's entry (from -x's debug info, or the kernel's BTF).
    #[arg(short = 'V', long = "vars", value_name = "FUNC")]
    vars: Option<String>,
    /// With -V, perf's "external variables too": accepted; they are not listed
    /// (said on stderr), the function's variables are.
    #[arg(long = "externs", requires = "vars")]
    externs: bool,
    /// Say each probe_events line written (`Writing event: LINE`, on stderr; with -n,
    /// the line is printed anyway).
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// Show the source lines of FUNC (needs -x and debug info).
    #[arg(short = 'L', long = "line", value_name = "FUNC")]
    line: Option<String>,
    /// List the functions of the -x binary (optionally matching a glob).
    #[arg(short = 'F', long = "funcs")]
    funcs: bool,
    /// A probe definition, as for --add, or a glob for -l/-F.
    #[arg(value_name = "PROBE")]
    words: Vec<String>,
}

struct Binary {
    path: PathBuf,
    data: Vec<u8>,
}

impl Binary {
    fn open(spec: Option<&str>, what: &str) -> anyhow::Result<Binary> {
        let spec = spec.with_context(|| {
            format!("{what} needs -x BINARY (kernel functions have no DWARF here)")
        })?;
        let path = probe_target::find_binary(spec)?;
        let data =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        Ok(Binary { path, data })
    }
    fn name(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }
    fn site(&self, func: &str) -> anyhow::Result<FunctionSite> {
        Ok(probe_target::find_function(&self.data, &self.name(), func)?)
    }
    fn info(&self, site: &FunctionSite) -> anyhow::Result<FunctionInfo> {
        Ok(probe_target::function_info(&self.data, &self.name(), site)?)
    }
}

/// Finds the functions of `uprobe:BINARY:FUNCTION` events with the symbol
/// stage (symbol table, then dynamic symbols).
struct SymbolLocator;

impl UprobeLocator for SymbolLocator {
    fn locate(&self, binary: &str, function: &str) -> Result<LocatedFunction, LocateError> {
        let bin = Binary::open(Some(binary), "uprobe").map_err(|e| format!("{e:#}"))?;
        let site = bin.site(function).map_err(|e| format!("{e:#}"))?;
        Ok(LocatedFunction {
            group: probe_target::probe_group(&bin.path),
            path: bin.path,
            file_offset: site.file_offset,
        })
    }
}

/// Resolves events for commands that take probes made for one run
/// (`uprobe:BINARY:FUNCTION`, `uretprobe:BINARY:FUNCTION`): record, stat
/// and trace. Such a probe is a `uprobe` PMU counter, gone with its file
/// descriptors even if scry is killed; nothing is written to tracefs.
pub(crate) fn resolve_events(specs: &[EventSpec]) -> Result<Vec<ResolvedEvent>, EventError> {
    name::resolve_with(specs, &SymbolLocator)
}

pub(crate) fn run(args: ProbeArgs) -> anyhow::Result<()> {
    let mut out = BufWriter::new(std::io::stdout().lock());
    if args.externs {
        eprintln!("scry: probe: --externs: external variables are not listed, the function's are");
    }
    if args.list {
        let pattern = args.words.first().map(String::as_str);
        if uprobe::available(tracefs()?) {
            list(pattern, &mut out)?;
        }
        probe_kernel::list(pattern, &mut out)?;
    } else if !args.del.is_empty() {
        for pattern in &args.del {
            let mut removed = probe_kernel::delete(pattern, &mut out)?;
            if uprobe::available(tracefs()?) {
                removed += delete(pattern, &mut out)?;
            }
            if removed == 0 {
                bail!("no probe matches '{pattern}' (see 'scry probe -l')");
            }
        }
    } else if let (Some(func), None) = (&args.vars, &args.exec) {
        probe_kernel::vars(func, &mut out)?;
    } else if let Some(func) = &args.vars {
        let bin = Binary::open(args.exec.as_deref(), "-V")?;
        let site = bin.site(func)?;
        let info = bin.info(&site)?;
        writeln!(out, "Available variables at {func}")?;
        writeln!(out, "        @<{func}+0>")?;
        for p in &info.params {
            match &p.place {
                ParamPlace::Register(_) => {
                    writeln!(out, "                {}\t{}", p.type_name, p.name)?
                }
                ParamPlace::Unsupported(why) => writeln!(
                    out,
                    "                {}\t{}\t(not fetchable: {why})",
                    p.type_name, p.name
                )?,
            }
        }
    } else if let Some(func) = &args.line {
        let bin = Binary::open(args.exec.as_deref(), "-L")?;
        let site = bin.site(func)?;
        show_lines(func, &bin.info(&site)?, &mut out)?;
    } else if args.funcs {
        let bin = Binary::open(args.exec.as_deref(), "-F")?;
        let pattern = args.words.first().map_or("*", String::as_str);
        for name in probe_target::function_names(&bin.data) {
            if matches_glob(pattern, &name) {
                writeln!(out, "{name}")?;
            }
        }
    } else {
        let mut defs = args.add.clone();
        if !args.words.is_empty() {
            defs.push(args.words.join(" "));
        }
        if defs.is_empty() {
            bail!(
                "nothing to do: give a probe ('scry probe -x BINARY FUNC'), or -l, -d, -V, -L, -F"
            );
        }
        let kernel = probe_kernel::AddOptions {
            dry_run: args.dry_run,
            verbose: args.verbose,
        };
        for def in &defs {
            match args.exec.as_deref() {
                None => probe_kernel::add(def, &kernel, &mut out)?,
                Some(exec) => add(exec, def, args.verbose, &mut out)?,
            }
        }
    }
    out.flush()?;
    Ok(())
}

fn tracefs() -> anyhow::Result<&'static Path> {
    scry::sys::tracefs::root().context("probes need tracefs")
}

fn add(exec: &str, def: &str, verbose: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    let point = probe_spec::parse_point(def)?;
    let (func, retprobe) = (point.func.as_str(), point.retprobe);
    let bin = Binary::open(Some(exec), "a uprobe")?;
    let site = bin.site(func)?;
    let info = if point.needs_dwarf() {
        Some(bin.info(&site)?)
    } else {
        None
    };
    let fetch: Vec<String> = point
        .args
        .iter()
        .enumerate()
        .map(|(i, w)| probe_spec::fetch_arg(w, i, info.as_ref(), retprobe))
        .collect::<Result<_, _>>()?;
    let group = probe_target::probe_group(&bin.path);
    let name = point.event_name();
    let root = tracefs()?;
    if root.join("events").join(&group).join(&name).exists() {
        bail!(
            "event '{group}:{name}' already exists (delete it with 'scry probe -d {group}:{name}', or name it NAME={func})"
        );
    }
    let kind = if retprobe { "r" } else { "p" };
    let mut line = format!(
        "{kind}:{group}/{name} {}:{:#x}",
        bin.name(),
        site.file_offset + point.offset
    );
    for f in &fetch {
        line.push(' ');
        line.push_str(f);
    }
    if verbose {
        eprintln!("Writing event: {line}");
    }
    uprobe::add_event(root, &line)
        .with_context(|| format!("the kernel refused uprobe '{line}'"))?;
    let with: Vec<&str> = fetch.iter().filter_map(|f| f.split('=').next()).collect();
    writeln!(out, "Added new event:")?;
    write!(
        out,
        "  {group}:{name:<20} (on {func}{} in {}",
        if retprobe { "%return" } else { "" },
        bin.name()
    )?;
    if !with.is_empty() {
        write!(out, " with {}", with.join(" "))?;
    }
    writeln!(
        out,
        ")\n\nYou can now use it in all scry tools, such as:\n\n\tscry record -e {group}:{name} -a sleep 1\n"
    )?;
    Ok(())
}

fn defined() -> anyhow::Result<Vec<Defined>> {
    let root = tracefs()?;
    let text = uprobe::list_events(root)
        .with_context(|| format!("cannot read {}/uprobe_events", root.display()))?;
    Ok(text.lines().filter_map(parse_defined).collect())
}

/// The function at `offset` of `path`, for listings.
fn function_at(path: &str, offset: u64) -> Option<String> {
    let data = std::fs::read(path).ok()?;
    probe_target::function_names(&data).into_iter().find(|n| {
        probe_target::find_function(&data, path, n).is_ok_and(|s| s.file_offset == offset)
    })
}

fn list(pattern: Option<&str>, out: &mut dyn Write) -> anyhow::Result<()> {
    for d in defined()? {
        if pattern.is_some_and(|p| !matches(p, &d)) {
            continue;
        }
        let func = function_at(&d.path, d.offset).unwrap_or_else(|| format!("{:#x}", d.offset));
        write!(
            out,
            "  {}:{:<20} (on {func}{} in {}",
            d.group,
            d.name,
            if d.retprobe { "%return" } else { "" },
            d.path
        )?;
        if !d.args.is_empty() {
            write!(out, " with {}", d.args.join(" "))?;
        }
        writeln!(out, ")")?;
    }
    Ok(())
}

/// Deletes the uprobes `pattern` names; how many.
fn delete(pattern: &str, out: &mut dyn Write) -> anyhow::Result<usize> {
    let root = tracefs()?;
    let victims: Vec<Defined> = defined()?
        .into_iter()
        .filter(|d| matches(pattern, d))
        .collect();
    let count = victims.len();
    for d in victims {
        uprobe::remove_event(root, &d.group, &d.name)
            .map_err(|e| probe_kernel::delete_error(&d.group, &d.name, &e))?;
        writeln!(out, "Removed event: {}:{}", d.group, d.name)?;
    }
    Ok(count)
}

fn show_lines(func: &str, info: &FunctionInfo, out: &mut dyn Write) -> anyhow::Result<()> {
    let (Some(file), Some(start)) = (info.decl_file.as_ref(), info.decl_line) else {
        bail!("'{func}': the debug info has no source position");
    };
    let code: std::collections::BTreeSet<u64> = info
        .code_lines
        .iter()
        .filter(|(f, _)| f == file)
        .map(|(_, l)| *l)
        .collect();
    let end = code.iter().next_back().copied().unwrap_or(start).max(start);
    writeln!(out, "<{func}@{file}:0>")?;
    let text = std::fs::read_to_string(file).ok();
    for line in start..=end {
        let src = text
            .as_deref()
            .and_then(|t| t.lines().nth(line.saturating_sub(1) as usize))
            .unwrap_or("");
        if code.contains(&line) || line == start {
            writeln!(out, "{:>7}  {src}", line - start)?;
        } else {
            writeln!(out, "         {src}")?;
        }
    }
    Ok(())
}
