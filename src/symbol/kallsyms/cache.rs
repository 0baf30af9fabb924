//! The running kernel's symbols kept between runs:
//! `$XDG_CACHE_HOME/scry/kallsyms` (default `~/.cache/scry`, folder 0700,
//! file 0600: kernel addresses undo KASLR).
//!
//! The kernel prints `/proc/kallsyms` anew on each read (~120k lines, tens
//! of milliseconds of its time): most of a small report's. What cannot
//! change until the next boot is kept parsed: the core kernel's symbols,
//! and those of the modules loaded (with their addresses) when the cache
//! was written. The key is the boot id, the modules' names, addresses and
//! sizes from `/proc/modules`, and the first line of kallsyms with a
//! non-zero address as this user reads it (the KASLR base, or a per-CPU
//! offset on 6.1; the first line, 0, when `kptr_restrict` hides addresses
//! from this user): any change, and the
//! cache is read anew. BPF programs and ftrace trampolines come and go
//! without any of these changing, so they are not kept: a cached table
//! holds only its address ranges (`Kallsyms::holds`), and an address
//! outside them sends the caller back to the kernel's list.
//!
//! The file is used in place (mapped, `table`): its header and sizes are
//! checked when it is opened (sizes against what is left, the records
//! filling the rest), each record when a lookup finds it (name inside the
//! text, module in the table); anything that does not fit is a miss, never
//! an error: the kernel's list is always there.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::table::{Backing, Layout, RECORD_BYTES, SymTable};
use super::{KSym, Kallsyms};
use crate::sys::mapped::MappedFile;

const MAGIC: &[u8; 8] = b"SCRYKSY1";

/// A cache file bigger than this is not read (today's is ~6 MB).
const MAX_BYTES: u64 = 64 << 20;

/// What a cache must have been written under (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CacheKey {
    boot_id: String,
    first_line: String,
    modules: Vec<crate::sys::proc::Module>,
}

impl CacheKey {
    /// The running kernel's key; `None` when its parts cannot be read.
    fn running() -> Option<CacheKey> {
        let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        // One read: the kernel prints the first lines only.
        let mut head = [0u8; 4096];
        let n = std::fs::File::open("/proc/kallsyms")
            .and_then(|mut f| f.read(&mut head))
            .ok()?;
        Some(CacheKey {
            boot_id: boot_id.trim().to_string(),
            first_line: first_addressed_line(head.get(..n)?)?,
            modules: crate::sys::proc::modules().ok()?,
        })
    }

    /// Whether the first line's address is hidden (0) from this user.
    fn hidden(&self) -> bool {
        let addr = self.first_line.split_ascii_whitespace().next();
        addr.and_then(|a| u64::from_str_radix(a, 16).ok()) == Some(0)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_str(out, &self.boot_id);
        put_str(out, &self.first_line);
        put_u32(out, self.modules.len() as u32);
        for m in &self.modules {
            put_str(out, &m.name);
            put_u64(out, m.start);
            put_u64(out, m.size);
        }
    }

    fn decode(r: &mut Bytes<'_>) -> Option<CacheKey> {
        let boot_id = r.str()?;
        let first_line = r.str()?;
        // Each module takes at least 20 bytes.
        let n = r.count(20)?;
        let mut modules = Vec::with_capacity(n);
        for _ in 0..n {
            modules.push(crate::sys::proc::Module {
                name: r.str()?,
                start: r.u64()?,
                size: r.u64()?,
            });
        }
        Some(CacheKey {
            boot_id,
            first_line,
            modules,
        })
    }
}

/// The key's line of the head of kallsyms: the first with a non-zero
/// address, else the first. Kernels before 6.2 or so (Debian 12's 6.1)
/// list per-CPU symbols first, from offset 0 (`0000000000000000 A
/// fixed_percpu_data`) whether or not addresses are hidden; the next ones'
/// offsets (`0000000000001000 A cpu_debug_store`) read 0 only when hidden.
fn first_addressed_line(head: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(head);
    // The last piece may be a line cut by the read's end.
    let mut lines = text.split('\n');
    let first = lines.next()?;
    let addressed = std::iter::once(first).chain(lines).find(|line| {
        let addr = line.split_ascii_whitespace().next();
        addr.and_then(|a| u64::from_str_radix(a, 16).ok())
            .is_some_and(|a| a != 0)
    });
    Some(addressed.unwrap_or(first).to_string())
}

