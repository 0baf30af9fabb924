//! swapin's table: one interval's counts per process in bcc's order, the
//! fewest swap-ins first (bcc's swapin.py, read from its source, sorts by
//! count only; the pid, then the name, break its ties here, so equal
//! counts print the same way twice).

pub(crate) use crate::sys::bpf_swapin::SwapinCount;

/// The rows of one interval, fewest swap-ins first.
pub(crate) fn in_bcc_order(mut rows: Vec<SwapinCount>) -> Vec<SwapinCount> {
    rows.sort_by(|a, b| (a.count, a.pid, &a.comm).cmp(&(b.count, b.pid, &b.comm)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pid: u32, comm: &str, count: u64) -> SwapinCount {
        SwapinCount {
            pid,
            comm: comm.to_string(),
            count,
        }
    }

    #[test]
    fn fewest_first_ties_by_pid() {
        let rows = in_bcc_order(vec![row(9, "b", 5), row(3, "a", 40), row(2, "c", 5)]);
        let order: Vec<u32> = rows.iter().map(|r| r.pid).collect();
        assert_eq!(order, [2, 9, 3]);
    }
}
