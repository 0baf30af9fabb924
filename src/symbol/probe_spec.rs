//! perf probe's definition syntax, without touching the system: the
//! probe point (`[EVENT=]FUNC[%return]`), each argument turned into
//! tracefs fetch-argument syntax (`%di`, `+8(%sp):u64`, `$retval`, and
//! DWARF parameter names fetched from their System V argument register at
//! the entry), and the lines of `uprobe_events` parsed back for listing
//! and deleting.
//!
//! Invariant: a definition is either turned into text the kernel accepts
//! or refused with a message that names the word at fault.

use crate::event::name::matches_glob;

use super::probe_target::{FunctionInfo, ParamPlace};

/// Why a probe definition was refused (the message names the word).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ProbeSpecError(pub(crate) String);

macro_rules! bail {
    ($($t:tt)*) => {
        return Err(ProbeSpecError(format!($($t)*)))
    };
}

/// `[EVENT=]FUNC[%return] ARG...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProbePoint {
    /// `EVENT=`: the name to give the event instead of FUNC.
    pub(crate) event: Option<String>,
    pub(crate) func: String,
    /// `FUNC+OFFSET`: bytes into the function (0 at its entry).
    pub(crate) offset: u64,
    pub(crate) retprobe: bool,
    pub(crate) args: Vec<String>,
}

impl ProbePoint {
    /// The event name perf would give: EVENT, FUNC, FUNC_OFFSET or
    /// FUNC__return.
    pub(crate) fn event_name(&self) -> String {
        match &self.event {
            Some(e) => e.clone(),
            None if self.retprobe => format!("{}__return", self.func),
            None if self.offset != 0 => format!("{}_{}", self.func, self.offset),
            None => self.func.clone(),
        }
    }

    /// Whether some argument names a variable (DWARF is needed).
    pub(crate) fn needs_dwarf(&self) -> bool {
        self.args.iter().any(|w| {
            let body = w.split_once('=').map_or(w.as_str(), |(_, e)| e);
            body.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        })
    }
}

/// Parses a definition (words separated by blanks).
pub(crate) fn parse_point(def: &str) -> Result<ProbePoint, ProbeSpecError> {
    let mut words = def.split_whitespace();
    let Some(point) = words.next() else {
        bail!("empty probe definition");
    };
    let (event, point) = match point.split_once('=') {
        Some((e, p)) => (Some(e.to_string()), p),
        None => (None, point),
    };
    let (func, retprobe) = match point.split_once('%') {
        Some((f, "return")) => (f, true),
        Some((_, other)) => bail!("probe '{point}': unknown suffix '%{other}' (only %return)"),
        None => (point, false),
    };
    let (func, offset) = match func.split_once('+') {
        Some((f, off)) => {
            let parsed = match off.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => off.parse().ok(),
            };
            let Some(offset) = parsed else {
                bail!("probe '{point}': offset '{off}' is not a number");
            };
            if retprobe && offset != 0 {
                bail!("probe '{point}': a return probe takes no offset");
            }
            (f, offset)
        }
        None => (func, 0),
    };
    if func.is_empty() {
        bail!("probe '{def}': no function");
    }
    // perf's FUNC:LINE (a line of the function's source) and @FILE need
    // the source lines of the probed code, which probe points do not read.
    if let Some((f, line)) = func.split_once(':')
        && line.parse::<u32>().is_ok()
    {
        bail!(
            "probe '{point}': line probes (FUNC:LINE) are not supported: probe {f} or {f}+OFFSET"
        );
    }
    let p = ProbePoint {
        event,
        func: func.to_string(),
        offset,
        retprobe,
        args: words.map(str::to_string).collect(),
    };
    let name = p.event_name();
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        bail!("probe event name '{name}': use letters, digits and '_' (NAME=FUNC)");
    }
    Ok(p)
}

