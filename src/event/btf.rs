//! The kernel's types from its BTF (`/sys/kernel/btf/vmlinux`), as far as a
//! kernel probe needs them: a function's parameters (name, type, place in
//! the prototype) and return type, a struct's members (byte offset, type,
//! anonymous members searched through), and a type's C spelling, size and
//! signedness. This is what lets `scry probe 'tcp_sendmsg size'` and
//! `'FUNC sk->__sk_common.skc_state'` work without a kernel debuginfo
//! package, where perf needs one.
//!
//! The blob is indexed once (one offset per type id); members and
//! parameters are read from the bytes when asked for. `event::btf_enums`
//! keeps its own walk for enum constants (it runs for every live render).
//!
//! Invariant: nothing here panics on malformed BTF; a type id out of range
//! or a truncated record reads as "unknown" (`None`).

use std::collections::HashMap;

const BTF_MAGIC: u16 = 0xeb9f;
/// Where the running kernel exposes its BTF.
pub(crate) const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// The largest BTF blob read (vmlinux's is ~5 MB).
const MAX_BTF: u64 = 256 << 20;

const INT: u32 = 1;
const PTR: u32 = 2;
const ARRAY: u32 = 3;
const STRUCT: u32 = 4;
const UNION: u32 = 5;
const ENUM: u32 = 6;
const FWD: u32 = 7;
const TYPEDEF: u32 = 8;
const VOLATILE: u32 = 9;
const CONST: u32 = 10;
const RESTRICT: u32 = 11;
const FUNC: u32 = 12;
const FUNC_PROTO: u32 = 13;
const TYPE_TAG: u32 = 18;
const ENUM64: u32 = 19;

/// Why BTF could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum BtfError {
    #[error("cannot read {path}: {err} (the kernel needs CONFIG_DEBUG_INFO_BTF)")]
    Read { path: String, err: std::io::Error },
    #[error("{0}: not BTF (bad magic or header)")]
    NotBtf(String),
    #[error("{path}: {size} bytes, more than the {MAX_BTF} read")]
    TooBig { path: String, size: u64 },
}

/// A parameter of a function's prototype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Param {
    pub(crate) name: String,
    pub(crate) type_id: u32,
}

/// A function BTF knows: its parameters in order and its return type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Function {
    pub(crate) name: String,
    pub(crate) params: Vec<Param>,
    /// 0 for void.
    pub(crate) ret_type: u32,
}

/// A struct or union member found by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Member {
    /// From the start of the outermost struct searched, in bytes.
    pub(crate) byte_offset: u32,
    pub(crate) type_id: u32,
    /// Nonzero for a bit field (not fetchable as bytes).
    pub(crate) bitfield_size: u32,
}

/// A parsed BTF blob.
pub(crate) struct Btf {
    data: Vec<u8>,
    types_end: usize,
    strings_at: usize,
    strings_end: usize,
    /// Type id → offset of its record in `data` (id 0, void, has none).
    offsets: Vec<usize>,
    funcs: HashMap<String, u32>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

impl Btf {
    /// Reads the running kernel's BTF.
    pub(crate) fn load_vmlinux() -> Result<Btf, BtfError> {
        let read = |err| BtfError::Read {
            path: VMLINUX_BTF.into(),
            err,
        };
        let size = std::fs::metadata(VMLINUX_BTF).map_err(read)?.len();
        if size > MAX_BTF {
            return Err(BtfError::TooBig {
                path: VMLINUX_BTF.into(),
                size,
            });
        }
        let data = std::fs::read(VMLINUX_BTF).map_err(read)?;
        Btf::parse(data).ok_or_else(|| BtfError::NotBtf(VMLINUX_BTF.into()))
    }

    /// Indexes a little-endian BTF blob; None when its header is not BTF's.
    pub(crate) fn parse(data: Vec<u8>) -> Option<Btf> {
        if data.get(0..2) != Some(&BTF_MAGIC.to_le_bytes()[..]) {
            return None;
        }
        let field = |i: usize| u32_at(&data, 4 + 4 * i).map(|v| v as usize);
        let (hdr, type_off, type_len, str_off, str_len) =
            (field(0)?, field(1)?, field(2)?, field(3)?, field(4)?);
        let types_at = hdr.checked_add(type_off)?;
        let types_end = types_at.checked_add(type_len)?.min(data.len());
        let strings_at = hdr.checked_add(str_off)?;
        let strings_end = strings_at.checked_add(str_len)?.min(data.len());
        let mut btf = Btf {
            data,
            types_end,
            strings_at,
            strings_end,
            offsets: vec![0],
            funcs: HashMap::new(),
        };
        let mut pos = types_at;
        while pos + 12 <= types_end {
            let Some(info) = u32_at(&btf.data, pos + 4) else {
                break;
            };
            let vlen = (info & 0xffff) as usize;
            let extra = match (info >> 24) & 0x1f {
                INT | 14 | 17 => 4,
                ARRAY => 12,
                STRUCT | UNION | 15 | ENUM64 => vlen * 12,
                ENUM | FUNC_PROTO => vlen * 8,
                PTR | FWD..=FUNC | 16 | TYPE_TAG => 0,
                _ => break, // a kind of a newer kernel: its size is unknown
            };
            let id = btf.offsets.len() as u32;
            btf.offsets.push(pos);
            if (info >> 24) & 0x1f == FUNC
                && let Some(name) = btf.name_of(id)
            {
                btf.funcs.entry(name.to_string()).or_insert(id);
            }
            pos += 12 + extra;
        }
        Some(btf)
    }

