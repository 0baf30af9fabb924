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

use linux_perf_event_reader::constants::{
    PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX, PERF_CONTEXT_USER,
};
use linux_perf_event_reader::{CpuMode, RawData, SampleRecord};

use super::stack::StackKey;
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
        let mut user_range = 0..0;
        if let Some(parsed) = &s.callchain {
            reach = Reach::Whole;
            chain_len = parsed.len();
            match place.chain.filter(|c| c.len() == chain_len) {
                Some(words) => user_chain.extend(words.iter()),
                None => user_chain.extend((0..chain_len).map_while(|i| parsed.get(i))),
            }
            let kernel = s.cpu_mode == CpuMode::Kernel;
            user_range = split_chain(&mut user_chain, kernel, state.is_some(), addrs);
        }
        let user_words = user_chain.get(user_range).unwrap_or(&[]);
        if let Some(state) = state.filter(|st| st.ip != 0) {
            let user = if user_words.is_empty() {
                self.unwind_all(pid, &state, &mut reach)
            } else {
                self.join_chain(pid, &state, user_words, &mut reach)
            };
            addrs.extend(user.iter().map(|&a| (a, false)));
            self.user_scratch = user;
        } else {
            addrs.extend(user_words.iter().map(|&a| (a, false)));
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

/// A key of all that `sample_addresses_in_place` reads of sample `s` of
/// process `pid`: its mode, sampled address, callchain, user registers and
/// stack copy, as the record holds them. Two samples with one key have the
/// same addresses under the same maps (`pipeline` finds a repeated
/// sample's by it: most samples of a busy loop repeat one whole, stack
/// copy and all). Hashed as `addresses_key` hashes a stack, a word pair
/// at a time straight from the record: two samples that differ share a key
/// with a chance of about 2^-128. None when the reader did not have the
/// callchain and registers in place.
pub(super) fn sample_key(pid: i32, s: &SampleRecord<'_>, place: InPlace<'_>) -> Option<u128> {
    let chain = match (&s.callchain, place.chain) {
        (None, _) => &[][..],
        (Some(parsed), Some(words)) if words.len() == parsed.len() => words.bytes(),
        (Some(_), _) => return None,
    };
    let (regs, stack) = match (&s.user_regs, &s.user_stack, place.user_regs) {
        (None, _, _) => (&[][..], &[][..]),
        (Some(_), Some((stack, dyn_size)), Some(regs)) => {
            let RawData::Single(stack) = stack else {
                return None;
            };
            let n = usize::try_from(*dyn_size).unwrap_or(usize::MAX);
            (regs.bytes(), stack.get(..n).unwrap_or(stack))
        }
        (Some(_), None, Some(regs)) => (regs.bytes(), &[][..]),
        (Some(_), _, None) => return None,
    };
    let seed = u64::from(pid as u32)
        | u64::from(s.cpu_mode == CpuMode::Kernel) << 32
        | u64::from(s.callchain.is_some()) << 33
        | u64::from(s.user_regs.is_some()) << 34
        | u64::from(s.ip.is_some()) << 35
        | 1 << 36;
    let mut key = StackKey::new(seed);
    key.pair(s.ip.unwrap_or(0), chain.len() as u64);
    key.pair(regs.len() as u64, stack.len() as u64);
    for bytes in [chain, regs, stack] {
        let (words, rest) = bytes.as_chunks::<8>();
        let mut pairs = words.chunks_exact(2);
        for pair in &mut pairs {
            if let [w0, w1] = pair {
                key.pair(u64::from_le_bytes(*w0), u64::from_le_bytes(*w1));
            }
        }
        match pairs.remainder() {
            [w0] => key.pair(u64::from_le_bytes(*w0), word(rest)),
            _ if !rest.is_empty() => key.pair(word(rest), 0),
            _ => {}
        }
    }
    Some(key.finish(chain.len() + regs.len() + stack.len()))
}

/// The last few bytes (under eight) as a little-endian word.
fn word(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0, |w, &b| (w << 8) | u64::from(b))
}

