//! perf probe's definitions for kernel functions, turned into
//! `kprobe_events` text: the probe line (`p:probe/FUNC FUNC+OFF ARGS`,
//! `r:probe/FUNC__return FUNC ARGS`), each argument (registers, `$argN`,
//! `$retval`, `$comm`, and parameters by name read from the kernel's BTF,
//! struct members followed through `->` and `.`), and the lines the kernel
//! prints back parsed for `-l` and `-d`.
//!
//! The decision: a parameter by name is fetched from its x86-64 argument
//! register at the entry (`%di`, `%si`, ...; `$argN` past the sixth), and
//! its type, size and signedness come from BTF, so `size` of `tcp_sendmsg`
//! is `size=%dx:u64` with no debuginfo package. A member adds its offset to
//! the dereference (`+OFF(%di)`), consecutive `.` members fold into one
//! offset, and a `char *` or `char[]` read as `:string` becomes the kernel's
//! string fetch (`+0(%si):string`: the kernel reads user and kernel strings
//! alike for kprobes since 5.x).
//!
//! Invariant: pure text; a definition is either turned into text the kernel
//! accepts or refused with a message naming the word at fault.

use super::probe_spec::{ProbePoint, ProbeSpecError, fetch_arg, matches_event};
use crate::event::btf::{Btf, Function};

macro_rules! bail {
    ($($t:tt)*) => {
        return Err(ProbeSpecError(format!($($t)*)))
    };
}

/// The argument registers of the x86-64 calling convention, in order.
const ARG_REGS: [&str; 6] = ["%di", "%si", "%dx", "%cx", "%r8", "%r9"];

/// The group perf probe puts kernel probes in.
pub(crate) const KPROBE_GROUP: &str = "probe";

/// The function a probe's named arguments are read against.
pub(crate) struct Prototype<'a> {
    pub(crate) btf: &'a Btf,
    pub(crate) func: &'a Function,
}

/// A value being fetched: a register, or memory at an offset from another
/// value (`+OFF(BASE)`).
enum Value {
    Direct(String),
    Memory { offset: u64, base: String },
}

impl Value {
    fn text(&self) -> String {
        match self {
            Value::Direct(t) => t.clone(),
            Value::Memory { offset, base } => format!("+{offset}({base})"),
        }
    }
}

/// The type suffix for a scalar of `type_id`: `x64` for pointers, else
/// `u`/`s` and its size in bits.
fn scalar_type(btf: &Btf, type_id: u32) -> Option<String> {
    let size = btf.scalar_size(type_id)?;
    if !matches!(size, 1 | 2 | 4 | 8) {
        return None;
    }
    let prefix = if btf.pointee(type_id).is_some() {
        "x"
    } else if btf.is_signed(type_id) {
        "s"
    } else {
        "u"
    };
    Some(format!("{prefix}{}", size * 8))
}

fn check_type(word: &str, ty: &str) -> Result<(), ProbeSpecError> {
    let ok = ty == "string"
        || ty == "ustring"
        || ["u", "s", "x"].iter().any(|p| {
            ty.strip_prefix(p)
                .is_some_and(|n| matches!(n, "8" | "16" | "32" | "64"))
        });
    if !ok {
        bail!("probe argument '{word}': unknown type '{ty}' (u8..u64, s8..s64, x8..x64, string)");
    }
    Ok(())
}

/// One fetch argument in `kprobe_events` syntax, with its name.
pub(crate) fn fetch_kernel_arg(
    word: &str,
    index: usize,
    proto: Option<&Prototype>,
    retprobe: bool,
) -> Result<String, ProbeSpecError> {
    let (name, expr) = match word.split_once('=') {
        Some((n, e)) if !e.is_empty() && !n.contains(['-', '>', '.']) => (Some(n), e),
        _ => (None, word),
    };
    let (body, ty) = match expr.rsplit_once(':') {
        Some((b, t)) if !b.is_empty() => (b, Some(t)),
        _ => (expr, None),
    };
    if let Some(t) = ty {
        check_type(word, t)?;
    }
    let default_name = || format!("arg{}", index + 1);
    if body == "$retval" {
        if !retprobe {
            bail!("probe argument '$retval' needs a return probe (FUNC%return)");
        }
        let ty = match (ty, proto) {
            (Some(t), _) => t.to_string(),
            (None, Some(p)) => scalar_type(p.btf, p.func.ret_type).unwrap_or("x64".into()),
            (None, None) => "x64".into(),
        };
        return Ok(format!(
            "{}=$retval:{ty}",
            name.map_or_else(default_name, str::to_string)
        ));
    }
    if body == "$comm" {
        return Ok(format!("{}=$comm:string", name.unwrap_or("comm")));
    }
    if let Some(n) = body.strip_prefix("$arg") {
        let Some(n) = n.parse::<usize>().ok().filter(|n| (1..=32).contains(n)) else {
            bail!("probe argument '{word}': expected $arg1..$arg32");
        };
        let param = proto.and_then(|p| Some((p.btf, p.func.params.get(n - 1)?.type_id)));
        let name = name.map_or_else(default_name, str::to_string);
        return match ty {
            Some("string" | "ustring") => Ok(format!("{name}=+0($arg{n}):string")),
            Some(t) => Ok(format!("{name}=$arg{n}:{t}")),
            None => {
                let t = param.and_then(|(btf, id)| scalar_type(btf, id));
                Ok(format!("{name}=$arg{n}:{}", t.as_deref().unwrap_or("x64")))
            }
        };
    }
    if body.starts_with(['%', '+', '-', '@']) {
        // Registers and memory: the same text as for a uprobe.
        return fetch_arg(word, index, None, retprobe);
    }
    named_arg(word, name, body, ty, proto, retprobe)
}

