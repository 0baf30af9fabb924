//! `SyscallDecoder`: the `TraceSink` of `scry trace`. It turns the tracer's
//! records into `event::syscall::TraceItem`s: system call entries with
//! their arguments (and path strings), exits with their return values,
//! other tracepoints rendered through the event formats, uprobe hits with
//! their registers. Records come in time order (the record pipeline's
//! sorter, `capture::trace`), so each item is delivered as it is made.
//!
//! Strings and input buffers are never read from the process here: they
//! come copied at the entry (`TraceRecord::ArgCopies`, from the BPF program
//! of `sys::bpf_trace`) and are joined to their entry by
//! `analysis::syscalls::Tracer`. An entry starts with every such argument
//! "not copied"; a NULL pointer says NULL.
//!
//! Syscall names come from the `syscalls` crate's x86-64 table; argument
//! names and types from the kernel's `syscalls:sys_enter_*` formats through
//! `event::FormatCache` (loaded once per syscall number).

use std::collections::{HashMap, HashSet};
use std::io;
use std::rc::Rc;

use crate::event::format::{Endian, EventFormat, Field, FieldValue};
use crate::event::format_cache::FormatCache;
use crate::event::syscall::{ArgCopies, ArgKind, ArgText, SyscallDesc, SyscallEnter, TraceItem};
use crate::sys::bpf_trace::{self, CopyStatus};

use super::trace::{TraceRecord, TraceSample, TraceSink};

/// How records of one event are decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EventRole {
    /// `raw_syscalls:sys_enter`.
    SysEnter,
    /// `raw_syscalls:sys_exit`.
    SysExit,
    /// Any other tracepoint, rendered with its print fmt.
    Tracepoint,
    /// A uprobe from the PMU with argument registers sampled
    /// (`UPROBE_REGS`).
    Uprobe { retprobe: bool },
    /// A kprobe from the PMU: its raw record is the trace entry's header
    /// and the probed address (a kretprobe: the function, then the return
    /// address), printed as ftrace prints them.
    Kprobe { retprobe: bool },
}

/// The registers sampled for uprobes: ax, cx, dx, si, di, ip, r8, r9.
pub(crate) const UPROBE_REGS: u64 = {
    use super::trace::regs::*;
    1 << AX | 1 << CX | 1 << DX | 1 << SI | 1 << DI | 1 << IP | 1 << R8 | 1 << R9
};

/// Number → name and argument layout of system calls.
#[derive(Debug)]
pub(crate) struct SyscallTable {
    formats: Rc<FormatCache>,
    descs: HashMap<u64, Rc<SyscallDesc>>,
}

impl SyscallTable {
    pub(crate) fn new(formats: Rc<FormatCache>) -> SyscallTable {
        SyscallTable {
            formats,
            descs: HashMap::new(),
        }
    }

    /// The name of syscall `nr` on x86-64 (`syscall_NNN` when unknown).
    pub(crate) fn name(nr: u64) -> String {
        match syscalls::Sysno::new(nr as usize) {
            Some(s) => s.name().to_string(),
            None => format!("syscall_{nr}"),
        }
    }

    /// The number of the syscall called `name`.
    pub(crate) fn number(name: &str) -> Option<u64> {
        name.parse::<syscalls::Sysno>().ok().map(|s| s.id() as u64)
    }

    /// Every syscall (number, name) of x86-64.
    pub(crate) fn all() -> impl Iterator<Item = (u64, &'static str)> {
        syscalls::Sysno::iter().map(|s| (s.id() as u64, s.name()))
    }

    /// The description of `nr`, from its `sys_enter_NAME` format.
    pub(crate) fn get(&mut self, nr: u64) -> Rc<SyscallDesc> {
        if let Some(d) = self.descs.get(&nr) {
            return Rc::clone(d);
        }
        let name = Self::name(nr);
        let desc = match self.formats.load("syscalls", &format!("sys_enter_{name}")) {
            Ok(format) => SyscallDesc::from_format(nr, &name, &format),
            Err(_) => SyscallDesc::bare(nr, &name),
        };
        let desc = Rc::new(desc);
        self.descs.insert(nr, Rc::clone(&desc));
        desc
    }
}

/// Where `id`, `args` and `ret` are in raw_syscalls records.
#[derive(Debug, Clone)]
pub(crate) struct RawSyscallLayout {
    enter_id: Field,
    enter_args: Field,
    exit_id: Field,
    exit_ret: Field,
}

impl RawSyscallLayout {
    /// From the formats of `raw_syscalls:sys_enter` and `sys_exit`.
    pub(crate) fn new(enter: &EventFormat, exit: &EventFormat) -> Option<RawSyscallLayout> {
        Some(RawSyscallLayout {
            enter_id: enter.field("id")?.clone(),
            enter_args: enter.field("args")?.clone(),
            exit_id: exit.field("id")?.clone(),
            exit_ret: exit.field("ret")?.clone(),
        })
    }
}