/// Splits callchain `chain` (its words, context markers included): the
/// kernel's addresses (all of them unless `split`) go to `addrs`, each with
/// whether it is a kernel address; with `split`, the user addresses are
/// left in `chain`, in order, at the range returned (to be joined to the
/// unwound frames). `kernel`: the sample was taken in the kernel (a chain
/// without a marker is then the kernel's).
///
/// A chain is a few runs between context markers (kernel, then user): each
/// run is found by one scan and taken whole, and the usual single user run
/// is not moved at all (address by address, the walk was a quarter of the
/// unwinding thread's time on deep stacks).
fn split_chain(
    chain: &mut [u64],
    mut kernel: bool,
    split: bool,
    addrs: &mut Vec<(u64, bool)>,
) -> std::ops::Range<usize> {
    // The usual user-mode `-g` sample: a marker, then user addresses only.
    if split
        && !kernel
        && let [PERF_CONTEXT_USER, rest @ ..] = &*chain
        && rest.iter().all(|&a| a < KERNEL_START)
    {
        return 1..chain.len();
    }
    let mut user = 0..0;
    let mut at = 0;
    while at <= chain.len() {
        if kernel || !split {
            let end = at + first_at_or_above(chain.get(at..).unwrap_or(&[]), PERF_CONTEXT_MAX);
            let run = chain.get(at..end).unwrap_or(&[]);
            addrs.extend(run.iter().map(|&a| (a, kernel || a >= KERNEL_START)));
            at = end;
        } else {
            // User addresses up to a marker or a kernel address (which a
            // user context may hold: it goes with the kernel's).
            let end = at + first_at_or_above(chain.get(at..).unwrap_or(&[]), KERNEL_START);
            if user.is_empty() {
                user = at..end;
            } else if at < end {
                chain.copy_within(at..end, user.end);
                user.end += end - at;
            }
            at = end;
            match chain.get(at) {
                Some(&a) if a < PERF_CONTEXT_MAX => {
                    addrs.push((a, true));
                    at += 1;
                    continue;
                }
                _ => {}
            }
        }
        match chain.get(at) {
            Some(&marker) => kernel = marker == PERF_CONTEXT_KERNEL,
            None => break,
        }
        at += 1;
    }
    user
}

/// The index of the first of `words` at or above `bound` (their length if
/// none): eight at a time, without a branch per word.
fn first_at_or_above(words: &[u64], bound: u64) -> usize {
    let mut skipped = 0;
    for eight in words.chunks_exact(8) {
        if eight.iter().fold(false, |any, &a| any | (a >= bound)) {
            break;
        }
        skipped += 8;
    }
    let rest = words.get(skipped..).unwrap_or(&[]);
    skipped + rest.iter().position(|&a| a >= bound).unwrap_or(rest.len())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The split, one address at a time, as the walk was first written.
    fn one_by_one(chain: &[u64], mut kernel: bool, split: bool) -> (Vec<(u64, bool)>, Vec<u64>) {
        let (mut addrs, mut user) = (Vec::new(), Vec::new());
        for &addr in chain {
            if addr >= PERF_CONTEXT_MAX {
                kernel = addr == PERF_CONTEXT_KERNEL;
                continue;
            }
            let kernel = kernel || addr >= KERNEL_START;
            if !kernel && split {
                user.push(addr);
            } else {
                addrs.push((addr, kernel));
            }
        }
        (addrs, user)
    }

    #[test]
    fn a_chain_splits_by_runs_as_it_did_address_by_address() {
        let k = KERNEL_START + 0x100;
        let chains: [&[u64]; 8] = [
            &[],
            &[
                PERF_CONTEXT_KERNEL,
                k,
                k + 8,
                PERF_CONTEXT_USER,
                0x40,
                0x50,
                0x60,
            ],
            &[PERF_CONTEXT_USER, 0x40, 0x50],
            &[0x40, 0x50, k],
            &[PERF_CONTEXT_USER, 0x40, k, 0x50, PERF_CONTEXT_USER],
            &[PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER],
            &[
                k,
                PERF_CONTEXT_USER,
                0x40,
                PERF_CONTEXT_KERNEL,
                k + 16,
                PERF_CONTEXT_USER,
                0x70,
            ],
            &[PERF_CONTEXT_MAX + 5, 0x40, PERF_CONTEXT_USER, k, 0x48],
        ];
        for chain in chains {
            for (kernel, split) in [(false, true), (true, true), (false, false), (true, false)] {
                let mut words = chain.to_vec();
                let mut addrs = Vec::new();
                let user = split_chain(&mut words, kernel, split, &mut addrs);
                let (want_addrs, want_user) = one_by_one(chain, kernel, split);
                let at = format!("{chain:x?} kernel {kernel} split {split}");
                assert_eq!(addrs, want_addrs, "{at}");
                assert_eq!(&words[user], want_user, "{at}");
            }
        }
    }
}
