//! Hash-consed stacks of location ids: each distinct stack is stored once
//! and named once, however many samples share it.
//!
//! A system-wide recording has hundreds of thousands of samples but a few
//! thousand distinct stacks; storing a sample as one stack id keeps the
//! resolver's memory flat, and lets every sample with that stack share one
//! `Arc<[FrameId]>`. The table is an arena of ids with a hash index whose
//! collisions are chained, so each stack's ids are held once.

use std::collections::hash_map::Entry;
use std::hash::Hasher;

use super::process::{FxHasher, FxMap};

/// Marks the end of a collision chain.
const NONE: u32 = u32::MAX;

/// See the module doc.
#[derive(Debug, Default)]
pub(crate) struct StackTable {
    ids: Vec<u32>,
    /// Per stack: its range in `ids`, and the next stack with the same hash.
    spans: Vec<(u32, u32, u32)>,
    heads: FxMap<u64, u32>,
}

impl StackTable {
    /// The id of `stack`, adding it if it is new. Hashed two ids a word,
    /// and the index looked up once (an entry): a deep file interns each
    /// of its hundred thousand stacks of fifty ids.
    pub(crate) fn intern(&mut self, stack: &[u32]) -> u32 {
        let mut h = FxHasher::default();
        let mut pairs = stack.chunks_exact(2);
        for pair in &mut pairs {
            if let [a, b] = pair {
                h.write_u64(u64::from(*a) | (u64::from(*b) << 32));
            }
        }
        if let [a] = pairs.remainder() {
            h.write_u32(*a);
        }
        h.write_usize(stack.len());
        let id = self.spans.len() as u32;
        let head = match self.heads.entry(h.finish()) {
            Entry::Occupied(mut e) => {
                let head = *e.get();
                let mut at = head;
                while let Some(&(start, len, next)) = self.spans.get(at as usize) {
                    let ids = self.ids.get(start as usize..(start + len) as usize);
                    if ids == Some(stack) {
                        return at;
                    }
                    at = next;
                }
                e.insert(id);
                head
            }
            Entry::Vacant(e) => {
                e.insert(id);
                NONE
            }
        };
        let start = self.ids.len() as u32;
        self.ids.extend_from_slice(stack);
        self.spans.push((start, stack.len() as u32, head));
        id
    }

    /// The location ids of stack `id`, leaf first.
    pub(crate) fn get(&self, id: u32) -> &[u32] {
        self.spans
            .get(id as usize)
            .and_then(|&(start, len, _)| self.ids.get(start as usize..(start + len) as usize))
            .unwrap_or(&[])
    }

    /// How many distinct stacks.
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// Empty, its memory kept for the stacks to come (a table filled again
    /// after each fold grew by doubling each time: on the bench's deep
    /// file the reallocations were 4% of the resolving thread).
    pub(crate) fn clear(&mut self) {
        self.ids.clear();
        self.spans.clear();
        self.heads.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_stacks_share_an_id() {
        let mut t = StackTable::default();
        let a = t.intern(&[1, 2, 3]);
        let b = t.intern(&[1, 2]);
        let c = t.intern(&[]);
        assert_eq!(t.intern(&[1, 2, 3]), a);
        assert_eq!(t.intern(&[1, 2]), b);
        assert_eq!(t.intern(&[]), c);
        assert_eq!(t.len(), 3);
        assert_eq!(t.get(a), [1, 2, 3]);
        assert_eq!(t.get(c), [] as [u32; 0]);
        assert_eq!(t.get(99), [] as [u32; 0]);
        t.clear();
        assert_eq!(t.len(), 0);
        assert_eq!(t.get(a), [] as [u32; 0]);
        assert_eq!(t.intern(&[4, 5]), 0, "ids start over");
    }

    #[test]
    fn many_stacks_keep_their_ids() {
        let mut t = StackTable::default();
        let ids: Vec<u32> = (0..5000).map(|i| t.intern(&[i, i * 7, 1])).collect();
        for (i, &id) in ids.iter().enumerate() {
            let i = i as u32;
            assert_eq!(t.get(id), [i, i * 7, 1]);
            assert_eq!(t.intern(&[i, i * 7, 1]), id);
        }
    }
}
