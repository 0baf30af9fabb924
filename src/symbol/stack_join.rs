//! The default call graph (`-g`, `CallGraph::FramePointerStack`): the
//! kernel's frame-pointer chain, whose first user frames are replaced by the
//! frames unwound with the binaries' unwind tables from a small copy of the
//! top of the user stack. A frameless function (a libc system-call wrapper,
//! `memcpy`, a leaf built with `-fomit-frame-pointer`) leaves %rbp pointing
//! at its caller's frame, so the chain skips that caller; the unwinder does
//! not, and past the copy the chain is right again.
//!
//! The two lists meet by stack address, not by return-address value: an
//! address repeats on a recursive stack, the slot it was read from cannot.
//! The unwinder says where it read each return address (CFA - 8); the slots
//! of the chain are the kernel's walk redone on the copy (`slot_k =
//! rbp_{k-1} + 8`, `rbp_k = [rbp_{k-1}]`, from the sampled %rbp). The chain
//! continues from its first return address whose slot is at or above the
//! last unwound one: at the same slot the two must hold the same address
//! (the unwound frame stands for it), above it the chain follows.
//!
//! Where no repair can be checked the chain is kept as the kernel gave it
//! and the sample says why (`Join::Kept`): the sampled code has no unwind
//! tables (JIT code, a missing binary), or the copy was too small for even
//! one step. A chain whose slots do not rise above the stack pointer is
//! garbage (%rbp used as a general register); the unwound frames are then
//! the only truth, and the stack is cut where they end.

use super::unwind::{Unwound, UnwoundFrame};

/// Why the frame-pointer chain was kept unrepaired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum KeptReason {
    /// The sampled address is in code without unwind tables.
    NoUnwindInfo,
    /// The unwinder could not take one step within the stack copy.
    SnapshotTooSmall,
    /// The chain and the unwound frames disagree at the slot they share.
    Disagree,
}

/// What joining made of a sample's user stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Join {
    /// The unwound frames, then the chain from where they meet (or the
    /// unwound frames alone when they reached the root, or went past the
    /// end of the chain).
    Repaired,
    /// The unwound frames alone: the chain was garbage (its slots fell
    /// below the stack pointer or did not rise), and the copy ended before
    /// the root.
    Cut,
    /// The chain as the kernel gave it.
    Kept(KeptReason),
}

/// The registers and stack copy of a sample, as the kernel walked them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UserTop<'a> {
    pub(crate) sp: u64,
    pub(crate) bp: u64,
    /// The copy of the stack from `sp` up.
    pub(crate) stack: &'a [u8],
}

impl UserTop<'_> {
    fn word(&self, addr: u64) -> Option<u64> {
        let off = usize::try_from(addr.checked_sub(self.sp)?).ok()?;
        let bytes = self.stack.get(off..off.checked_add(8)?)?;
        Some(u64::from_le_bytes(bytes.try_into().ok()?))
    }
}

