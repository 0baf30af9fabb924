//! Where funccount's and funclatency's uprobes go: bcc's pattern forms
//! (`LIB:PATTERN`, `/path/bin:PATTERN`, `p:LIB:PATTERN`, `:PATTERN` for
//! the traced process's own binary, a bare `PATTERN` for the binary given
//! with `-x`) parsed, the binary found, and every function whose name the
//! glob (`*`, `?`) matches located in it.
//!
//! Decisions:
//! - With `-x BINARY` the whole argument is the pattern, never split at
//!   `:`, so C++ names (`ns::Class::*`) can be given.
//! - A library named without a path in a `-p` run is the file the
//!   process has mapped under that name (as libbpf-tools), else the one
//!   the library directories hold.
//! - As bcc, an address is probed once however many names it has, and a
//!   name once however many addresses; of aliases (`_IO_printf` and
//!   `printf`), the plainest name is shown (fewest leading underscores,
//!   then shortest).
//! - With `-r` the function pattern is a regular expression matched at
//!   the start of each name (bcc's `re.match`: `^` implied, `$` not).
//! - A bare pattern without `-x` names kernel functions, `t:` tracepoints
//!   and `u:` USDT probes: those are answered with what they would need,
//!   not probed here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSegment};

use super::probe_target::{self, FunctionSite};
use crate::event::name::matches_glob;

/// What a pattern names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FuncPattern {
    /// User functions of a binary: `binary` as written (a path, a library
    /// name; empty: the traced process's own binary), the glob.
    User { binary: String, glob: String },
    /// Kernel functions (a bare pattern, `p::PATTERN`).
    Kernel { glob: String },
    /// `t:CATEGORY:EVENT`.
    Tracepoint(String),
    /// `u:LIB:PROBE`.
    Usdt(String),
}

/// Why a pattern found nothing to probe.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum FuncSitesError {
    #[error("'{0}': unknown probe type '{1}' (p, t or u)")]
    BadType(String, String),
    #[error("'{0}': too many ':'-separated parts")]
    TooManyParts(String),
    #[error("'{0}': no function pattern")]
    Empty(String),
    #[error("'{pattern}': the binary of the traced process is meant, and no process is (-p PID)")]
    NoProcess { pattern: String },
    #[error("process {pid}: {what}")]
    Process { pid: u32, what: String },
    #[error(transparent)]
    Target(#[from] probe_target::ProbeTargetError),
    #[error("{path}: {what}")]
    Read { path: String, what: String },
    #[error("{path}: no function matches '{glob}'")]
    NoMatch { path: String, glob: String },
    #[error("-r '{pattern}': not a regular expression: {what}")]
    BadRegex { pattern: String, what: String },
}

/// How function names are matched: bcc's glob (`*`, `?`, the whole
/// name), or (`-r`) a regular expression at the start of the name.
#[derive(Clone, Debug)]
pub(crate) enum NameMatch {
    Glob(String),
    Regex {
        pattern: String,
        regex: regex::Regex,
    },
}

impl NameMatch {
    /// `pattern` as a glob, or as a regular expression when `regex`.
    pub(crate) fn new(pattern: &str, regex: bool) -> Result<NameMatch, FuncSitesError> {
        if !regex {
            return Ok(NameMatch::Glob(pattern.to_string()));
        }
        match regex::Regex::new(&format!("^(?:{pattern})")) {
            Ok(regex) => Ok(NameMatch::Regex {
                pattern: pattern.to_string(),
                regex,
            }),
            // The crate's message draws a caret under the pattern on lines
            // of their own: its last line says what is wrong.
            Err(e) => Err(FuncSitesError::BadRegex {
                pattern: pattern.to_string(),
                what: e.to_string().lines().last().unwrap_or("").to_string(),
            }),
        }
    }

    fn matches(&self, name: &str) -> bool {
        match self {
            NameMatch::Glob(glob) => matches_glob(glob, name),
            NameMatch::Regex { regex, .. } => regex.is_match(name),
        }
    }