/// `PARAM`, `PARAM->MEMBER`, `PARAM->A.B`... from BTF.
fn named_arg(
    word: &str,
    name: Option<&str>,
    body: &str,
    ty: Option<&str>,
    proto: Option<&Prototype>,
    retprobe: bool,
) -> Result<String, ProbeSpecError> {
    let mut steps = body.split_inclusive(['.', '>']);
    let first = steps.next().unwrap_or("");
    let (param_name, mut sep) = split_step(first);
    if param_name.is_empty() || !is_ident(param_name) {
        bail!(
            "probe argument '{word}': expected %REG, +OFF(%REG), $argN, $retval, $comm, or a parameter name (PARAM->MEMBER.MEMBER)"
        );
    }
    if retprobe {
        bail!(
            "probe argument '{word}': parameters are not available at a return probe; use $retval"
        );
    }
    let Some(proto) = proto else {
        bail!(
            "probe argument '{word}': arguments by name need the kernel's BTF (/sys/kernel/btf/vmlinux)"
        );
    };
    let btf = proto.btf;
    let Some((index, param)) = proto
        .func
        .params
        .iter()
        .enumerate()
        .find(|(_, p)| p.name == param_name)
    else {
        let names: Vec<&str> = proto.func.params.iter().map(|p| p.name.as_str()).collect();
        bail!(
            "probe argument '{param_name}': {} has no such parameter (parameters: {})",
            proto.func.name,
            names.join(", ")
        );
    };
    let mut value = Value::Direct(match ARG_REGS.get(index) {
        Some(reg) => reg.to_string(),
        None => format!("$arg{}", index + 1),
    });
    let mut type_id = param.type_id;
    let mut path = param_name.to_string();
    for step in steps {
        let (member, next_sep) = split_step(step);
        let member_of = match sep {
            Some("->") => {
                let Some(pointee) = btf.pointee(type_id) else {
                    bail!(
                        "probe argument '{word}': '{path}' is {}, not a pointer ('->')",
                        btf.type_name(type_id)
                    );
                };
                value = Value::Memory {
                    offset: 0,
                    base: value.text(),
                };
                pointee
            }
            Some(".") => {
                if !matches!(value, Value::Memory { .. }) {
                    bail!(
                        "probe argument '{word}': '{path}' is passed in a register; use '->' on a pointer"
                    );
                }
                type_id
            }
            _ => bail!("probe argument '{word}': expected '->' or '.' before '{member}'"),
        };
        if !btf.is_composite(member_of) {
            bail!(
                "probe argument '{word}': '{path}' is {}, not a struct or union",
                btf.type_name(member_of)
            );
        }
        let Some(m) = btf.member(member_of, member) else {
            bail!(
                "probe argument '{word}': {} has no member '{member}'",
                btf.type_name(member_of)
            );
        };
        if m.bitfield_size != 0 {
            bail!("probe argument '{word}': '{member}' is a bit field (not fetchable)");
        }
        if let Value::Memory { offset, .. } = &mut value {
            *offset += u64::from(m.byte_offset);
        }
        type_id = m.type_id;
        path.push_str(sep.unwrap_or(""));
        path.push_str(member);
        sep = next_sep;
    }
    if sep.is_some() {
        bail!("probe argument '{word}': nothing after the last '->' or '.'");
    }
    let name = name.map_or_else(|| last_name(&path), str::to_string);
    let fetched = match ty {
        Some("string" | "ustring") => {
            if btf.pointee(type_id).is_some_and(|p| btf.is_char(p)) {
                format!("+0({}):string", value.text())
            } else if let (Some(e), Value::Memory { .. }) = (btf.array_element(type_id), &value)
                && btf.is_char(e)
            {
                format!("{}:string", value.text())
            } else {
                bail!(
                    "probe argument '{word}': ':string' needs a char pointer or array, not {}",
                    btf.type_name(type_id)
                );
            }
        }
        Some(t) => format!("{}:{t}", value.text()),
        None => {
            let Some(t) = scalar_type(btf, type_id) else {
                bail!(
                    "probe argument '{word}': '{path}' is {} (give a member, or ':string' for text)",
                    btf.type_name(type_id)
                );
            };
            format!("{}:{t}", value.text())
        }
    };
    Ok(format!("{name}={fetched}"))
}

