//! System call arguments by name, as perf trace shows them: open flags
//! (`RDONLY|CLOEXEC`), modes (`IRUGO|IWUSR`), mmap/mprotect protections and
//! flags, access modes (`RWX`), fcntl commands, socket families, types and
//! protocols, clone flags, lseek whence, futex operations, resource limits,
//! arch_prctl options, getrandom flags.
//!
//! perf trace's spellings are kept (no `O_`/`PROT_` prefixes, its order of
//! flags, leftover bits as `|0x..`) so that lines compare with perf trace's.
//! Also as perf trace: an argument whose value is 0 is left out unless its
//! decoder names 0 (`whence: SET`, `cmd: DUPFD`, `family: UNSPEC`), and the
//! arguments a call ignores are left out (an anonymous mmap's fd and
//! offset, open's mode without CREAT). The values are x86-64's.

/// How one argument shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Shown {
    /// Left out of the line.
    Omitted,
    /// By name (or another text of its own).
    Text(String),
    /// As its kind says (number, pointer, string).
    Plain,
}

/// Bits named in the order perf trace prints them. A name is printed when
/// all of its bits are set, and its bits are then cleared.
type Flags = &'static [(&'static str, u64)];

const OPEN_FLAGS: Flags = &[
    ("RDWR", 0o2),
    ("APPEND", 0o2000),
    ("ASYNC", 0o20000),
    ("CLOEXEC", 0o2000000),
    ("CREAT", 0o100),
    ("DIRECT", 0o40000),
    ("DIRECTORY", 0o200000),
    ("EXCL", 0o200),
    ("LARGEFILE", 0o100000),
    ("NOFOLLOW", 0o400000),
    ("TMPFILE", 0o20000000),
    ("NOATIME", 0o1000000),
    ("NOCTTY", 0o400),
    ("NONBLOCK", 0o4000),
    ("PATH", 0o10000000),
    ("SYNC", 0o4010000),
    ("DSYNC", 0o10000),
    ("TRUNC", 0o1000),
    ("WRONLY", 0o1),
];

const MODE: Flags = &[
    ("IALLUGO", 0o7777),
    ("IRWXUGO", 0o777),
    ("IRUGO", 0o444),
    ("IWUGO", 0o222),
    ("IXUGO", 0o111),
    ("ISUID", 0o4000),
    ("ISGID", 0o2000),
    ("ISVTX", 0o1000),
    ("IRWXU", 0o700),
    ("IRUSR", 0o400),
    ("IWUSR", 0o200),
    ("IXUSR", 0o100),
    ("IRWXG", 0o70),
    ("IRGRP", 0o40),
    ("IWGRP", 0o20),
    ("IXGRP", 0o10),
    ("IRWXO", 0o7),
    ("IROTH", 0o4),
    ("IWOTH", 0o2),
    ("IXOTH", 0o1),
];

const PROT: Flags = &[
    ("READ", 0x1),
    ("WRITE", 0x2),
    ("EXEC", 0x4),
    ("SEM", 0x8),
    ("GROWSDOWN", 0x0100_0000),
    ("GROWSUP", 0x0200_0000),
];

const MMAP_FLAGS: Flags = &[
    ("SHARED", 0x1),
    ("PRIVATE", 0x2),
    ("FIXED", 0x10),
    ("ANONYMOUS", 0x20),
    ("32BIT", 0x40),
    ("GROWSDOWN", 0x100),
    ("DENYWRITE", 0x800),
    ("EXECUTABLE", 0x1000),
    ("LOCKED", 0x2000),
    ("NORESERVE", 0x4000),
    ("POPULATE", 0x8000),
    ("NONBLOCK", 0x10000),
    ("STACK", 0x20000),
    ("HUGETLB", 0x40000),
    ("SYNC", 0x80000),
    ("FIXED_NOREPLACE", 0x100000),
];
const MAP_ANONYMOUS: u64 = 0x20;

const CLONE_FLAGS: Flags = &[
    ("CHILD_CLEARTID", 0x0020_0000),
    ("CHILD_SETTID", 0x0100_0000),
    ("CLEAR_SIGHAND", 0x1_0000_0000),
    ("DETACHED", 0x0040_0000),
    ("FILES", 0x400),
    ("FS", 0x200),
    ("IO", 0x8000_0000),
    ("NEWCGROUP", 0x0200_0000),
    ("NEWIPC", 0x0800_0000),
    ("NEWNET", 0x4000_0000),
    ("NEWNS", 0x0002_0000),
    ("NEWPID", 0x2000_0000),
    ("NEWUSER", 0x1000_0000),
    ("NEWUTS", 0x0400_0000),
    ("PARENT", 0x8000),
    ("PARENT_SETTID", 0x0010_0000),
    ("PIDFD", 0x1000),
    ("PTRACE", 0x2000),
    ("SETTLS", 0x0008_0000),
    ("SIGHAND", 0x800),
    ("SYSVSEM", 0x0004_0000),
    ("THREAD", 0x0001_0000),
    ("UNTRACED", 0x0080_0000),
    ("VFORK", 0x4000),
    ("VM", 0x100),
];

