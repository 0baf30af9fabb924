//! Probes resolved against the running kernel: wildcards expanded
//! (tracepoints against tracefs' events, `kprobe:` names against
//! `available_filter_functions`, else `/proc/kallsyms`, `fentry:` names
//! against the functions of vmlinux's BTF), tracepoint formats loaded,
//! fentry/fexit functions found in BTF with their signature; and the
//! probe listing of `scry run -l`.
//!
//! Decision: a wildcard becomes one concrete probe per function (its own
//! program, so `func` and `probe` are constants in it), marked optional:
//! a function of the pattern the kernel refuses to probe (notrace,
//! blacklisted) is skipped when attaching, as bpftrace skips it, where a
//! function named alone is an error. So are the attach points of a block
//! that has several (bpftrace's tools name a kernel function by its old
//! and its new name: `kprobe:blk_account_io_start,
//! kprobe:__blk_account_io_start`; a wildcard of such a list may match
//! nothing): one missing is skipped, all missing is the error.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::ast::Program;
use super::btf::{KernelTypes, Signature};
use super::error::{LangError, Span};
use super::probe::{ProbeSpec, parse_probe};
use crate::event::format::{EventFormat, load_format};
use crate::symbol::probe_target::FunctionSite;

/// One attach point, resolved.
pub(crate) struct Concrete {
    pub(crate) spec: ProbeSpec,
    pub(crate) span: Span,
    pub(crate) format: Option<EventFormat>,
    /// The function an fentry/fexit probe is on, from BTF.
    pub(crate) signature: Option<Signature>,
    /// Index into `Program::probes`.
    pub(crate) block: usize,
    /// From a wildcard, or one of several attach points of its block: a
    /// refusal to load or attach skips it.
    pub(crate) optional: bool,
    /// A uprobe's file (canonical) and offset in it, when resolving found
    /// them (a wildcard's, or one of several attach points): attaching
    /// need not read the binary again.
    pub(crate) uprobe_site: Option<(PathBuf, u64)>,
}

/// The binaries uprobes name, each found, read and parsed once per
/// program: a wildcard's probes (`uprobe:libc:mall*`) take their sites
/// from here instead of reading the library (and its debug file) again
/// for each function.
#[derive(Default)]
struct UprobeBinaries {
    /// By the name the program gives.
    found: HashMap<String, Rc<UprobeBinary>>,
}

/// A binary uprobes go in: its file and its functions' sites by name (its
/// debug file's too).
struct UprobeBinary {
    path: PathBuf,
    sites: BTreeMap<String, FunctionSite>,
}

impl UprobeBinaries {
    /// The binary `binary` names (`libc` as bpftrace finds it too).
    fn get(&mut self, binary: &str, span: Span) -> Result<Rc<UprobeBinary>, LangError> {
        if let Some(found) = self.found.get(binary) {
            return Ok(Rc::clone(found));
        }
        let (path, data) = uprobe_binary(binary, span)?;
        let sites = crate::symbol::debug_functions::function_sites(&path, &data);
        let found = Rc::new(UprobeBinary { path, sites });
        self.found.insert(binary.to_string(), Rc::clone(&found));
        Ok(found)
    }
}

pub(crate) fn glob(pattern: &str, text: &str) -> bool {
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

/// The kernel functions kprobes may go on: tracefs'
/// `available_filter_functions` (a module's carry ` [module]`), else the
/// text symbols of `/proc/kallsyms` (compiler clones such as `.isra.0`
/// left out).
fn traceable_functions() -> io::Result<Vec<String>> {
    let from_tracefs = crate::sys::tracefs::root()
        .and_then(|root| std::fs::read_to_string(root.join("available_filter_functions")));
    if let Ok(text) = from_tracefs {
        return Ok(text
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect());
    }
    Ok(kernel_text_symbols(false)?
        .into_iter()
        .filter(|name| !name.contains('.'))
        .collect())
}

/// The text symbols of `/proc/kallsyms` (with the loaded modules' when
/// `modules`): where a kprobe may go, ftrace or not.
fn kernel_text_symbols(modules: bool) -> io::Result<Vec<String>> {
    let text = std::fs::read_to_string("/proc/kallsyms")?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let (_, kind, name) = (parts.next()?, parts.next()?, parts.next()?);
            (matches!(kind, "t" | "T") && (modules || parts.next().is_none()))
                .then(|| name.to_string())
        })
        .collect())
}