/// `sk->` → ("sk", Some("->")); `skc_state` → ("skc_state", None).
fn split_step(step: &str) -> (&str, Option<&'static str>) {
    if let Some(s) = step.strip_suffix("->") {
        (s, Some("->"))
    } else if let Some(s) = step.strip_suffix('.') {
        (s, Some("."))
    } else if let Some(s) = step.strip_suffix('>') {
        // A '>' without its '-': keep it in the word, which then fails.
        (s, Some(">"))
    } else {
        (step, None)
    }
}

fn is_ident(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// The argument's name when none is given: the last member (perf's rule).
fn last_name(path: &str) -> String {
    path.rsplit(['.', '>'])
        .next()
        .unwrap_or(path)
        .trim_end_matches('-')
        .to_string()
}

/// The `kprobe_events` line of a probe point with its fetch arguments.
pub(crate) fn kprobe_line(point: &ProbePoint, fetch: &[String]) -> String {
    let kind = if point.retprobe { "r" } else { "p" };
    let mut line = format!(
        "{kind}:{KPROBE_GROUP}/{} {}",
        point.event_name(),
        point.func
    );
    if point.offset != 0 {
        line.push_str(&format!("+{}", point.offset));
    }
    for f in fetch {
        line.push(' ');
        line.push_str(f);
    }
    line
}

/// A parsed `kprobe_events` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KernelDefined {
    pub(crate) group: String,
    pub(crate) name: String,
    pub(crate) retprobe: bool,
    /// `FUNC` or `FUNC+OFF` (or an address).
    pub(crate) place: String,
    /// The names of its fetch arguments.
    pub(crate) args: Vec<String>,
}

/// Parses a line as the kernel prints it: `p:probe/NAME FUNC ARGS`,
/// `r10:probe/NAME FUNC ARGS` (maxactive after the `r`).
pub(crate) fn parse_kernel_defined(line: &str) -> Option<KernelDefined> {
    let mut words = line.split_whitespace();
    let (kind, event) = words.next()?.split_once(':')?;
    let retprobe = match kind.as_bytes().first()? {
        b'p' => false,
        b'r' => true,
        _ => return None,
    };
    let (group, name) = event.split_once('/')?;
    let place = words.next()?;
    Some(KernelDefined {
        group: group.to_string(),
        name: name.to_string(),
        retprobe,
        place: place.strip_suffix("+0").unwrap_or(place).to_string(),
        args: words
            .filter_map(|w| w.split('=').next().map(str::to_string))
            .collect(),
    })
}

impl KernelDefined {
    /// Whether `pattern` (`GROUP:EVENT` or `EVENT`, globs) names it.
    pub(crate) fn matches(&self, pattern: &str) -> bool {
        matches_event(pattern, &self.group, &self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbol::probe_spec::parse_point;

    #[test]
    fn raw_and_special_arguments() {
        let f = |w: &str, ret| fetch_kernel_arg(w, 0, None, ret);
        assert_eq!(f("%di", false).unwrap(), "arg1=%di:x64");
        assert_eq!(f("bytes=%cx", false).unwrap(), "bytes=%cx:x64");
        assert_eq!(f("+16(%si):u8", false).unwrap(), "arg1=+16(%si):u8");
        assert_eq!(f("$retval", true).unwrap(), "arg1=$retval:x64");
        assert_eq!(f("$arg2:string", false).unwrap(), "arg1=+0($arg2):string");
        assert_eq!(f("$comm", false).unwrap(), "comm=$comm:string");
        assert!(f("$retval", false).is_err());
        assert!(f("$arg0", false).is_err());
        let e = f("size", false).unwrap_err().to_string();
        assert!(e.contains("BTF"), "{e}");
    }

    #[test]
    fn lines_and_listing() {
        let p = parse_point("do_sys_openat2%return $retval").unwrap();
        let fetch = vec![fetch_kernel_arg("$retval", 0, None, true).unwrap()];
        assert_eq!(
            kprobe_line(&p, &fetch),
            "r:probe/do_sys_openat2__return do_sys_openat2 arg1=$retval:x64"
        );
        let p = parse_point("vfs_read+4").unwrap();
        assert_eq!(kprobe_line(&p, &[]), "p:probe/vfs_read_4 vfs_read+4");
        let d = parse_kernel_defined("r10:probe/x__return x+0 arg1=$retval:s64").unwrap();
        assert_eq!(
            (d.retprobe, d.place.as_str(), d.args.as_slice()),
            (true, "x", &["arg1".to_string()][..])
        );
        assert!(d.matches("probe:x_*") && d.matches("x__return") && !d.matches("y"));
        assert!(parse_kernel_defined("bogus").is_none());
    }
}