const SOCK_TYPE_FLAGS: Flags = &[("CLOEXEC", 0o2000000), ("NONBLOCK", 0o4000)];
const GETRANDOM_FLAGS: Flags = &[("RANDOM", 0x2), ("NONBLOCK", 0x1), ("INSECURE", 0x4)];
const FUTEX_FLAGS: Flags = &[("PRIVATE_FLAG", 128), ("CLOCK_REALTIME", 256)];

const FCNTL_CMDS: &[(&str, u64)] = &[
    ("DUPFD", 0),
    ("GETFD", 1),
    ("SETFD", 2),
    ("GETFL", 3),
    ("SETFL", 4),
    ("GETLK", 5),
    ("SETLK", 6),
    ("SETLKW", 7),
    ("SETOWN", 8),
    ("GETOWN", 9),
    ("SETSIG", 10),
    ("GETSIG", 11),
    ("SETOWN_EX", 15),
    ("GETOWN_EX", 16),
    ("GETOWNER_UIDS", 17),
    ("OFD_GETLK", 36),
    ("OFD_SETLK", 37),
    ("OFD_SETLKW", 38),
    ("SETLEASE", 1024),
    ("GETLEASE", 1025),
    ("NOTIFY", 1026),
    ("DUPFD_CLOEXEC", 1030),
    ("SETPIPE_SZ", 1031),
    ("GETPIPE_SZ", 1032),
    ("ADD_SEALS", 1033),
    ("GET_SEALS", 1034),
    ("GET_RW_HINT", 1035),
    ("SET_RW_HINT", 1036),
    ("GET_FILE_RW_HINT", 1037),
    ("SET_FILE_RW_HINT", 1038),
];
const F_SETFL: u64 = 4;

const ARCH_PRCTL_OPTIONS: &[(&str, u64)] = &[
    ("SET_GS", 0x1001),
    ("SET_FS", 0x1002),
    ("GET_FS", 0x1003),
    ("GET_GS", 0x1004),
    ("GET_CPUID", 0x1011),
    ("SET_CPUID", 0x1012),
    ("GET_XCOMP_SUPP", 0x1021),
    ("GET_XCOMP_PERM", 0x1022),
    ("REQ_XCOMP_PERM", 0x1023),
    ("GET_XCOMP_GUEST_PERM", 0x1024),
    ("REQ_XCOMP_GUEST_PERM", 0x1025),
    ("MAP_VDSO_X32", 0x2001),
    ("MAP_VDSO_32", 0x2002),
    ("MAP_VDSO_64", 0x2003),
];

/// Names by value from 0.
const WHENCE: &[&str] = &["SET", "CUR", "END", "DATA", "HOLE"];
const RLIMITS: &[&str] = &[
    "CPU",
    "FSIZE",
    "DATA",
    "STACK",
    "CORE",
    "RSS",
    "NPROC",
    "NOFILE",
    "MEMLOCK",
    "AS",
    "LOCKS",
    "SIGPENDING",
    "MSGQUEUE",
    "NICE",
    "RTPRIO",
    "RTTIME",
];
const SOCKET_FAMILIES: &[&str] = &[
    "UNSPEC",
    "LOCAL",
    "INET",
    "AX25",
    "IPX",
    "APPLETALK",
    "NETROM",
    "BRIDGE",
    "ATMPVC",
    "X25",
    "INET6",
    "ROSE",
    "DECnet",
    "NETBEUI",
    "SECURITY",
    "KEY",
    "NETLINK",
    "PACKET",
    "ASH",
    "ECONET",
    "ATMSVC",
    "RDS",
    "SNA",
    "IRDA",
    "PPPOX",
    "WANPIPE",
    "LLC",
    "IB",
    "MPLS",
    "CAN",
    "TIPC",
    "BLUETOOTH",
    "IUCV",
    "RXRPC",
    "ISDN",
    "PHONET",
    "IEEE802154",
    "CAIF",
    "ALG",
    "NFC",
    "VSOCK",
    "KCM",
    "QIPCRTR",
    "SMC",
    "XDP",
    "MCTP",
];
const SOCK_TYPES: &[&str] = &[
    "",
    "STREAM",
    "DGRAM",
    "RAW",
    "RDM",
    "SEQPACKET",
    "DCCP",
    "",
    "",
    "",
    "PACKET",
];
const FUTEX_OPS: &[&str] = &[
    "WAIT",
    "WAKE",
    "FD",
    "REQUEUE",
    "CMP_REQUEUE",
    "WAKE_OP",
    "LOCK_PI",
    "UNLOCK_PI",
    "TRYLOCK_PI",
    "WAIT_BITSET",
    "WAKE_BITSET",
    "WAIT_REQUEUE_PI",
    "CMP_REQUEUE_PI",
    "LOCK_PI2",
];
const IP_PROTOCOLS: &[(&str, u64)] = &[
    ("ICMP", 1),
    ("IGMP", 2),
    ("IPIP", 4),
    ("TCP", 6),
    ("EGP", 8),
    ("PUP", 12),
    ("UDP", 17),
    ("IDP", 22),
    ("TP", 29),
    ("DCCP", 33),
    ("IPV6", 41),
    ("RSVP", 46),
    ("GRE", 47),
    ("ESP", 50),
    ("AH", 51),
    ("MTP", 92),
    ("BEETPH", 94),
    ("ENCAP", 98),
    ("PIM", 103),
    ("COMP", 108),
    ("L2TP", 115),
    ("SCTP", 132),
    ("UDPLITE", 136),
    ("MPLS", 137),
    ("ETHERNET", 143),
    ("RAW", 255),
    ("MPTCP", 262),
];
const AF_INET: u64 = 2;
const AF_INET6: u64 = 10;

