//! How each system call's arguments read: their names and kinds
//! (`SyscallDesc`), from the kernel's `syscalls:sys_enter_*` formats. The
//! kind decides how a value prints (number, pointer, `CWD`) and which
//! arguments are copied at the entry (strings, input buffers). And the
//! items the live tracer decodes from its records (`TraceItem`): they sit
//! here, in the event model, so that `capture` (which decodes them) and
//! `analysis::syscalls` (which pairs and sums them) share them without
//! capture naming analysis.

use std::rc::Rc;

use crate::event::format::{EventFormat, Field};

/// How one argument is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArgKind {
    /// A signed integer of this many bytes (`int`, `long`, `pid_t`).
    Signed(u8),
    /// An unsigned count (`size_t`, `unsigned int`).
    Unsigned(u8),
    /// Pointers, flags, masks: hexadecimal.
    Hex,
    /// A file descriptor of a `*at` call: `AT_FDCWD` shows as `CWD`.
    DirFd,
    /// A NUL-terminated path or name in the caller's memory.
    Str,
    /// An input buffer (write's `buf`) whose length is argument `len_arg`.
    Buffer { len_arg: u8 },
}

/// One argument's name and kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArgDesc {
    pub(crate) name: String,
    pub(crate) kind: ArgKind,
}

/// How a system call's arguments read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyscallDesc {
    pub(crate) nr: u64,
    pub(crate) name: String,
    pub(crate) args: Vec<ArgDesc>,
}

impl SyscallDesc {
    /// From `syscalls:sys_enter_NAME`'s format: every field after
    /// `__syscall_nr` is an argument, in order (`args[0]`, `args[1]`...).
    pub(crate) fn from_format(nr: u64, name: &str, format: &EventFormat) -> SyscallDesc {
        let fields: Vec<&Field> = format
            .fields
            .iter()
            .filter(|f| f.name != "__syscall_nr")
            .take(6)
            .collect();
        let args = fields
            .iter()
            .enumerate()
            .map(|(i, f)| ArgDesc {
                name: f.name.clone(),
                kind: match fields.get(i + 1) {
                    Some(next) if is_input_buffer(f, next) => ArgKind::Buffer {
                        len_arg: (i + 1) as u8,
                    },
                    _ => arg_kind(f),
                },
            })
            .collect();
        SyscallDesc {
            nr,
            name: name.to_string(),
            args,
        }
    }

    /// Without a format (tracefs lacks `syscalls`): six hex arguments.
    pub(crate) fn bare(nr: u64, name: &str) -> SyscallDesc {
        SyscallDesc {
            nr,
            name: name.to_string(),
            args: (0..6)
                .map(|i| ArgDesc {
                    name: format!("arg{i}"),
                    kind: ArgKind::Hex,
                })
                .collect(),
        }
    }

    /// Indices of the arguments whose bytes are copied at the entry:
    /// strings and input buffers in the caller's memory.
    pub(crate) fn copied_args(&self) -> impl Iterator<Item = usize> + '_ {
        self.args
            .iter()
            .enumerate()
            .filter(|(_, a)| matches!(a.kind, ArgKind::Str | ArgKind::Buffer { .. }))
            .map(|(i, _)| i)
    }
}

/// A buffer the call reads (`const char *buf` of write, `buff` of sendto,
/// `const void *value` of setxattr) followed by its length.
fn is_input_buffer(field: &Field, next: &Field) -> bool {
    let t = field.type_name.as_str();
    let input = match field.name.as_str() {
        "buf" | "ubuf" | "value" | "u_msg_ptr" => t.starts_with("const ") && t.ends_with('*'),
        "buff" => t.ends_with('*'),
        _ => false,
    };
    input && matches!(next.name.as_str(), "count" | "len" | "size" | "msg_len")
}

/// Which syscall arguments are strings: `char *` pointers other than data
/// buffers (`buf`, `ubuf`: their bytes are data, and their length is only
/// known at the exit).
fn arg_kind(field: &Field) -> ArgKind {
    let t = field.type_name.as_str();
    let n = field.name.as_str();
    // One level of pointer only: execve's `const char *const * argv` is an
    // array of pointers, not a string.
    if t.contains("char *") && t.matches('*').count() == 1 {
        // Data, not text: buffers the call fills or reads (listxattr's
        // list, mincore's vec, a message), or an address (shmat's).
        if matches!(
            n,
            "buf" | "ubuf" | "optval" | "value" | "argp" | "list" | "vec" | "u_msg_ptr" | "shmaddr"
        ) {
            return ArgKind::Hex;
        }
        return ArgKind::Str;
    }
    if t.contains('*') {
        return ArgKind::Hex;
    }
    if n == "dfd" || n == "olddfd" || n == "newdfd" || n == "dirfd" {
        return ArgKind::DirFd;
    }
    // Descriptors are ints even where the format says `unsigned long`.
    if n == "fd" || n.ends_with("_fd") || n.starts_with("fd_") {
        return ArgKind::Signed(4);
    }
    if n.contains("addr") || n == "start" || n == "brk" || n.starts_with("arg") {
        return ArgKind::Hex;
    }
    if n.contains("flags") || n.contains("mask") || n == "mode" || n == "prot" || t == "umode_t" {
        return ArgKind::Hex;
    }
    let size = |s: u8| {
        if t.contains("long") || t.contains("size_t") || t.contains("off_t") {
            8
        } else {
            s
        }
    };
    let unsigned =
        t.contains("unsigned") || t == "size_t" || t.starts_with('u') || t.starts_with("__u");
    if unsigned {
        ArgKind::Unsigned(size(4))
    } else {
        ArgKind::Signed(size(4))
    }
}

