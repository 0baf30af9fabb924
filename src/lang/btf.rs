//! The kernel's types from its BTF (`/sys/kernel/btf/vmlinux`), for casts
//! (`(struct task_struct *)curtask`), `->` through kernel structs, and the
//! enum constants a program names (`TASK_RUNNING` is a `#define`, not an
//! enum: the few such names bpftrace's tools use from `linux/sched.h` and
//! `linux/socket.h` are in `DEFINES`).
//!
//! Decisions: the blob is read only when a program needs a type, and
//! indexed once (the offset of each type); names are looked up by a walk
//! of that index when asked, as a program asks for a handful. Every read
//! is bounded: malformed BTF yields "no such type", never a panic.

use std::cell::OnceCell;
use std::collections::HashMap;

const BTF_MAGIC: u16 = 0xeb9f;
const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// Constants of the kernel's headers (not in BTF) that bpftrace's tools
/// name: task states (`linux/sched.h`) and address families.
const DEFINES: &[(&str, i64)] = &[
    ("TASK_RUNNING", 0x0),
    ("TASK_INTERRUPTIBLE", 0x1),
    ("TASK_UNINTERRUPTIBLE", 0x2),
    ("__TASK_STOPPED", 0x4),
    ("__TASK_TRACED", 0x8),
    ("EXIT_DEAD", 0x10),
    ("EXIT_ZOMBIE", 0x20),
    ("TASK_PARKED", 0x40),
    ("TASK_DEAD", 0x80),
    ("TASK_WAKEKILL", 0x100),
    ("TASK_WAKING", 0x200),
    ("TASK_NOLOAD", 0x400),
    ("TASK_NEW", 0x800),
    ("TASK_KILLABLE", 0x102),
    ("TASK_STOPPED", 0x104),
    ("TASK_TRACED", 0x8),
    ("TASK_IDLE", 0x402),
    ("AF_UNIX", 1),
    ("AF_INET", 2),
    ("AF_INET6", 10),
];

/// What a type is, once typedefs and qualifiers are looked through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Void,
    Int { size: usize, signed: bool },
    Ptr(u32),
    Array { elem: u32, len: usize },
    Struct { size: usize },
    Enum { size: usize, signed: bool },
    Other,
}

/// A kernel function as fentry/fexit see it: its BTF id, its parameters
/// (name, type id; each one u64 of the program's context, in order) and
/// its return type (the u64 after them, in fexit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Signature {
    pub(crate) func: u32,
    pub(crate) params: Vec<(String, u32)>,
    pub(crate) ret: u32,
}

/// A member of a struct: where it is and its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) bit_offset: u32,
    /// Bits of a bitfield; 0 for a whole member.
    pub(crate) bits: u32,
    pub(crate) type_id: u32,
}

/// An indexed BTF blob.
pub(crate) struct Btf {
    data: Vec<u8>,
    strings: std::ops::Range<usize>,
    /// Offset (in `data`) of type id `i + 1`.
    offsets: Vec<usize>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

impl Btf {
    pub(crate) fn parse(data: Vec<u8>) -> Option<Btf> {
        if data.get(0..2) != Some(&BTF_MAGIC.to_le_bytes()[..]) {
            return None;
        }
        let hdr = u32_at(&data, 4)? as usize;
        let field = |at| u32_at(&data, at).map(|v| v as usize);
        let (type_off, type_len, str_off, str_len) =
            (field(8)?, field(12)?, field(16)?, field(20)?);
        let types = hdr + type_off..hdr + type_off + type_len;
        let strings = hdr + str_off..hdr + str_off + str_len;
        if types.end > data.len() || strings.end > data.len() {
            return None;
        }
        let mut offsets = Vec::new();
        let mut pos = types.start;
        while pos + 12 <= types.end {
            let info = u32_at(&data, pos + 4)?;
            let vlen = (info & 0xffff) as usize;
            let extra = match (info >> 24) & 0x1f {
                1 | 14 | 17 => 4,
                3 => 12,
                4 | 5 | 15 => vlen * 12,
                6 | 13 => vlen * 8,
                19 => vlen * 12,
                2 | 7..=12 | 16 | 18 => 0,
                _ => break,
            };
            offsets.push(pos);
            pos += 12 + extra;
        }
        Some(Btf {
            data,
            strings,
            offsets,
        })
    }

    /// The running kernel's types; None without BTF.
    pub(crate) fn vmlinux() -> Option<Btf> {
        if !cfg!(target_endian = "little") {
            return None;
        }
        Btf::parse(std::fs::read(VMLINUX_BTF).ok()?)
    }

    fn at(&self, id: u32) -> Option<usize> {
        self.offsets.get((id as usize).checked_sub(1)?).copied()
    }

    fn name_of(&self, at: usize) -> &str {
        let Some(off) = u32_at(&self.data, at) else {
            return "";
        };
        let start = self.strings.start + off as usize;
        let rest = self.data.get(start..self.strings.end).unwrap_or(&[]);
        let end = rest.iter().position(|&b| b == 0).unwrap_or(0);
        std::str::from_utf8(&rest[..end]).unwrap_or("")
    }