/// Decodes tracer records into time-ordered `TraceItem`s.
pub(crate) struct SyscallDecoder<F: FnMut(TraceItem) -> io::Result<()>> {
    roles: Vec<EventRole>,
    names: Vec<Rc<str>>,
    layout: Option<RawSyscallLayout>,
    table: SyscallTable,
    formats: Rc<FormatCache>,
    /// Threads named by a record, or looked up in /proc.
    named: HashSet<i32>,
    deliver: F,
    /// Records the kernel dropped (ring full), per CPU.
    pub(crate) lost: std::collections::BTreeMap<u32, u64>,
    /// Records whose fields did not decode.
    pub(crate) undecodable: u64,
}

impl<F: FnMut(TraceItem) -> io::Result<()>> SyscallDecoder<F> {
    pub(crate) fn new(
        roles: Vec<EventRole>,
        names: Vec<String>,
        layout: Option<RawSyscallLayout>,
        formats: Rc<FormatCache>,
        deliver: F,
    ) -> Self {
        SyscallDecoder {
            roles,
            names: names.into_iter().map(Rc::from).collect(),
            layout,
            table: SyscallTable::new(Rc::clone(&formats)),
            formats,
            named: HashSet::new(),
            deliver,
            lost: Default::default(),
            undecodable: 0,
        }
    }

    /// A thread seen for the first time with no FORK or COMM record so
    /// far: its name from /proc while it is there, which the tracer uses
    /// only if no record (from another CPU's ring, drained later) names it.
    /// Names are settled there, in time order, not here in ring order.
    fn note_thread(&mut self, tid: i32, time: u64) -> io::Result<()> {
        if self.named.insert(tid)
            && let Some(comm) = proc_comm(tid)
        {
            (self.deliver)(TraceItem::NameGuess { tid, comm, time })?;
        }
        Ok(())
    }

    fn sample(&mut self, s: &TraceSample<'_>) -> Option<TraceItem> {
        let role = self.roles.get(s.event)?.clone();
        Some(match role {
            EventRole::SysEnter => {
                let layout = self.layout.as_ref()?;
                let nr = layout.enter_id.int(s.raw)?;
                let mut args = [0u64; 6];
                match layout.enter_args.value(s.raw, Endian::host())? {
                    FieldValue::Bytes { bytes, .. } => {
                        for (slot, chunk) in args.iter_mut().zip(bytes.chunks_exact(8)) {
                            let mut a = [0u8; 8];
                            a.copy_from_slice(chunk);
                            *slot = u64::from_ne_bytes(a);
                        }
                    }
                    FieldValue::Int { .. } => return None,
                }
                let desc = self.table.get(nr);
                let strings = desc
                    .copied_args()
                    .map(|i| match args[i] {
                        0 => (i, ArgText::Unavailable("NULL")),
                        _ => (i, ArgText::NOT_COPIED),
                    })
                    .collect();
                TraceItem::Enter(SyscallEnter {
                    pid: s.pid,
                    tid: s.tid,
                    time: s.time,
                    desc,
                    args,
                    strings,
                })
            }
            EventRole::SysExit => {
                let layout = self.layout.as_ref()?;
                let nr = layout.exit_id.int(s.raw)?;
                let ret = layout.exit_ret.int(s.raw)? as i64;
                TraceItem::Exit {
                    pid: s.pid,
                    tid: s.tid,
                    time: s.time,
                    desc: self.table.get(nr),
                    ret,
                }
            }
            EventRole::Tracepoint | EventRole::Kprobe { .. } | EventRole::Uprobe { .. } => {
                TraceItem::Event {
                    pid: s.pid,
                    tid: s.tid,
                    time: s.time,
                    name: Rc::clone(self.names.get(s.event)?),
                    text: self.event_text(&role, s),
                }
            }
        })
    }
}

