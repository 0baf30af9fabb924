//! JIT symbols from jitdump files (`jit-PID.dump`: CPython 3.13's `-X
//! perf_jit`, Java agents, V8's `--perf-prof`), the format of the kernel's
//! `tools/perf/Documentation/jitdump-specification.txt`.
//!
//! A runtime writing one maps the file executable once as a marker, so a
//! recording holds an MMAP2 record naming it; the resolver remembers that
//! path per process (`Resolver::add_mapping`) and, when it names that
//! process's JIT code, reads the file's JIT_CODE_LOAD records (address,
//! size, name) next to `/tmp/perf-PID.map`'s lines. perf needs `perf inject
//! --jit` for this; scry reads the file directly. Annotate reads the
//! code bytes a load carries after its name (`code_at`), again from the
//! file: the resolver keeps only names.
//!
//! Parsed from bytes with every size checked against what is left; a
//! truncated last record (the runtime was still writing) ends the walk.
//! The file is read up to `MAX_JITDUMP` bytes.

/// Larger files are read only this far.
pub(crate) const MAX_JITDUMP: u64 = 512 << 20;

const MAGIC: u32 = 0x4a69_5444; // "JiTD", written in the writer's byte order
const JIT_CODE_LOAD: u32 = 0;

/// One JIT_CODE_LOAD: where the code is, and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JitCode {
    pub(crate) start: u64,
    pub(crate) size: u64,
    pub(crate) name: String,
}

fn u32_at(b: &[u8], at: usize, swap: bool) -> Option<u32> {
    let v = u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?);
    Some(if swap { v.swap_bytes() } else { v })
}

fn u64_at(b: &[u8], at: usize, swap: bool) -> Option<u64> {
    let v = u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?);
    Some(if swap { v.swap_bytes() } else { v })
}

/// Each JIT_CODE_LOAD record of a jitdump file's bytes, whole, in file
/// order, and whether its numbers are byte-swapped (nothing if it is not
/// one).
fn code_loads(bytes: &[u8]) -> (Vec<&[u8]>, bool) {
    let mut out = Vec::new();
    let swap = match u32_at(bytes, 0, false) {
        Some(MAGIC) => false,
        Some(m) if m.swap_bytes() == MAGIC => true,
        _ => return (out, false),
    };
    let Some(header) = u32_at(bytes, 8, swap) else {
        return (out, swap);
    };
    let mut at = header as usize;
    // Record header: id u32, total_size u32, timestamp u64.
    while let (Some(id), Some(size)) = (u32_at(bytes, at, swap), u32_at(bytes, at + 4, swap)) {
        let size = size as usize;
        let Some(record) = bytes
            .get(at..at.saturating_add(size))
            .filter(|_| size >= 16)
        else {
            break;
        };
        if id == JIT_CODE_LOAD {
            out.push(record);
        }
        at += size;
    }
    (out, swap)
}

/// A JIT_CODE_LOAD record's code (pid u32, tid u32, vma u64, code_addr
/// u64, code_size u64, code_index u64 after the header, then the name,
/// NUL-terminated, then the code bytes), and where the bytes begin.
fn code_load(record: &[u8], swap: bool) -> Option<(JitCode, usize)> {
    let rest = record.get(56..)?;
    let end = rest.iter().position(|&c| c == 0)?;
    let name = String::from_utf8_lossy(rest.get(..end)?).into_owned();
    let start = u64_at(record, 32, swap)?;
    let size = u64_at(record, 40, swap).filter(|&s| s > 0)?;
    Some((JitCode { start, size, name }, 56 + end + 1))
}

/// The code loads of a jitdump file's bytes (empty if it is not one).
pub(crate) fn parse(bytes: &[u8]) -> Vec<JitCode> {
    let (records, swap) = code_loads(bytes);
    records
        .iter()
        .filter_map(|r| code_load(r, swap).map(|(code, _)| code))
        .collect()
}

/// The last code load covering `addr` and its machine code, as the record
/// holds it (None if no load covers it or its bytes are cut short).
pub(crate) fn code_at(bytes: &[u8], addr: u64) -> Option<(JitCode, Vec<u8>)> {
    let (records, swap) = code_loads(bytes);
    records.iter().rev().find_map(|r| {
        let (code, at) = code_load(r, swap)?;
        if addr < code.start || addr - code.start >= code.size {
            return None;
        }
        let len = usize::try_from(code.size).ok()?;
        let bytes = r.get(at..at.checked_add(len)?)?.to_vec();
        Some((code, bytes))
    })
}

/// Reads the jitdump file at `path` (None if unreadable).
pub(crate) fn read(path: &std::path::Path) -> Option<Vec<JitCode>> {
    read_bytes(path).map(|b| parse(&b))
}

/// The first `MAX_JITDUMP` bytes of the file at `path`.
pub(crate) fn read_bytes(path: &std::path::Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_JITDUMP).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// Whether a mapped path is a jitdump marker (`.../jit-PID.dump`).
pub(crate) fn is_jitdump(path: &str) -> bool {
    path.rsplit('/')
        .next()
        .and_then(|n| n.strip_prefix("jit-"))
        .and_then(|n| n.strip_suffix(".dump"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(start: u64, size: u64, name: &str) -> Vec<u8> {
        let mut r = Vec::new();
        let total = 56 + name.len() + 1 + size as usize;
        r.extend_from_slice(&JIT_CODE_LOAD.to_le_bytes());
        r.extend_from_slice(&(total as u32).to_le_bytes());
        r.extend_from_slice(&0u64.to_le_bytes()); // timestamp
        r.extend_from_slice(&1u32.to_le_bytes()); // pid
        r.extend_from_slice(&1u32.to_le_bytes()); // tid
        r.extend_from_slice(&start.to_le_bytes()); // vma
        r.extend_from_slice(&start.to_le_bytes()); // code_addr
        r.extend_from_slice(&size.to_le_bytes());
        r.extend_from_slice(&7u64.to_le_bytes()); // code_index
        r.extend_from_slice(name.as_bytes());
        r.push(0);
        r.extend(std::iter::repeat_n(0x90u8, size as usize));
        r
    }

    #[test]
    fn code_loads_are_read_and_a_torn_tail_is_dropped() {
        let mut f = Vec::new();
        f.extend_from_slice(&MAGIC.to_le_bytes());
        f.extend_from_slice(&1u32.to_le_bytes()); // version
        f.extend_from_slice(&40u32.to_le_bytes()); // header size
        f.extend_from_slice(&[0u8; 28]);
        f.extend(load(0x7f00_0000_1000, 11, "py::hot:/tmp/x.py"));
        f.extend(load(0x7f00_0000_2000, 11, "py::main:/tmp/x.py"));
        let whole = parse(&f);
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[1].name, "py::main:/tmp/x.py");
        assert_eq!((whole[0].start, whole[0].size), (0x7f00_0000_1000, 11));
        assert_eq!(parse(&f[..f.len() - 3]).len(), 1);
        let (code, bytes) = code_at(&f, 0x7f00_0000_2005).expect("main's code");
        assert_eq!(
            (code.name.as_str(), bytes),
            ("py::main:/tmp/x.py", vec![0x90; 11])
        );
        assert!(code_at(&f, 0x7f00_0000_200b).is_none());
        assert!(code_at(&f[..f.len() - 3], 0x7f00_0000_2005).is_none());
        assert!(parse(b"not a jitdump").is_empty());
        assert!(is_jitdump("/tmp/jit-24104.dump"));
        assert!(!is_jitdump("/tmp/jit-.dump"));
        assert!(!is_jitdump("/usr/lib/libc.so.6"));
    }
}