    fn string(&self, off: u32) -> Option<&str> {
        let start = self.strings_at.checked_add(off as usize)?;
        let rest = self.data.get(start..self.strings_end)?;
        let end = rest.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&rest[..end]).ok()
    }

    /// (kind, vlen, kind_flag, size_or_type, offset of the record).
    fn header(&self, id: u32) -> Option<(u32, usize, bool, u32, usize)> {
        let at = *self.offsets.get(id as usize).filter(|_| id != 0)?;
        if at + 12 > self.types_end {
            return None;
        }
        let info = u32_at(&self.data, at + 4)?;
        Some((
            (info >> 24) & 0x1f,
            (info & 0xffff) as usize,
            info & (1 << 31) != 0,
            u32_at(&self.data, at + 8)?,
            at,
        ))
    }

    fn name_of(&self, id: u32) -> Option<&str> {
        let at = *self.offsets.get(id as usize)?;
        self.string(u32_at(&self.data, at)?)
    }

    /// A word of the record's extra data (after its 12-byte header).
    fn extra(&self, at: usize, word: usize) -> Option<u32> {
        let pos = at + 12 + word * 4;
        if pos + 4 > self.types_end {
            return None;
        }
        u32_at(&self.data, pos)
    }

    /// The function `name`, with its prototype's parameters.
    pub(crate) fn function(&self, name: &str) -> Option<Function> {
        let id = *self.funcs.get(name)?;
        let (_, _, _, proto, _) = self.header(id)?;
        let (kind, vlen, _, ret_type, at) = self.header(proto)?;
        if kind != FUNC_PROTO {
            return None;
        }
        let mut params = Vec::with_capacity(vlen.min(64));
        for i in 0..vlen {
            let name = self
                .string(self.extra(at, 2 * i)?)
                .unwrap_or("")
                .to_string();
            params.push(Param {
                name,
                type_id: self.extra(at, 2 * i + 1)?,
            });
        }
        Some(Function {
            name: name.to_string(),
            params,
            ret_type,
        })
    }

    /// `id` with typedefs and qualifiers stripped.
    pub(crate) fn resolve(&self, mut id: u32) -> u32 {
        for _ in 0..32 {
            match self.header(id) {
                Some((TYPEDEF | VOLATILE | CONST | RESTRICT | TYPE_TAG, _, _, next, _)) => {
                    id = next
                }
                _ => break,
            }
        }
        id
    }

    /// The pointee of a pointer type (after stripping), else None.
    pub(crate) fn pointee(&self, id: u32) -> Option<u32> {
        match self.header(self.resolve(id))? {
            (PTR, _, _, to, _) => Some(to),
            _ => None,
        }
    }

    /// The element type of an array, else None.
    pub(crate) fn array_element(&self, id: u32) -> Option<u32> {
        match self.header(self.resolve(id))? {
            (ARRAY, _, _, _, at) => self.extra(at, 0),
            _ => None,
        }
    }

    /// Whether `id` is a struct or union.
    pub(crate) fn is_composite(&self, id: u32) -> bool {
        matches!(self.header(self.resolve(id)), Some((STRUCT | UNION, ..)))
    }

    /// Whether `id` is a one-byte integer (char, signed or not).
    pub(crate) fn is_char(&self, id: u32) -> bool {
        matches!(self.header(self.resolve(id)), Some((INT, _, _, 1, _)))
    }

    /// Size in bytes of a scalar (int, enum, pointer); None for others.
    pub(crate) fn scalar_size(&self, id: u32) -> Option<u32> {
        match self.header(self.resolve(id))? {
            (INT | ENUM | ENUM64, _, _, size, _) => Some(size),
            (PTR, ..) => Some(8),
            _ => None,
        }
    }

    /// Whether a scalar is a signed integer (enums count as unsigned).
    pub(crate) fn is_signed(&self, id: u32) -> bool {
        match self.header(self.resolve(id)) {
            Some((INT, _, _, _, at)) => self.extra(at, 0).is_some_and(|enc| enc >> 24 & 1 != 0),
            _ => false,
        }
    }