/// The running kernel's symbols: the cached table when its key still
/// holds, else `/proc/kallsyms` read whole (and its lasting part cached for
/// the next run). Empty (every kernel frame then says why) when unreadable.
pub(crate) fn load_running() -> Kallsyms {
    let Some(key) = CacheKey::running() else {
        return Kallsyms::from_proc().unwrap_or_default();
    };
    if key.hidden() {
        // All addresses read as 0: nothing to name, nothing to keep.
        return Kallsyms {
            hidden: true,
            ..Kallsyms::default()
        };
    }
    let path = cache_path();
    if let Some(cached) = read_cache(&path, &key) {
        return cached;
    }
    let full = Kallsyms::from_proc().unwrap_or_default();
    if !full.is_empty() {
        // A cache that cannot be written costs the next run time, no more.
        let _ = write_cache(&path, &key, &full.lasting(&key.modules));
    }
    full
}

fn cache_path() -> PathBuf {
    crate::data::build_id_cache::scry_dir().join("kallsyms")
}

/// The cached table at `path` when it was written under `key`: used in
/// place (mapped; read into memory where it cannot be mapped).
pub(super) fn read_cache(path: &Path, key: &CacheKey) -> Option<Kallsyms> {
    let size = std::fs::metadata(path).ok()?.len();
    if size > MAX_BYTES {
        return None;
    }
    let backing = match MappedFile::open(path) {
        Ok(map) => Backing::File(map),
        Err(_) => {
            let mut bytes = Vec::new();
            let file = std::fs::File::open(path).ok()?;
            file.take(MAX_BYTES).read_to_end(&mut bytes).ok()?;
            Backing::Bytes(bytes)
        }
    };
    decode(backing, key)
}

/// Writes `table` under `key` to `path` (0600, renamed into place, so a
/// reader never sees half of one).
pub(super) fn write_cache(path: &Path, key: &CacheKey, table: &Kallsyms) -> std::io::Result<()> {
    crate::data::build_id_cache::write_private(path, encode(key, table).as_slice())
}

impl Kallsyms {
    /// The part of this (whole) table that lasts until the next boot or
    /// module change: the core kernel's symbols and those of `modules`
    /// with a known address, each kept for the range from its first to its
    /// last symbol (the last one's end is not known without the next).
    fn lasting(&self, modules: &[crate::sys::proc::Module]) -> Kallsyms {
        let lasting_module: Vec<bool> = self
            .modules
            .iter()
            .map(|name| modules.iter().any(|m| &m.name == name && m.start != 0))
            .collect();
        let keep = |s: &KSym| match s.module {
            None => true,
            Some(m) => lasting_module.get(m as usize).copied().unwrap_or(false),
        };
        let syms: Vec<KSym> = self.table.iter().filter(|s| keep(s)).collect();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        let mut groups: Vec<Option<u32>> = vec![None];
        groups.extend((0..self.modules.len() as u32).map(Some));
        for group in groups {
            let mut addrs = syms.iter().filter(|s| s.module == group).map(|s| s.addr);
            if let Some(first) = addrs.next() {
                let last = addrs.next_back().unwrap_or(first);
                if first < last {
                    ranges.push((first, last));
                }
            }
        }
        Kallsyms {
            table: SymTable::Owned {
                syms,
                names: self.table.names().to_string(),
            },
            modules: self.modules.clone(),
            hidden: false,
            etext: self.etext,
            known: Some(ranges),
        }
    }
}