    /// (kind number, vlen, kind_flag, size_or_type) of type `id`.
    fn header(&self, id: u32) -> Option<(u32, usize, bool, u32)> {
        let at = self.at(id)?;
        let info = u32_at(&self.data, at + 4)?;
        Some((
            (info >> 24) & 0x1f,
            (info & 0xffff) as usize,
            info >> 31 != 0,
            u32_at(&self.data, at + 8)?,
        ))
    }

    /// `id` with typedefs, `const`, `volatile`, `restrict` and type tags
    /// looked through.
    pub(crate) fn resolve(&self, mut id: u32) -> u32 {
        for _ in 0..32 {
            match self.header(id) {
                Some((8..=11 | 18, _, _, next)) => id = next,
                _ => break,
            }
        }
        id
    }

    pub(crate) fn kind(&self, id: u32) -> Kind {
        let id = self.resolve(id);
        if id == 0 {
            return Kind::Void;
        }
        let Some((kind, _, _, size)) = self.header(id) else {
            return Kind::Other;
        };
        let Some(at) = self.at(id) else {
            return Kind::Other;
        };
        match kind {
            1 => {
                let enc = u32_at(&self.data, at + 12).unwrap_or(0);
                Kind::Int {
                    size: size as usize,
                    signed: (enc >> 24) & 1 != 0,
                }
            }
            2 => Kind::Ptr(size),
            3 => Kind::Array {
                elem: u32_at(&self.data, at + 12).unwrap_or(0),
                len: u32_at(&self.data, at + 20).unwrap_or(0) as usize,
            },
            4 | 5 => Kind::Struct {
                size: size as usize,
            },
            6 | 19 => Kind::Enum {
                size: size as usize,
                signed: self.header(id).is_some_and(|h| h.2),
            },
            _ => Kind::Other,
        }
    }

    /// Bytes a value of type `id` takes.
    pub(crate) fn size(&self, id: u32) -> usize {
        match self.kind(id) {
            Kind::Int { size, .. } | Kind::Struct { size } | Kind::Enum { size, .. } => size,
            Kind::Ptr(_) => 8,
            Kind::Array { elem, len } => self.size(elem).saturating_mul(len),
            _ => 0,
        }
    }

    /// The struct or union named `name` (its definition, not a forward
    /// declaration).
    pub(crate) fn find_struct(&self, name: &str) -> Option<u32> {
        (1..=self.offsets.len() as u32).find(|&id| {
            matches!(self.header(id), Some((4 | 5, _, _, _)))
                && self.at(id).is_some_and(|at| self.name_of(at) == name)
        })
    }

    /// The kernel function named `name` (a BTF_KIND_FUNC), whose id is
    /// what an fentry/fexit program attaches to.
    pub(crate) fn find_func(&self, name: &str) -> Option<u32> {
        (1..=self.offsets.len() as u32).find(|&id| {
            matches!(self.header(id), Some((12, _, _, _)))
                && self.at(id).is_some_and(|at| self.name_of(at) == name)
        })
    }

    /// Every kernel function's name (for wildcards), with its id.
    pub(crate) fn funcs(&self) -> impl Iterator<Item = (u32, &str)> {
        (1..=self.offsets.len() as u32).filter_map(|id| {
            matches!(self.header(id), Some((12, _, _, _)))
                .then(|| Some((id, self.name_of(self.at(id)?))))
                .flatten()
        })
    }

    /// The parameters and return type of function `func` (a FUNC, through
    /// its FUNC_PROTO); None when it is not one.
    pub(crate) fn signature(&self, func: u32) -> Option<Signature> {
        let (12, _, _, proto) = self.header(func)? else {
            return None;
        };
        let (13, vlen, _, ret) = self.header(proto)? else {
            return None;
        };
        let at = self.at(proto)?;
        let params = (0..vlen)
            .map(|i| {
                let p = at + 12 + i * 8;
                Some((self.name_of(p).to_string(), u32_at(&self.data, p + 4)?))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Signature { func, params, ret })
    }

    /// The type's name (`task_struct`), for messages.
    pub(crate) fn name(&self, id: u32) -> String {
        let id = self.resolve(id);
        self.at(id)
            .map(|at| self.name_of(at).to_string())
            .unwrap_or_default()
    }

    /// Member `name` of struct or union `id`, looked for in anonymous
    /// members too (their offsets added).
    pub(crate) fn member(&self, id: u32, name: &str) -> Option<Member> {
        self.member_in(self.resolve(id), name, 0)
    }

    fn member_in(&self, id: u32, name: &str, depth: usize) -> Option<Member> {
        let (kind, vlen, kind_flag, _) = self.header(id)?;
        if !matches!(kind, 4 | 5) || depth > 8 {
            return None;
        }
        let at = self.at(id)?;
        for i in 0..vlen {
            let m = at + 12 + i * 12;
            let type_id = u32_at(&self.data, m + 4)?;
            let offset = u32_at(&self.data, m + 8)?;
            let (bit_offset, bits) = if kind_flag {
                (offset & 0xff_ffff, offset >> 24)
            } else {
                (offset, 0)
            };
            let member_name = self.name_of(m);
            if member_name == name {
                return Some(Member {
                    bit_offset,
                    bits,
                    type_id,
                });
            }
            if member_name.is_empty()
                && let Some(inner) = self.member_in(self.resolve(type_id), name, depth + 1)
            {
                return Some(Member {
                    bit_offset: bit_offset + inner.bit_offset,
                    ..inner
                });
            }
        }
        None
    }
}

/// The kernel's types and constants, read on first use (most programs
/// need neither).
#[derive(Default)]
pub(crate) struct KernelTypes {
    btf: OnceCell<Option<Btf>>,
    enums: OnceCell<HashMap<String, u64>>,
}

impl KernelTypes {
    pub(crate) fn btf(&self) -> Option<&Btf> {
        self.btf.get_or_init(Btf::vmlinux).as_ref()
    }