/// The names matching `pattern`, sorted, once each.
fn matching(names: impl IntoIterator<Item = String>, pattern: &str) -> Vec<String> {
    let mut found: Vec<String> = names.into_iter().filter(|n| glob(pattern, n)).collect();
    found.sort();
    found.dedup();
    found
}

/// The concrete probes of one attach point's spec (none when its
/// wildcard matches nothing).
fn expand(
    spec: ProbeSpec,
    span: Span,
    types: &KernelTypes,
    uprobes: &mut UprobeBinaries,
) -> Result<Vec<ProbeSpec>, RunError> {
    Ok(match spec {
        ProbeSpec::Tracepoint { system, event } if system.contains('*') || event.contains('*') => {
            crate::sys::tracefs::list_events()?
                .into_iter()
                .filter(|(s, e)| glob(&system, s) && glob(&event, e))
                .map(|(system, event)| ProbeSpec::Tracepoint { system, event })
                .collect()
        }
        ProbeSpec::Kprobe { function, ret } if function.contains('*') => {
            matching(traceable_functions()?, &function)
                .into_iter()
                .map(|function| ProbeSpec::Kprobe { function, ret })
                .collect()
        }
        ProbeSpec::Fentry { function, ret } if function.contains('*') => {
            // Functions of BTF that can be traced (not inlined nor freed
            // `__init` code): fentry goes through ftrace as kprobes do.
            let btf = need_btf(types, span, &function)?;
            let traceable: std::collections::HashSet<String> = traceable_functions()
                .unwrap_or_default()
                .into_iter()
                .collect();
            let names = btf
                .funcs()
                .map(|(_, n)| n.to_string())
                .filter(|n| traceable.is_empty() || traceable.contains(n));
            matching(names, &function)
                .into_iter()
                .map(|function| ProbeSpec::Fentry { function, ret })
                .collect()
        }
        ProbeSpec::Uprobe {
            binary,
            function,
            ret,
        } if function.contains('*') => {
            let found = uprobes.get(&binary, span)?;
            matching(found.sites.keys().cloned(), &function)
                .into_iter()
                .map(|function| ProbeSpec::Uprobe {
                    binary: binary.clone(),
                    function,
                    ret,
                })
                .collect()
        }
        spec => vec![spec],
    })
}

/// A uprobe on a library named without a path (`uprobe:libc:malloc`)
/// names the file found (`found`, else looked for), as bpftrace's `probe`
/// prints it (`uprobe:/lib/x86_64-linux-gnu/libc.so.6:malloc`); a path
/// stays as given, as bpftrace keeps it.
fn with_library_path(spec: ProbeSpec, found: Option<&Path>) -> ProbeSpec {
    match spec {
        ProbeSpec::Uprobe {
            binary,
            function,
            ret,
        } if !binary.contains('/') => {
            let path = match found {
                Some(path) => Ok(path.to_path_buf()),
                None => crate::symbol::probe_target::find_binary(&binary),
            };
            let binary = path
                .map(|path| as_ld_cache_names(&path).to_string_lossy().into_owned())
                .unwrap_or(binary);
            ProbeSpec::Uprobe {
                binary,
                function,
                ret,
            }
        }
        spec => spec,
    }
}

/// `path` (canonical) as the dynamic loader's cache names it, which is
/// where bpftrace finds a library: the first of the library directories
/// holding the same file (`/lib/x86_64-linux-gnu/libc.so.6`, not the
/// `/usr/lib/...` that `/lib` links to).
fn as_ld_cache_names(path: &std::path::Path) -> std::path::PathBuf {
    let Some(name) = path.file_name() else {
        return path.to_path_buf();
    };
    crate::symbol::probe_target::LIBRARY_DIRS
        .iter()
        .map(|dir| std::path::Path::new(dir).join(name))
        .find(|p| p.canonicalize().is_ok_and(|real| real == path))
        .unwrap_or_else(|| path.to_path_buf())
}

/// A uprobe's binary (`libc` as bpftrace finds it too) and its bytes.
fn uprobe_binary(binary: &str, span: Span) -> Result<(std::path::PathBuf, Vec<u8>), LangError> {
    use crate::symbol::probe_target::find_binary;
    let path = find_binary(binary).map_err(|e| LangError::new(span, e.to_string()))?;
    let data = std::fs::read(&path)
        .map_err(|e| LangError::new(span, format!("cannot read {}: {e}", path.display())))?;
    Ok((path, data))
}

