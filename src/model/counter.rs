//! A counter's reading as `read(2)` returns it, the value `capture`
//! hands `analysis` for `scry stat` (here, below both, so that capture
//! returns plain data and never names analysis's types).

/// One counter's `read(2)`: value, time enabled, time running (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    pub(crate) value: u64,
    pub(crate) enabled: u64,
    pub(crate) running: u64,
}

impl Reading {
    /// What happened between `earlier` and `self` (for `-I`).
    pub(crate) fn since(self, earlier: Reading) -> Reading {
        Reading {
            value: self.value.saturating_sub(earlier.value),
            enabled: self.enabled.saturating_sub(earlier.enabled),
            running: self.running.saturating_sub(earlier.running),
        }
    }

    /// Both readings summed (over CPUs or threads).
    pub(crate) fn add(self, other: Reading) -> Reading {
        Reading {
            value: self.value.saturating_add(other.value),
            enabled: self.enabled.saturating_add(other.enabled),
            running: self.running.saturating_add(other.running),
        }
    }
}

/// One opened counter's reading, labelled with its event index and (for
/// per-CPU counters) its CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CounterReading {
    pub(crate) event: usize,
    pub(crate) cpu: Option<u32>,
    pub(crate) reading: Reading,
}