    /// The value of a constant the program names: a kernel enum's, or one
    /// of the header `DEFINES`.
    pub(crate) fn constant(&self, name: &str) -> Option<i64> {
        if let Some((_, v)) = DEFINES.iter().find(|(n, _)| *n == name) {
            return Some(*v);
        }
        self.enums
            .get_or_init(crate::event::btf_enums::load_vmlinux)
            .get(name)
            .map(|v| *v as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ws: &[u32]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn blob(types: &[u8], strings: &[u8]) -> Vec<u8> {
        let mut b = words(&[
            u32::from(BTF_MAGIC) | 1 << 16,
            24,
            0,
            types.len() as u32,
            types.len() as u32,
            strings.len() as u32,
        ]);
        b.extend_from_slice(types);
        b.extend_from_slice(strings);
        b
    }

    #[test]
    fn structs_members_and_anonymous_unions() {
        // 1: int (4 bytes, signed); 2: struct s { int a; union { int b; }; int *p; }
        // 3: the anonymous union; 4: int *; 5: typedef s_t -> 2.
        let strings = b"\0int\0s\0a\0b\0p\0s_t\0";
        let mut types = words(&[1, 1 << 24, 4, 1 << 24 | 32]);
        types.extend(words(&[5, 4 << 24 | 3, 16, 7, 1, 0, 0, 3, 32, 11, 4, 64]));
        types.extend(words(&[0, 5 << 24 | 1, 4, 9, 1, 0]));
        types.extend(words(&[0, 2 << 24, 1]));
        types.extend(words(&[13, 8 << 24, 2]));
        let btf = Btf::parse(blob(&types, strings)).expect("parses");
        assert_eq!(btf.find_struct("s"), Some(2));
        assert_eq!(btf.resolve(5), 2);
        assert_eq!(
            btf.kind(1),
            Kind::Int {
                size: 4,
                signed: true
            }
        );
        let b = btf.member(5, "b").expect("b through the union");
        assert_eq!((b.bit_offset, b.type_id), (32, 1));
        let p = btf.member(2, "p").expect("p");
        assert_eq!((p.bit_offset, btf.kind(p.type_id)), (64, Kind::Ptr(1)));
        assert!(btf.member(2, "nosuch").is_none());
        assert_eq!(btf.size(2), 16);
    }

    #[test]
    fn functions_and_their_signatures() {
        // 1: int; 2: int (int a, int b) prototype; 3: FUNC f of 2.
        let strings = b"\0int\0f\0a\0b\0";
        let mut types = words(&[1, 1 << 24, 4, 1 << 24 | 32]);
        types.extend(words(&[0, 13 << 24 | 2, 1, 7, 1, 9, 1]));
        types.extend(words(&[5, 12 << 24, 2]));
        let btf = Btf::parse(blob(&types, strings)).expect("parses");
        assert_eq!(btf.find_func("f"), Some(3));
        assert_eq!(btf.find_func("int"), None);
        assert_eq!(btf.funcs().collect::<Vec<_>>(), [(3, "f")]);
        let sig = btf.signature(3).expect("a function");
        assert_eq!(sig.params, [("a".to_string(), 1), ("b".to_string(), 1)]);
        assert_eq!((sig.func, sig.ret), (3, 1));
        assert!(btf.signature(2).is_none());
    }

    #[test]
    fn garbage_is_none_or_empty_not_a_panic() {
        assert!(Btf::parse(Vec::new()).is_none());
        let strings = b"\0s\0";
        let types = words(&[1, 4 << 24 | 9, 4, 1, 1, 0]);
        let full = blob(&types, strings);
        for len in 0..full.len() {
            if let Some(btf) = Btf::parse(full[..len].to_vec()) {
                let _ = btf.member(1, "s");
                let _ = btf.find_struct("s");
            }
        }
    }
}
