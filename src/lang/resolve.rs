//! Probes resolved against the running kernel: wildcards expanded
//! (tracepoints against tracefs' events, `kprobe:` names against
//! `available_filter_functions`, else `/proc/kallsyms`, `fentry:` names
//! against the functions of vmlinux's BTF), tracepoint formats loaded,
//! fentry/fexit functions found in BTF with their signature; and the
//! probe listing of `scry run -l`.
//!
//! Decision: a wildcard becomes one concrete probe per function (its own
//! program, so `func` and `probe` are constants in it), marked as
//! expanded: a function of the pattern the kernel refuses to probe
//! (notrace, blacklisted) is skipped when attaching, as bpftrace skips
//! it, where a function named alone is an error.

use std::io;

use super::ast::Program;
use super::btf::{KernelTypes, Signature};
use super::error::{LangError, Span};
use super::probe::{ProbeSpec, parse_probe};
use crate::event::format::{EventFormat, load_format};

/// One attach point, resolved.
pub(crate) struct Concrete {
    pub spec: ProbeSpec,
    pub span: Span,
    pub format: Option<EventFormat>,
    /// The function an fentry/fexit probe is on, from BTF.
    pub signature: Option<Signature>,
    /// Index into `Program::probes`.
    pub block: usize,
    /// Expanded from a wildcard: a refusal to attach skips it.
    pub expanded: bool,
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
    let text = std::fs::read_to_string("/proc/kallsyms")?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let (_, kind, name) = (parts.next()?, parts.next()?, parts.next()?);
            (matches!(kind, "t" | "T") && !name.contains('.') && parts.next().is_none())
                .then(|| name.to_string())
        })
        .collect())
}

/// The names matching `pattern` (sorted, once each), or the error naming
/// the wildcard.
fn matching(
    names: impl IntoIterator<Item = String>,
    pattern: &str,
    span: Span,
) -> Result<Vec<String>, LangError> {
    let mut found: Vec<String> = names.into_iter().filter(|n| glob(pattern, n)).collect();
    found.sort();
    found.dedup();
    if found.is_empty() {
        return Err(LangError::new(
            span,
            format!("No probes matched the wildcard: {pattern}"),
        ));
    }
    Ok(found)
}

/// The concrete probes of one attach point's spec.
fn expand(spec: ProbeSpec, span: Span, types: &KernelTypes) -> Result<Vec<ProbeSpec>, RunError> {
    Ok(match spec {
        ProbeSpec::Tracepoint { system, event } if system.contains('*') || event.contains('*') => {
            let found: Vec<ProbeSpec> = crate::sys::tracefs::list_events()?
                .into_iter()
                .filter(|(s, e)| glob(&system, s) && glob(&event, e))
                .map(|(system, event)| ProbeSpec::Tracepoint { system, event })
                .collect();
            if found.is_empty() {
                return Err(LangError::new(
                    span,
                    format!("No probes matched the wildcard: {system}:{event}"),
                )
                .into());
            }
            found
        }
        ProbeSpec::Kprobe { function, ret } if function.contains('*') => {
            matching(traceable_functions()?, &function, span)?
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
            matching(names, &function, span)?
                .into_iter()
                .map(|function| ProbeSpec::Fentry { function, ret })
                .collect()
        }
        spec => vec![spec],
    })
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

/// The probes of the program, wildcards expanded, formats and signatures
/// loaded.
pub(crate) fn resolve_probes(
    program: &Program,
    types: &KernelTypes,
) -> Result<Vec<Concrete>, RunError> {
    let mut out = Vec::new();
    for (block, probe) in program.probes.iter().enumerate() {
        for ap in &probe.attach {
            let spec = parse_probe(&ap.text, ap.span)?;
            if matches!(spec, ProbeSpec::Kprobe { .. }) {
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
            for spec in expand(spec, ap.span, types)? {
                let mut format = None;
                let mut signature = None;
                match &spec {
                    ProbeSpec::Tracepoint { system, event } => {
                        let root = crate::sys::tracefs::root()?;
                        format = Some(load_format(root, system, event).map_err(|_| {
                            LangError::new(
                                ap.span,
                                format!("tracepoint not found: {system}:{event}"),
                            )
                        })?);
                    }
                    ProbeSpec::Fentry { function, .. } => {
                        let btf = need_btf(types, ap.span, function)?;
                        signature = Some(
                            btf.find_func(function)
                                .and_then(|id| btf.signature(id))
                                .ok_or_else(|| {
                                    LangError::new(
                                        ap.span,
                                        format!(
                                            "{}: no kernel function {function} in BTF \
                                             (/sys/kernel/btf/vmlinux)",
                                            spec.name()
                                        ),
                                    )
                                })?,
                        );
                    }
                    _ => {}
                }
                out.push(Concrete {
                    spec,
                    span: ap.span,
                    format,
                    signature,
                    block,
                    expanded: wildcard,
                });
            }
        }
    }
    Ok(out)
}

/// The probes `scry run -l PATTERN` lists (tracepoints and software
/// events, as bpftrace names them), those matching the glob `pattern`.
pub fn list_probes(pattern: &str) -> io::Result<Vec<String>> {
    let pattern = pattern
        .strip_prefix("t:")
        .map(|rest| format!("tracepoint:{rest}"))
        .unwrap_or_else(|| pattern.to_string());
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
    fn a_wildcard_matching_nothing_names_itself() {
        let names = ["vfs_read".to_string(), "vfs_write".to_string()];
        assert_eq!(
            matching(names.clone(), "vfs_*", Span::default()),
            Ok(names.to_vec())
        );
        let err = matching(names, "nosuch_*", Span::new(0, 5)).expect_err("none");
        assert_eq!(err.message, "No probes matched the wildcard: nosuch_*");
    }
}