    /// The member `name` of the struct or union `id`, looked for through
    /// anonymous members too, with its offset from the start of `id`.
    pub(crate) fn member(&self, id: u32, name: &str) -> Option<Member> {
        self.member_in(self.resolve(id), name, 0)
    }

    fn member_in(&self, id: u32, name: &str, depth: u32) -> Option<Member> {
        let (kind, vlen, kind_flag, _, at) = self.header(id)?;
        if !matches!(kind, STRUCT | UNION) || depth > 8 {
            return None;
        }
        for i in 0..vlen {
            let name_off = self.extra(at, 3 * i)?;
            let type_id = self.extra(at, 3 * i + 1)?;
            let raw = self.extra(at, 3 * i + 2)?;
            let (bits, bitfield_size) = if kind_flag {
                (raw & 0xff_ffff, raw >> 24)
            } else {
                (raw, 0)
            };
            let member_name = self.string(name_off).unwrap_or("");
            if member_name == name {
                return Some(Member {
                    byte_offset: bits / 8,
                    type_id,
                    bitfield_size: if bits % 8 != 0 {
                        bitfield_size.max(1)
                    } else {
                        bitfield_size
                    },
                });
            }
            if member_name.is_empty()
                && let Some(mut inner) = self.member_in(self.resolve(type_id), name, depth + 1)
            {
                inner.byte_offset += bits / 8;
                return Some(inner);
            }
        }
        None
    }

    /// The C spelling of a type: `size_t`, `struct sock *`, `const char *`.
    pub(crate) fn type_name(&self, id: u32) -> String {
        self.type_name_depth(id, 0)
    }

    fn type_name_depth(&self, id: u32, depth: u32) -> String {
        if id == 0 {
            return "void".into();
        }
        let Some((kind, _, _, next, _)) = self.header(id).filter(|_| depth < 16) else {
            return "?".into();
        };
        let name = self.name_of(id).unwrap_or("");
        let inner = || self.type_name_depth(next, depth + 1);
        match kind {
            PTR => format!("{} *", inner()).replace("* *", "**"),
            CONST => format!("const {}", inner()),
            VOLATILE => format!("volatile {}", inner()),
            RESTRICT | TYPE_TAG => inner(),
            STRUCT => format!("struct {name}"),
            UNION => format!("union {name}"),
            ENUM | ENUM64 => format!("enum {name}"),
            FWD => format!("struct {name}"),
            ARRAY => {
                let at = self.offsets.get(id as usize).copied().unwrap_or(0);
                let elem = self.extra(at, 0).unwrap_or(0);
                let n = self.extra(at, 2).unwrap_or(0);
                format!("{}[{n}]", self.type_name_depth(elem, depth + 1))
            }
            FUNC_PROTO => "function".into(),
            _ => name.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::btf_enums::tests::{btf as blob, words};

    /// int (1), char (2), struct s { int a; struct { char c; }; } (3, 4),
    /// struct s * (5), proto int (struct s *p, int n) (6), func f (7).
    fn sample() -> Btf {
        let strings = b"\0int\0char\0s\0a\0c\0p\0n\0f\0";
        // offsets: int 1, char 5, s 10, a 12, c 14, p 16, n 18, f 20
        let mut t = words(&[1, INT << 24, 4, 1 << 24 | 32]);
        t.extend(words(&[5, INT << 24, 1, 8]));
        t.extend(words(&[10, STRUCT << 24 | 2, 8, 12, 1, 0, 0, 4, 32]));
        t.extend(words(&[0, STRUCT << 24 | 1, 1, 14, 2, 0]));
        t.extend(words(&[0, PTR << 24, 3]));
        t.extend(words(&[0, FUNC_PROTO << 24 | 2, 1, 16, 5, 18, 1]));
        t.extend(words(&[20, FUNC << 24, 6]));
        Btf::parse(blob(&t, strings)).unwrap()
    }

    #[test]
    fn functions_members_and_names() {
        let btf = sample();
        let f = btf.function("f").unwrap();
        assert_eq!(
            f.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["p", "n"]
        );
        assert_eq!(btf.type_name(f.params[0].type_id), "struct s *");
        assert!(btf.is_signed(f.params[1].type_id));
        let s = btf.pointee(f.params[0].type_id).unwrap();
        let c = btf.member(s, "c").unwrap();
        assert_eq!((c.byte_offset, btf.is_char(c.type_id)), (4, true));
        assert!(btf.member(s, "zz").is_none());
        assert!(btf.function("g").is_none());
    }

    #[test]
    fn garbage_is_none_not_a_panic() {
        assert!(Btf::parse(Vec::new()).is_none());
        let full = blob(&words(&[1, FUNC << 24, 99]), b"\0f\0");
        for len in 0..full.len() {
            if let Some(b) = Btf::parse(full[..len].to_vec()) {
                let _ = b.function("f");
                let _ = b.type_name(1);
            }
        }
    }
}