fn encode(key: &CacheKey, table: &Kallsyms) -> Vec<u8> {
    let names = table.table.names();
    let mut out = Vec::with_capacity(names.len() + table.table.len() * RECORD_BYTES + 4096);
    out.extend_from_slice(MAGIC);
    key.encode(&mut out);
    put_u64(&mut out, table.etext.unwrap_or(0));
    let ranges = table.known.as_deref().unwrap_or(&[]);
    put_u32(&mut out, ranges.len() as u32);
    for &(start, end) in ranges {
        put_u64(&mut out, start);
        put_u64(&mut out, end);
    }
    put_u32(&mut out, table.modules.len() as u32);
    for m in &table.modules {
        put_str(&mut out, m);
    }
    put_str(&mut out, names);
    let syms: Vec<KSym> = table.table.iter().collect();
    put_u32(&mut out, syms.len() as u32);
    for s in &syms {
        put_u64(&mut out, s.addr);
        put_u32(&mut out, s.name.0);
        put_u32(&mut out, s.name.1);
        put_u32(&mut out, s.module.unwrap_or(u32::MAX));
        out.push(u8::from(s.data));
    }
    out
}

/// The table in `backing` if its bytes are a whole cache written under
/// `key`. The header (key, ranges, modules) is checked here, the records
/// as they are used (`table`).
fn decode(backing: Backing, key: &CacheKey) -> Option<Kallsyms> {
    let bytes = match &backing {
        Backing::File(f) => &f[..],
        Backing::Bytes(b) => &b[..],
    };
    let mut r = Bytes(bytes);
    if r.take(MAGIC.len())? != MAGIC || CacheKey::decode(&mut r)? != *key {
        return None;
    }
    let etext = Some(r.u64()?).filter(|&e| e != 0);
    let n = r.count(16)?;
    let mut ranges = Vec::with_capacity(n);
    for _ in 0..n {
        let (start, end) = (r.u64()?, r.u64()?);
        if start >= end {
            return None;
        }
        ranges.push((start, end));
    }
    let n = r.count(4)?;
    let mut modules = Vec::with_capacity(n);
    for _ in 0..n {
        modules.push(r.str()?);
    }
    let names_len = r.u32()? as usize;
    let names_at = bytes.len() - r.0.len();
    r.take(names_len)?;
    let count = r.count(RECORD_BYTES)?;
    // The records fill the rest exactly.
    if r.0.len() != count * RECORD_BYTES || count == 0 {
        return None;
    }
    let layout = Layout {
        names: names_at..names_at + names_len,
        records: bytes.len() - r.0.len(),
        count,
    };
    Some(Kallsyms {
        table: SymTable::InPlace { backing, layout },
        modules,
        hidden: false,
        etext,
        known: Some(ranges),
    })
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32);
    out.extend_from_slice(s.as_bytes());
}

