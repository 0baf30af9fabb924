//! `scry wakeuptime`'s kernel side: loads `src/bpf/wakeuptime.bpf.c`
//! through the engine (its stack map sized as asked) and reads its sums:
//! per (waker, target, waker's kernel stack) the microseconds the target
//! was blocked, with the stack's addresses from the stack-trace map. The
//! rules are in the program's header comment.

use std::io;

use super::bpf_engine::{self, Hook, Loaded, comm_at, u32_at, u64_at};

super::bpf::bpf_skeleton!("wakeuptime.skel.rs");

use skel::{WakeuptimeSkel, WakeuptimeSkelBuilder};

/// The program's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WakeuptimeSettings {
    /// Only targets of this process.
    pub(crate) pid: Option<u32>,
    pub(crate) user_threads_only: bool,
    pub(crate) min_us: u64,
    pub(crate) max_us: u64,
    /// Distinct stacks the stack map holds.
    pub(crate) stack_storage: u32,
}

/// One sum: `target` blocked `us` microseconds in all until `waker` woke
/// it, with this kernel stack (innermost first; `None`: not taken).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct WakeupSum {
    pub(crate) waker: String,
    pub(crate) target: String,
    pub(crate) us: u64,
    pub(crate) stack: Option<Vec<u64>>,
}

#[derive(Debug)]
pub(crate) struct WakeuptimeBpf {
    loaded: Loaded<WakeuptimeSkel<'static>>,
}

impl WakeuptimeBpf {
    pub(crate) fn load(settings: WakeuptimeSettings) -> io::Result<WakeuptimeBpf> {
        let loaded = bpf_engine::load_now(
            WakeuptimeSkelBuilder::default,
            |open: &mut skel::OpenWakeuptimeSkel<'static>| {
                bpf_engine::size_stack_map(&mut open.maps.stacks, settings.stack_storage)?;
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.filter_tgid = settings.pid.unwrap_or(0);
                rodata.user_threads_only = settings.user_threads_only;
                rodata.min_us = settings.min_us;
                rodata.max_us = settings.max_us;
                Ok(())
            },
        )?;
        Ok(WakeuptimeBpf { loaded })
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// Every sum over zero, with its stack.
    pub(crate) fn read(&self) -> io::Result<Vec<WakeupSum>> {
        let maps = &self.loaded.skel.maps;
        let entries = bpf_engine::hash_entries(&maps.sums, "reading the BPF wakeup sums")?;
        let mut sums = Vec::with_capacity(entries.len());
        for (key, value) in &entries {
            let (Some(stack_id), Some(us)) = (u32_at(key, 32), u64_at(value, 0)) else {
                continue;
            };
            if us == 0 {
                continue;
            }
            sums.push(WakeupSum {
                waker: comm_at(key, 0, 16),
                target: comm_at(key, 16, 16),
                us,
                stack: bpf_engine::stack_ips(
                    &maps.stacks,
                    stack_id as i32,
                    "reading the BPF stack map",
                )?,
            });
        }
        Ok(sums)
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}
