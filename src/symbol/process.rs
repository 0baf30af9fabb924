//! The process model: which binary is mapped where in each process, and what
//! each thread is called, rebuilt from the side-band records of a recording.
//!
//! Feed it COMM, FORK, EXIT, MMAP and MMAP2 records in time order. A fork
//! into a new process copies the parent's maps (a new thread shares them: maps
//! are keyed by pid), an exec (COMM with `is_execve`) drops them, since the
//! kernel reports the exec's comm before the new image's mmaps. Exits are
//! ignored on purpose: samples of a process that already exited are still
//! resolved from its recorded maps and the files on disk.
//!
//! Binaries are interned as `Dso`s (path + the build-id the recording saw),
//! so every (binary, file offset) is symbolized once for all processes.
//! Kernel maps (pid -1: `[kernel.kallsyms]_text`, modules) are not stored per
//! process: kernel addresses are resolved from kallsyms directly.

use std::collections::HashMap;
use std::sync::Arc;

/// FxHash (`analysis::hash`): the process maps and the resolver's location
/// table are hashed once per sample or per frame; SipHash showed in profiles.
pub(crate) use crate::model::hash::{FxHashMap as FxMap, FxHashSet as FxSet, FxHasher};

use crate::data::threads::ThreadNames;

/// Index of a binary in a `DsoTable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct DsoId(pub(crate) u32);

/// What kind of code a `Dso` holds; decides how its addresses are named.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum DsoKind {
    /// An ELF file on disk, looked up by file offset.
    File,
    /// The kernel's `[vdso]` page, looked up by offset in the page.
    Vdso,
    /// Anonymous executable memory of a process: JIT code described by
    /// `/tmp/perf-PID.map`, looked up by absolute address.
    PerfMap(i32),
    /// The kernel and its modules, named from kallsyms by absolute address.
    Kernel,
    /// No mapping covered the address.
    Unknown,
}

/// One binary as the recording saw it.
#[derive(Clone, Debug)]
pub(crate) struct Dso {
    /// The name frames carry: the full path, `[vdso]`, `/tmp/perf-PID.map`,
    /// `[kernel.kallsyms]` or `[unknown]`.
    pub(crate) name: Arc<str>,
    /// The file to read: `name`, or for a process whose binaries the host
    /// cannot see by their path (a chroot, another mount namespace) the
    /// same path under `/proc/PID/root`, while the process lives.
    pub(crate) file: Arc<str>,
    pub(crate) kind: DsoKind,
    /// The build-id the recording stated (MMAP2 or HEADER_BUILD_ID), if any.
    pub(crate) build_id: Option<Vec<u8>>,
}

/// Interned binaries. Ids 0 and 1 are always the kernel and `[unknown]`.
#[derive(Debug)]
pub(crate) struct DsoTable {
    dsos: Vec<Dso>,
    index: HashMap<(Arc<str>, Option<Vec<u8>>), DsoId>,
}

impl DsoTable {
    pub(crate) const KERNEL: DsoId = DsoId(0);
    pub(crate) const UNKNOWN: DsoId = DsoId(1);

    pub(crate) fn new() -> Self {
        let mut table = DsoTable {
            dsos: Vec::new(),
            index: HashMap::new(),
        };
        table.intern("[kernel.kallsyms]", DsoKind::Kernel, None);
        table.intern("[unknown]", DsoKind::Unknown, None);
        table
    }

    pub(crate) fn intern(&mut self, name: &str, kind: DsoKind, build_id: Option<Vec<u8>>) -> DsoId {
        self.intern_file(name, name, kind, build_id)
    }

    /// As [`Self::intern`], for a binary read from `file` (see `Dso::file`);
    /// binaries are told apart by the file read.
    pub(crate) fn intern_file(
        &mut self,
        name: &str,
        file: &str,
        kind: DsoKind,
        build_id: Option<Vec<u8>>,
    ) -> DsoId {
        let file: Arc<str> = Arc::from(file);
        let key = (file.clone(), build_id.clone());
        if let Some(&id) = self.index.get(&key) {
            return id;
        }
        let id = DsoId(self.dsos.len() as u32);
        self.dsos.push(Dso {
            name: Arc::from(name),
            file,
            kind,
            build_id,
        });
        self.index.insert(key, id);
        id
    }

    /// The dso for an id this table handed out.
    pub(crate) fn get(&self, id: DsoId) -> &Dso {
        // Ids only come from `intern`, so they are in range.
        &self.dsos[id.0 as usize]
    }
}

impl Default for DsoTable {
    fn default() -> Self {
        Self::new()
    }
}

/// One executable mapping of a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mapping {
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// File offset of `start`.
    pub(crate) pgoff: u64,
    pub(crate) dso: DsoId,
}

/// A process's executable mappings, sorted by start, never overlapping,
/// each with file offsets that fit in a u64 (`pgoff + (end - start)`): an
/// address's file offset (`addr - start + pgoff`) and a cut mapping's
/// `pgoff` are then computed without overflow.
#[derive(Clone, Debug, Default)]
pub(crate) struct AddressSpace {
    pub(crate) maps: Vec<Mapping>,
    /// Bumped on every change, so caches built from the maps (the DWARF
    /// unwinder) know when to rebuild.
    pub(crate) generation: u64,
}

