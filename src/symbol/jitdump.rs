//! JIT symbols from jitdump files (`jit-PID.dump`: CPython 3.13's `-X
//! perf_jit`, Java agents, V8's `--perf-prof`), the format of the kernel's
//! `tools/perf/Documentation/jitdump-specification.txt`.
//!
//! A runtime writing one maps the file executable once as a marker, so a
//! recording holds an MMAP2 record naming it; the resolver remembers that
//! path per process (`Resolver::add_mapping`) and, when it names that
//! process's JIT code, reads the file's JIT_CODE_LOAD records (address,
//! size, name) next to `/tmp/perf-PID.map`'s lines, and its JIT_CODE_MOVE
//! records (a load's code put at a new address). perf needs `perf inject
//! --jit` for this; scry reads the file directly. Annotate reads the
//! code bytes a load carries after its name (`JitDump::code_at`), again
//! from the file, once per command: the resolver keeps only names.
//!
//! Parsed from bytes with every size checked against what is left; a
//! truncated last record (the runtime was still writing) ends the walk.
//! The file is read up to `MAX_JITDUMP` bytes.

use std::ops::Range;

/// Larger files are read only this far.
pub(crate) const MAX_JITDUMP: u64 = 512 << 20;

const MAGIC: u32 = 0x4a69_5444; // "JiTD", written in the writer's byte order
const JIT_CODE_LOAD: u32 = 0;
const JIT_CODE_MOVE: u32 = 1;

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

/// A record's id, its offset in the file, and its bytes, whole.
type Record<'a> = (u32, usize, &'a [u8]);

