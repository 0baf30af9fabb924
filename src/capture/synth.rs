//! Side-band records synthesized from /proc for what existed before the
//! counters did: the kernel's text map, and for `-p`/`-a` the comm and
//! executable mappings of every process already running (as perf does), so
//! their samples still resolve to binaries.
//!
//! Records are built in the kernel's byte layout, with the `sample_id`
//! trailer that `sample_id_all` promises every non-sample record has.

use crate::sys::perf_event::{
    PERF_RECORD_COMM, PERF_RECORD_MISC_KERNEL, PERF_RECORD_MISC_USER, PERF_RECORD_MMAP,
    PERF_RECORD_MMAP2, PERF_SAMPLE_CPU, PERF_SAMPLE_ID, PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_TID,
    PERF_SAMPLE_TIME,
};
use crate::sys::proc;

/// What the `sample_id` trailer of a synthesized record holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SampleIdLayout {
    pub(crate) sample_type: u64,
    /// The id of the first counter (the "tracking" event).
    pub(crate) id: u64,
}

struct RecordBuf {
    bytes: Vec<u8>,
}

impl RecordBuf {
    fn new(type_: u32, misc: u16) -> Self {
        let mut bytes = Vec::with_capacity(128);
        bytes.extend_from_slice(&type_.to_ne_bytes());
        bytes.extend_from_slice(&misc.to_ne_bytes());
        bytes.extend_from_slice(&0u16.to_ne_bytes());
        RecordBuf { bytes }
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_ne_bytes());
        self
    }
    /// A NUL-terminated string padded to a multiple of 8 bytes.
    fn string(&mut self, s: &str) -> &mut Self {
        let raw = s.as_bytes();
        let len = (raw.len() + 1).next_multiple_of(8);
        self.bytes.extend_from_slice(raw);
        self.bytes.resize(self.bytes.len() + len - raw.len(), 0);
        self
    }
    fn sample_id(&mut self, layout: &SampleIdLayout, pid: i32, tid: i32) -> &mut Self {
        let t = layout.sample_type;
        if t & PERF_SAMPLE_TID != 0 {
            self.u32(pid as u32).u32(tid as u32);
        }
        if t & PERF_SAMPLE_TIME != 0 {
            self.u64(0);
        }
        if t & PERF_SAMPLE_ID != 0 {
            self.u64(layout.id);
        }
        if t & PERF_SAMPLE_CPU != 0 {
            self.u32(0).u32(0);
        }
        if t & PERF_SAMPLE_IDENTIFIER != 0 {
            self.u64(layout.id);
        }
        self
    }
    fn finish(mut self, out: &mut Vec<u8>) {
        let size = self.bytes.len() as u16;
        self.bytes[6..8].copy_from_slice(&size.to_ne_bytes());
        out.extend_from_slice(&self.bytes);
    }
}

/// `PERF_RECORD_MMAP` of the kernel text, `[kernel.kallsyms]_text`, as perf
/// writes it (pid -1, start = pgoff = `_text`). Nothing when kallsyms hides
/// addresses (kptr_restrict): report then names kernel frames unknown.
pub(crate) fn kernel_mmap(layout: &SampleIdLayout, out: &mut Vec<u8>) {
    let Ok(addresses) = proc::kallsyms_addresses(&["_text", "_etext"]) else {
        return;
    };
    let Some(start) = addresses.first().copied().flatten() else {
        return;
    };
    let end = addresses
        .get(1)
        .copied()
        .flatten()
        .filter(|&e| e > start)
        .unwrap_or(u64::MAX);
    let mut r = RecordBuf::new(PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL);
    r.u32(u32::MAX)
        .u32(0)
        .u64(start)
        .u64(end - start)
        .u64(start)
        .string("[kernel.kallsyms]_text");
    r.sample_id(layout, -1, 0);
    r.finish(out);
    for module in proc::modules().unwrap_or_default() {
        let path = proc::module_path(&module.name)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("[{}]", module.name));
        let mut r = RecordBuf::new(PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL);
        r.u32(u32::MAX)
            .u32(0)
            .u64(module.start)
            .u64(module.size)
            .u64(0)
            .string(&path);
        r.sample_id(layout, -1, 0);
        r.finish(out);
    }
}

/// `PERF_RECORD_COMM` for one thread.
pub(crate) fn comm(layout: &SampleIdLayout, pid: i32, tid: i32, name: &str, out: &mut Vec<u8>) {
    let mut r = RecordBuf::new(PERF_RECORD_COMM, 0);
    r.u32(pid as u32).u32(tid as u32).string(name);
    r.sample_id(layout, pid, tid);
    r.finish(out);
}

/// COMM for every thread and MMAP2 for every executable mapping of `pid`.
/// A process that exits meanwhile is skipped.
pub(crate) fn process(layout: &SampleIdLayout, pid: i32, out: &mut Vec<u8>) {
    let Ok(tids) = proc::threads(pid) else {
        return;
    };
    for &tid in &tids {
        if let Ok(name) = proc::comm(pid, tid) {
            comm(layout, pid, tid, &name, out);
        }
    }
    let Ok(maps) = proc::maps(pid) else {
        return;
    };
    for map in maps.iter().filter(|m| m.is_executable()) {
        let name = if map.path.is_empty() {
            "//anon"
        } else {
            map.path.as_str()
        };
        if name == "[vsyscall]" {
            continue;
        }
        let mut r = RecordBuf::new(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
        r.u32(pid as u32)
            .u32(pid as u32)
            .u64(map.start)
            .u64(map.end - map.start)
            .u64(map.offset);
        r.u32(map.dev_major)
            .u32(map.dev_minor)
            .u64(map.inode)
            .u64(0);
        let prot = (libc::PROT_READ | libc::PROT_EXEC) as u32;
        let flags = if map.perms.ends_with('s') {
            libc::MAP_SHARED
        } else {
            libc::MAP_PRIVATE
        } as u32;
        r.u32(prot).u32(flags).string(name);
        r.sample_id(layout, pid, pid);
        r.finish(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_record_layout() {
        let layout = SampleIdLayout {
            sample_type: PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_IDENTIFIER,
            id: 7,
        };
        let mut out = Vec::new();
        comm(&layout, 10, 11, "bash", &mut out);
        // header 8 + pid/tid 8 + "bash\0" padded to 8 + trailer 8+8+8
        assert_eq!(out.len(), 8 + 8 + 8 + 24);
        assert_eq!(u16::from_ne_bytes([out[6], out[7]]) as usize, out.len());
        assert_eq!(&out[16..21], b"bash\0");
        assert_eq!(
            u64::from_ne_bytes(out[out.len() - 8..].try_into().unwrap()),
            7
        );
    }
}