impl<F: FnMut(TraceItem) -> io::Result<()>> SyscallDecoder<F> {
    /// The text after an event's name: the tracepoint's print fmt, a
    /// kprobe's address, a uprobe's argument registers.
    fn event_text(&self, role: &EventRole, s: &TraceSample<'_>) -> String {
        match *role {
            EventRole::Kprobe { retprobe } => {
                let word = |at: usize| {
                    let bytes = s.raw.get(at..at + 8)?;
                    Some(u64::from_ne_bytes(bytes.try_into().ok()?))
                };
                match (retprobe, word(8), word(16)) {
                    (false, Some(ip), _) => format!("({ip:#x})"),
                    (true, Some(func), Some(ret)) => format!("({ret:#x} <- {func:#x})"),
                    _ => format!("[truncated kprobe record: {} bytes]", s.raw.len()),
                }
            }
            EventRole::Uprobe { retprobe } => {
                // ax, cx, dx, si, di, ip, r8, r9 (ascending register numbers).
                let r = |i: usize| s.regs.get(i).copied().unwrap_or(0);
                if retprobe {
                    format!("({:#x}) ret={:#x}", r(5), r(0))
                } else {
                    format!(
                        "({:#x}) arg1={:#x} arg2={:#x} arg3={:#x} arg4={:#x} arg5={:#x} arg6={:#x}",
                        r(5),
                        r(4),
                        r(3),
                        r(2),
                        r(1),
                        r(6),
                        r(7)
                    )
                }
            }
            _ => {
                let mut text = String::new();
                self.formats.render(s.raw, &mut text);
                text
            }
        }
    }
}

/// The name of thread `tid` in /proc (while it exists).
fn proc_comm(tid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// The copies of one entry as texts: a string up to its NUL, a buffer as
/// copied.
fn copies_item(
    tid: i32,
    time: u64,
    desc: &SyscallDesc,
    copies: &bpf_trace::ArgCopies<'_>,
) -> ArgCopies {
    let texts = copies
        .copies
        .iter()
        .map(|c| {
            let text = match c.status {
                CopyStatus::Fault => ArgText::Unavailable("unreadable at entry"),
                status => {
                    let is_string = desc.args.get(c.arg).map(|a| a.kind) == Some(ArgKind::Str);
                    let bytes = match c.bytes.iter().position(|&b| b == 0) {
                        Some(end) if is_string => &c.bytes[..end],
                        _ => c.bytes,
                    };
                    ArgText::Copied {
                        bytes: bytes.to_vec(),
                        truncated: status == CopyStatus::Truncated,
                    }
                }
            };
            (c.arg, text)
        })
        .collect();
    ArgCopies {
        tid,
        time,
        nr: copies.nr,
        args: copies.args,
        texts,
    }
}

impl<F: FnMut(TraceItem) -> io::Result<()>> TraceSink for SyscallDecoder<F> {
    fn drained(&mut self) -> io::Result<()> {
        (self.deliver)(TraceItem::Drained)
    }

    fn record(&mut self, record: TraceRecord<'_>) -> io::Result<()> {
        match record {
            TraceRecord::Sample(s) => {
                self.note_thread(s.tid, s.time)?;
                match self.sample(&s) {
                    Some(item) => (self.deliver)(item)?,
                    None => self.undecodable += 1,
                }
            }
            TraceRecord::Comm {
                tid, comm, time, ..
            } => {
                self.named.insert(tid);
                (self.deliver)(TraceItem::Comm { tid, comm, time })?;
            }
            TraceRecord::Fork {
                tid, ptid, time, ..
            } => {
                // A new thread has the name of the thread that made it,
                // until it renames itself (a COMM record) or execs.
                self.note_thread(ptid, time)?;
                self.named.insert(tid);
                (self.deliver)(TraceItem::Fork { tid, ptid, time })?;
            }
            TraceRecord::ArgCopies {
                tid, time, copies, ..
            } => {
                let desc = self.table.get(copies.nr);
                let item = copies_item(tid, time, &desc, &copies);
                (self.deliver)(TraceItem::ArgCopies(item))?;
            }
            TraceRecord::Exit { pid, tid, time } => {
                (self.deliver)(TraceItem::ThreadExit { pid, tid, time })?;
            }
            TraceRecord::Lost { cpu, count } => *self.lost.entry(cpu).or_default() += count,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers() {
        assert_eq!(SyscallTable::name(110), "getppid");
        assert_eq!(SyscallTable::number("openat"), Some(257));
        assert_eq!(SyscallTable::number("no_such_call"), None);
        assert!(SyscallTable::name(100_000).starts_with("syscall_"));
    }

    #[test]
    fn copies_become_texts() {
        let desc = SyscallDesc {
            nr: 1,
            name: "write".into(),
            args: vec![],
        };
        let copies = bpf_trace::ArgCopies {
            nr: 1,
            args: [1, 0x1000, 3, 0, 0, 0],
            copies: vec![
                bpf_trace::Copied {
                    arg: 1,
                    status: CopyStatus::Truncated,
                    bytes: b"a\0b",
                },
                bpf_trace::Copied {
                    arg: 2,
                    status: CopyStatus::Fault,
                    bytes: b"",
                },
            ],
        };
        let item = copies_item(5, 9, &desc, &copies);
        assert_eq!(
            item.texts,
            vec![
                (
                    1,
                    ArgText::Copied {
                        bytes: b"a\0b".to_vec(),
                        truncated: true
                    }
                ),
                (2, ArgText::Unavailable("unreadable at entry"))
            ]
        );
    }
}
