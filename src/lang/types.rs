//! Types of values and maps, and the byte layout of map keys and values,
//! shared by the code generator (which writes them) and the printer
//! (which reads them back).
//!
//! Decisions: every integer is 64 bits; strings are held in buffers whose
//! size is a multiple of 8 (copies and zero fills then use 8-byte moves,
//! which keeps the code short); a map's string key or value takes the
//! largest size any use of it needs. Maps without keys use one 8-byte zero
//! key, as bpftrace does; `hist`/`lhist` keys end with an 8-byte bucket.

use std::fmt;

/// The type of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    /// A signed 64-bit integer (literals, signed fields and casts).
    Int,
    /// An unsigned 64-bit integer (`pid`, `nsecs`, `retval`, unsigned
    /// fields and casts): compared unsigned, printed unsigned in maps.
    Uint,
    /// A NUL-padded string buffer of this many bytes (a multiple of 8).
    Str(usize),
    /// The id of a probe, printed as its name.
    Probe,
    /// A stack id in the stack map (`kstack`), printed as frames.
    Kstack,
    /// A user stack: the stack id and the process id (`ustack`).
    Ustack,
    /// A kernel address printed as its symbol (`ksym(addr)`).
    Ksym,
    /// A user address and the process id, printed as its symbol
    /// (`usym(addr)`).
    Usym,
    /// A kernel pointer to the BTF type of this id (0: unknown), from a
    /// cast, `curtask` or a BTF field; an integer for arithmetic.
    Ptr(u32),
    /// A struct or union in kernel memory (BTF type id), held by its
    /// address until a field of it is read.
    Record(u32),
    /// `buf()`: a u64 length, then this many bytes (a multiple of 8),
    /// printed with non-printable bytes as `\xNN`.
    Buf(usize),
    /// A tuple `(a, b, ...)`: its element types are the registry's tuple
    /// of index `id`, laid out one after another in `size` bytes.
    Tuple { id: u32, size: u32 },
    /// A user id, printed as its name from /etc/passwd (`username`).
    Username,
    /// Nanoseconds since boot printed by the `strftime()` format of this
    /// index in the registry's time formats.
    Strftime(u32),
    /// An IP address (`ntop()`): the family (AF_INET, AF_INET6) in 8
    /// bytes, then 16 bytes of address in network order (4 for IPv4).
    Inet,
    /// A MAC address (`macaddr()`): 6 bytes, then 2 of padding.
    MacAddr,
}

impl Ty {
    /// Bytes the value takes in a key, a value or an event.
    pub(crate) fn size(self) -> usize {
        match self {
            Ty::Int
            | Ty::Uint
            | Ty::Probe
            | Ty::Kstack
            | Ty::Ksym
            | Ty::Ptr(_)
            | Ty::Record(_)
            | Ty::Username
            | Ty::Strftime(_)
            | Ty::MacAddr => 8,
            Ty::Ustack | Ty::Usym => 16,
            Ty::Inet => 24,
            Ty::Str(n) => n,
            Ty::Buf(n) => 8 + n,
            Ty::Tuple { size, .. } => size as usize,
        }
    }

    /// Values kept in a stack buffer rather than in a register.
    pub(crate) fn in_stack(self) -> bool {
        matches!(
            self,
            Ty::Str(_)
                | Ty::Buf(_)
                | Ty::Tuple { .. }
                | Ty::Ustack
                | Ty::Usym
                | Ty::Inet
                | Ty::MacAddr
        )
    }

    /// Whether values of both types can share a map slot.
    pub(crate) fn compatible(self, other: Ty) -> bool {
        matches!(
            (self, other),
            (Ty::Str(_), Ty::Str(_)) | (Ty::Buf(_), Ty::Buf(_))
        ) || self == other
            || (self.is_int() && other.is_int())
    }

