//! One histogram type for the BPF tools: counts in log2 buckets (bucket 0
//! holds 0 and 1, bucket i holds `2^i ..= 2^(i+1) - 1`, as bcc's
//! `bpf_log2l` slots) or in linear buckets (`base + i * step`), and
//! histograms per key (a process, a thread, a CPU) in the order the caller
//! gives. The kernel usually fills the buckets (`from_slots`); `add` is for
//! values summed in user space. Text in bcc's layout is `render::hist`.

/// How values map to buckets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "scale", rename_all = "lowercase")]
pub(crate) enum Scale {
    #[default]
    Log2,
    Linear {
        base: u64,
        step: u64,
    },
}

/// Counts per bucket; `unit` names the values (`usecs`, `msecs`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Histogram {
    pub(crate) scale: Scale,
    pub(crate) unit: String,
    pub(crate) buckets: Vec<u64>,
}

impl Histogram {
    pub(crate) fn log2(unit: &str) -> Histogram {
        Histogram {
            scale: Scale::Log2,
            unit: unit.to_string(),
            buckets: Vec::new(),
        }
    }

    #[cfg(test)]
    pub(crate) fn linear(unit: &str, base: u64, step: u64) -> Histogram {
        Histogram {
            scale: Scale::Linear {
                base,
                step: step.max(1),
            },
            unit: unit.to_string(),
            buckets: Vec::new(),
        }
    }

    /// A histogram whose buckets a BPF program counted.
    pub(crate) fn from_slots(scale: Scale, unit: &str, slots: &[u64]) -> Histogram {
        Histogram {
            scale,
            unit: unit.to_string(),
            buckets: slots.to_vec(),
        }
    }

    /// The bucket of `value`.
    pub(crate) fn bucket_of(&self, value: u64) -> usize {
        match self.scale {
            Scale::Log2 if value <= 1 => 0,
            Scale::Log2 => (63 - value.leading_zeros()) as usize,
            Scale::Linear { base, step } => (value.saturating_sub(base) / step) as usize,
        }
    }

    pub(crate) fn add(&mut self, value: u64) {
        let slot = self.bucket_of(value);
        if self.buckets.len() <= slot {
            self.buckets.resize(slot + 1, 0);
        }
        self.buckets[slot] += 1;
    }

    /// Adds another histogram of the same scale, bucket by bucket.
    pub(crate) fn merge(&mut self, other: &Histogram) {
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *mine += theirs;
        }
    }

    pub(crate) fn total(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The share (0 to 1) of the counts past the first bucket: runqlen's
    /// occupancy (samples that found a task waiting); 0 when empty.
    pub(crate) fn share_past_first(&self) -> f64 {
        let past: u64 = self.buckets.iter().skip(1).sum();
        past as f64 / self.total().max(1) as f64
    }

    /// The values of bucket `slot`: (low, high), inclusive.
    pub(crate) fn range(&self, slot: usize) -> (u64, u64) {
        match self.scale {
            Scale::Log2 if slot == 0 => (0, 1),
            Scale::Log2 => {
                let slot = slot.min(63) as u32;
                (
                    1u64 << slot,
                    (1u64 << slot).saturating_mul(2).saturating_sub(1),
                )
            }
            Scale::Linear { base, step } => {
                let low = base + slot as u64 * step;
                (low, low + step - 1)
            }
        }
    }
}

/// A histogram per key, with the label bcc prints above each
/// (`pid = 1234 name`); an empty label prints none.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct KeyedHistogram {
    pub(crate) key: u64,
    pub(crate) label: String,
    pub(crate) hist: Histogram,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_buckets_are_bccs() {
        let mut h = Histogram::log2("usecs");
        for v in [0, 1, 2, 3, 4, 7, 8, 1023, 1024] {
            h.add(v);
        }
        assert_eq!(h.buckets, vec![2, 2, 2, 1, 0, 0, 0, 0, 0, 1, 1]);
        assert_eq!(h.range(0), (0, 1));
        assert_eq!(h.range(3), (8, 15));
        assert_eq!(h.total(), 9);
    }

    #[test]
    fn linear_buckets_start_at_base() {
        let mut h = Histogram::linear("slots", 10, 5);
        for v in [10, 14, 15, 3] {
            h.add(v);
        }
        assert_eq!(h.buckets, vec![3, 1]);
        assert_eq!(h.range(1), (15, 19));
        assert_eq!(h.share_past_first(), 0.25);
        let mut sum = h.clone();
        sum.merge(&h);
        assert_eq!(sum.buckets, vec![6, 2]);
    }
}
