//! The lines of the streaming memory tools, in libbpf-tools' layouts, and
//! their JSON fields: oomkill (`HH:MM:SS Triggered by PID ... OOM kill of
//! PID ..., N pages, loadavg: ...`; the load average comes from the
//! caller, this module reads no file), drsnoop (its banner, then `TIME
//! COMM TID LAT(ms) PAGES`, with `-e` a `FREE(KB)` column, with `--memcg`
//! a `KIND` column) and capable (`TIME UID PID
//! COMM CAP NAME AUDIT VERDICT`; AUDIT is `-`: the tracepoint does not
//! carry it).

use std::cell::Cell;
use std::io::{self, Write};

use serde_json::{Value, json};

use super::snoop::{Clock, SnoopFormat, hms};
use crate::analysis::snoop::{CapEvent, OomEvent, ReclaimEvent};

/// oomkill's layout; `loadavg` gives /proc/loadavg's text at the kill.
pub(crate) struct OomLayout<L> {
    pub(crate) loadavg: L,
}

impl<L: Fn() -> String> SnoopFormat for OomLayout<L> {
    type Event = OomEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        writeln!(w, "Tracing OOM kills... Ctrl-C to stop.")
    }

    fn line<W: Write>(&self, w: &mut W, e: &OomEvent, clock: Clock) -> io::Result<()> {
        writeln!(
            w,
            "{} Triggered by PID {} (\"{}\"), OOM kill of PID {} (\"{}\"), {} pages, loadavg: {}",
            hms(clock.hms),
            e.trigger_pid,
            e.trigger_comm,
            e.victim_pid,
            e.victim_comm,
            e.pages,
            (self.loadavg)()
        )
    }

    fn fields(&self, e: &OomEvent) -> Value {
        json!({
            "trigger_pid": e.trigger_pid, "trigger_comm": e.trigger_comm,
            "victim_pid": e.victim_pid, "victim_comm": e.victim_comm,
            "pages": e.pages, "loadavg": (self.loadavg)(),
        })
    }
}

/// How -e's FREE(KB) of a reclaim is found (the caller's choice).
pub(crate) enum FreeKb {
    /// The free pages the event carries (read in the kernel when the
    /// reclaim began), pages of `page_kb` KB.
    Pages { page_kb: u64 },
    /// Read when events arrive, by the caller's `read`, once for all the
    /// events of one drain of the ring ([`SnoopFormat::arrived`]); `last`
    /// is its last answer.
    OnArrival {
        read: Box<dyn Fn() -> u64>,
        last: Cell<u64>,
    },
}

impl FreeKb {
    /// Reads free memory with `read` when events arrive.
    pub(crate) fn on_arrival(read: impl Fn() -> u64 + 'static) -> FreeKb {
        FreeKb::OnArrival {
            read: Box::new(read),
            last: Cell::new(0),
        }
    }

    fn of(&self, e: &ReclaimEvent) -> u64 {
        match self {
            FreeKb::Pages { page_kb } => e.free_pages * page_kb,
            FreeKb::OnArrival { last, .. } => last.get(),
        }
    }
}

/// drsnoop's layout.
#[derive(Default)]
pub(crate) struct ReclaimLayout {
    /// --memcg: the KIND column.
    pub(crate) kind: bool,
    /// -e: the FREE(KB) column.
    pub(crate) free_kb: Option<FreeKb>,
}