/// Each record of a jitdump file's bytes, in file order, and whether its
/// numbers are byte-swapped (nothing if it is not one).
fn records(bytes: &[u8]) -> (Vec<Record<'_>>, bool) {
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
        out.push((id, at, record));
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

/// A piece of JIT code where it lies, and where the file holds its
/// machine code, in its load record (None if cut short).
struct Placed {
    code: JitCode,
    bytes: Option<Range<usize>>,
}

/// Every place code was put, in file order: each JIT_CODE_LOAD, and each
/// JIT_CODE_MOVE (pid u32, tid u32, vma u64, old_code_addr u64,
/// new_code_addr u64, code_size u64, code_index u64) of an earlier load,
/// by its code_index, to a new address with the load's name and bytes, as
/// `perf inject --jit` maps the load's code again there. The old place
/// stays (samples taken before the move were there); a move of an index
/// no load had is skipped.
fn placements(bytes: &[u8]) -> Vec<Placed> {
    let (records, swap) = records(bytes);
    let mut out: Vec<Placed> = Vec::new();
    // code_index -> the load's place in `out`.
    let mut loads = std::collections::HashMap::new();
    for (id, offset, record) in records {
        match id {
            JIT_CODE_LOAD => {
                let Some((code, at)) = code_load(record, swap) else {
                    continue;
                };
                let bytes = usize::try_from(code.size)
                    .ok()
                    .and_then(|len| at.checked_add(len))
                    .filter(|&end| end <= record.len())
                    .map(|end| offset + at..offset + end);
                if let Some(index) = u64_at(record, 48, swap) {
                    loads.insert(index, out.len());
                }
                out.push(Placed { code, bytes });
            }
            JIT_CODE_MOVE => {
                let (Some(start), Some(size), Some(index)) = (
                    u64_at(record, 40, swap),
                    u64_at(record, 48, swap).filter(|&s| s > 0),
                    u64_at(record, 56, swap),
                ) else {
                    continue;
                };
                let Some(load) = loads.get(&index).and_then(|&i| out.get(i)) else {
                    continue;
                };
                let moved = Placed {
                    code: JitCode {
                        start,
                        size,
                        name: load.code.name.clone(),
                    },
                    bytes: usize::try_from(size).ok().and_then(|len| {
                        let load = load.bytes.clone()?;
                        (len <= load.len()).then(|| load.start..load.start + len)
                    }),
                };
                out.push(moved);
            }
            _ => {}
        }
    }
    out
}

/// The code of a jitdump file's bytes, where it was loaded or moved to
/// (empty if it is not one).
pub(crate) fn parse(bytes: &[u8]) -> Vec<JitCode> {
    placements(bytes).into_iter().map(|p| p.code).collect()
}

/// A jitdump file's bytes with its code loads and moves parsed: read
/// once for all the functions annotate shows from it.
pub(crate) struct JitDump {
    bytes: Vec<u8>,
    placed: Vec<Placed>,
}

impl JitDump {
    /// The file's bytes, parsed (no code if it is not a jitdump).
    pub(crate) fn new(bytes: Vec<u8>) -> JitDump {
        let placed = placements(&bytes);
        JitDump { bytes, placed }
    }

    /// Reads and parses the jitdump file at `path` (None if unreadable).
    pub(crate) fn read(path: &std::path::Path) -> Option<JitDump> {
        read_bytes(path).map(JitDump::new)
    }

    /// The last code load or move covering `addr` and its machine code,
    /// as the load record holds it (None if none covers it or its bytes
    /// are cut short, or the code is over `max_size` bytes: checked
    /// before it is copied).
    pub(crate) fn code_at(&self, addr: u64, max_size: u64) -> Option<(JitCode, Vec<u8>)> {
        let p = self
            .placed
            .iter()
            .rev()
            .find(|p| addr >= p.code.start && addr - p.code.start < p.code.size)
            .filter(|p| p.code.size <= max_size)?;
        let bytes = self.bytes.get(p.bytes.clone()?)?;
        Some((p.code.clone(), bytes.to_vec()))
    }
}

/// Reads the jitdump file at `path` (None if unreadable).
pub(crate) fn read(path: &std::path::Path) -> Option<Vec<JitCode>> {
    read_bytes(path).map(|b| parse(&b))
}

/// The first `MAX_JITDUMP` bytes of the file at `path`.
fn read_bytes(path: &std::path::Path) -> Option<Vec<u8>> {
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

    fn code_at(f: &[u8], addr: u64, max_size: u64) -> Option<(JitCode, Vec<u8>)> {
        JitDump::new(f.to_vec()).code_at(addr, max_size)
    }

    fn load(start: u64, size: u64, name: &str, index: u64) -> Vec<u8> {
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
        r.extend_from_slice(&index.to_le_bytes()); // code_index
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
        f.extend(load(0x7f00_0000_1000, 11, "py::hot:/tmp/x.py", 7));
        f.extend(load(0x7f00_0000_2000, 11, "py::main:/tmp/x.py", 8));
        let whole = parse(&f);
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[1].name, "py::main:/tmp/x.py");
        assert_eq!((whole[0].start, whole[0].size), (0x7f00_0000_1000, 11));
        assert_eq!(parse(&f[..f.len() - 3]).len(), 1);
        let (code, bytes) = code_at(&f, 0x7f00_0000_2005, u64::MAX).expect("main's code");
        assert_eq!(
            (code.name.as_str(), bytes),
            ("py::main:/tmp/x.py", vec![0x90; 11])
        );
        assert!(code_at(&f, 0x7f00_0000_200b, u64::MAX).is_none());
        // Over the size asked for: refused before the bytes are copied.
        assert!(code_at(&f, 0x7f00_0000_2005, 10).is_none());
        assert!(code_at(&f[..f.len() - 3], 0x7f00_0000_2005, u64::MAX).is_none());
        assert!(parse(b"not a jitdump").is_empty());
        assert!(is_jitdump("/tmp/jit-24104.dump"));
    }

    /// A JIT_CODE_MOVE: the header, pid, tid, vma, old and new address,
    /// size, code_index.
    fn code_move(old: u64, new: u64, size: u64, index: u64) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&JIT_CODE_MOVE.to_le_bytes());
        r.extend_from_slice(&64u32.to_le_bytes());
        r.extend_from_slice(&0u64.to_le_bytes()); // timestamp
        r.extend_from_slice(&1u32.to_le_bytes()); // pid
        r.extend_from_slice(&1u32.to_le_bytes()); // tid
        for word in [new, old, new, size, index] {
            r.extend_from_slice(&word.to_le_bytes());
        }
        r
    }

    #[test]
    fn a_moved_function_is_named_and_has_its_code_at_its_new_address() {
        let mut f = Vec::new();
        f.extend_from_slice(&MAGIC.to_le_bytes());
        f.extend_from_slice(&1u32.to_le_bytes());
        f.extend_from_slice(&40u32.to_le_bytes());
        f.extend_from_slice(&[0u8; 28]);
        f.extend(load(0x7f00_0000_1000, 11, "hot", 7));
        f.extend(load(0x7f00_0000_2000, 5, "cold", 8));
        f.extend(code_move(0x7f00_0000_1000, 0x7f00_0000_5000, 11, 7));
        // An index no load had: nothing to move.
        f.extend(code_move(0x7f00_0000_3000, 0x7f00_0000_6000, 11, 9));
        let codes = parse(&f);
        let placed: Vec<(u64, u64, &str)> = codes
            .iter()
            .map(|c| (c.start, c.size, c.name.as_str()))
            .collect();
        assert_eq!(
            placed,
            [
                (0x7f00_0000_1000, 11, "hot"),
                (0x7f00_0000_2000, 5, "cold"),
                (0x7f00_0000_5000, 11, "hot"),
            ]
        );
        let (code, bytes) = code_at(&f, 0x7f00_0000_500a, u64::MAX).expect("the moved code");
        assert_eq!((code.name.as_str(), code.start), ("hot", 0x7f00_0000_5000));
        assert_eq!(bytes, vec![0x90; 11]);
        // The old place still names it (samples before the move).
        assert_eq!(
            code_at(&f, 0x7f00_0000_1000, u64::MAX).map(|c| c.0.start),
            Some(0x7f00_0000_1000)
        );
        assert!(code_at(&f, 0x7f00_0000_6000, u64::MAX).is_none());
        // A torn move is dropped, the loads stay.
        assert_eq!(parse(&f[..f.len() - 64 - 3]).len(), 2);
        assert!(!is_jitdump("/tmp/jit-.dump"));
        assert!(!is_jitdump("/usr/lib/libc.so.6"));
    }
}
