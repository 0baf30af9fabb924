//! `scry klockstat`'s kernel side: loads `src/bpf/klockstat.bpf.c`
//! through the engine and reads its sums: per (kernel stack, lock type
//! flags) the contentions' count, total, max and min in ns, with the
//! stack's addresses; or per thread (libbpf-tools' -P), with the thread's
//! id and name and no stack. The rules are in the program's header comment.

use std::io;

use super::bpf_engine::{self, Hook, Loaded, u32_at, u64_at};

super::bpf::bpf_skeleton!("klockstat.skel.rs");

use skel::{KlockstatSkel, KlockstatSkelBuilder};

/// The program's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KlockstatSettings {
    pub(crate) pid: Option<u32>,
    pub(crate) tid: Option<u32>,
    /// Distinct stacks the stack map holds.
    pub(crate) stack_storage: u32,
    /// Only this lock (its address; libbpf-tools' -L).
    pub(crate) lock: Option<u64>,
    /// One sum per thread (libbpf-tools' -P), no stacks.
    pub(crate) per_thread: bool,
}

/// The contentions from one kernel stack on one type of lock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LockWaits {
    /// `LCB_F_*` of lock:contention_begin (spin, read, write, rt, percpu,
    /// mutex).
    pub(crate) flags: u32,
    pub(crate) count: u64,
    pub(crate) total_ns: u64,
    pub(crate) max_ns: u64,
    pub(crate) min_ns: u64,
    /// The kernel stack, innermost first (`None`: not taken, or per
    /// thread).
    pub(crate) stack: Option<Vec<u64>>,
    /// Per thread: the waiting thread's id and name.
    pub(crate) thread: Option<(u32, String)>,
}

#[derive(Debug)]
pub(crate) struct KlockstatBpf {
    loaded: Loaded<KlockstatSkel<'static>>,
}

impl KlockstatBpf {
    pub(crate) fn load(settings: KlockstatSettings) -> io::Result<KlockstatBpf> {
        let loaded = bpf_engine::load_now(
            KlockstatSkelBuilder::default,
            |open: &mut skel::OpenKlockstatSkel<'static>| {
                bpf_engine::size_stack_map(&mut open.maps.stacks, settings.stack_storage)?;
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.filter_tgid = settings.pid.unwrap_or(0);
                rodata.filter_tid = settings.tid.unwrap_or(0);
                rodata.filter_lock = settings.lock.unwrap_or(0);
                rodata.per_thread = settings.per_thread;
                Ok(())
            },
        )?;
        Ok(KlockstatBpf { loaded })
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// Every sum, with its stack.
    pub(crate) fn read(&self) -> io::Result<Vec<LockWaits>> {
        let maps = &self.loaded.skel.maps;
        let entries = bpf_engine::hash_entries(&maps.waits, "reading the BPF lock waits")?;
        let mut waits = Vec::with_capacity(entries.len());
        for (key, value) in &entries {
            let (Some(stack_id), Some(flags), Some(tid)) =
                (u32_at(key, 0), u32_at(key, 4), u32_at(key, 8))
            else {
                continue;
            };
            let field = |i: usize| u64_at(value, 8 * i).unwrap_or(0);
            let comm = value.get(32..48).unwrap_or_default();
            let comm = &comm[..comm.iter().position(|&b| b == 0).unwrap_or(comm.len())];
            let thread = (tid != 0).then(|| (tid, String::from_utf8_lossy(comm).into_owned()));
            waits.push(LockWaits {
                flags,
                count: field(0),
                total_ns: field(1),
                max_ns: field(2),
                min_ns: field(3),
                stack: bpf_engine::stack_ips(
                    &maps.stacks,
                    stack_id as i32,
                    "reading the BPF stack map",
                )?,
                thread,
            });
        }
        Ok(waits)
    }

    /// Deletes every sum (libbpf-tools' -R: each interval from zero);
    /// the stacks stay, the next sums may share them.
    pub(crate) fn reset(&self) -> io::Result<()> {
        super::bpf_hists::drain_with(&self.loaded.skel.maps.waits, |_, _| Some(())).map(drop)
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}
