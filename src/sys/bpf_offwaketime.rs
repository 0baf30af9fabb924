//! `scry offwaketime`'s kernel side: loads `src/bpf/offwaketime.bpf.c`
//! through the engine (its stack map sized as asked, the filters as
//! offcputime's) and reads its sums: per (blocked task and its stacks,
//! waker and its stacks) the microseconds blocked, with the stacks'
//! addresses from the stack-trace map. The rules are in the program's
//! header comment.

use std::io;

use super::bpf_engine::{self, Hook, Loaded, comm_at, u32_at, u64_at};
use super::bpf_offcputime::{OffcputimeSettings, configure_blocked};

super::bpf::bpf_skeleton!("offwaketime.skel.rs");

use skel::{OffwaketimeSkel, OffwaketimeSkelBuilder};

/// One side of a sum: a task and its stacks (innermost first; `None`:
/// not taken, or none: a kernel thread's user stack).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TaskStacks {
    pub(crate) tid: u32,
    pub(crate) tgid: u32,
    pub(crate) comm: String,
    pub(crate) user: Option<Vec<u64>>,
    pub(crate) kernel: Option<Vec<u64>>,
    /// The user stack id: -1 a kernel thread (nothing missed), another
    /// negative one a stack the kernel missed.
    pub(crate) user_stack_id: i32,
}

/// One sum: `target` blocked `us` microseconds in all with these stacks,
/// until `waker` (`None`: no wakeup seen, e.g. a preemption) woke it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OffwakeSum {
    pub(crate) target: TaskStacks,
    pub(crate) waker: Option<TaskStacks>,
    pub(crate) us: u64,
}

#[derive(Debug)]
pub(crate) struct OffwaketimeBpf {
    loaded: Loaded<OffwaketimeSkel<'static>>,
}

/// The half of a key at `at`: tid, tgid, user and kernel stack ids, comm.
fn half<M: libbpf_rs::MapCore>(
    stacks: &M,
    key: &[u8],
    at: usize,
) -> io::Result<Option<TaskStacks>> {
    let (Some(tid), Some(tgid), Some(user_id), Some(kern_id)) = (
        u32_at(key, at),
        u32_at(key, at + 4),
        u32_at(key, at + 8),
        u32_at(key, at + 12),
    ) else {
        return Ok(None);
    };
    let comm = comm_at(key, at + 16, 16);
    if comm.is_empty() {
        return Ok(None);
    }
    let what = "reading the BPF stack map";
    Ok(Some(TaskStacks {
        tid,
        tgid,
        comm,
        user: bpf_engine::stack_ips(stacks, user_id as i32, what)?,
        kernel: bpf_engine::stack_ips(stacks, kern_id as i32, what)?,
        user_stack_id: user_id as i32,
    }))
}

impl OffwaketimeBpf {
    pub(crate) fn load(settings: OffcputimeSettings) -> io::Result<OffwaketimeBpf> {
        let loaded = bpf_engine::load_now(
            OffwaketimeSkelBuilder::default,
            |open: &mut skel::OpenOffwaketimeSkel<'static>| configure_blocked!(open, settings),
        )?;
        Ok(OffwaketimeBpf { loaded })
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The processes (tgids) of the targets and wakers seen so far.
    pub(crate) fn tgids(&self) -> io::Result<Vec<u32>> {
        let entries = bpf_engine::hash_entries(&self.loaded.skel.maps.sums, "reading the sums")?;
        let mut tgids: Vec<u32> = entries
            .iter()
            .flat_map(|(k, _)| [u32_at(k, 4), u32_at(k, 36)])
            .flatten()
            .collect();
        tgids.sort_unstable();
        tgids.dedup();
        Ok(tgids)
    }

    /// Every sum over zero, with its stacks.
    pub(crate) fn read(&self) -> io::Result<Vec<OffwakeSum>> {
        let maps = &self.loaded.skel.maps;
        let entries = bpf_engine::hash_entries(&maps.sums, "reading the BPF off-wake sums")?;
        let mut sums = Vec::with_capacity(entries.len());
        for (key, value) in &entries {
            let Some(us) = u64_at(value, 0).filter(|&us| us > 0) else {
                continue;
            };
            let Some(target) = half(&maps.stacks, key, 0)? else {
                continue;
            };
            sums.push(OffwakeSum {
                target,
                waker: half(&maps.stacks, key, 32)?,
                us,
            });
        }
        Ok(sums)
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}