/// One fetch argument in uprobe_events syntax, with its name.
pub(crate) fn fetch_arg(
    word: &str,
    index: usize,
    info: Option<&FunctionInfo>,
    retprobe: bool,
) -> Result<String, ProbeSpecError> {
    let (name, expr) = match word.split_once('=') {
        Some((n, e)) => (Some(n.to_string()), e),
        None => (None, word),
    };
    let (body, ty) = match expr.rsplit_once(':') {
        Some((b, t)) if !b.is_empty() => (b, Some(t)),
        _ => (expr, None),
    };
    if let Some(t) = ty {
        let ok = t == "string"
            || t == "ustring"
            || ["u", "s", "x"].iter().any(|p| {
                t.strip_prefix(p)
                    .is_some_and(|n| matches!(n, "8" | "16" | "32" | "64"))
            });
        if !ok {
            bail!(
                "probe argument '{word}': unknown type '{t}' (u8..u64, s8..s64, x8..x64, string)"
            );
        }
    }
    let raw = body.starts_with('%')
        || body.starts_with('+')
        || body.starts_with('-')
        || body.starts_with('@');
    if body == "$retval" {
        if !retprobe {
            bail!("probe argument '$retval' needs a return probe (FUNC%return)");
        }
        let name = name.unwrap_or_else(|| format!("arg{}", index + 1));
        return Ok(format!("{name}=$retval:{}", ty.unwrap_or("x64")));
    }
    if raw {
        let name = name.unwrap_or_else(|| format!("arg{}", index + 1));
        let ty = ty.unwrap_or("x64");
        let body = if ty == "string" && body.starts_with('%') {
            format!("+0({body})")
        } else {
            body.to_string()
        };
        return Ok(format!("{name}={body}:{ty}"));
    }
    // A variable by name: DWARF.
    if !body.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || body.is_empty() {
        bail!("probe argument '{word}': expected %REG, +OFF(%REG), $retval or a parameter name");
    }
    if retprobe {
        bail!(
            "probe argument '{word}': parameters are not available at a return probe; use $retval"
        );
    }
    let Some(info) = info else {
        bail!("probe argument '{word}': named arguments need -x BINARY with debug info");
    };
    let param = info.params.iter().find(|p| p.name == body).ok_or_else(|| {
        let names: Vec<&str> = info.params.iter().map(|p| p.name.as_str()).collect();
        ProbeSpecError(format!(
            "probe argument '{body}': no such parameter (parameters: {})",
            names.join(", ")
        ))
    })?;
    let reg = match &param.place {
        ParamPlace::Register(i) => ["%di", "%si", "%dx", "%cx", "%r8", "%r9"]
            .get(*i)
            .copied()
            .ok_or_else(|| ProbeSpecError(format!("probe argument '{body}': no register")))?,
        ParamPlace::Unsupported(why) => bail!("probe argument '{body}': {why}"),
    };
    let name = name.unwrap_or_else(|| body.to_string());
    Ok(match ty {
        Some("string") | Some("ustring") => {
            if !param.is_char_pointer {
                bail!(
                    "probe argument '{body}': ':string' needs a char pointer, not {}",
                    param.type_name
                );
            }
            format!("{name}=+0({reg}):string")
        }
        Some(t) => format!("{name}={reg}:{t}"),
        None => {
            let bits = (param.size.clamp(1, 8) * 8).next_power_of_two().max(8);
            let prefix = if param.type_name.contains('*') {
                "x"
            } else if param.signed {
                "s"
            } else {
                "u"
            };
            format!("{name}={reg}:{prefix}{bits}")
        }
    })
}

/// A parsed `uprobe_events` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Defined {
    pub(crate) group: String,
    pub(crate) name: String,
    pub(crate) retprobe: bool,
    pub(crate) path: String,
    pub(crate) offset: u64,
    pub(crate) args: Vec<String>,
}

pub(crate) fn parse_defined(line: &str) -> Option<Defined> {
    let mut words = line.split_whitespace();
    let head = words.next()?;
    let (kind, event) = head.split_once(':')?;
    let (group, name) = event.split_once('/')?;
    let place = words.next()?;
    let (path, offset) = place.rsplit_once(':')?;
    let offset = offset.split('(').next()?;
    let offset = u64::from_str_radix(offset.trim_start_matches("0x"), 16).ok()?;
    Some(Defined {
        group: group.to_string(),
        name: name.to_string(),
        retprobe: kind == "r",
        path: path.to_string(),
        offset,
        args: words
            .filter_map(|w| w.split('=').next().map(str::to_string))
            .collect(),
    })
}

/// Whether `pattern` (`GROUP:EVENT` or `EVENT`, globs) names `d`.
pub(crate) fn matches(pattern: &str, d: &Defined) -> bool {
    matches_event(pattern, &d.group, &d.name)
}

/// Whether `pattern` (`GROUP:EVENT` or `EVENT`, globs) names the probe
/// event `group:name` (uprobes and kprobes alike).
pub(crate) fn matches_event(pattern: &str, group: &str, name: &str) -> bool {
    match pattern.split_once(':') {
        Some((g, n)) => matches_glob(g, group) && matches_glob(n, name),
        None => matches_glob(pattern, name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_uprobe_events_lines() {
        let d = parse_defined("p:probe_libc/malloc /usr/lib/x86_64-linux-gnu/libc.so.6:0x00000000000a0fe0 size=%di:u64").unwrap();
        assert_eq!(
            (d.group.as_str(), d.name.as_str(), d.offset, d.retprobe),
            ("probe_libc", "malloc", 0xa0fe0, false)
        );
        assert_eq!(d.args, vec!["size"]);
        assert!(matches("probe_libc:*", &d) && matches("mal*", &d) && !matches("free", &d));
        assert!(parse_defined("garbage").is_none());
    }

    #[test]
    fn a_line_probe_is_refused_naming_what_works() {
        let err = parse_point("tcp_sendmsg:81 seglen")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line probes (FUNC:LINE) are not supported"),
            "{err}"
        );
        assert!(err.contains("tcp_sendmsg+OFFSET"), "{err}");
        assert!(parse_point("tcp_sendmsg+81").is_ok());
    }

    #[test]
    fn fetch_args() {
        assert_eq!(fetch_arg("%di", 0, None, false).unwrap(), "arg1=%di:x64");
        assert_eq!(
            fetch_arg("sz=+8(%sp):u32", 1, None, false).unwrap(),
            "sz=+8(%sp):u32"
        );
        assert_eq!(
            fetch_arg("$retval", 0, None, true).unwrap(),
            "arg1=$retval:x64"
        );
        assert_eq!(
            fetch_arg("%si:string", 0, None, false).unwrap(),
            "arg1=+0(%si):string"
        );
        assert!(fetch_arg("$retval", 0, None, false).is_err());
        assert!(fetch_arg("%di:q7", 0, None, false).is_err());
        assert!(fetch_arg("count", 0, None, false).is_err());
    }
}
