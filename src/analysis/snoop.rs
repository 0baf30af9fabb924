//! The streaming tools' events (execsnoop, exitsnoop, opensnoop, killsnoop,
//! sigsnoop, statsnoop, threadsnoop, oomkill, drsnoop, capable,
//! filelife, mountsnoop) as the kernel side
//! decodes them, and the filters libbpf-tools applies in user space
//! (`-n NAME`, `-l LINE`, `--ppid`): kept here so the renderers and the
//! command lines name one set of types.

pub(crate) use crate::sys::bpf_capable::CapEvent;
pub(crate) use crate::sys::bpf_drsnoop::ReclaimEvent;
pub(crate) use crate::sys::bpf_execsnoop::ExecEvent;
pub(crate) use crate::sys::bpf_exitsnoop::ExitEvent;
pub(crate) use crate::sys::bpf_filelife::LifeEvent;
pub(crate) use crate::sys::bpf_mountsnoop::MountEvent;
pub(crate) use crate::sys::bpf_oomkill::OomEvent;
pub(crate) use crate::sys::bpf_opensnoop::OpenEvent;
pub(crate) use crate::sys::bpf_sigsnoop::SigEvent;
pub(crate) use crate::sys::bpf_statsnoop::StatEvent;
pub(crate) use crate::sys::bpf_threadsnoop::ThreadEvent;

/// execsnoop's user-space filters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExecFilter {
    /// The command name contains this (-n).
    pub(crate) name: Option<String>,
    /// An argument contains this (-l).
    pub(crate) line: Option<String>,
    /// The parent is this process (--ppid).
    pub(crate) ppid: Option<u32>,
}

impl ExecFilter {
    pub(crate) fn keeps(&self, e: &ExecEvent) -> bool {
        self.name
            .as_ref()
            .is_none_or(|n| e.comm.contains(n.as_str()))
            && self
                .line
                .as_ref()
                .is_none_or(|l| e.args.iter().any(|a| a.contains(l.as_str())))
            && self.ppid.is_none_or(|p| e.ppid == p)
    }
}

/// What capable's `--unique` shows once: each capability per process,
/// or per cgroup (libbpf-tools' `-u pid|cgroup`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UniqueBy {
    /// Each process's first check of each capability.
    Pid,
    /// Each cgroup's first check of each capability.
    Cgroup,
}

/// capable's `--unique` filter: keeps a check whose (process or cgroup,
/// capability) it has not kept before.
#[derive(Debug)]
pub(crate) struct CapUnique {
    by: UniqueBy,
    seen: std::cell::RefCell<std::collections::HashSet<(u64, i32)>>,
}

impl CapUnique {
    pub(crate) fn new(by: UniqueBy) -> CapUnique {
        CapUnique {
            by,
            seen: Default::default(),
        }
    }

    pub(crate) fn keeps(&self, e: &CapEvent) -> bool {
        let who = match self.by {
            UniqueBy::Pid => u64::from(e.pid),
            UniqueBy::Cgroup => e.cgroup_id,
        };
        self.seen.borrow_mut().insert((who, e.cap))
    }
}

/// opensnoop's `-n NAME`: the command name contains it.
pub(crate) fn open_kept(name: Option<&str>, e: &OpenEvent) -> bool {
    name.is_none_or(|n| e.comm.contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_on_name_argument_and_parent() {
        let e = ExecEvent {
            comm: "bash".into(),
            ppid: 4,
            args: vec!["/bin/ls".into(), "-l".into()],
            ..ExecEvent::default()
        };
        assert!(ExecFilter::default().keeps(&e));
        let by = |name: Option<&str>, line: Option<&str>, ppid| ExecFilter {
            name: name.map(String::from),
            line: line.map(String::from),
            ppid,
        };
        assert!(by(Some("as"), Some("-l"), Some(4)).keeps(&e));
        assert!(!by(Some("zsh"), None, None).keeps(&e));
        assert!(!by(None, Some("-x"), None).keeps(&e));
        assert!(!by(None, None, Some(5)).keeps(&e));
    }

    #[test]
    fn unique_keeps_the_first_check_per_process_or_cgroup() {
        let check = |pid, cap, cgroup_id| CapEvent {
            pid,
            cap,
            cgroup_id,
            ..CapEvent::default()
        };
        let by_pid = CapUnique::new(UniqueBy::Pid);
        let kept: Vec<bool> = [
            check(1, 24, 7),
            check(1, 24, 7),
            check(1, 21, 7),
            check(2, 24, 7),
        ]
        .iter()
        .map(|e| by_pid.keeps(e))
        .collect();
        assert_eq!(kept, [true, false, true, true]);
        let by_cgroup = CapUnique::new(UniqueBy::Cgroup);
        assert!(by_cgroup.keeps(&check(1, 24, 7)));
        assert!(!by_cgroup.keeps(&check(2, 24, 7)));
        assert!(by_cgroup.keeps(&check(2, 24, 8)));
    }
}
