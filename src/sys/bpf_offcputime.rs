//! `scry offcputime`'s kernel side: loads `src/bpf/offcputime.bpf.c`
//! through the engine (its stack map sized as asked) and reads its sums:
//! per (thread, user stack, kernel stack, state at the switch-out) the
//! microseconds blocked, with the stacks' addresses from the stack-trace
//! map. The rules (which blocks count) are in the program's header
//! comment. `tgids` lists the processes
//! seen so far without reading the stacks, so the caller can read their
//! maps while they still live.

use std::io;

use super::bpf_engine::{self, Hook, Loaded, comm_at, u32_at, u64_at};

super::bpf::bpf_skeleton!("offcputime.skel.rs");

use skel::{OffcputimeSkel, OffcputimeSkelBuilder};

/// Sizes the stack map of an opened offcputime or offwaketime skeleton
/// and sets the filters of `src/bpf/blocked.bpf.h` in its `.rodata`.
macro_rules! configure_blocked {
    ($open:expr, $settings:expr) => {{
        let settings: &$crate::sys::bpf_offcputime::OffcputimeSettings = &$settings;
        $crate::sys::bpf_engine::size_stack_map(&mut $open.maps.stacks, settings.stack_storage)?;
        let rodata = $crate::sys::bpf::rodata($open.maps.rodata_data.as_deref_mut())?;
        rodata.filter_tgid = settings.pid.unwrap_or(0);
        rodata.filter_tid = settings.tid.unwrap_or(0);
        rodata.user_threads_only = settings.user_threads_only;
        rodata.kernel_threads_only = settings.kernel_threads_only;
        rodata.state = settings.state.map_or(-1, i64::from);
        rodata.min_block_us = settings.min_block_us;
        rodata.max_block_us = settings.max_block_us;
        Ok(())
    }};
}
pub(crate) use configure_blocked;

/// The programs' settings (offcputime's and offwaketime's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OffcputimeSettings {
    pub(crate) pid: Option<u32>,
    pub(crate) tid: Option<u32>,
    pub(crate) user_threads_only: bool,
    pub(crate) kernel_threads_only: bool,
    /// Only blocks that began in a task state matching this one, as bcc's
    /// `--state` (0: TASK_RUNNING, i.e. preempted; another value: a state
    /// with one of its bits; `None`: any).
    pub(crate) state: Option<u32>,
    pub(crate) min_block_us: u64,
    pub(crate) max_block_us: u64,
    /// Distinct stacks the stack map holds.
    pub(crate) stack_storage: u32,
}

/// One sum: a thread blocked with these stacks (innermost first; `None`:
/// the kernel could not take it, or the thread has no user stack) for
/// `us` microseconds in all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OffcpuSum {
    pub(crate) tid: u32,
    pub(crate) tgid: u32,
    pub(crate) comm: String,
    pub(crate) us: u64,
    pub(crate) user: Option<Vec<u64>>,
    pub(crate) kernel: Option<Vec<u64>>,
    /// The key's user stack id: -1 for a kernel thread (no user stack to
    /// miss), another negative one for a stack the kernel missed.
    pub(crate) user_stack_id: i32,
    /// The task's state when it left the CPU (`__state`: 0 preempted, 1
    /// TASK_INTERRUPTIBLE, 2 TASK_UNINTERRUPTIBLE, ...).
    pub(crate) state: u32,
    /// The key's kernel stack id: -EFAULT for a sample taken in user mode
    /// (no kernel stack to miss), another negative one for a miss.
    pub(crate) kernel_stack_id: i32,
}

#[derive(Debug)]
pub(crate) struct OffcputimeBpf {
    loaded: Loaded<OffcputimeSkel<'static>>,
}

impl OffcputimeBpf {
    pub(crate) fn load(settings: OffcputimeSettings) -> io::Result<OffcputimeBpf> {
        let loaded = bpf_engine::load_now(
            OffcputimeSkelBuilder::default,
            |open: &mut skel::OpenOffcputimeSkel<'static>| configure_blocked!(open, settings),
        )?;
        Ok(OffcputimeBpf { loaded })
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The processes (tgids) that blocked so far.
    pub(crate) fn tgids(&self) -> io::Result<Vec<u32>> {
        let entries = bpf_engine::hash_entries(&self.loaded.skel.maps.sums, "reading the sums")?;
        let mut tgids: Vec<u32> = entries.iter().filter_map(|(k, _)| u32_at(k, 4)).collect();
        tgids.sort_unstable();
        tgids.dedup();
        Ok(tgids)
    }

    /// Every sum over zero, with its stacks.
    pub(crate) fn read(&self) -> io::Result<Vec<OffcpuSum>> {
        let maps = &self.loaded.skel.maps;
        let entries = bpf_engine::hash_entries(&maps.sums, "reading the BPF off-CPU sums")?;
        let mut sums = Vec::with_capacity(entries.len());
        for (key, value) in &entries {
            let (Some(tid), Some(tgid), Some(user_id), Some(kern_id), Some(state), Some(us)) = (
                u32_at(key, 0),
                u32_at(key, 4),
                u32_at(key, 8),
                u32_at(key, 12),
                u32_at(key, 16),
                u64_at(value, 0),
            ) else {
                continue;
            };
            if us == 0 {
                continue;
            }
            let what = "reading the BPF stack map";
            sums.push(OffcpuSum {
                tid,
                tgid,
                comm: comm_at(value, 8, 16),
                us,
                user: bpf_engine::stack_ips(&maps.stacks, user_id as i32, what)?,
                kernel: bpf_engine::stack_ips(&maps.stacks, kern_id as i32, what)?,
                user_stack_id: user_id as i32,
                state,
                kernel_stack_id: kern_id as i32,
            });
        }
        Ok(sums)
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}