/// A cursor over the cache's bytes; every read is checked.
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A count of items of at least `size` bytes each, bounded by what is
    /// left (so a damaged count allocates nothing big).
    fn count(&mut self, size: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n <= self.0.len() / size).then_some(n)
    }

    fn str(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T _text
ffffffff81000100 t do_thing
ffffffff81000200 T __x64_sys_write
ffffffff81800000 T _etext
ffffffff82000000 D some_data
ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]
ffffffffc0300000 t bpf_prog_6deef7357e7b4530_hot\t[bpf]
ffffffffc0400000 t ext4_fill_super\t[ext4]
ffffffffc0400800 t ext4_other\t[ext4]
ffffffffc0500000 t gone_fn\t[gone]
ffffffffc0500100 t gone_fn2\t[gone]
";

    fn key(boot: &str) -> CacheKey {
        CacheKey {
            boot_id: boot.to_string(),
            first_line: "ffffffff81000000 T _text".to_string(),
            modules: vec![crate::sys::proc::Module {
                name: "ext4".to_string(),
                start: 0xffffffffc0400000,
                size: 0x1000,
            }],
        }
    }

    fn full() -> Kallsyms {
        Kallsyms::parse(TEXT.as_bytes()).unwrap_or_default()
    }

    #[test]
    fn a_cached_table_names_what_it_holds_as_the_whole_one_does() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("sub/kallsyms");
        let whole = full();
        write_cache(
            &path,
            &key("boot-1"),
            &whole.lasting(&key("boot-1").modules),
        )
        .expect("the cache is written");
        let cached = read_cache(&path, &key("boot-1")).expect("the cache is read back");
        // Used where it lies, not copied into memory.
        assert!(matches!(
            cached.table,
            SymTable::InPlace {
                backing: Backing::File(_),
                ..
            }
        ));
        let mut held = 0;
        for addr in (0xffffffff80ff0000u64..0xffffffffc0600000).step_by(0x1000) {
            assert!(whole.holds(addr));
            if cached.holds(addr) {
                held += 1;
                assert_eq!(cached.find(addr), whole.find(addr), "{addr:x}");
                assert_eq!(cached.next_start(addr), whole.next_start(addr), "{addr:x}");
            }
        }
        assert!(held > 0);
        // The core kernel and the loaded module are held...
        assert!(cached.holds(0xffffffff81000150));
        assert!(cached.holds(0xffffffffc0400010));
        // ...BPF, trampolines and a module /proc/modules does not list are not.
        assert!(!cached.holds(0xffffffffc0300010));
        assert!(!cached.holds(0xffffffffc0201010));
        assert!(!cached.holds(0xffffffffc0500010));
        assert_eq!(
            cached
                .find(0xffffffffc0400010)
                .map(|s| Kallsyms::dso_name(&s)),
            Some("[ext4]".to_string())
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode(&path).ok(), Some(0o600));
        assert_eq!(mode(path.parent().expect("a folder")).ok(), Some(0o700));
    }

    #[test]
    fn per_cpu_symbols_at_offset_zero_are_not_hidden_addresses() {
        // Debian 12's 6.1: per-CPU offsets first, the first one 0.
        let head = b"0000000000000000 A fixed_percpu_data\n0000000000000000 A __per_cpu_start\n0000000000001000 A cpu_debug_store\n0000000000002000 A irq_sta";
        let line = first_addressed_line(head);
        assert_eq!(line.as_deref(), Some("0000000000001000 A cpu_debug_store"));
        let shown = CacheKey {
            first_line: line.unwrap_or_default(),
            ..key("boot-1")
        };
        assert!(!shown.hidden());
        // kptr_restrict: every address reads 0.
        let head = b"0000000000000000 A fixed_percpu_data\n0000000000000000 A __per_cpu_start\n0000000000000000 A cpu_debug_store\n";
        let line = first_addressed_line(head).unwrap_or_default();
        assert_eq!(line, "0000000000000000 A fixed_percpu_data");
        let hidden = CacheKey {
            first_line: line,
            ..key("boot-1")
        };
        assert!(hidden.hidden());
        // 6.18: the kernel text first.
        let head = b"ffffffff81000000 T srso_alias_untrain_ret\nffffffff81000000 T _stext\n";
        assert_eq!(
            first_addressed_line(head).as_deref(),
            Some("ffffffff81000000 T srso_alias_untrain_ret")
        );
    }

    #[test]
    fn another_boot_other_modules_or_another_first_line_miss() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("kallsyms");
        let k = key("boot-1");
        write_cache(&path, &k, &full().lasting(&k.modules)).expect("the cache is written");
        assert!(read_cache(&path, &k).is_some());
        assert!(read_cache(&path, &key("boot-2")).is_none());
        let mut moved = k.clone();
        moved.modules[0].start += 0x1000;
        assert!(read_cache(&path, &moved).is_none());
        let mut loaded = k.clone();
        loaded.modules.push(crate::sys::proc::Module {
            name: "xfs".to_string(),
            start: 0xffffffffc0600000,
            size: 0x1000,
        });
        assert!(read_cache(&path, &loaded).is_none());
        let mut hidden = k.clone();
        hidden.first_line = "0000000000000000 T _text".to_string();
        assert!(hidden.hidden());
        assert!(read_cache(&path, &hidden).is_none());
    }

    #[test]
    fn a_damaged_cache_is_a_miss() {
        let k = key("boot-1");
        let bytes = encode(&k, &full().lasting(&k.modules));
        let table = |b: &[u8]| decode(Backing::Bytes(b.to_vec()), &k);
        assert!(table(&bytes).is_some());
        for cut in 0..bytes.len() {
            assert!(table(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(table(&longer).is_none());
        // Every byte changed in turn: a miss or a table whose lookups name
        // something or nothing, never a panic.
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0xff;
            if let Some(t) = table(&bad) {
                for addr in [0, 0xffffffff81000150, 0xffffffffc0400010, u64::MAX] {
                    let _ = (t.find(addr), t.next_start(addr), t.holds(addr));
                }
            }
        }
    }
}
