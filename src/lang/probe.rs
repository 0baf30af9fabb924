//! Probe names: `BEGIN`, `END`, `tracepoint:SUB:NAME` (`t:`), `interval:s:N`
//! and `interval:ms:N` (`i:`), `profile:hz:N` (`p:`), `uprobe:BIN:FUNC`
//! and `uretprobe:BIN:FUNC` (`u:`, `ur:`), `kprobe:FUNC` and
//! `kretprobe:FUNC` (`k:`, `kr:`, through the kprobe PMU where the kernel
//! has one), `fentry:FUNC` and `fexit:FUNC` (`f:`, `fr:`, and bpftrace's
//! older `kfunc:`/`kretfunc:`; `vmlinux:` may precede the function),
//! `rawtracepoint:NAME` (`rt:`), `software:EVENT:N` (`s:`).
//! Parsing is text only; wildcards (`*` in tracepoint and kernel function
//! names) are expanded against the kernel by `resolve`.

use super::error::{LangError, Span};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ProbeSpec {
    Begin,
    End,
    Tracepoint {
        system: String,
        event: String,
    },
    RawTracepoint {
        event: String,
    },
    /// Every `period_ns` on one CPU.
    Interval {
        period_ns: u64,
    },
    /// `hz` times a second on every CPU.
    Profile {
        hz: u64,
    },
    /// A software event (`cpu-clock`, `page-faults`...) every `period`.
    Software {
        event: String,
        period: u64,
    },
    Uprobe {
        binary: String,
        function: String,
        ret: bool,
    },
    /// A kernel function's entry, or its return with `ret`.
    Kprobe {
        function: String,
        ret: bool,
    },
    /// A kernel function's entry (fentry), or its return with `ret`
    /// (fexit): BPF trampolines, arguments typed from BTF.
    Fentry {
        function: String,
        ret: bool,
    },
}

impl ProbeSpec {
    /// The name bpftrace prints for `probe` (the long spelling).
    pub(crate) fn name(&self) -> String {
        match self {
            ProbeSpec::Begin => "BEGIN".into(),
            ProbeSpec::End => "END".into(),
            ProbeSpec::Tracepoint { system, event } => format!("tracepoint:{system}:{event}"),
            ProbeSpec::RawTracepoint { event } => format!("rawtracepoint:{event}"),
            ProbeSpec::Interval { period_ns } => {
                if period_ns % 1_000_000_000 == 0 {
                    format!("interval:s:{}", period_ns / 1_000_000_000)
                } else {
                    format!("interval:ms:{}", period_ns / 1_000_000)
                }
            }
            ProbeSpec::Profile { hz } => format!("profile:hz:{hz}"),
            ProbeSpec::Software { event, period } => format!("software:{event}:{period}"),
            ProbeSpec::Uprobe {
                binary,
                function,
                ret,
            } => format!(
                "{}:{binary}:{function}",
                if *ret { "uretprobe" } else { "uprobe" }
            ),
            ProbeSpec::Kprobe { function, ret } => {
                format!("{}:{function}", if *ret { "kretprobe" } else { "kprobe" })
            }
            ProbeSpec::Fentry { function, ret } => {
                format!("{}:{function}", if *ret { "fexit" } else { "fentry" })
            }
        }
    }
}