/// Why a uprobe's function cannot be found, if it cannot: bpftrace leaves
/// such an attach point out before counting its probes (the `ssl` tools
/// name functions that only some OpenSSL builds have).
fn uprobe_missing(
    binary: &str,
    function: &str,
    span: Span,
    uprobes: &mut UprobeBinaries,
) -> Option<LangError> {
    let found = match uprobes.get(binary, span) {
        Ok(found) => found,
        Err(err) => return Some(err),
    };
    if found.sites.contains_key(function) {
        return None;
    }
    // Why not: the lookup of that one function says.
    let why = match std::fs::read(&found.path) {
        Ok(data) => crate::symbol::debug_functions::find_function(&found.path, &data, function)
            .err()?
            .to_string(),
        Err(e) => format!("cannot read {}: {e}", found.path.display()),
    };
    Some(LangError::new(
        span,
        format!("uprobe:{binary}:{function}: {why}"),
    ))
}

fn need_btf<'a>(
    types: &'a KernelTypes,
    span: Span,
    function: &str,
) -> Result<&'a super::btf::Btf, LangError> {
    types.btf().ok_or_else(|| {
        LangError::new(
            span,
            format!(
                "fentry:{function}: fentry and fexit need the kernel's BTF \
                 (/sys/kernel/btf/vmlinux is missing: CONFIG_DEBUG_INFO_BTF)"
            ),
        )
    })
}

pub(crate) use super::run::RunError;

/// A probe the kernel lacks: the error when it is its block's only attach
/// point, else a warning (as bpftrace warns) and the block goes on
/// without it (`first` keeps the first, the error if none is left).
fn skip_missing(
    several: bool,
    err: LangError,
    first: &mut Option<LangError>,
) -> Result<(), LangError> {
    if !several {
        return Err(err);
    }
    eprintln!("WARNING: {}, skipped", err.message);
    first.get_or_insert(err);
    Ok(())
}

/// The probes of a program as the kernel has them.
pub(crate) struct Resolved {
    pub(crate) probes: Vec<Concrete>,
    /// Tracepoints of a list the kernel lacks, each with bpftrace's
    /// placed warning; bpftrace counts them in its "Attaching N probes"
    /// (where a uprobe's missing function is not counted).
    pub(crate) missing_tracepoints: Vec<LangError>,
}

