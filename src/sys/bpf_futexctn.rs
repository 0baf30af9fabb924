//! `scry futexctn`'s kernel side: loads `src/bpf/futexctn.bpf.c` through
//! the engine and reads its sums: per (thread, futex address, user stack)
//! the waits in FUTEX_WAIT (count, total, max, min, log2 µs slots), the
//! stack's addresses, and the registers and stack top kept with each
//! stack (for the caller a frame-pointer walk skips). The rules are in the
//! program's header comment.

use std::collections::HashMap;
use std::io;

use libbpf_rs::{MapCore, MapFlags};

use super::bpf::io_error;
use super::bpf_engine::{self, Hook, Loaded, comm_at, u32_at, u64_at};

super::bpf::bpf_skeleton!("futexctn.skel.rs");

use skel::{FutexctnSkel, FutexctnSkelBuilder};

/// The program's slots (`MAX_SLOTS`) and stack copy (`COPY_BYTES`).
const SLOTS: usize = 32;
const COPY_BYTES: usize = 1024;

/// The program's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FutexctnSettings {
    pub(crate) pid: Option<u32>,
    pub(crate) tid: Option<u32>,
    /// Only this futex address.
    pub(crate) lock: Option<u64>,
    /// Distinct stacks the stack map holds.
    pub(crate) stack_storage: u32,
}

/// The user registers and the top of the stack when a stack was taken.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UserCopy {
    pub(crate) ip: u64,
    pub(crate) sp: u64,
    pub(crate) bp: u64,
    /// The stack from `sp` up.
    pub(crate) stack: Vec<u8>,
}

/// One thread's waits on one futex from one stack.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FutexWaits {
    pub(crate) tid: u32,
    pub(crate) tgid: u32,
    pub(crate) comm: String,
    pub(crate) uaddr: u64,
    pub(crate) contended: u64,
    pub(crate) total_ns: u64,
    pub(crate) max_ns: u64,
    pub(crate) min_ns: u64,
    /// log2 slots of the waits in µs.
    pub(crate) slots: Vec<u64>,
    /// The user stack, innermost first (`None`: not taken).
    pub(crate) stack: Option<Vec<u64>>,
    pub(crate) copy: Option<UserCopy>,
}

#[derive(Debug)]
pub(crate) struct FutexctnBpf {
    loaded: Loaded<FutexctnSkel<'static>>,
}

impl FutexctnBpf {
    pub(crate) fn load(settings: FutexctnSettings) -> io::Result<FutexctnBpf> {
        let loaded = bpf_engine::load_now(
            FutexctnSkelBuilder::default,
            |open: &mut skel::OpenFutexctnSkel<'static>| {
                bpf_engine::size_stack_map(&mut open.maps.stacks, settings.stack_storage)?;
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.filter_tgid = settings.pid.unwrap_or(0);
                rodata.filter_tid = settings.tid.unwrap_or(0);
                rodata.filter_lock = settings.lock.unwrap_or(0);
                Ok(())
            },
        )?;
        Ok(FutexctnBpf { loaded })
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The processes (tgids) that waited so far.
    pub(crate) fn tgids(&self) -> io::Result<Vec<u32>> {
        let entries = bpf_engine::hash_entries(&self.loaded.skel.maps.hists, "reading the waits")?;
        let mut tgids: Vec<u32> = entries.iter().filter_map(|(k, _)| u32_at(k, 4)).collect();
        tgids.sort_unstable();
        tgids.dedup();
        Ok(tgids)
    }

    /// Every thread's waits, with their stacks.
    pub(crate) fn read(&self) -> io::Result<Vec<FutexWaits>> {
        let maps = &self.loaded.skel.maps;
        let entries = bpf_engine::hash_entries(&maps.hists, "reading the BPF futex waits")?;
        let mut copies: HashMap<i32, Option<UserCopy>> = HashMap::new();
        let mut waits = Vec::with_capacity(entries.len());
        for (key, value) in &entries {
            let (Some(tid), Some(tgid), Some(uaddr), Some(stack_id)) = (
                u32_at(key, 0),
                u32_at(key, 4),
                u64_at(key, 8),
                u32_at(key, 16),
            ) else {
                continue;
            };
            let stack_id = stack_id as i32;
            let field = |i: usize| u64_at(value, 8 * i).unwrap_or(0);
            let slots = (0..SLOTS)
                .map(|i| u64::from(u32_at(value, 32 + 4 * i).unwrap_or(0)))
                .collect();
            let copy = match copies.get(&stack_id) {
                Some(copy) => copy.clone(),
                None => {
                    let copy = read_copy(&maps.copies, stack_id)?;
                    copies.insert(stack_id, copy.clone());
                    copy
                }
            };
            waits.push(FutexWaits {
                tid,
                tgid,
                comm: comm_at(value, 32 + 4 * SLOTS, 16),
                uaddr,
                contended: field(0),
                total_ns: field(1),
                max_ns: field(2),
                min_ns: field(3),
                slots,
                stack: bpf_engine::stack_ips(&maps.stacks, stack_id, "reading the BPF stack map")?,
                copy,
            });
        }
        Ok(waits)
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}

/// The registers and stack top kept with stack `id`, if any.
fn read_copy<M: MapCore>(map: &M, id: i32) -> io::Result<Option<UserCopy>> {
    let Ok(key) = u32::try_from(id) else {
        return Ok(None);
    };
    let value = match map.lookup(&key.to_ne_bytes(), MapFlags::ANY) {
        Ok(value) => value,
        Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => None,
        Err(e) => return Err(io_error("reading the BPF stack copies", e)),
    };
    Ok(value.and_then(|v| {
        let size = usize::try_from(u64_at(&v, 24)?).ok()?.min(COPY_BYTES);
        Some(UserCopy {
            ip: u64_at(&v, 0)?,
            sp: u64_at(&v, 8)?,
            bp: u64_at(&v, 16)?,
            stack: v.get(32..32 + size)?.to_vec(),
        })
    }))
}