/// A string or buffer argument as copied at the entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ArgText {
    /// The bytes (a string without its NUL); `truncated`: there were more.
    Copied { bytes: Vec<u8>, truncated: bool },
    /// Why there are no bytes ("not copied", "unreadable at entry").
    Unavailable(&'static str),
}

impl ArgText {
    /// What an argument shows until its copies arrive.
    pub(crate) const NOT_COPIED: ArgText = ArgText::Unavailable("not copied");
}

/// A system call entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyscallEnter {
    pub(crate) pid: i32,
    pub(crate) tid: i32,
    pub(crate) time: u64,
    pub(crate) desc: Rc<SyscallDesc>,
    pub(crate) args: [u64; 6],
    /// Strings for the arguments that are strings, by argument index.
    pub(crate) strings: Vec<(usize, ArgText)>,
}

/// Argument bytes copied at an entry of thread `tid`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArgCopies {
    pub(crate) tid: i32,
    pub(crate) time: u64,
    pub(crate) nr: u64,
    /// The call's argument values, as the copying program saw them.
    pub(crate) args: [u64; 6],
    pub(crate) texts: Vec<(usize, ArgText)>,
}

/// What the live tracer hands over, in time order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TraceItem {
    Enter(SyscallEnter),
    ArgCopies(ArgCopies),
    Exit {
        pid: i32,
        tid: i32,
        time: u64,
        desc: Rc<SyscallDesc>,
        ret: i64,
    },
    /// Any other event (a tracepoint, a probe hit), already rendered.
    Event {
        pid: i32,
        tid: i32,
        time: u64,
        name: Rc<str>,
        text: String,
    },
    /// A thread's name from `time` on (a COMM record: exec or rename).
    Comm {
        tid: i32,
        comm: String,
        time: u64,
    },
    /// Thread `tid` was made by thread `ptid` at `time`: it has its name.
    Fork {
        tid: i32,
        ptid: i32,
        time: u64,
    },
    /// A name read from /proc when the thread was first seen: it holds
    /// only when no COMM or FORK named the thread (it existed before
    /// tracing began).
    NameGuess {
        tid: i32,
        comm: String,
        time: u64,
    },
    ThreadExit {
        pid: i32,
        tid: i32,
        time: u64,
    },
    /// A drain of the rings ended: every record it took was handed over,
    /// so what is printed can reach the reader now (perf trace's lines
    /// appear as the calls end, not when it exits).
    Drained,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_kinds_from_format() {
        let text = "name: sys_enter_openat\nID: 782\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\
\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\
\tfield:int dfd;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;\n\
\tfield:int flags;\toffset:32;\tsize:8;\tsigned:0;\n\
\tfield:umode_t mode;\toffset:40;\tsize:8;\tsigned:0;\n\n\
print fmt: \"dfd: 0x%08lx\", ((unsigned long)(REC->dfd))\n";
        let format = crate::event::format::parse_format("syscalls", text).unwrap();
        let d = SyscallDesc::from_format(257, "openat", &format);
        let kinds: Vec<ArgKind> = d.args.iter().map(|a| a.kind).collect();
        assert_eq!(
            kinds,
            vec![ArgKind::DirFd, ArgKind::Str, ArgKind::Hex, ArgKind::Hex]
        );
        assert_eq!(d.copied_args().collect::<Vec<_>>(), vec![1]);
        let text = "name: sys_enter_execve\nID: 783\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\
\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\
\tfield:const char * filename;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:const char *const * argv;\toffset:24;\tsize:8;\tsigned:0;\n\
\tfield:const char *const * envp;\toffset:32;\tsize:8;\tsigned:0;\n\n\
print fmt: \"filename: 0x%08lx\", ((unsigned long)(REC->filename))\n";
        let format = crate::event::format::parse_format("syscalls", text).unwrap();
        let d = SyscallDesc::from_format(59, "execve", &format);
        assert_eq!(d.copied_args().collect::<Vec<_>>(), vec![0]);
    }
}
