//! A direct-mapped cache of (pid, address) -> location id in front of the
//! resolver's maps (`Resolver::addr_locs`, `loc_index`): a deep stack is
//! dozens of addresses, each looked up when its stack is first met, and
//! nearly all of them were met before (a few thousand distinct addresses
//! in a 400,000-sample file).
//!
//! The decision: one slot per hash, overwritten on a clash, compared whole
//! (address and tag: the process, or the kernel, and the cache's
//! generation), so a hit is exact and a miss falls back to the maps.
//! `clear` (on every change of maps) bumps the generation instead of
//! wiping the slots, so a file with thousands of forks pays nothing for
//! it; a stack's two tags are made once, not per address.

/// Slots (a power of two): 4096 of 24 bytes, 96 KB, in L2.
const SLOTS: usize = 1 << 12;
/// The tag's bit of a kernel address (below it, a user address's pid).
const KERNEL_BIT: u64 = 1 << 32;
/// Where the generation starts in a tag.
const GENERATION_SHIFT: u32 = 33;

#[derive(Clone, Copy, Default)]
struct Slot {
    addr: u64,
    /// 0: never written (generations start at 1).
    tag: u64,
    id: u32,
}

/// The tags of one process's addresses under the current generation.
#[derive(Clone, Copy)]
pub(super) struct Tags {
    user: u64,
    kernel: u64,
}

impl Tags {
    #[inline]
    pub(super) fn of(self, kernel: bool) -> u64 {
        if kernel { self.kernel } else { self.user }
    }
}

/// See the module doc.
pub(super) struct LocCache {
    /// An array, not a `Vec`: an index made by the hash's top bits needs
    /// no bounds check.
    slots: Box<[Slot; SLOTS]>,
    generation: u64,
}

impl LocCache {
    pub(super) fn new() -> Self {
        LocCache {
            slots: Box::new([Slot::default(); SLOTS]),
            generation: 1,
        }
    }

    /// The tags of process `pid`'s user addresses and of kernel addresses
    /// (the same in every process).
    pub(super) fn tags(&self, pid: i32) -> Tags {
        let generation = self.generation << GENERATION_SHIFT;
        Tags {
            user: generation | u64::from(pid as u32),
            kernel: generation | KERNEL_BIT,
        }
    }

    #[inline]
    fn index(tag: u64, addr: u64) -> usize {
        let h = (addr ^ tag.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> (64 - SLOTS.trailing_zeros())) as usize
    }

    /// The location id of `addr` under `tag` (`Tags::of`), if cached.
    #[inline]
    pub(super) fn get(&self, tag: u64, addr: u64) -> Option<u32> {
        let slot = self.slots.get(Self::index(tag, addr))?;
        (slot.tag == tag && slot.addr == addr).then_some(slot.id)
    }

    #[inline]
    pub(super) fn put(&mut self, tag: u64, addr: u64, id: u32) {
        if let Some(slot) = self.slots.get_mut(Self::index(tag, addr)) {
            *slot = Slot { addr, tag, id };
        }
    }

    /// Forgets every entry (the maps changed).
    pub(super) fn clear(&mut self) {
        self.generation += 1;
        if self.generation >> (64 - GENERATION_SHIFT) != 0 {
            // Out of tag bits: start over, with every slot wiped.
            self.slots.fill(Slot::default());
            self.generation = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_are_exact_and_clear_forgets() {
        let mut c = LocCache::new();
        let (seven, eight, zero) = (c.tags(7), c.tags(8), c.tags(0));
        c.put(seven.of(false), 0x1000, 3);
        c.put(seven.of(true), 0xffff_ffff_8100_0000, 9);
        assert_eq!(c.get(seven.of(false), 0x1000), Some(3));
        assert_eq!(c.get(eight.of(false), 0x1000), None, "another process");
        assert_eq!(c.get(seven.of(true), 0x1000), None, "a kernel address");
        assert_eq!(c.get(seven.of(false), 0x1001), None);
        assert_eq!(c.get(eight.of(true), 0xffff_ffff_8100_0000), Some(9));
        assert_eq!(c.get(zero.of(false), 0xffff_ffff_8100_0000), None);
        c.clear();
        let seven = c.tags(7);
        assert_eq!(c.get(seven.of(false), 0x1000), None);
        assert_eq!(c.get(seven.of(true), 0xffff_ffff_8100_0000), None);
        c.put(seven.of(false), 0x1000, 4);
        assert_eq!(c.get(seven.of(false), 0x1000), Some(4));
    }

    #[test]
    fn a_clash_keeps_the_last_entry() {
        let mut c = LocCache::new();
        let tag = c.tags(1).of(false);
        for addr in 0..(SLOTS as u64 * 4) {
            c.put(tag, addr * 16, addr as u32);
        }
        let mut hits = 0;
        for addr in 0..(SLOTS as u64 * 4) {
            if let Some(id) = c.get(tag, addr * 16) {
                assert_eq!(id, addr as u32);
                hits += 1;
            }
        }
        assert!(hits > 0 && hits <= SLOTS);
    }

    #[test]
    fn generations_running_out_start_over() {
        let mut c = LocCache::new();
        c.generation = (1 << (64 - GENERATION_SHIFT)) - 1;
        let tag = c.tags(1).of(false);
        c.put(tag, 0x1000, 5);
        assert_eq!(c.get(tag, 0x1000), Some(5));
        c.clear();
        assert_eq!(c.generation, 1);
        assert_eq!(c.get(c.tags(1).of(false), 0x1000), None);
    }
}
