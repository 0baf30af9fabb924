//! The BPF engine's map readers: whole maps read in batches where the
//! kernel allows (one lookup per key before 5.6), ring buffers, drop
//! counts, stack maps, the `targets` map of `src/bpf/targets.bpf.h`, and
//! the fixed-offset readers of map keys and values. Split from
//! `sys::bpf_engine` (which re-exports them), whose own job is loading
//! and hooking programs.

use std::io;

use libbpf_rs::{MapCore, MapFlags};

use super::bpf::io_error;

/// Every (key, value) of a hash map: in batches where the kernel allows
/// (5.6 and later), else key by key.
pub(crate) fn hash_entries<M: MapCore>(map: &M, what: &str) -> io::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    if let Ok(batches) = map.lookup_batch(BATCH, MapFlags::ANY, MapFlags::ANY) {
        return Ok(batches.collect());
    }
    let mut entries = Vec::new();
    for key in map.keys() {
        if let Some(value) = map
            .lookup(&key, MapFlags::ANY)
            .map_err(|e| io_error(what, e))?
        {
            entries.push((key, value));
        }
    }
    Ok(entries)
}

/// Every (key, value) of a hash map, each deleted as it is read (so the
/// next read starts from zero; an entry added meanwhile waits for it), as
/// `parse` makes it (an entry it refuses, `None`, is dropped).
pub(crate) fn take_entries<M: MapCore, T>(
    map: &M,
    what: &str,
    parse: impl Fn(&[u8], &[u8]) -> Option<T>,
) -> io::Result<Vec<T>> {
    let mut entries = Vec::new();
    for key in map.keys() {
        match map.lookup_and_delete(&key) {
            Ok(Some(value)) => entries.extend(parse(&key, &value)),
            Ok(None) => {}
            Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(what, e)),
        }
    }
    Ok(entries)
}

/// A key and its value on each CPU.
pub(crate) type PerCpuEntry = (Vec<u8>, Vec<Vec<u8>>);

/// Every value of an array map of `len` elements, in index order: in
/// batches (a few system calls), or one lookup per element where batched
/// reads are refused (kernels before 5.6) or come back short.
pub(crate) fn array_values<M: MapCore>(map: &M, len: u32, what: &str) -> io::Result<Vec<Vec<u8>>> {
    if let Ok(batches) = map.lookup_batch(BATCH, MapFlags::ANY, MapFlags::ANY) {
        let values: Vec<Vec<u8>> = batches.map(|(_, value)| value).collect();
        if values.len() == len as usize {
            return Ok(values);
        }
    }
    (0..len)
        .map(|index| {
            map.lookup(&index.to_ne_bytes(), MapFlags::ANY)
                .map_err(|e| io_error(what, e))
                .map(Option::unwrap_or_default)
        })
        .collect()
}

/// A BPF ring buffer's reader (the `events` map of `src/bpf/ring.bpf.h`):
/// `fd` polls readable when events wait; `consume` hands each to the
/// callback given to [`ring_reader`].
pub(crate) struct RingReader<'a> {
    ring: libbpf_rs::RingBuffer<'a>,
}

impl std::fmt::Debug for RingReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingReader").finish_non_exhaustive()
    }
}

impl RingReader<'_> {
    /// The descriptor to poll (an epoll set over the ring).
    pub(crate) fn fd(&self) -> std::os::fd::RawFd {
        self.ring.epoll_fd()
    }

    /// Hands every waiting event to the callback.
    pub(crate) fn consume(&self) -> io::Result<()> {
        self.ring
            .consume()
            .map_err(|e| io_error("reading the BPF ring buffer", e))
    }
}

/// A reader of ring buffer `map`, calling `on_event` with each event's
/// bytes.
pub(crate) fn ring_reader<'a, M: MapCore>(
    map: &'a M,
    mut on_event: impl FnMut(&[u8]) + 'a,
) -> io::Result<RingReader<'a>> {
    let mut builder = libbpf_rs::RingBufferBuilder::new();
    builder
        .add(map, move |data: &[u8]| {
            on_event(data);
            0
        })
        .map_err(|e| io_error("opening the BPF ring buffer", e))?;
    let ring = builder
        .build()
        .map_err(|e| io_error("opening the BPF ring buffer", e))?;
    Ok(RingReader { ring })
}