/// The probes of the program, wildcards expanded, formats and signatures
/// loaded.
///
/// `dry_run`: nothing will be attached, so a kernel without the kprobe
/// PMU is no error; a kprobe's function is checked against the traceable
/// ones instead, /proc/kallsyms' (for a list's attach points always: bpftrace's tools name
/// old and new names, and one missing is left out before counting).
pub(crate) fn resolve_probes(
    program: &Program,
    types: &KernelTypes,
    dry_run: bool,
) -> Result<Resolved, RunError> {
    let mut out = Vec::new();
    let mut traceable: Option<std::collections::HashSet<String>> = None;
    let mut missing_tracepoints = Vec::new();
    let mut uprobes = UprobeBinaries::default();
    for (block, probe) in program.probes.iter().enumerate() {
        let several = probe.attach.len() > 1;
        let before = out.len();
        // Why an attach point of several was left out: the error when all
        // were.
        let mut missing = None;
        for ap in &probe.attach {
            let spec = parse_probe(&ap.text, ap.span)?;
            if matches!(spec, ProbeSpec::Kprobe { .. }) && !dry_run {
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
            }
            let wildcard = ap.text.contains('*');
            let specs = expand(spec, ap.span, types, &mut uprobes)?;
            if specs.is_empty() {
                let err = LangError::new(
                    ap.span,
                    format!("No probes matched the wildcard: {}", ap.text),
                );
                skip_missing(several, err, &mut missing)?;
            }
            for spec in specs {
                let mut format = None;
                let mut signature = None;
                match &spec {
                    ProbeSpec::Tracepoint { system, event } => {
                        let root = crate::sys::tracefs::root()?;
                        match load_format(root, system, event) {
                            Ok(f) => format = Some(f),
                            Err(_) => {
                                let err = LangError::new(
                                    ap.span,
                                    format!("tracepoint not found: {system}:{event}"),
                                );
                                if !several {
                                    return Err(err.into());
                                }
                                missing.get_or_insert(err.clone());
                                missing_tracepoints.push(err);
                                continue;
                            }
                        }
                    }
                    ProbeSpec::Fentry { function, .. } => {
                        let btf = need_btf(types, ap.span, function)?;
                        match btf.find_func(function).and_then(|id| btf.signature(id)) {
                            Some(sig) => signature = Some(sig),
                            None => {
                                let err = LangError::new(
                                    ap.span,
                                    format!(
                                        "{}: no kernel function {function} in BTF \
                                         (/sys/kernel/btf/vmlinux)",
                                        spec.name()
                                    ),
                                );
                                skip_missing(several, err, &mut missing)?;
                                continue;
                            }
                        }
                    }
                    ProbeSpec::Kprobe { function, .. } if (several || dry_run) && !wildcard => {
                        let known = match &traceable {
                            Some(known) => known,
                            None => {
                                traceable.insert(kernel_text_symbols(true)?.into_iter().collect())
                            }
                        };
                        if !known.contains(function) {
                            let err = LangError::new(
                                ap.span,
                                format!(
                                    "{}: the kernel has no function {function} (/proc/kallsyms)",
                                    spec.name()
                                ),
                            );
                            skip_missing(several, err, &mut missing)?;
                            continue;
                        }
                    }
                    ProbeSpec::Uprobe {
                        binary, function, ..
                    } if several && !wildcard => {
                        if let Some(err) = uprobe_missing(binary, function, ap.span, &mut uprobes) {
                            skip_missing(several, err, &mut missing)?;
                            continue;
                        }
                    }
                    _ => {}
                }
                let uprobe_site = match &spec {
                    ProbeSpec::Uprobe {
                        binary, function, ..
                    } if wildcard || several => {
                        let found = uprobes.get(binary, ap.span).ok();
                        found.and_then(|b| {
                            Some((b.path.clone(), b.sites.get(function)?.file_offset))
                        })
                    }
                    _ => None,
                };
                let found = uprobe_site.as_ref().map(|(path, _)| path.as_path());
                out.push(Concrete {
                    spec: with_library_path(spec, found),
                    span: ap.span,
                    format,
                    signature,
                    block,
                    optional: wildcard || several,
                    uprobe_site,
                });
            }
        }
        if out.len() == before
            && let Some(err) = missing
        {
            return Err(err.into());
        }
    }
    Ok(Resolved {
        probes: out,
        missing_tracepoints,
    })
}

/// The probes `scry run -l PATTERN` lists (tracepoints and software
/// events, as bpftrace names them), those matching the glob `pattern`.
pub(crate) fn list_probes(pattern: &str) -> io::Result<Vec<String>> {
    let pattern = pattern
        .strip_prefix("t:")
        .map(|rest| format!("tracepoint:{rest}"))
        .unwrap_or_else(|| pattern.to_string());
    if let Some(listed) = list_uprobes(&pattern) {
        return Ok(listed);
    }
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

/// `uprobe:BINARY:PATTERN` (or `uretprobe:`): the functions of BINARY
/// (and of its debug file) that PATTERN matches, the binary named by the
/// file found, as bpftrace lists them; None for another pattern. A binary
/// not found lists nothing.
fn list_uprobes(pattern: &str) -> Option<Vec<String>> {
    let (kind, rest) = pattern.split_once(':')?;
    let (binary, function) = rest.rsplit_once(':')?;
    if !matches!(kind, "uprobe" | "uretprobe") || binary.contains('*') {
        return None;
    }
    let Ok((path, data)) = uprobe_binary(binary, Span::default()) else {
        return Some(Vec::new());
    };
    let shown = match binary.contains('/') {
        true => binary.to_string(),
        false => as_ld_cache_names(&path).to_string_lossy().into_owned(),
    };
    let names = crate::symbol::debug_functions::function_names(&path, &data);
    Some(
        matching(names, function)
            .into_iter()
            .map(|f| format!("{kind}:{shown}:{f}"))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("sys_enter_*", "sys_enter_read"));
        assert!(glob("*", "x"));
        assert!(glob("a*c*e", "abcde"));
        assert!(!glob("sys_exit_*", "sys_enter_read"));
    }

    #[test]
    fn wildcards_match_names_once_in_order() {
        let names = ["vfs_write", "vfs_read", "vfs_read", "kernel_read"].map(String::from);
        assert_eq!(matching(names.clone(), "vfs_*"), ["vfs_read", "vfs_write"]);
        assert!(matching(names, "nosuch_*").is_empty());
    }
}
