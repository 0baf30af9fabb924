//! cachestat's intervals: the difference of the kernel's counters between
//! two reads (never reset, so nothing is lost between a read and a
//! reset), bcc's subtractions on its hooks (accesses less buffers
//! dirtied, misses less pages dirtied: `CacheCounts::less_*`, per
//! interval), bcc's hits (accesses - misses, never below 0) and ratio, and
//! the buffer and page-cache sizes from /proc/meminfo at the interval's
//! end (as bcc reads them).

use crate::sys::bpf_cachestat::CacheCounts;

/// One interval's figures (pages; sizes in MiB).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct CacheInterval {
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) dirties: u64,
    pub(crate) buffers_mb: u64,
    pub(crate) cached_mb: u64,
}

impl CacheInterval {
    /// The figures from `before` to `now`, with `meminfo`'s text.
    pub(crate) fn between(before: &CacheCounts, now: &CacheCounts, meminfo: &str) -> CacheInterval {
        let delta = |now: u64, before: u64| now.saturating_sub(before);
        let accesses = delta(now.accesses, before.accesses)
            .saturating_sub(delta(now.less_accesses, before.less_accesses));
        let misses = delta(now.misses, before.misses)
            .saturating_sub(delta(now.less_misses, before.less_misses));
        CacheInterval {
            hits: accesses.saturating_sub(misses),
            misses,
            dirties: now.dirties.saturating_sub(before.dirties),
            buffers_mb: meminfo_kb(meminfo, "Buffers") / 1024,
            cached_mb: meminfo_kb(meminfo, "Cached") / 1024,
        }
    }

    /// Hits over hits and misses, in percent (0 with neither).
    pub(crate) fn ratio(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 * 100.0 / total as f64
        }
    }
}

/// The `KEY:  N kB` line's N (0 when absent or unreadable).
fn meminfo_kb(meminfo: &str, key: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_ratio_and_sizes() {
        let before = CacheCounts {
            accesses: 10,
            misses: 2,
            dirties: 1,
            ..CacheCounts::default()
        };
        let now = CacheCounts {
            accesses: 110,
            misses: 27,
            dirties: 4,
            ..CacheCounts::default()
        };
        let meminfo =
            "MemTotal: 100 kB\nBuffers:    2048 kB\nCached:  10240 kB\nSwapCached: 5 kB\n";
        let i = CacheInterval::between(&before, &now, meminfo);
        assert_eq!((i.hits, i.misses, i.dirties), (75, 25, 3));
        assert_eq!((i.buffers_mb, i.cached_mb), (2, 10));
        assert_eq!(i.ratio(), 75.0);
        let more_misses = CacheCounts {
            accesses: 10,
            ..now
        };
        assert_eq!(CacheInterval::between(&before, &more_misses, "").hits, 0);
    }

    #[test]
    fn bcc_subtractions_per_interval() {
        let before = CacheCounts {
            accesses: 100,
            misses: 50,
            dirties: 7,
            less_accesses: 7,
            less_misses: 40,
        };
        // This interval: 30 accessed, 5 of them buffers dirtied; 12 added,
        // 20 dirtied (more than added: no misses, not a wrap).
        let now = CacheCounts {
            accesses: 130,
            misses: 62,
            dirties: 12,
            less_accesses: 12,
            less_misses: 60,
        };
        let i = CacheInterval::between(&before, &now, "");
        assert_eq!((i.hits, i.misses, i.dirties), (25, 0, 5));
    }
}
