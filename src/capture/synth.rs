//! Side-band records synthesized from /proc for what existed before the
//! counters did: the kernel's text map, the BPF programs loaded (a KSYMBOL
//! per JIT'd function and a BPF_EVENT per program, as perf writes them, so
//! a sample in one is named from the file, whatever is loaded when it is
//! read), and for `-p`/`-a` the comm and executable mappings of every
//! process already running (as perf does), so their samples still resolve
//! to binaries.
//!
//! Records are built in the kernel's byte layout, with the `sample_id`
//! trailer that `sample_id_all` promises every non-sample record has.

use crate::sys::bpf_progs::{self, BpfProg};
use crate::sys::perf_event::{
    PERF_BPF_EVENT_PROG_LOAD, PERF_RECORD_BPF_EVENT, PERF_RECORD_COMM, PERF_RECORD_KSYMBOL,
    PERF_RECORD_KSYMBOL_TYPE_BPF, PERF_RECORD_MISC_KERNEL, PERF_RECORD_MISC_USER, PERF_RECORD_MMAP,
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
    fn u16(&mut self, v: u16) -> &mut Self {
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

/// A `PERF_RECORD_KSYMBOL` for each function and a `PERF_RECORD_BPF_EVENT`
/// (PROG_LOAD) for each BPF program loaded now (see the module doc).
pub(crate) fn bpf_programs(layout: &SampleIdLayout, out: &mut Vec<u8>) {
    for prog in bpf_progs::loaded_programs() {
        bpf_program(layout, &prog, out);
    }
}

/// The records of one program, functions first, as perf writes them.
pub(crate) fn bpf_program(layout: &SampleIdLayout, prog: &BpfProg, out: &mut Vec<u8>) {
    for func in &prog.funcs {
        let mut r = RecordBuf::new(PERF_RECORD_KSYMBOL, 0);
        r.u64(func.addr)
            .u32(func.len)
            .u16(PERF_RECORD_KSYMBOL_TYPE_BPF)
            .u16(0)
            .string(&func.name);
        r.sample_id(layout, -1, 0);
        r.finish(out);
    }
    let mut r = RecordBuf::new(PERF_RECORD_BPF_EVENT, 0);
    r.u16(PERF_BPF_EVENT_PROG_LOAD).u16(0).u32(prog.id);
    r.bytes.extend_from_slice(&prog.tag);
    r.sample_id(layout, -1, 0);
    r.finish(out);
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

    /// A program's records: a KSYMBOL per function the reader parses
    /// back, then its BPF_EVENT, each with the sample_id trailer.
    #[test]
    fn bpf_program_records() {
        use crate::data::handler::Ksymbol;
        use crate::data::raw::RawRecords;
        use crate::sys::bpf_progs::BpfFunc;
        let layout = SampleIdLayout {
            sample_type: PERF_SAMPLE_TID | PERF_SAMPLE_IDENTIFIER,
            id: 7,
        };
        let func = |addr, name: &str| BpfFunc {
            addr,
            len: 0x40,
            name: name.into(),
        };
        let prog = BpfProg {
            id: 12,
            tag: [1, 2, 3, 4, 5, 6, 7, 8],
            funcs: vec![
                func(0xffff_0000, "bpf_prog_0102030405060708_F"),
                func(0xffff_1000, "x"),
            ],
        };
        let mut out = Vec::new();
        bpf_program(&layout, &prog, &mut out);
        let mut records = RawRecords::new(&out);
        for (addr, name) in [
            (0xffff_0000, "bpf_prog_0102030405060708_F"),
            (0xffff_1000, "x"),
        ] {
            let r = records.next_record().unwrap().unwrap();
            assert_eq!(r.record_type, PERF_RECORD_KSYMBOL);
            let k = Ksymbol::parse(r.body).unwrap();
            assert_eq!(
                (k.addr, k.len, k.ksym_type, k.unregister),
                (addr, 0x40, 1, false)
            );
            assert_eq!(k.name, name.as_bytes());
            assert_eq!(r.u64_at(r.body.len() - 8), Some(7));
        }
        let r = records.next_record().unwrap().unwrap();
        assert_eq!(r.record_type, PERF_RECORD_BPF_EVENT);
        // type, flags, id, tag, then pid/tid and the identifier.
        assert_eq!(r.body.len(), 2 + 2 + 4 + 8 + 8 + 8);
        assert_eq!(&r.body[4..8], &12u32.to_ne_bytes());
        assert_eq!(&r.body[8..16], &prog.tag);
        assert_eq!(records.next_record().unwrap(), None);
    }
}