/// `flags` by name in `table`'s order, joined by `|`, leftover bits in hex
/// (`sep` "" joins access modes as perf does: `RWX`).
fn flags(mut value: u64, table: Flags, sep: &str, out: &mut String) {
    let start = out.len();
    for &(name, bits) in table {
        if value & bits == bits {
            if out.len() > start {
                out.push_str(sep);
            }
            out.push_str(name);
            value &= !bits;
        }
    }
    if value != 0 {
        if out.len() > start {
            out.push('|');
        }
        out.push_str(&format!("{value:#x}"));
    }
}

fn flags_text(value: u64, table: Flags) -> String {
    let mut out = String::new();
    flags(value, table, "|", &mut out);
    out
}

/// The name of `value` in a table of names from 0, else the number.
fn indexed(value: u64, names: &[&str]) -> String {
    usize::try_from(value)
        .ok()
        .and_then(|i| names.get(i))
        .filter(|n| !n.is_empty())
        .map_or_else(|| value.to_string(), |n| (*n).to_string())
}

fn named(value: u64, names: &[(&str, u64)]) -> String {
    names
        .iter()
        .find(|(_, v)| *v == value)
        .map_or_else(|| value.to_string(), |(n, _)| (*n).to_string())
}

fn open_flags(value: u64) -> String {
    if value & 0o3 == 0 {
        with_flags("RDONLY".to_string(), value, OPEN_FLAGS)
    } else {
        flags_text(value, OPEN_FLAGS)
    }
}

/// `base`, then the named bits of `rest`: `STREAM|CLOEXEC`, `WAIT|PRIVATE_FLAG`.
fn with_flags(mut base: String, rest: u64, table: Flags) -> String {
    let rest = flags_text(rest, table);
    if !rest.is_empty() {
        base.push('|');
        base.push_str(&rest);
    }
    base
}

fn socket_type(value: u64) -> String {
    with_flags(
        indexed(value & 0xf, SOCK_TYPES),
        value & !0xf,
        SOCK_TYPE_FLAGS,
    )
}

fn futex_op(value: u64) -> String {
    with_flags(indexed(value & 0x7f, FUTEX_OPS), value & !0x7f, FUTEX_FLAGS)
}