impl SnoopFormat for ReclaimLayout {
    type Event = ReclaimEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        writeln!(w, "Tracing direct reclaim events... Hit Ctrl-C to end.")?;
        write!(
            w,
            "{:<8} {:<16} {:<6} {:>8} {:>5}",
            "TIME", "COMM", "TID", "LAT(ms)", "PAGES"
        )?;
        if self.free_kb.is_some() {
            write!(w, " {:>8}", "FREE(KB)")?;
        }
        if self.kind {
            write!(w, " KIND")?;
        }
        writeln!(w)
    }

    fn line<W: Write>(&self, w: &mut W, e: &ReclaimEvent, clock: Clock) -> io::Result<()> {
        write!(
            w,
            "{:<8} {:<16} {:<6} {:>8.3} {:>5}",
            hms(clock.hms),
            e.comm,
            e.tid,
            e.delta_ns as f64 / 1e6,
            e.nr_reclaimed
        )?;
        if let Some(free_kb) = &self.free_kb {
            write!(w, " {:>8}", free_kb.of(e))?;
        }
        if self.kind {
            write!(w, " {}", if e.memcg { "memcg" } else { "direct" })?;
        }
        writeln!(w)
    }

    fn fields(&self, e: &ReclaimEvent) -> Value {
        let mut fields = json!({
            "comm": e.comm, "pid": e.pid, "tid": e.tid, "lat_ms": e.delta_ns as f64 / 1e6,
            "pages": e.nr_reclaimed, "kind": if e.memcg { "memcg" } else { "direct" },
        });
        if let Some(free_kb) = &self.free_kb {
            fields["free_kb"] = json!(free_kb.of(e));
        }
        fields
    }

    fn arrived(&self) {
        if let Some(FreeKb::OnArrival { read, last }) = &self.free_kb {
            last.set(read());
        }
    }
}

/// The capabilities' names, by number (linux/capability.h).
const CAP_NAMES: [&str; 41] = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
];

/// A capability's name; `?` for a number past the table.
pub(crate) fn cap_name(cap: i32) -> &'static str {
    usize::try_from(cap)
        .ok()
        .and_then(|c| CAP_NAMES.get(c))
        .copied()
        .unwrap_or("?")
}

/// Names a check's (kernel, user) stacks, innermost first (-K, -U).
pub(crate) type StackNamer<'a> = &'a dyn Fn(&CapEvent) -> (Vec<String>, Vec<String>);

/// capable's layout; `tid`: -x's TID column; `stacks`: which stacks go
/// under each line (and in its JSON object), with what names them.
#[derive(Clone, Copy, Default)]
pub(crate) struct CapLayout<'a> {
    pub(crate) tid: bool,
    pub(crate) stacks: Option<(CapStacks, StackNamer<'a>)>,
}

/// The stacks capable shows: -K's kernel one, -U's user one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CapStacks {
    pub(crate) kernel: bool,
    pub(crate) user: bool,
}

impl std::fmt::Debug for CapLayout<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapLayout")
            .field("tid", &self.tid)
            .field("stacks", &self.stacks.map(|(which, _)| which))
            .finish()
    }
}

impl CapLayout<'_> {
    /// The named stacks asked for, kernel first: ("Kernel" or "User",
    /// frames innermost first).
    fn named(&self, e: &CapEvent) -> Vec<(&'static str, Vec<String>)> {
        let Some((which, name)) = self.stacks else {
            return Vec::new();
        };
        let (kernel, user) = name(e);
        [(which.kernel, "Kernel", kernel), (which.user, "User", user)]
            .into_iter()
            .filter_map(|(asked, kind, frames)| asked.then_some((kind, frames)))
            .collect()
    }
}

/// bcc's stack lines under an event: one frame a line, indented; a stack
/// the kernel did not give is `[Missed Kernel Stack]`.
fn stack_lines<W: Write>(w: &mut W, frames: &[String], kind: &str) -> io::Result<()> {
    if frames.is_empty() {
        return writeln!(w, "        [Missed {kind} Stack]");
    }
    frames.iter().try_for_each(|f| writeln!(w, "        {f}"))
}

