//! funccount's rows and funclatency's histograms from what the kernel
//! kept (`sys::bpf_funcs`). The kernel's counts and totals only grow, so
//! an interval is the difference from the previous read (`Since`); its
//! histograms are taken whole each interval. Rows sort as bcc's: by
//! count, smallest first, the calls that did not happen left out.

use crate::analysis::hist::{Histogram, KeyedHistogram, Scale};
use crate::sys::bpf_hists::KeyedSlots;

/// One function's calls in an interval.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct FuncCount {
    pub(crate) function: String,
    pub(crate) count: u64,
}

/// The values read last, to give each interval's share of running totals.
#[derive(Clone, Debug, Default)]
pub(crate) struct Since {
    last: Vec<u64>,
}

impl Since {
    /// `now` less what the previous call saw (all of it the first time).
    pub(crate) fn take(&mut self, now: &[u64]) -> Vec<u64> {
        let delta = now
            .iter()
            .enumerate()
            .map(|(i, v)| v.saturating_sub(self.last.get(i).copied().unwrap_or(0)))
            .collect();
        self.last = now.to_vec();
        delta
    }
}

/// The rows to print: the functions called, by count then name.
pub(crate) fn count_rows(names: &[String], counts: &[u64]) -> Vec<FuncCount> {
    let mut rows: Vec<FuncCount> = names
        .iter()
        .zip(counts)
        .filter(|(_, c)| **c > 0)
        .map(|(name, &count)| FuncCount {
            function: name.clone(),
            count,
        })
        .collect();
    rows.sort_by(|a, b| a.count.cmp(&b.count).then(a.function.cmp(&b.function)));
    rows
}

/// funclatency's histograms, keyed in the kernel by (function index <<
/// 32 | tgid): one histogram when `single` (bcc with `-p` and no `-F`),
/// else one per function and process, labelled as bcc: `Function = NAME
/// [PID]`.
pub(crate) fn latency_hists(
    read: &[KeyedSlots],
    names: &[String],
    unit: &str,
    single: bool,
) -> Vec<KeyedHistogram> {
    if single {
        let mut hist = Histogram::log2(unit);
        for h in read {
            hist.merge(&Histogram::from_slots(Scale::Log2, unit, &h.slots));
        }
        if hist.total() == 0 {
            return Vec::new();
        }
        return vec![KeyedHistogram {
            key: u64::from(u32::MAX),
            label: String::new(),
            hist,
        }];
    }
    read.iter()
        .map(|h| {
            let index = (h.key >> 32) as usize;
            let tgid = h.key & 0xffff_ffff;
            let name = names.get(index).map_or("[unknown]", String::as_str);
            KeyedHistogram {
                key: h.key,
                label: format!("Function = {name} [{tgid}]"),
                hist: Histogram::from_slots(Scale::Log2, unit, &h.slots),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_are_differences_and_rows_sort_as_bcc() {
        let mut since = Since::default();
        assert_eq!(since.take(&[3, 0, 5]), vec![3, 0, 5]);
        assert_eq!(since.take(&[4, 0, 9]), vec![1, 0, 4]);
        let names = vec!["b".to_string(), "z".to_string(), "a".to_string()];
        let rows = count_rows(&names, &[4, 0, 1]);
        let got: Vec<(&str, u64)> = rows
            .iter()
            .map(|r| (r.function.as_str(), r.count))
            .collect();
        assert_eq!(got, vec![("a", 1), ("b", 4)]);
    }

    #[test]
    fn latency_is_one_histogram_or_one_per_function_and_process() {
        let slots = |i: usize| {
            let mut s = vec![0; 36];
            s[i] = 2;
            s
        };
        let read = vec![
            KeyedSlots {
                key: 12,
                comm: "w".to_string(),
                slots: slots(3),
            },
            KeyedSlots {
                key: 1 << 32 | 12,
                comm: "w".to_string(),
                slots: slots(5),
            },
        ];
        let names = vec!["alpha".to_string(), "beta".to_string()];
        let one = latency_hists(&read, &names, "nsecs", true);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].hist.total(), 4);
        assert_eq!(one[0].label, "");
        let each = latency_hists(&read, &names, "nsecs", false);
        let labels: Vec<&str> = each.iter().map(|h| h.label.as_str()).collect();
        assert_eq!(
            labels,
            vec!["Function = alpha [12]", "Function = beta [12]"]
        );
        assert!(latency_hists(&[], &names, "nsecs", true).is_empty());
    }
}
