//! vfsstat's intervals: the difference of the kernel's counters between
//! two reads (the counters are never reset, so nothing counted between a
//! read and a reset is lost), and their rates per second as bcc prints
//! them (the count divided by the interval's seconds, rounded down).

/// One interval's counts, in `sys::bpf_vfsstat::COLUMNS` order.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct VfsInterval {
    pub(crate) counts: [u64; 5],
    /// How long the interval lasted.
    pub(crate) secs: f64,
}

impl VfsInterval {
    /// The counts from `before` to `now`, over `secs` seconds.
    pub(crate) fn between(before: &[u64; 5], now: &[u64; 5], secs: f64) -> VfsInterval {
        let mut counts = [0u64; 5];
        for ((c, b), n) in counts.iter_mut().zip(before).zip(now) {
            *c = n.saturating_sub(*b);
        }
        VfsInterval { counts, secs }
    }

    /// Each count per second (the count itself for an interval shorter
    /// than a second).
    pub(crate) fn per_second(&self) -> [u64; 5] {
        let secs = self.secs.max(1.0);
        self.counts.map(|c| (c as f64 / secs) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_and_rates() {
        let i = VfsInterval::between(&[1, 2, 3, 4, 5], &[11, 2, 8, 4, 6], 2.0);
        assert_eq!(i.counts, [10, 0, 5, 0, 1]);
        assert_eq!(i.per_second(), [5, 0, 2, 0, 0]);
        assert_eq!(VfsInterval { secs: 0.3, ..i }.per_second(), i.counts);
    }
}