/// Join the user part of a frame-pointer chain (`chain`, leaf first,
/// starting at the sampled address) with the `unwound` frames of the same
/// sample; the result, leaf first, goes to `out`.
pub(crate) fn join(
    chain: &[u64],
    top: &UserTop<'_>,
    unwound: &[UnwoundFrame],
    how: Unwound,
    out: &mut Vec<u64>,
) -> Join {
    let kept = |out: &mut Vec<u64>, why| {
        out.extend_from_slice(chain);
        Join::Kept(why)
    };
    if !how.leaf_has_tables {
        return kept(out, KeptReason::NoUnwindInfo);
    }
    let Some(last) = unwound.last().filter(|f| f.slot.is_some()) else {
        return kept(out, KeptReason::SnapshotTooSmall);
    };
    let last_slot = last.slot.unwrap_or(0);
    if how.complete {
        out.extend(unwound.iter().map(|f| f.addr));
        return Join::Repaired;
    }
    let mut bp = Some(top.bp);
    let mut below = top.sp.saturating_sub(8);
    let mut garbage = false;
    for (k, &addr) in chain.iter().enumerate().skip(1) {
        let Some(frame) = bp else { break };
        let Some(slot) = frame.checked_add(8).filter(|&s| s > below) else {
            garbage = true;
            break;
        };
        if slot == last_slot {
            if addr != last.addr {
                return kept(out, KeptReason::Disagree);
            }
            out.extend(unwound.iter().map(|f| f.addr));
            out.extend_from_slice(chain.get(k + 1..).unwrap_or(&[]));
            return Join::Repaired;
        }
        if slot > last_slot {
            out.extend(unwound.iter().map(|f| f.addr));
            out.extend_from_slice(chain.get(k..).unwrap_or(&[]));
            return Join::Repaired;
        }
        below = slot;
        bp = top.word(frame);
    }
    out.extend(unwound.iter().map(|f| f.addr));
    // A chain that ended below the unwound frames (the kernel's walk
    // stopped, at a root or at code without frames) is what fp would have
    // called whole; the unwound frames reach further than it did.
    if garbage { Join::Cut } else { Join::Repaired }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SP: u64 = 0x7fff_0000;

    /// A stack copy of `words` 8-byte words from SP, with `(index, value)` set.
    fn stack(words: usize, set: &[(usize, u64)]) -> Vec<u8> {
        let mut v = vec![0u64; words];
        for &(i, x) in set {
            v[i] = x;
        }
        v.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn frame(addr: u64, slot_word: Option<usize>) -> UnwoundFrame {
        UnwoundFrame {
            addr,
            slot: slot_word.map(|w| SP + 8 * w as u64),
        }
    }

    const PARTIAL: Unwound = Unwound {
        complete: false,
        leaf_has_tables: true,
    };

    /// The stack copy of main -> caller -> leaf (frameless): %rbp is
    /// caller's frame at word 4 (saved rbp of main at 4, return into main
    /// at 5); the return into caller is at word 1.
    const FRAMELESS_LEAF: &[(usize, u64)] = &[(1, 0xc0), (4, SP + 8 * 7), (5, 0x30)];

    /// [`join`] of `chain` and `unwound` (`how`) over a copy of `words`
    /// words from SP (`set` in it) with %rbp at `bp`: its verdict and the
    /// stack it made.
    fn joined(
        (words, set, bp): (usize, &[(usize, u64)], u64),
        chain: &[u64],
        unwound: &[UnwoundFrame],
        how: Unwound,
    ) -> (Join, Vec<u64>) {
        let bytes = stack(words, set);
        let top = UserTop {
            sp: SP,
            bp,
            stack: &bytes,
        };
        let mut out = Vec::new();
        let verdict = join(chain, &top, unwound, how, &mut out);
        (verdict, out)
    }

    /// The chain skips caller; the unwinder ran out of copy after main's
    /// return address.
    #[test]
    fn frameless_leaf_gets_its_caller_back() {
        // Kernel: leaf, main (at word 5), start (at word 8: above the copy).
        let unwound = [
            frame(0x10, None),
            frame(0xc0, Some(1)),
            frame(0x30, Some(5)),
        ];
        let copy = (8, FRAMELESS_LEAF, SP + 8 * 4);
        assert_eq!(
            joined(copy, &[0x10, 0x30, 0x50], &unwound, PARTIAL),
            (Join::Repaired, vec![0x10, 0xc0, 0x30, 0x50])
        );
    }

    /// The unwinder stopped before the chain's first slot: the chain
    /// follows from it.
    #[test]
    fn chain_above_the_unwound_frames_follows() {
        let unwound = [frame(0x10, None), frame(0xc0, Some(1))];
        let copy = (8, FRAMELESS_LEAF, SP + 8 * 4);
        assert_eq!(
            joined(copy, &[0x10, 0x30, 0x50], &unwound, PARTIAL),
            (Join::Repaired, vec![0x10, 0xc0, 0x30, 0x50])
        );
    }

    #[test]
    fn same_slot_different_address_keeps_the_chain() {
        let chain = [0x10, 0x30, 0x50];
        let unwound = [frame(0x10, None), frame(0x99, Some(5))];
        let copy = (8, &[(4, SP + 8 * 7), (5, 0x30)][..], SP + 8 * 4);
        assert_eq!(
            joined(copy, &chain, &unwound, PARTIAL),
            (Join::Kept(KeptReason::Disagree), chain.to_vec())
        );
    }

    #[test]
    fn no_tables_or_no_step_keeps_the_chain() {
        let chain = [0x10, 0x30];
        let copy = (2, &[][..], SP + 8);
        let none = Unwound {
            complete: false,
            leaf_has_tables: false,
        };
        let two = [frame(0x10, None), frame(0x30, Some(0))];
        assert_eq!(
            joined(copy, &chain, &two, none),
            (Join::Kept(KeptReason::NoUnwindInfo), chain.to_vec())
        );
        assert_eq!(
            joined(copy, &chain, &[frame(0x10, None)], PARTIAL),
            (Join::Kept(KeptReason::SnapshotTooSmall), chain.to_vec())
        );
    }

    /// The chain ended below the unwound frames (libc's start code keeps no
    /// frame pointer): the unwound frames go further, and are the stack.
    #[test]
    fn a_chain_that_ends_below_the_unwound_frames_yields_to_them() {
        let unwound = [
            frame(0x10, None),
            frame(0xc0, Some(1)),
            frame(0x30, Some(5)),
            frame(0x70, Some(7)),
        ];
        let copy = (8, &[(1, 0xc0), (4, 0), (5, 0x30)][..], SP + 8 * 4);
        assert_eq!(
            joined(copy, &[0x10, 0x30], &unwound, PARTIAL),
            (Join::Repaired, vec![0x10, 0xc0, 0x30, 0x70])
        );
    }

    /// %rbp below the stack pointer: the chain is garbage, the unwound
    /// frames stand alone; reaching the root, they are the whole stack.
    #[test]
    fn garbage_chain_is_cut_and_a_complete_unwind_wins() {
        let chain = [0x10, 0xdead];
        let unwound = [frame(0x10, None), frame(0xc0, Some(1))];
        let copy = (4, &[][..], 0x1234);
        assert_eq!(
            joined(copy, &chain, &unwound, PARTIAL),
            (Join::Cut, vec![0x10, 0xc0])
        );
        let complete = Unwound {
            complete: true,
            leaf_has_tables: true,
        };
        assert_eq!(
            joined(copy, &chain, &unwound, complete),
            (Join::Repaired, vec![0x10, 0xc0])
        );
    }
}