impl AddressSpace {
    /// Insert a mapping; whatever it overlaps is cut away, as mmap does.
    /// One the kernel cannot make (empty, or a damaged record's `pgoff`
    /// whose file offsets pass u64::MAX) is left out.
    pub(crate) fn insert(&mut self, new: Mapping) {
        if new.end <= new.start || new.pgoff.checked_add(new.end - new.start).is_none() {
            return;
        }
        let mut kept = Vec::with_capacity(self.maps.len() + 2);
        for m in self.maps.drain(..) {
            if m.end <= new.start || m.start >= new.end {
                kept.push(m);
                continue;
            }
            if m.start < new.start {
                kept.push(Mapping {
                    end: new.start,
                    ..m.clone()
                });
            }
            if m.end > new.end {
                kept.push(Mapping {
                    start: new.end,
                    pgoff: m.pgoff + (new.end - m.start),
                    ..m
                });
            }
        }
        kept.push(new);
        kept.sort_by_key(|m| m.start);
        self.maps = kept;
        self.generation += 1;
    }

    /// The mapping holding `addr`, if any.
    pub(crate) fn find(&self, addr: u64) -> Option<&Mapping> {
        let idx = self.maps.partition_point(|m| m.start <= addr);
        let m = self.maps.get(idx.checked_sub(1)?)?;
        (addr < m.end).then_some(m)
    }
}

/// Per-process maps and per-thread names (the one thread-name model,
/// `data::threads::ThreadNames`).
#[derive(Debug, Default)]
pub(crate) struct ProcessModel {
    spaces: FxMap<i32, AddressSpace>,
    comms: ThreadNames<crate::model::hash::FxBuild>,
}

impl ProcessModel {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// COMM / COMM_EXEC: name the thread; an exec also empties the process's
    /// maps (the new image's mmaps follow).
    pub(crate) fn handle_comm(&mut self, pid: i32, tid: i32, name: &[u8], is_exec: bool) {
        self.comms.set(tid, name);
        if is_exec {
            let space = self.spaces.entry(pid).or_default();
            space.maps.clear();
            space.generation += 1;
        }
    }

    /// FORK: a new process starts with a copy of its parent's maps; a new
    /// thread shares its process's maps. Either way it inherits the comm.
    pub(crate) fn handle_fork(&mut self, pid: i32, ppid: i32, tid: i32, ptid: i32) {
        if pid != ppid
            && let Some(parent) = self.spaces.get(&ppid).cloned()
        {
            self.spaces.insert(pid, parent);
        }
        self.comms.fork(tid, ptid);
    }

    /// MMAP / MMAP2 of a user process.
    pub(crate) fn handle_mmap(&mut self, pid: i32, mapping: Mapping) {
        self.spaces.entry(pid).or_default().insert(mapping);
    }

    pub(crate) fn space(&self, pid: i32) -> Option<&AddressSpace> {
        self.spaces.get(&pid)
    }

    /// The thread's current name, or perf's fallback (`data::threads`),
    /// borrowed: a caller comparing names (by pointer) takes no reference
    /// count per sample.
    pub(crate) fn comm_ref(&mut self, tid: i32) -> &Arc<str> {
        self.comms.get_ref(tid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(start: u64, end: u64, pgoff: u64, dso: u32) -> Mapping {
        Mapping {
            start,
            end,
            pgoff,
            dso: DsoId(dso),
        }
    }

    #[test]
    fn overlapping_mmap_cuts_the_old_one() {
        let mut s = AddressSpace::default();
        s.insert(map(0x1000, 0x5000, 0, 2));
        s.insert(map(0x2000, 0x3000, 0, 3));
        assert_eq!(
            s.maps,
            vec![
                map(0x1000, 0x2000, 0, 2),
                map(0x2000, 0x3000, 0, 3),
                map(0x3000, 0x5000, 0x2000, 2)
            ]
        );
        assert_eq!(s.find(0x2fff).map(|m| m.dso), Some(DsoId(3)));
        assert_eq!(s.find(0x4000).map(|m| m.pgoff), Some(0x2000));
        assert!(s.find(0x5000).is_none());
        assert!(s.find(0xfff).is_none());
    }

    /// A mutated `perf record -z` file's MMAP with a pgoff near u64::MAX
    /// made `script` panic with an overflow (debug builds) when a later
    /// mapping cut it, and could when a sample's address was looked up in it.
    #[test]
    fn mapping_whose_file_offsets_overflow_is_left_out() {
        let mut s = AddressSpace::default();
        s.insert(map(0x1000, 0x5000, u64::MAX - 0x2000, 2));
        assert!(s.maps.is_empty());
        // The last offsets that fit: cut, and the tail's pgoff computed.
        s.insert(map(0x1000, 0x5000, u64::MAX - 0x4000, 2));
        s.insert(map(0x2000, 0x3000, 0, 3));
        assert_eq!(s.maps[2], map(0x3000, 0x5000, u64::MAX - 0x2000, 2));
    }

    #[test]
    fn fork_copies_and_exec_clears() {
        let mut p = ProcessModel::new();
        p.handle_comm(10, 10, b"parent", false);
        p.handle_mmap(10, map(0x1000, 0x2000, 0, 2));
        p.handle_fork(11, 10, 11, 10);
        assert_eq!(p.space(11).map(|s| s.maps.len()), Some(1));
        assert_eq!(&**p.comm_ref(11), "parent");
        p.handle_comm(11, 11, b"child", true);
        assert_eq!(p.space(11).map(|s| s.maps.len()), Some(0));
        assert_eq!(p.space(10).map(|s| s.maps.len()), Some(1));
        assert_eq!(&**p.comm_ref(11), "child");
        assert_eq!(&**p.comm_ref(0), "swapper");
        assert_eq!(&**p.comm_ref(99), ":99");
    }
}
