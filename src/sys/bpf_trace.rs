//! `scry trace`'s in-kernel argument copies: loads `src/bpf/trace_args.bpf.c`
//! (strings and input buffers copied at the system call's entry, emitted as
//! bpf-output samples), tells it which calls and processes to copy for and
//! which perf event of each CPU to write to, and parses what it emits.
//!
//! The program's rules (which tasks, the bounds, what a fault means) are in
//! its header comment; `ArgCopies::parse` reads its record layout, which is
//! kept in step with the C struct here and nowhere else. The engine
//! (`sys::bpf_engine`) loads it, and attaches it once the maps are filled;
//! RLIMIT_MEMLOCK is never raised (BPF memory is charged to
//! the cgroup): where the program does not load, the caller says so and
//! shows pointers instead of strings.

use std::io;
use std::os::fd::RawFd;

use libbpf_rs::{MapCore, MapFlags};

use super::bpf::io_error;
use super::bpf_engine::{self, Attach, GroupRules, Loaded};

super::bpf::bpf_skeleton!("trace_args.skel.rs");

use skel::{TraceArgsSkel, TraceArgsSkelBuilder};

/// `syscall_args` entries: the program's NR_SYSCALLS.
pub(crate) const NR_SYSCALLS: u64 = 1024;
/// Copies per record (MAX_COPIES).
pub(crate) const MAX_COPIES: usize = 3;

/// What to copy of one argument (the program's ARG_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum ArgCopy {
    #[default]
    None,
    /// A NUL-terminated string.
    String,
    /// A buffer whose length is the argument of this index.
    Buffer { len_arg: u8 },
}

impl ArgCopy {
    fn code(self) -> u8 {
        match self {
            ArgCopy::None => 0,
            ArgCopy::String => 1,
            ArgCopy::Buffer { len_arg } => 2 + len_arg.min(5),
        }
    }
}

/// How a copy went (the program's COPY_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyStatus {
    Complete,
    /// Cut at `STR_MAX` or `BUF_MAX` bytes.
    Truncated,
    /// The memory could not be read at the entry (not resident, or a bad
    /// pointer): no bytes.
    Fault,
}

/// One copied argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Copied<'a> {
    pub(crate) arg: usize,
    pub(crate) status: CopyStatus,
    /// A string's bytes include its NUL.
    pub(crate) bytes: &'a [u8],
}

/// One record of the program: the call's number, its six argument values
/// and the copies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArgCopies<'a> {
    pub(crate) nr: u64,
    pub(crate) args: [u64; 6],
    pub(crate) copies: Vec<Copied<'a>>,
}

/// Bytes before the copies: nr, count, args[6], copies[3], pad.
const HEADER: usize = 4 + 4 + 6 * 8 + MAX_COPIES * 4 + 4;

impl<'a> ArgCopies<'a> {
    /// Parses a record (the sample's raw bytes, perhaps padded); `None`
    /// when it is malformed.
    pub(crate) fn parse(raw: &'a [u8]) -> Option<ArgCopies<'a>> {
        let u32_at = |at: usize| -> Option<u32> {
            Some(u32::from_ne_bytes(raw.get(at..at + 4)?.try_into().ok()?))
        };
        let nr = u64::from(u32_at(0)?);
        let count = u32_at(4)? as usize;
        if count > MAX_COPIES {
            return None;
        }
        let mut args = [0u64; 6];
        for (i, slot) in args.iter_mut().enumerate() {
            let at = 8 + i * 8;
            *slot = u64::from_ne_bytes(raw.get(at..at + 8)?.try_into().ok()?);
        }
        let mut copies = Vec::with_capacity(count);
        let mut at = HEADER;
        for k in 0..count {
            let desc = raw.get(56 + k * 4..60 + k * 4)?;
            let arg = usize::from(desc[0]);
            let status = match desc[1] {
                0 => CopyStatus::Complete,
                1 => CopyStatus::Truncated,
                2 => CopyStatus::Fault,
                _ => return None,
            };
            let len = usize::from(u16::from_ne_bytes([desc[2], desc[3]]));
            if arg >= 6 {
                return None;
            }
            let bytes = raw.get(at..at + len)?;
            at += len;
            copies.push(Copied { arg, status, bytes });
        }
        Some(ArgCopies { nr, args, copies })
    }
}

/// The loaded program (attached by `attach`).
#[derive(Debug)]
pub(crate) struct TraceArgsBpf {
    loaded: Loaded<TraceArgsSkel<'static>>,
}

impl TraceArgsBpf {
    /// Loads the program (not attached yet). `all_tasks`: every task but
    /// `self_tgid` (scry); otherwise the processes given to `watch`.
    pub(crate) fn load(all_tasks: bool, self_tgid: u32) -> io::Result<TraceArgsBpf> {
        let loaded = bpf_engine::load(
            TraceArgsSkelBuilder::default,
            |open: &mut skel::OpenTraceArgsSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.all_tasks = all_tasks;
                rodata.self_tgid = self_tgid;
                Ok(())
            },
            GroupRules::default(),
            Attach::Later,
        )?;
        Ok(TraceArgsBpf { loaded })
    }