/// The events a program could not send (its `drops`, summed over CPUs).
pub(crate) fn dropped<M: MapCore>(drops: &M) -> io::Result<u64> {
    let per_cpu = drops
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| io_error("reading the BPF drop count", e))?
        .unwrap_or_default();
    Ok(per_cpu.iter().filter_map(|v| u64_at(v, 0)).sum())
}

/// Elements per batched read.
const BATCH: u32 = 4096;

/// Every (key, per-CPU values) of a per-CPU hash or array map.
pub(crate) fn percpu_entries<M: MapCore>(map: &M, what: &str) -> io::Result<Vec<PerCpuEntry>> {
    let mut entries = Vec::new();
    for key in map.keys() {
        if let Some(values) = map
            .lookup_percpu(&key, MapFlags::ANY)
            .map_err(|e| io_error(what, e))?
        {
            entries.push((key, values));
        }
    }
    Ok(entries)
}

/// Sizes a BPF_MAP_TYPE_STACK_TRACE map before load: `entries` distinct
/// stacks (bcc's `--stack-storage-size`).
pub(crate) fn size_stack_map(map: &mut libbpf_rs::OpenMapMut<'_>, entries: u32) -> io::Result<()> {
    map.set_max_entries(entries)
        .map_err(|e| io_error("sizing the BPF stack map", e))
}

/// The addresses of stack `id` in a BPF_MAP_TYPE_STACK_TRACE map, the
/// innermost first (the map's zeroed tail cut off); `None` when the id is
/// negative (`bpf_get_stackid` failed: no user stack, the map was full) or
/// no longer in the map.
pub(crate) fn stack_ips<M: MapCore>(map: &M, id: i32, what: &str) -> io::Result<Option<Vec<u64>>> {
    let Ok(key) = u32::try_from(id) else {
        return Ok(None);
    };
    let value = match map.lookup(&key.to_ne_bytes(), MapFlags::ANY) {
        Ok(value) => value,
        Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => None,
        Err(e) => return Err(io_error(what, e)),
    };
    Ok(value.map(|bytes| {
        bytes
            .chunks_exact(8)
            .filter_map(|b| b.try_into().ok().map(u64::from_ne_bytes))
            .take_while(|&ip| ip != 0)
            .collect()
    }))
}

/// `targets` values (src/bpf/targets.bpf.h).
const TARGET_WATCHED: u8 = 1;
const TARGET_AT_EXEC: u8 = 2;

/// Puts process `tgid` in a program's `targets` map (targets.bpf.h): it
/// and what it forks count from now on; `from_exec`: only from its next
/// exec on (a workload forked and waiting to exec).
pub(crate) fn add_target<M: MapCore>(targets: &M, tgid: i32, from_exec: bool) -> io::Result<()> {
    let value = if from_exec {
        TARGET_AT_EXEC
    } else {
        TARGET_WATCHED
    };
    targets
        .update(&tgid.to_ne_bytes(), &[value], MapFlags::ANY)
        .map_err(|e| io_error("adding a process to the BPF targets", e))
}

/// Empties a hash map (for interval output: each interval starts at 0).
pub(crate) fn clear_hash<M: MapCore>(map: &M, what: &str) -> io::Result<()> {
    let keys: Vec<Vec<u8>> = map.keys().collect();
    for key in keys {
        match map.delete(&key) {
            Ok(()) => {}
            Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(what, e)),
        }
    }
    Ok(())
}

/// A u64 at `offset` of a map key or value.
pub(crate) fn u64_at(bytes: &[u8], offset: usize) -> Option<u64> {
    let b = bytes.get(offset..offset + 8)?;
    Some(u64::from_ne_bytes(b.try_into().ok()?))
}

/// A u32 at `offset` of a map key or value.
pub(crate) fn u32_at(bytes: &[u8], offset: usize) -> Option<u32> {
    let b = bytes.get(offset..offset + 4)?;
    Some(u32::from_ne_bytes(b.try_into().ok()?))
}

/// A NUL-terminated name (a task's comm) at `offset`, at most `len` bytes.
pub(crate) fn comm_at(bytes: &[u8], offset: usize, len: usize) -> String {
    let raw = bytes.get(offset..).unwrap_or_default();
    let raw = &raw[..raw.len().min(len)];
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}