/// How argument `arg` (named as in the kernel's format) of system call
/// `call` shows, given the values of all six arguments.
pub(crate) fn shown(call: &str, arg: &str, value: u64, args: &[u64; 6]) -> Shown {
    let text = match (call, arg) {
        ("open" | "openat", "flags") => Some(open_flags(value)),
        ("open", "mode") if args[1] & 0o20000100 == 0 => return Shown::Omitted,
        ("openat", "mode") if args[2] & 0o20000100 == 0 => return Shown::Omitted,
        (
            "open" | "openat" | "creat" | "mkdir" | "mkdirat" | "chmod" | "fchmod" | "fchmodat"
            | "mknod" | "mknodat",
            "mode",
        ) => Some(flags_text(value, MODE)),
        ("mmap" | "mprotect" | "pkey_mprotect", "prot") => Some(flags_text(value, PROT)),
        ("mmap", "flags") => Some(flags_text(value, MMAP_FLAGS)),
        ("mmap", "fd" | "off") if args[3] & MAP_ANONYMOUS != 0 => return Shown::Omitted,
        ("mmap", "off") if value != 0 => Some(format!("{value:#x}")),
        ("access" | "faccessat" | "faccessat2", "mode") => {
            let mut out = String::new();
            flags(value, &[("R", 4), ("W", 2), ("X", 1)], "", &mut out);
            Some(out)
        }
        ("fcntl", "cmd") => return Shown::Text(named(value, FCNTL_CMDS)),
        ("fcntl", "arg") if args[1] == F_SETFL => Some(open_flags(value)),
        ("fcntl", "arg") if value != 0 => Some(value.to_string()),
        ("socket" | "socketpair", "family") => return Shown::Text(indexed(value, SOCKET_FAMILIES)),
        ("socket" | "socketpair", "type") => Some(socket_type(value)),
        ("socket" | "socketpair", "protocol") if matches!(args[0], AF_INET | AF_INET6) => {
            (value != 0).then(|| named(value, IP_PROTOCOLS))
        }
        ("clone", "clone_flags") => Some(flags_text(value, CLONE_FLAGS)),
        ("lseek", "whence") => return Shown::Text(indexed(value, WHENCE)),
        ("futex", "op") => return Shown::Text(futex_op(value)),
        ("prlimit64" | "getrlimit" | "setrlimit", "resource") => {
            return Shown::Text(indexed(value, RLIMITS));
        }
        ("arch_prctl", "option") => Some(named(value, ARCH_PRCTL_OPTIONS)),
        ("getrandom", "flags") => Some(flags_text(value, GETRANDOM_FLAGS)),
        _ => None,
    };
    match text {
        _ if value == 0 => Shown::Omitted,
        Some(text) => Shown::Text(text),
        None => Shown::Plain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(call: &str, arg: &str, value: u64, args: [u64; 6]) -> String {
        match shown(call, arg, value, &args) {
            Shown::Text(t) => t,
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn as_perf_trace_spells_them() {
        let openat = |flags, mode| [(-100i64) as u64, 0x1000, flags, mode, 0, 0];
        assert_eq!(
            text("openat", "flags", 0o2000000, openat(0o2000000, 0)),
            "RDONLY|CLOEXEC"
        );
        assert_eq!(
            text("openat", "flags", 0o2001101, openat(0o2001101, 0o644)),
            "CLOEXEC|CREAT|TRUNC|WRONLY"
        );
        assert_eq!(
            text("openat", "mode", 0o644, openat(0o2001101, 0o644)),
            "IRUGO|IWUSR"
        );
        assert_eq!(
            shown("openat", "mode", 0o644, &openat(0, 0o644)),
            Shown::Omitted
        );
        assert_eq!(shown("openat", "flags", 0, &openat(0, 0)), Shown::Omitted);
        let mmap = [0, 4096, 3, 0x22, u64::MAX, 0];
        assert_eq!(text("mmap", "prot", 3, mmap), "READ|WRITE");
        assert_eq!(
            text("mmap", "flags", 0x822, mmap),
            "PRIVATE|ANONYMOUS|DENYWRITE"
        );
        assert_eq!(shown("mmap", "fd", u64::MAX, &mmap), Shown::Omitted);
        assert_eq!(text("access", "mode", 7, [0; 6]), "RWX");
        assert_eq!(text("fcntl", "cmd", 0, [3, 0, 10, 0, 0, 0]), "DUPFD");
        assert_eq!(
            text("fcntl", "arg", 0o4000, [3, 4, 0o4000, 0, 0, 0]),
            "RDONLY|NONBLOCK"
        );
        assert_eq!(text("socket", "family", 0, [0; 6]), "UNSPEC");
        assert_eq!(
            text("socket", "type", 0o2004001, [2, 0, 0, 0, 0, 0]),
            "STREAM|CLOEXEC|NONBLOCK"
        );
        assert_eq!(text("socket", "protocol", 6, [2, 1, 6, 0, 0, 0]), "TCP");
        assert_eq!(
            text("clone", "clone_flags", 0x0120_0011, [0; 6]),
            "CHILD_CLEARTID|CHILD_SETTID|0x11"
        );
        assert_eq!(text("lseek", "whence", 0, [0; 6]), "SET");
        assert_eq!(text("futex", "op", 128, [0; 6]), "WAIT|PRIVATE_FLAG");
        assert_eq!(text("prlimit64", "resource", 3, [0; 6]), "STACK");
        assert_eq!(text("arch_prctl", "option", 0x1002, [0; 6]), "SET_FS");
        assert_eq!(text("getrandom", "flags", 3, [0; 6]), "RANDOM|NONBLOCK");
        assert_eq!(shown("read", "count", 5, &[0; 6]), Shown::Plain);
        assert_eq!(shown("read", "fd", 0, &[0; 6]), Shown::Omitted);
    }
}
