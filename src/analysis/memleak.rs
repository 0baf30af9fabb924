//! memleak's table: the allocations outstanding (read from the kernel's
//! map), those older than `-o` grouped by the stack that made them, in
//! bcc's order (smallest total first, so the largest ends the output;
//! `--top N` keeps the N largest, by bytes or, `--sort count`, by
//! allocations), each stack's allocations oldest first
//! (for `-a`). Stacks are named afterwards (`with_frames`), so only the
//! stacks printed are named.

use std::collections::HashMap;

use crate::symbol::raw_stacks::Named;
use crate::sys::bpf_memleak::Outstanding;
/// `-t`'s calls, as the kernel sends them (`render::memleak` prints them).
pub(crate) use crate::sys::bpf_memleak::{TraceEvent, TraceKind};

/// One allocation as printed: its address, size and age.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Allocation {
    pub(crate) address: u64,
    pub(crate) size: u64,
    pub(crate) age_ms: u64,
}

/// The allocations outstanding from one stack.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct LeakStack {
    #[serde(skip)]
    pub(crate) stack_id: i32,
    pub(crate) bytes: u64,
    pub(crate) allocations_count: u64,
    /// The oldest allocation's age.
    pub(crate) oldest_ms: u64,
    /// Function names, innermost first (empty until named; `[unknown]`
    /// for an address no mapping covered; `[missed stack]` when the kernel
    /// could not take it).
    pub(crate) frames: Vec<String>,
    /// Oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) allocations: Vec<Allocation>,
}

/// What "largest" means for `--top` (bcc's `--sort`, default size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum LeakSort {
    /// Bytes outstanding, then allocations.
    #[default]
    Size,
    /// Allocations outstanding, then bytes.
    Count,
}

/// Groups the allocations at least `min_age_ns` old at `now_ns` by stack;
/// keeps each stack's allocations when `keep_allocations` (-a); the `top`
/// largest stacks by `sort`, smallest first.
pub(crate) fn by_stack(
    outstanding: &[Outstanding],
    now_ns: u64,
    min_age_ns: u64,
    keep_allocations: bool,
    (top, sort): (usize, LeakSort),
) -> Vec<LeakStack> {
    let mut index: HashMap<i32, usize> = HashMap::new();
    let mut stacks: Vec<LeakStack> = Vec::new();
    let mut old: Vec<&Outstanding> = outstanding
        .iter()
        .filter(|a| now_ns.saturating_sub(a.timestamp_ns) >= min_age_ns)
        .collect();
    old.sort_by_key(|a| (a.timestamp_ns, a.address));
    for a in old {
        let age_ms = now_ns.saturating_sub(a.timestamp_ns) / 1_000_000;
        let at = *index.entry(a.stack_id).or_insert_with(|| {
            stacks.push(LeakStack {
                stack_id: a.stack_id,
                bytes: 0,
                allocations_count: 0,
                oldest_ms: age_ms,
                frames: Vec::new(),
                allocations: Vec::new(),
            });
            stacks.len() - 1
        });
        let s = &mut stacks[at];
        s.bytes += a.size;
        s.allocations_count += 1;
        if keep_allocations {
            s.allocations.push(Allocation {
                address: a.address,
                size: a.size,
                age_ms,
            });
        }
    }
    let weight = |s: &LeakStack| match sort {
        LeakSort::Size => (s.bytes, s.allocations_count),
        LeakSort::Count => (s.allocations_count, s.bytes),
    };
    stacks.sort_by(|a, b| (weight(a), b.stack_id).cmp(&(weight(b), a.stack_id)));
    let skip = stacks.len().saturating_sub(top);
    stacks.drain(..skip);
    stacks
}

/// Puts the names of `named` (one sample per stack, in the same order;
/// `None` where the stack was missed and no sample added) on `stacks`.
pub(crate) fn with_frames(stacks: &mut [LeakStack], named: &Named, added: &[bool]) {
    let mut samples = named.samples.iter();
    for (stack, &was_added) in stacks.iter_mut().zip(added) {
        if !was_added {
            stack.frames = vec!["[missed stack]".to_string()];
            continue;
        }
        let Some(sample) = samples.next() else {
            break;
        };
        let (kernel, user) = super::offcputime::frame_names(sample, named);
        stack.frames = kernel.into_iter().chain(user).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc(address: u64, size: u64, timestamp_ns: u64, stack_id: i32) -> Outstanding {
        Outstanding {
            address,
            size,
            timestamp_ns,
            stack_id,
        }
    }

    #[test]
    fn groups_by_stack_smallest_first_oldest_allocation_first() {
        let ms = 1_000_000;
        let all = [
            alloc(0x10, 100, 5 * ms, 1),
            alloc(0x20, 100, 2 * ms, 1),
            alloc(0x30, 50, 3 * ms, 2),
            alloc(0x40, 7, 9 * ms, 3), // too young
        ];
        let stacks = by_stack(&all, 10 * ms, 2 * ms, true, (10, LeakSort::Size));
        assert_eq!(stacks.len(), 2);
        assert_eq!((stacks[0].stack_id, stacks[0].bytes), (2, 50));
        assert_eq!((stacks[1].bytes, stacks[1].allocations_count), (200, 2));
        assert_eq!(stacks[1].oldest_ms, 8);
        let ages: Vec<u64> = stacks[1].allocations.iter().map(|a| a.age_ms).collect();
        assert_eq!(ages, vec![8, 5]);
        let top = by_stack(&all, 10 * ms, 0, false, (1, LeakSort::Size));
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].bytes, 200);
        assert!(top[0].allocations.is_empty());
    }

    #[test]
    fn sort_count_keeps_the_stacks_with_the_most_allocations() {
        let ms = 1_000_000;
        let all = [
            alloc(0x10, 4096, ms, 1),
            alloc(0x20, 8, ms, 2),
            alloc(0x30, 8, ms, 2),
            alloc(0x40, 8, ms, 2),
        ];
        let by_size = by_stack(&all, 10 * ms, 0, false, (1, LeakSort::Size));
        assert_eq!(by_size[0].stack_id, 1);
        let by_count = by_stack(&all, 10 * ms, 0, false, (2, LeakSort::Count));
        let ids: Vec<i32> = by_count.iter().map(|s| s.stack_id).collect();
        assert_eq!(ids, [1, 2], "smallest first, the most allocations last");
    }
}