    /// The pattern as given.
    fn text(&self) -> &str {
        match self {
            NameMatch::Glob(text) | NameMatch::Regex { pattern: text, .. } => text,
        }
    }
}

/// Parses bcc's forms; `binary` is `-x BINARY`.
pub(crate) fn parse(pattern: &str, binary: Option<&str>) -> Result<FuncPattern, FuncSitesError> {
    if let Some(binary) = binary {
        return user(pattern, binary, pattern);
    }
    let parts: Vec<&str> = pattern.split(':').collect();
    match parts.as_slice() {
        [glob] => nonempty(pattern, glob).map(|glob| FuncPattern::Kernel { glob }),
        [lib, glob] => user(pattern, lib, glob),
        ["p", "", glob] => nonempty(pattern, glob).map(|glob| FuncPattern::Kernel { glob }),
        ["p", lib, glob] => user(pattern, lib, glob),
        ["t", category, event] => Ok(FuncPattern::Tracepoint(format!("{category}:{event}"))),
        ["u", lib, probe] => Ok(FuncPattern::Usdt(format!("{lib}:{probe}"))),
        [kind, _, _] => Err(FuncSitesError::BadType(
            pattern.to_string(),
            kind.to_string(),
        )),
        _ => Err(FuncSitesError::TooManyParts(pattern.to_string())),
    }
}

fn nonempty(pattern: &str, glob: &str) -> Result<String, FuncSitesError> {
    if glob.is_empty() {
        return Err(FuncSitesError::Empty(pattern.to_string()));
    }
    Ok(glob.to_string())
}

fn user(pattern: &str, binary: &str, glob: &str) -> Result<FuncPattern, FuncSitesError> {
    Ok(FuncPattern::User {
        binary: binary.to_string(),
        glob: nonempty(pattern, glob)?,
    })
}

/// The functions of one binary a glob matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FuncSites {
    pub(crate) path: PathBuf,
    /// By name.
    pub(crate) functions: Vec<FunctionSite>,
}

/// The file `binary` names for a run on process `pid` (or, `program`, a
/// command about to run): empty is the process's (or command's) own
/// executable; a bare library name is looked up in the process's maps
/// first.
pub(crate) fn find_binary(
    binary: &str,
    pattern: &str,
    pid: Option<u32>,
    program: Option<&Path>,
) -> Result<PathBuf, FuncSitesError> {
    if binary.is_empty() {
        if let Some(program) = program {
            return Ok(probe_target::find_binary(&program.to_string_lossy())?);
        }
        let pid = pid.ok_or_else(|| FuncSitesError::NoProcess {
            pattern: pattern.to_string(),
        })?;
        return std::fs::read_link(format!("/proc/{pid}/exe")).map_err(|e| {
            FuncSitesError::Process {
                pid,
                what: format!("reading its executable: {e}"),
            }
        });
    }
    if !binary.contains('/')
        && let Some(pid) = pid
        && let Ok(maps) = crate::sys::proc::maps(pid as i32)
    {
        let stem = binary.strip_prefix("lib").unwrap_or(binary);
        let lib = format!("lib{stem}.so");
        let mapped = maps.iter().find(|m| {
            let name = m.path.rsplit('/').next().unwrap_or("");
            name == binary || name.starts_with(&lib) || name.starts_with(&format!("lib{stem}-"))
        });
        if let Some(m) = mapped {
            return Ok(PathBuf::from(&m.path));
        }
    }
    Ok(probe_target::find_binary(binary)?)
}

/// Every function of the file at `path` (and of its debug file: a
/// stripped library's static functions are named there alone) whose name
/// `glob` matches.
pub(crate) fn find(path: &Path, glob: &NameMatch) -> Result<FuncSites, FuncSitesError> {
    let data = std::fs::read(path).map_err(|e| FuncSitesError::Read {
        path: path.display().to_string(),
        what: e.to_string(),
    })?;
    let debug = super::debug_functions::debug_data(path, &data);
    let functions = matching(&data, debug.as_deref(), &path.to_string_lossy(), glob)?;
    Ok(FuncSites {
        path: path.to_path_buf(),
        functions,
    })
}