impl SnoopFormat for CapLayout<'_> {
    type Event = CapEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        write!(w, "{:<8} {:<5} {:<7}", "TIME", "UID", "PID")?;
        if self.tid {
            write!(w, " {:<7}", "TID")?;
        }
        writeln!(
            w,
            " {:<16} {:<4} {:<20} {:<6} VERDICT",
            "COMM", "CAP", "NAME", "AUDIT"
        )
    }

    fn line<W: Write>(&self, w: &mut W, e: &CapEvent, clock: Clock) -> io::Result<()> {
        write!(w, "{:<8} {:<5} {:<7}", hms(clock.hms), e.uid, e.pid)?;
        if self.tid {
            write!(w, " {:<7}", e.tid)?;
        }
        writeln!(
            w,
            " {:<16} {:<4} {:<20} {:<6} {}",
            e.comm,
            e.cap,
            cap_name(e.cap),
            "-",
            verdict(e.ret)
        )?;
        for (kind, frames) in self.named(e) {
            stack_lines(w, &frames, kind)?;
        }
        Ok(())
    }

    fn fields(&self, e: &CapEvent) -> Value {
        let mut v = json!({
            "uid": e.uid, "pid": e.pid, "tid": e.tid, "comm": e.comm, "cap": e.cap,
            "name": cap_name(e.cap), "verdict": verdict(e.ret),
        });
        for (kind, frames) in self.named(e) {
            v[if kind == "Kernel" {
                "kernel_stack"
            } else {
                "user_stack"
            }] = frames.into();
        }
        v
    }
}

fn verdict(ret: i32) -> &'static str {
    if ret == 0 { "allow" } else { "deny" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        f(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn lines_in_libbpf_tools_layouts() {
        let clock = Clock {
            hms: (1, 2, 3),
            secs: 0.0,
        };
        let oom = OomLayout {
            loadavg: || "0.10 0.20 0.30 1/99 42".to_string(),
        };
        let e = OomEvent {
            trigger_pid: 7,
            trigger_comm: "hog".into(),
            victim_pid: 7,
            victim_comm: "hog".into(),
            pages: 1000,
        };
        assert_eq!(
            text(|w| oom.line(w, &e, clock)),
            "01:02:03 Triggered by PID 7 (\"hog\"), OOM kill of PID 7 (\"hog\"), 1000 pages, loadavg: 0.10 0.20 0.30 1/99 42\n"
        );
        let r = ReclaimEvent {
            delta_ns: 1_500_000,
            nr_reclaimed: 32,
            pid: 9,
            tid: 10,
            memcg: true,
            free_pages: 1000,
            comm: "dd".into(),
        };
        let layout = ReclaimLayout {
            kind: true,
            free_kb: None,
        };
        assert_eq!(
            text(|w| layout.line(w, &r, clock)),
            "01:02:03 dd               10        1.500    32 memcg\n"
        );
        let extended = ReclaimLayout {
            kind: false,
            free_kb: Some(FreeKb::Pages { page_kb: 4 }),
        };
        assert_eq!(
            text(|w| extended.line(w, &r, clock)),
            "01:02:03 dd               10        1.500    32     4000\n"
        );
        // Read when events arrive: once a drain, whatever the events.
        let reads = std::rc::Rc::new(Cell::new(0u64));
        let counted = std::rc::Rc::clone(&reads);
        let on_arrival = ReclaimLayout {
            kind: false,
            free_kb: Some(FreeKb::on_arrival(move || {
                counted.set(counted.get() + 1);
                counted.get() * 100
            })),
        };
        on_arrival.arrived();
        for _ in 0..3 {
            assert_eq!(
                text(|w| on_arrival.line(w, &r, clock)),
                "01:02:03 dd               10        1.500    32      100\n"
            );
        }
        on_arrival.arrived();
        assert_eq!(on_arrival.fields(&r)["free_kb"], 200);
        assert_eq!(reads.get(), 2);
        let c = CapEvent {
            pid: 5,
            tid: 5,
            uid: 0,
            cap: 24,
            ret: 0,
            comm: "caps".into(),
            cgroup_id: 1,
            ..CapEvent::default()
        };
        let line = text(|w| CapLayout::default().line(w, &c, clock));
        assert!(
            line.contains(" CAP_SYS_RESOURCE ") && line.ends_with(" allow\n"),
            "{line}"
        );
        assert_eq!(cap_name(40), "CAP_CHECKPOINT_RESTORE");
        assert_eq!(cap_name(-1), "?");
    }
}
