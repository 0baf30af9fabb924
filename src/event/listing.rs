//! The events `scry list` shows: one `ListedEvent` per name, in perf's
//! groups. Plain data: `capture::inventory` finds them on this machine,
//! `render::list` prints them.

use super::name;

/// perf's groups, in the order `scry list` prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub(crate) enum Group {
    Hardware,
    Software,
    HardwareCache,
    Tool,
    KernelPmu,
    Raw,
    Tracepoint,
    DynamicProbe,
}

impl Group {
    /// The bracketed label perf prints (`[Software event]`).
    pub(crate) fn label(self) -> &'static str {
        match self {
            Group::Hardware => "Hardware event",
            Group::Software => "Software event",
            Group::HardwareCache => "Hardware cache event",
            Group::Tool => "Tool event",
            Group::KernelPmu => "Kernel PMU event",
            Group::Raw => "Raw hardware event descriptor",
            Group::Tracepoint => "Tracepoint event",
            Group::DynamicProbe => "Dynamic probe event",
        }
    }

    /// The keyword `scry list KEYWORD` selects this group with (as perf list).
    pub(crate) fn from_keyword(word: &str) -> Option<Group> {
        Some(match word {
            "hw" | "hardware" => Group::Hardware,
            "sw" | "software" => Group::Software,
            "cache" | "hwcache" => Group::HardwareCache,
            "tool" => Group::Tool,
            "pmu" => Group::KernelPmu,
            "raw" => Group::Raw,
            "tracepoint" => Group::Tracepoint,
            "probe" | "uprobe" | "kprobe" => Group::DynamicProbe,
            _ => return None,
        })
    }
}

/// One line of `scry list`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct ListedEvent {
    /// The name to pass to `-e`.
    pub(crate) name: String,
    /// Other spellings of the same event (`cs` for `context-switches`).
    pub(crate) aliases: Vec<String>,
    pub(crate) group: Group,
    /// None when it can be counted (or was not tried); else why not.
    pub(crate) unsupported: Option<String>,
    /// For dynamic probes: `uprobe`/`kprobe` and the definition.
    pub(crate) detail: Option<String>,
}

impl ListedEvent {
    pub(crate) fn new(name: &str, group: Group) -> ListedEvent {
        ListedEvent {
            name: name.to_string(),
            aliases: Vec::new(),
            group,
            unsupported: None,
            detail: None,
        }
    }

    /// Does `pattern` (a glob) match the name or an alias?
    pub(crate) fn matches(&self, pattern: &str) -> bool {
        name::matches_glob(pattern, &self.name)
            || self.aliases.iter().any(|a| name::matches_glob(pattern, a))
    }
}