/// The functions of the ELF `data` whose names `glob` matches, each
/// address once, by name; none is an error. `debug`: the bytes of its
/// debug file, whose symbols have the same addresses (a function's file
/// offset comes from `data`'s load segments).
pub(crate) fn matching(
    data: &[u8],
    debug: Option<&[u8]>,
    path: &str,
    glob: &NameMatch,
) -> Result<Vec<FunctionSite>, FuncSitesError> {
    let file = object::File::parse(data).map_err(|e| probe_target::ProbeTargetError::NotElf {
        path: path.to_string(),
        what: e.to_string(),
    })?;
    let debug = debug.and_then(|d| object::File::parse(d).ok());
    let mut found: Vec<(String, u64, u64)> = [Some(&file), debug.as_ref()]
        .into_iter()
        .flatten()
        .flat_map(|symbols| probe_target::text_symbols(symbols))
        .filter(|&(name, svma, _)| svma != 0 && glob.matches(name))
        .map(|(name, svma, size)| (name.to_string(), svma, size))
        .collect();
    // Aliases of one address: the plainest name first (fewest leading
    // underscores, then shortest), so `printf` wins over `_IO_printf`.
    found.sort_by_key(|(name, svma, _)| {
        let underscores = name.len() - name.trim_start_matches('_').len();
        (*svma, underscores, name.len(), name.clone())
    });
    let segments: Vec<(u64, u64, u64)> = file
        .segments()
        .map(|seg| {
            let (offset, filesz) = seg.file_range();
            (seg.address(), filesz, offset)
        })
        .collect();
    let (mut names, mut addresses) = (BTreeSet::new(), BTreeSet::new());
    let mut sites = Vec::new();
    for (name, svma, size) in found {
        if names.contains(&name) || addresses.contains(&svma) {
            continue;
        }
        let Some(file_offset) = segments
            .iter()
            .find(|(start, filesz, _)| svma >= *start && svma < start + filesz)
            .map(|(start, _, offset)| svma - start + offset)
        else {
            continue;
        };
        names.insert(name.clone());
        addresses.insert(svma);
        sites.push(FunctionSite {
            symbol: name,
            svma,
            size,
            file_offset,
        });
    }
    sites.sort_by(|a, b| a.symbol.cmp(&b.symbol));
    if sites.is_empty() {
        return Err(FuncSitesError::NoMatch {
            path: path.to_string(),
            glob: glob.text().to_string(),
        });
    }
    Ok(sites)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bccs_forms() {
        let user = |b: &str, g: &str| FuncPattern::User {
            binary: b.to_string(),
            glob: g.to_string(),
        };
        assert_eq!(parse("c:malloc", None).unwrap(), user("c", "malloc"));
        assert_eq!(
            parse("/bin/x:read*", None).unwrap(),
            user("/bin/x", "read*")
        );
        assert_eq!(parse("p:c:*printf", None).unwrap(), user("c", "*printf"));
        assert_eq!(parse(":foo", None).unwrap(), user("", "foo"));
        assert_eq!(
            parse("vfs_*", None).unwrap(),
            FuncPattern::Kernel {
                glob: "vfs_*".to_string()
            }
        );
        assert_eq!(
            parse("p::vfs_read", None).unwrap(),
            FuncPattern::Kernel {
                glob: "vfs_read".to_string()
            }
        );
        assert_eq!(
            parse("t:sched:sched_fork", None).unwrap(),
            FuncPattern::Tracepoint("sched:sched_fork".to_string())
        );
        assert_eq!(
            parse("ns::Hot*", Some("./bin")).unwrap(),
            user("./bin", "ns::Hot*")
        );
        assert!(matches!(
            parse("x:a:b", None),
            Err(FuncSitesError::BadType(..))
        ));
        assert!(matches!(
            parse("a:b:c:d", None),
            Err(FuncSitesError::TooManyParts(_))
        ));
        assert!(matches!(parse("c:", None), Err(FuncSitesError::Empty(_))));
    }

    #[test]
    fn matches_libc_functions_each_address_once() {
        let Ok(path) = probe_target::find_binary("libc") else {
            return;
        };
        let glob = |g: &str| NameMatch::new(g, false).unwrap();
        let sites = find(&path, &glob("*printf")).unwrap();
        assert!(sites.functions.iter().any(|f| f.symbol == "printf"));
        assert!(sites.functions.iter().all(|f| f.symbol.ends_with("printf")));
        let addresses: BTreeSet<u64> = sites.functions.iter().map(|f| f.svma).collect();
        assert_eq!(addresses.len(), sites.functions.len());
        assert!(matches!(
            find(&path, &glob("no_such_function_*")),
            Err(FuncSitesError::NoMatch { .. })
        ));
        assert!(matches!(
            matching(b"junk", None, "x", &glob("*")),
            Err(FuncSitesError::Target(_))
        ));
    }

    /// Debian's libc with libc6-dbg installed: its static malloc_*
    /// functions are named by the debug file alone, and a pattern finds
    /// them there (bpftrace attaches to them too: the suite's
    /// funcs::funccount_finds_a_librarys_static_function_in_its_debug_file).
    #[test]
    fn a_pattern_finds_the_static_functions_of_a_stripped_library() {
        let Ok(path) = probe_target::find_binary("libc") else {
            return;
        };
        let Ok(data) = std::fs::read(&path) else {
            return;
        };
        let Some(debug) = crate::symbol::debug_functions::debug_data(&path, &data) else {
            return;
        };
        let glob = NameMatch::new("malloc_*", false).unwrap();
        let shown = path.to_string_lossy();
        let alone = matching(&data, None, &shown, &glob)
            .map(|f| f.len())
            .unwrap_or(0);
        let sites = find(&path, &glob).unwrap().functions;
        let names: Vec<&str> = sites.iter().map(|f| f.symbol.as_str()).collect();
        assert!(names.contains(&"malloc_consolidate"), "{names:?}");
        assert!(names.contains(&"malloc_stats"), "{names:?}");
        assert!(sites.len() > alone, "{names:?}");
        assert_eq!(matching(&data, Some(&debug), &shown, &glob).unwrap(), sites);
        let addresses: BTreeSet<u64> = sites.iter().map(|f| f.svma).collect();
        assert_eq!(addresses.len(), sites.len());
        // The debug file's addresses are the library's: the site of a
        // function both name is the same from either.
        let stats =
            |found: &[FunctionSite]| found.iter().find(|f| f.symbol == "malloc_stats").cloned();
        assert_eq!(
            stats(&sites),
            stats(&matching(&data, None, &shown, &glob).unwrap_or_default())
        );
    }

    #[test]
    fn a_regex_matches_at_the_start_of_names_as_bccs() {
        let Ok(path) = probe_target::find_binary("libc") else {
            return;
        };
        let re = NameMatch::new("v?s?n?printf", true).unwrap();
        let names: BTreeSet<String> = find(&path, &re)
            .unwrap()
            .functions
            .into_iter()
            .map(|f| f.symbol)
            .collect();
        assert!(
            names.contains("printf") && names.contains("vsnprintf"),
            "{names:?}"
        );
        assert!(
            !names.contains("fprintf"),
            "anchored at the start: {names:?}"
        );
        let err = NameMatch::new("foo(", true).unwrap_err().to_string();
        assert!(
            err.starts_with("-r 'foo(': not a regular expression: ") && !err.contains('\n'),
            "{err}"
        );
    }
}
