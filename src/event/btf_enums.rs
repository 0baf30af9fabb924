//! Enum constants of the running kernel, from its BTF
//! (`/sys/kernel/btf/vmlinux`): the values of names such as
//! `IOPRIO_CLASS_BE` or `HRTIMER_MODE_REL` that tracepoint print fmts use
//! but the kernel did not expand. With them, live rendering prints `be`
//! where the kernel's `trace` text does; without them (a perf.data from
//! another machine, a kernel without BTF) those names match nothing and the
//! number prints in hex, as perf script does.
//!
//! Only what is needed is read: the type section is walked for
//! `BTF_KIND_ENUM` and `BTF_KIND_ENUM64` entries; every other kind is
//! skipped by its size. A name defined twice with different values is
//! dropped (ambiguous).
//!
//! Invariant: `parse_enums` never panics; malformed BTF yields what was read
//! before the damage.

use std::collections::HashMap;

const BTF_MAGIC: u16 = 0xeb9f;
const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn c_str(strings: &[u8], off: u32) -> Option<&str> {
    let rest = strings.get(off as usize..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    std::str::from_utf8(&rest[..end]).ok()
}

/// Enumerator name → value from a little-endian BTF blob.
pub(crate) fn parse_enums(btf: &[u8]) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    let mut ambiguous = Vec::new();
    if btf.get(0..2) != Some(&BTF_MAGIC.to_le_bytes()[..]) {
        return out;
    }
    let (Some(hdr_len), Some(type_off), Some(type_len), Some(str_off), Some(str_len)) = (
        u32_at(btf, 4),
        u32_at(btf, 8),
        u32_at(btf, 12),
        u32_at(btf, 16),
        u32_at(btf, 20),
    ) else {
        return out;
    };
    let base = hdr_len as usize;
    let section = |off: u32, len: u32| {
        let start = base.checked_add(off as usize)?;
        btf.get(start..start.checked_add(len as usize)?)
    };
    let (Some(types), Some(strings)) = (section(type_off, type_len), section(str_off, str_len))
    else {
        return out;
    };
    let mut add = |name: Option<&str>, value: u64| {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return;
        };
        if let Some(old) = out.insert(name.to_string(), value)
            && old != value
        {
            ambiguous.push(name.to_string());
        }
    };
    let mut pos = 0usize;
    // Each type: name_off, info (kind, vlen, kind_flag), size_or_type.
    while pos + 12 <= types.len() {
        let Some(info) = u32_at(types, pos + 4) else {
            break;
        };
        let kind = (info >> 24) & 0x1f;
        let vlen = (info & 0xffff) as usize;
        let signed = info & (1 << 31) != 0;
        pos += 12;
        let extra = match kind {
            1 | 14 | 17 => 4,
            3 => 12,
            4 | 5 | 15 => vlen * 12,
            13 => vlen * 8,
            6 => {
                for i in 0..vlen {
                    let at = pos + i * 8;
                    let (Some(name), Some(val)) = (u32_at(types, at), u32_at(types, at + 4)) else {
                        break;
                    };
                    let value = if signed {
                        val as i32 as i64 as u64
                    } else {
                        u64::from(val)
                    };
                    add(c_str(strings, name), value);
                }
                vlen * 8
            }
            19 => {
                for i in 0..vlen {
                    let at = pos + i * 12;
                    let (Some(name), Some(lo), Some(hi)) = (
                        u32_at(types, at),
                        u32_at(types, at + 4),
                        u32_at(types, at + 8),
                    ) else {
                        break;
                    };
                    add(c_str(strings, name), u64::from(hi) << 32 | u64::from(lo));
                }
                vlen * 12
            }
            2 | 7..=12 | 16 | 18 => 0,
            _ => break, // a kind of a newer kernel: its size is unknown
        };
        pos += extra;
    }
    for name in ambiguous {
        out.remove(&name);
    }
    out
}

/// The running kernel's enum constants; empty when it has no BTF.
pub fn load_vmlinux() -> HashMap<String, u64> {
    if !cfg!(target_endian = "little") {
        return HashMap::new();
    }
    std::fs::read(VMLINUX_BTF)
        .map(|b| parse_enums(&b))
        .unwrap_or_default()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A BTF blob of `types` and `strings` (also for `event::btf`'s tests).
    pub(crate) fn btf(types: &[u8], strings: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&BTF_MAGIC.to_le_bytes());
        b.extend_from_slice(&[1, 0]);
        for v in [
            24u32,
            0,
            types.len() as u32,
            types.len() as u32,
            strings.len() as u32,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(types);
        b.extend_from_slice(strings);
        b
    }

    pub(crate) fn words(ws: &[u32]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn enums_and_enum64_between_other_kinds() {
        let strings = b"\0A\0B\0C\0D\0";
        let mut types = words(&[0, 1 << 24, 4, 32]); // INT with its extra word
        types.extend(words(&[0, 6 << 24 | 1 << 31 | 2, 4, 1, 5, 3, u32::MAX])); // A=5, B=-1
        types.extend(words(&[0, 4 << 24 | 1, 8, 1, 2, 0])); // STRUCT, one member
        types.extend(words(&[0, 19 << 24 | 1, 8, 5, 7, 1])); // C = 1 << 32 | 7
        let e = parse_enums(&btf(&types, strings));
        assert_eq!(e.get("A"), Some(&5));
        assert_eq!(e.get("B"), Some(&u64::MAX));
        assert_eq!(e.get("C"), Some(&(1u64 << 32 | 7)));
        assert_eq!(e.len(), 3);
    }

    #[test]
    fn garbage_is_empty_not_a_panic() {
        assert!(parse_enums(b"").is_empty());
        assert!(parse_enums(&[0x9f, 0xeb, 1, 0, 255, 255, 255, 255]).is_empty());
        let strings = b"\0A\0";
        let types = words(&[0, 6 << 24 | 9, 4, 1, 5]);
        let full = btf(&types, strings);
        for len in 0..full.len() {
            let _ = parse_enums(&full[..len]);
        }
    }
}
