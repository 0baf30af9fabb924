//! hardirqs' and softirqs' tables: the kernel's sums (per hard irq handler
//! name, per softirq vector) as named rows in the order the tools print
//! them. Softirq vectors are named as the kernel's `softirq_to_name`
//! (`timer`, `net_rx`, ...), and listed by vector as libbpf-tools does;
//! hard irqs (whose order in libbpf-tools is the hash map's) by total,
//! largest first, ties by name.

use crate::analysis::hist::{Histogram, Scale};
use crate::sys::bpf_irqs::IrqSum;

/// Which interrupts a table holds (the kernel side's choice, named here
/// for `render`).
pub(crate) use crate::sys::bpf_irqs::IrqKind;

/// The kernel's softirq vectors, by number (`include/linux/interrupt.h`).
const SOFTIRQ_NAMES: [&str; 10] = [
    "hi", "timer", "net_tx", "net_rx", "block", "irq_poll", "tasklet", "sched", "hrtimer", "rcu",
];

/// A softirq vector's name; an unknown one as its number.
pub(crate) fn softirq_name(vec: u32) -> String {
    SOFTIRQ_NAMES
        .get(vec as usize)
        .map_or_else(|| format!("vec{vec}"), |n| n.to_string())
}

/// One interrupt's row: its name, the total (time or count) and, for
/// `-d`, its histogram.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct IrqRow {
    pub(crate) name: String,
    pub(crate) total: u64,
    pub(crate) hist: Histogram,
}

/// The rows of one interval, in print order; `unit` names the values
/// (`usecs`, `nsecs`, `count`).
pub(crate) fn irq_rows(kind: IrqKind, sums: &[IrqSum], unit: &str) -> Vec<IrqRow> {
    let mut keyed: Vec<(u32, IrqRow)> = sums
        .iter()
        .map(|s| {
            let name = match kind {
                IrqKind::Hard => s.name.clone(),
                IrqKind::Soft => softirq_name(s.vec),
            };
            let row = IrqRow {
                name,
                total: s.total,
                hist: Histogram::from_slots(Scale::Log2, unit, &s.slots),
            };
            (s.vec, row)
        })
        .collect();
    match kind {
        IrqKind::Hard => keyed.sort_by(|(_, a), (_, b)| {
            (b.total, b.hist.total())
                .cmp(&(a.total, a.hist.total()))
                .then_with(|| a.name.cmp(&b.name))
        }),
        IrqKind::Soft => keyed.sort_by_key(|(vec, _)| *vec),
    }
    keyed.into_iter().map(|(_, row)| row).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(vec: u32, name: &str, total: u64) -> IrqSum {
        IrqSum {
            vec,
            name: name.to_string(),
            total,
            slots: vec![0; 3],
        }
    }

    #[test]
    fn names_and_orders_the_rows() {
        let soft = irq_rows(
            IrqKind::Soft,
            &[sum(9, "", 5), sum(1, "", 7), sum(12, "", 1)],
            "usecs",
        );
        let names: Vec<&str> = soft.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["timer", "rcu", "vec12"]);
        let hard = irq_rows(
            IrqKind::Hard,
            &[
                sum(0, "virtio3-rx", 2),
                sum(0, "ahci", 9),
                sum(0, "eth0", 2),
            ],
            "count",
        );
        let names: Vec<&str> = hard.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["ahci", "eth0", "virtio3-rx"]);
        assert_eq!(hard[0].hist.unit, "count");
    }
}
