//! A sample's addresses, leaf first, each marked kernel or user, from
//! whichever of the three call-graph modes recorded it:
//!
//! - frame pointers (`--call-graph fp`): the callchain as the kernel gave it;
//! - DWARF (`--call-graph dwarf`): the kernel part of the callchain, then
//!   the user stack unwound from the registers and the stack copy (the
//!   kernel records no user chain then: `exclude_callchain_user`);
//! - frame pointers with the top of the stack (`-g`): a user chain *and* a
//!   stack copy; the first user frames are unwound and joined to the chain
//!   (`symbol::stack_join`).
//!
//! The mode is read from the sample, not the event: a user chain next to a
//! stack copy is the third mode, a copy without one the second, so files of
//! perf and of older scry read as they were written.

use std::borrow::Cow;

use linux_perf_event_reader::constants::{PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX};
use linux_perf_event_reader::{CpuMode, SampleRecord};

use super::{KERNEL_START, Reach, Resolver};
use crate::data::handler::{InPlace, RegWords};
use crate::symbol::process::{DsoId, DsoKind};
use crate::symbol::stack_join::{self, Join, UserTop};
use crate::symbol::unwind::{
    PERF_REG_X86_BP, PERF_REG_X86_IP, PERF_REG_X86_SP, Unwound, UnwoundFrame, UserState,
};

/// The kernel's default `perf_event_max_stack`: a chain this long was cut.
const MAX_STACK: usize = 127;

impl Resolver {
    /// Fills `addrs` (cleared first) with the addresses of sample `s` of
    /// process `pid`, leaf first, each with whether it is a kernel address;
    /// returns how far the stack reaches. `scry script` prints these.
    pub(crate) fn sample_addresses(
        &mut self,
        pid: i32,
        s: &SampleRecord<'_>,
        addrs: &mut Vec<(u64, bool)>,
    ) -> Reach {
        self.sample_addresses_in_place(pid, s, InPlace::default(), addrs)
    }

    /// `sample_addresses` with what the reader read in place (`place`:
    /// the callchain and user registers, the same values as `s`'s).
    pub(crate) fn sample_addresses_in_place(
        &mut self,
        pid: i32,
        s: &SampleRecord<'_>,
        place: InPlace<'_>,
        addrs: &mut Vec<(u64, bool)>,
    ) -> Reach {
        addrs.clear();
        let copy = user_copy(s, place.user_regs);
        let state = copy.as_ref().map(|(ip, sp, bp, bytes)| UserState {
            ip: *ip,
            sp: *sp,
            bp: *bp,
            stack: bytes,
        });
        let mut user_chain = std::mem::take(&mut self.chain_scratch);
        user_chain.clear();
        let mut reach = Reach::NoCallchain;
        let mut chain_len = 0;
        if let Some(parsed) = &s.callchain {
            reach = Reach::Whole;
            let mut kernel = s.cpu_mode == CpuMode::Kernel;
            chain_len = parsed.len();
            let split = state.is_some();
            let mut take = |addr: u64| {
                if addr >= PERF_CONTEXT_MAX {
                    kernel = addr == PERF_CONTEXT_KERNEL;
                    return;
                }
                let kernel = kernel || addr >= KERNEL_START;
                if !kernel && split {
                    user_chain.push(addr);
                } else {
                    addrs.push((addr, kernel));
                }
            };
            match place.chain.filter(|c| c.len() == chain_len) {
                Some(words) => words.iter().for_each(&mut take),
                None => (0..chain_len).map_while(|i| parsed.get(i)).for_each(take),
            }
        }
        if let Some(state) = state.filter(|st| st.ip != 0) {
            let user = if user_chain.is_empty() {
                self.unwind_all(pid, &state, &mut reach)
            } else {
                self.join_chain(pid, &state, &user_chain, &mut reach)
            };
            addrs.extend(user.iter().map(|&a| (a, false)));
            self.user_scratch = user;
        } else {
            addrs.extend(user_chain.iter().map(|&a| (a, false)));
        }
        self.chain_scratch = user_chain;
        if addrs.is_empty()
            && let Some(ip) = s.ip
        {
            addrs.push((ip, s.cpu_mode == CpuMode::Kernel || ip >= KERNEL_START));
        }
        if chain_len >= MAX_STACK && reach != Reach::NoCallchain {
            reach = Reach::Cut;
        }
        reach
    }