    /// Copy these arguments of system call `nr` (ignored past NR_SYSCALLS).
    pub(crate) fn copy_args(&mut self, nr: u64, kinds: [ArgCopy; 6]) -> io::Result<()> {
        if nr >= NR_SYSCALLS {
            return Ok(());
        }
        let mut value = [0u8; 8];
        for (slot, kind) in value.iter_mut().zip(kinds) {
            *slot = kind.code();
        }
        value[6] = u8::from(kinds.iter().any(|k| *k != ArgCopy::None));
        self.loaded
            .skel
            .maps
            .syscall_args
            .update(&(nr as u32).to_ne_bytes(), &value, MapFlags::ANY)
            .map_err(|e| io_error("setting the BPF syscall table", e))
    }

    /// Copy for process `tgid` and what it forks from now on; `from_exec`:
    /// only from its next exec on (a workload waiting to exec).
    pub(crate) fn watch(&mut self, tgid: i32, from_exec: bool) -> io::Result<()> {
        bpf_engine::add_target(&self.loaded.skel.maps.targets, tgid, from_exec)
    }

    /// Records of `cpu` go to the bpf-output perf event `fd` (opened on
    /// that CPU, for every task).
    pub(crate) fn set_output(&mut self, cpu: u32, fd: RawFd) -> io::Result<()> {
        self.loaded
            .skel
            .maps
            .outputs
            .update(&cpu.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| io_error("adding a CPU's output to the BPF program", e))
    }

    /// Attaches to raw_syscalls:sys_enter and the fork and exec hooks.
    pub(crate) fn attach(&mut self) -> io::Result<()> {
        self.loaded.attach()
    }

    /// Detaches every hook: no more records.
    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_records_and_rejects_short_ones() {
        let mut raw = Vec::new();
        raw.extend_from_slice(&257u32.to_ne_bytes());
        raw.extend_from_slice(&2u32.to_ne_bytes());
        for a in [0xffff_ff9cu64, 0x1000, 0, 0, 0, 0] {
            raw.extend_from_slice(&a.to_ne_bytes());
        }
        raw.extend_from_slice(&[1, 0, 3, 0, 3, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        raw.extend_from_slice(b"/a\0");
        raw.extend_from_slice(&[0; 5]); // perf's padding
        let rec = ArgCopies::parse(&raw).unwrap();
        assert_eq!(rec.nr, 257);
        assert_eq!(rec.args[1], 0x1000);
        assert_eq!(
            rec.copies,
            vec![
                Copied {
                    arg: 1,
                    status: CopyStatus::Complete,
                    bytes: b"/a\0"
                },
                Copied {
                    arg: 3,
                    status: CopyStatus::Fault,
                    bytes: b""
                }
            ]
        );
        assert!(ArgCopies::parse(&raw[..HEADER + 2]).is_none());
        assert!(ArgCopies::parse(&raw[..20]).is_none());
    }
}