pub(crate) fn parse_probe(text: &str, span: Span) -> Result<ProbeSpec, LangError> {
    let bad = |why: &str| LangError::new(span, why.to_string());
    if text == "BEGIN" {
        return Ok(ProbeSpec::Begin);
    }
    if text == "END" {
        return Ok(ProbeSpec::End);
    }
    let (kind, rest) = text
        .split_once(':')
        .ok_or_else(|| bad(&format!("Invalid probe type: {text}")))?;
    let number = |s: &str, what: &str| {
        s.parse::<u64>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| bad(&format!("{what}: expected a positive number, got '{s}'")))
    };
    match kind {
        "tracepoint" | "t" => {
            let (system, event) = rest
                .split_once(':')
                .filter(|(s, e)| !s.is_empty() && !e.is_empty() && !e.contains(':'))
                .ok_or_else(|| bad("tracepoint probe must be tracepoint:SUBSYSTEM:EVENT"))?;
            Ok(ProbeSpec::Tracepoint {
                system: system.into(),
                event: event.into(),
            })
        }
        "rawtracepoint" | "rt" => {
            let event = rest.rsplit(':').next().unwrap_or(rest);
            if event.is_empty() {
                return Err(bad("rawtracepoint probe must be rawtracepoint:EVENT"));
            }
            Ok(ProbeSpec::RawTracepoint {
                event: event.into(),
            })
        }
        "interval" | "i" => {
            let (unit, n) = rest
                .split_once(':')
                .ok_or_else(|| bad("interval probe must be interval:s:N or interval:ms:N"))?;
            let n = number(n, "interval")?;
            let scale: u64 = match unit {
                "s" => 1_000_000_000,
                "ms" => 1_000_000,
                "us" => 1_000,
                "hz" => {
                    return Ok(ProbeSpec::Interval {
                        period_ns: 1_000_000_000 / n,
                    });
                }
                _ => {
                    return Err(bad(&format!(
                        "interval: unknown unit '{unit}' (s, ms, us, hz)"
                    )));
                }
            };
            Ok(ProbeSpec::Interval {
                period_ns: n.saturating_mul(scale),
            })
        }
        "profile" | "p" => {
            let (unit, n) = rest
                .split_once(':')
                .ok_or_else(|| bad("profile probe must be profile:hz:N"))?;
            let n = number(n, "profile")?;
            match unit {
                "hz" => Ok(ProbeSpec::Profile { hz: n }),
                _ => Err(bad(&format!("profile: unsupported unit '{unit}' (hz)"))),
            }
        }
        "software" | "s" => {
            let (event, n) = rest.split_once(':').unwrap_or((rest, "1000"));
            Ok(ProbeSpec::Software {
                event: event.into(),
                period: number(n, "software")?,
            })
        }
        "uprobe" | "u" | "uretprobe" | "ur" => {
            let (binary, function) = rest
                .rsplit_once(':')
                .filter(|(b, f)| !b.is_empty() && !f.is_empty())
                .ok_or_else(|| bad("uprobe probe must be uprobe:BINARY:FUNCTION"))?;
            Ok(ProbeSpec::Uprobe {
                binary: binary.into(),
                function: function.into(),
                ret: kind.starts_with("uret") || kind == "ur",
            })
        }
        "kprobe" | "k" | "kretprobe" | "kr" => {
            if rest.is_empty() || rest.contains([':', '+']) {
                return Err(bad(&format!(
                    "{kind} probe must be {kind}:FUNCTION (a kernel function or a wildcard, no offset)"
                )));
            }
            Ok(ProbeSpec::Kprobe {
                function: rest.into(),
                ret: kind.starts_with("kret") || kind == "kr",
            })
        }
        "fentry" | "f" | "kfunc" | "fexit" | "fr" | "kretfunc" => {
            let function = rest.strip_prefix("vmlinux:").unwrap_or(rest);
            if function.is_empty() || function.contains([':', '+']) {
                return Err(bad(&format!(
                    "{kind} probe must be {kind}:FUNCTION (a function of the kernel, not of a module, or a wildcard)"
                )));
            }
            Ok(ProbeSpec::Fentry {
                function: function.into(),
                ret: matches!(kind, "fexit" | "fr" | "kretfunc"),
            })
        }
        _ => Err(bad(&format!("Invalid probe type: {kind}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<ProbeSpec, LangError> {
        parse_probe(text, Span::default())
    }

    #[test]
    fn spellings() {
        assert_eq!(p("BEGIN"), Ok(ProbeSpec::Begin));
        assert_eq!(
            p("t:sched:sched_switch").map(|s| s.name()),
            Ok("tracepoint:sched:sched_switch".into())
        );
        assert_eq!(
            p("interval:ms:100"),
            Ok(ProbeSpec::Interval {
                period_ns: 100_000_000
            })
        );
        assert_eq!(p("i:s:1").map(|s| s.name()), Ok("interval:s:1".into()));
        assert_eq!(p("profile:hz:99"), Ok(ProbeSpec::Profile { hz: 99 }));
        assert_eq!(
            p("uretprobe:/bin/bash:readline"),
            Ok(ProbeSpec::Uprobe {
                binary: "/bin/bash".into(),
                function: "readline".into(),
                ret: true
            })
        );
    }

    #[test]
    fn kernel_function_probes() {
        assert_eq!(
            p("kr:do_sys_openat2"),
            Ok(ProbeSpec::Kprobe {
                function: "do_sys_openat2".into(),
                ret: true
            })
        );
        assert_eq!(
            p("kprobe:vfs_read").map(|s| s.name()),
            Ok("kprobe:vfs_read".into())
        );
        assert!(p("kprobe:vfs_*").is_ok());
        assert!(p("kprobe:vfs_read+4").is_err());
        assert!(p("kprobe:").is_err());
        assert_eq!(
            p("kretfunc:vmlinux:do_sys_openat2"),
            Ok(ProbeSpec::Fentry {
                function: "do_sys_openat2".into(),
                ret: true
            })
        );
        assert_eq!(
            p("f:vfs_read").map(|s| s.name()),
            Ok("fentry:vfs_read".into())
        );
        assert!(p("fentry:ext4:ext4_sync_fs").is_err());
    }

    #[test]
    fn bad_names() {
        assert!(p("tracepoint:sched").is_err());
        assert!(p("interval:h:1").is_err());
        assert!(p("profile:hz:0").is_err());
        let err = p("foo:bar").expect_err("unknown");
        assert_eq!(err.message, "Invalid probe type: foo");
    }
}