    /// DWARF mode: the whole user stack from the copy.
    fn unwind_all(&mut self, pid: i32, state: &UserState<'_>, reach: &mut Reach) -> Vec<u64> {
        let mut user = std::mem::take(&mut self.user_scratch);
        user.clear();
        let mut frames = std::mem::take(&mut self.frame_scratch);
        frames.clear();
        let complete = match self.unwind_user(pid, state, &mut frames) {
            Some(how) => {
                user.extend(frames.iter().map(|f| f.addr));
                how.complete
            }
            None => {
                user.push(state.ip);
                false
            }
        };
        self.frame_scratch = frames;
        *reach = if complete && *reach != Reach::Cut {
            Reach::Unwound
        } else {
            Reach::Cut
        };
        user
    }

    /// The user frames of `pid` unwound from `state` into `frames`, with
    /// the binaries of its file mappings; None when its maps are unknown.
    fn unwind_user(
        &mut self,
        pid: i32,
        state: &UserState<'_>,
        frames: &mut Vec<UnwoundFrame>,
    ) -> Option<Unwound> {
        let space = self.procs.space(pid)?;
        let (dsos, binaries) = (&self.dsos, &mut self.binaries);
        let lookup = |dso: DsoId| {
            let d = dsos.get(dso);
            (d.kind == DsoKind::File)
                .then(|| binaries.get(&d.file, d.build_id.as_deref()).ok())
                .flatten()
        };
        Some(
            self.unwinder
                .unwind_frames(pid, space, lookup, state, frames),
        )
    }

    /// `-g`: the first user frames unwound, joined to the chain.
    fn join_chain(
        &mut self,
        pid: i32,
        state: &UserState<'_>,
        chain: &[u64],
        reach: &mut Reach,
    ) -> Vec<u64> {
        let mut user = std::mem::take(&mut self.user_scratch);
        user.clear();
        let mut frames = std::mem::take(&mut self.frame_scratch);
        frames.clear();
        let how = self
            .unwind_user(pid, state, &mut frames)
            .unwrap_or_default();
        let top = UserTop {
            sp: state.sp,
            bp: state.bp,
            stack: state.stack,
        };
        match stack_join::join(chain, &top, &frames, how, &mut user) {
            Join::Repaired if how.complete && *reach == Reach::Whole => *reach = Reach::Unwound,
            Join::Repaired => {}
            Join::Cut => *reach = Reach::Cut,
            Join::Kept(_) => {
                if *reach == Reach::Whole {
                    *reach = Reach::FpKept;
                }
            }
        }
        self.frame_scratch = frames;
        user
    }
}

/// The user %ip, %sp, %bp and the stack copy (as much as the kernel
/// filled) of a sample, if it has them; its registers are read from
/// `in_place` when the reader had them there.
fn user_copy<'a>(
    s: &SampleRecord<'a>,
    in_place: Option<RegWords<'_>>,
) -> Option<(u64, u64, u64, Cow<'a, [u8]>)> {
    let (Some(regs), Some((stack, dyn_size))) = (&s.user_regs, &s.user_stack) else {
        return None;
    };
    let mut bytes = stack.as_slice();
    let n = usize::try_from(*dyn_size).unwrap_or(usize::MAX);
    if n < bytes.len() {
        bytes = match bytes {
            Cow::Borrowed(b) => Cow::Borrowed(b.get(..n).unwrap_or(&[])),
            Cow::Owned(mut v) => {
                v.truncate(n);
                Cow::Owned(v)
            }
        };
    }
    let (ip, sp, bp) = match in_place {
        Some(words) => (
            words.get(PERF_REG_X86_IP)?,
            words.get(PERF_REG_X86_SP)?,
            words.get(PERF_REG_X86_BP)?,
        ),
        None => (
            regs.get(PERF_REG_X86_IP)?,
            regs.get(PERF_REG_X86_SP)?,
            regs.get(PERF_REG_X86_BP)?,
        ),
    };
    Some((ip, sp, bp, bytes))
}