    /// Integers and pointers: what arithmetic, comparisons and conditions
    /// take.
    pub(crate) fn is_int(self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Ptr(_))
    }

    /// Whether comparisons of this value are signed (bpftrace compares
    /// signed only when both sides are; pointers are unsigned).
    pub(crate) fn is_signed(self) -> bool {
        self == Ty::Int
    }

    /// The integer type of an operation on `self` and `other`: signed
    /// only when both are, as bpftrace types its binary operators.
    pub(crate) fn arith(self, other: Ty) -> Ty {
        if self.is_signed() && other.is_signed() {
            Ty::Int
        } else {
            Ty::Uint
        }
    }

    /// The wider of two compatible types (of two integers, the first's
    /// signedness: a variable, map or ternary keeps its first type).
    pub(crate) fn merge(self, other: Ty) -> Ty {
        match (self, other) {
            (Ty::Str(a), Ty::Str(b)) => Ty::Str(a.max(b)),
            (Ty::Buf(a), Ty::Buf(b)) => Ty::Buf(a.max(b)),
            (Ty::Ptr(a), Ty::Ptr(b)) if a == b => self,
            (Ty::Int | Ty::Uint, b) if b.is_int() => self,
            (a, b) if a.is_int() && b.is_int() => Ty::Int,
            _ => self,
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Int => f.write_str("int64"),
            Ty::Uint => f.write_str("unsigned int64"),
            Ty::Str(n) => write!(f, "string[{n}]"),
            Ty::Probe => f.write_str("probe"),
            Ty::Kstack => f.write_str("kstack"),
            Ty::Ustack => f.write_str("ustack"),
            Ty::Ksym => f.write_str("ksym"),
            Ty::Usym => f.write_str("usym"),
            Ty::Ptr(_) => f.write_str("pointer"),
            Ty::Record(_) => f.write_str("struct"),
            Ty::Inet => f.write_str("inet"),
            Ty::MacAddr => f.write_str("macaddr"),
            Ty::Username => f.write_str("username"),
            Ty::Buf(n) => write!(f, "buffer[{n}]"),
            Ty::Tuple { .. } => f.write_str("tuple"),
            Ty::Strftime(_) => f.write_str("timestamp"),
        }
    }
}

/// A string buffer of at least `len` bytes, rounded up to 8.
pub(crate) fn str_size(len: usize) -> usize {
    len.div_ceil(8).max(1) * 8
}

/// What a map holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MapKind {
    /// `@x = value`
    Value(Ty),
    Count,
    Sum,
    Min,
    Max,
    Avg,
    Stats,
    Hist,
    Lhist {
        min: i64,
        max: i64,
        step: i64,
    },
}

impl MapKind {
    /// Aggregations live in per-CPU maps, summed when read.
    pub(crate) fn per_cpu(self) -> bool {
        !matches!(self, MapKind::Value(_))
    }

    pub(crate) fn value_size(self) -> usize {
        match self {
            MapKind::Value(ty) => ty.size(),
            MapKind::Min | MapKind::Max | MapKind::Avg | MapKind::Stats => 16,
            _ => 8,
        }
    }

    pub(crate) fn has_bucket(self) -> bool {
        matches!(self, MapKind::Hist | MapKind::Lhist { .. })
    }

    /// The name bpftrace's type errors use.
    pub(crate) fn name(self) -> String {
        match self {
            MapKind::Value(ty) => ty.to_string(),
            MapKind::Count => "count".into(),
            MapKind::Sum => "sum".into(),
            MapKind::Min => "min".into(),
            MapKind::Max => "max".into(),
            MapKind::Avg => "avg".into(),
            MapKind::Stats => "stats".into(),
            MapKind::Hist => "hist".into(),
            MapKind::Lhist { .. } => "lhist".into(),
        }
    }

    /// Number of buckets of `lhist` (without the two outer ones).
    pub(crate) fn lhist_buckets(min: i64, max: i64, step: i64) -> i64 {
        (max - min) / step.max(1)
    }
}

/// One map of the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MapInfo {
    /// `@name` as written (`@` for the unnamed map).
    pub(crate) name: String,
    pub(crate) kind: MapKind,
    pub(crate) keys: Vec<Ty>,
}

impl MapInfo {
    /// Bytes of the user's key part (8 when there is none).
    pub(crate) fn user_key_size(&self) -> usize {
        if self.keys.is_empty() {
            8
        } else {
            self.keys.iter().map(|k| k.size()).sum()
        }
    }

    /// Bytes of the whole key (with the bucket of a histogram).
    pub(crate) fn key_size(&self) -> usize {
        self.user_key_size() + if self.kind.has_bucket() { 8 } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        let m = MapInfo {
            name: "@x".into(),
            kind: MapKind::Hist,
            keys: vec![Ty::Str(16), Ty::Int],
        };
        assert_eq!(m.key_size(), 32);
        let m = MapInfo {
            name: "@".into(),
            kind: MapKind::Count,
            keys: vec![],
        };
        assert_eq!((m.key_size(), m.kind.value_size()), (8, 8));
        assert_eq!(str_size(5), 8);
        assert_eq!(str_size(16), 16);
        assert_eq!(str_size(17), 24);
        assert!(Ty::Str(8).compatible(Ty::Str(16)));
        assert_eq!(Ty::Str(8).merge(Ty::Str(16)), Ty::Str(16));
        assert!(!Ty::Int.compatible(Ty::Str(8)));
    }
}
