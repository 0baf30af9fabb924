//! The columns of `scry report --stdio`: perf's percentage and count
//! columns and the sort keys, in perf's default order or in the order
//! `-F/--fields` lists them (`overhead`, `overhead_sys`, `overhead_us`,
//! `overhead_children`, `sample`, `period`, then any sort key).
//!
//! With `-F`, entries are sorted as perf sorts them: by the columns in
//! their order (numbers descending, names ascending), or by the `-s` keys
//! when `-s` is given too (`sort_entries`).
//!
//! As in perf, `sample` and `period` count an entry's own samples (its
//! `Self`), also beside `Children`; `overhead_sys`/`overhead_us` split the
//! self period by where the sample was taken (kernel or user), headed `sys`
//! and `usr`. Percentages are 8 wide, counts 12, keys as wide as their
//! widest cell; numbers are right-aligned.

use std::cmp::Ordering;

use crate::analysis::profile::{Entry, EventProfile, SortKey};
use crate::analysis::sample::FrameTable;

/// One column of the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Column {
    /// Period of the samples whose stack holds the entry (`Children`).
    Children,
    /// The entry's own period, headed `Self` (beside `Children` by default).
    SelfShare,
    /// The entry's own period, headed `Overhead`.
    Overhead,
    /// Of the own period, the part sampled in the kernel (`sys`).
    Sys,
    /// Of the own period, the part sampled in user space (`usr`).
    Usr,
    /// The entry's own samples (`Samples`).
    Samples,
    /// The entry's own period (`Period`).
    Period,
    Key(SortKey),
}

/// `-F` names of the columns that are not sort keys.
const FIELDS: [(&str, Column); 6] = [
    ("overhead", Column::Overhead),
    ("overhead_sys", Column::Sys),
    ("overhead_us", Column::Usr),
    ("overhead_children", Column::Children),
    ("sample", Column::Samples),
    ("period", Column::Period),
];

/// A `-F` list that does not parse.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FieldListError {
    #[error("unknown field '{0}' (known: {known}, {keys})", known = field_names(), keys = SortKey::known())]
    Unknown(String),
    #[error("empty field list")]
    Empty,
}

fn field_names() -> String {
    let fields: Vec<&str> = FIELDS.iter().map(|(n, _)| *n).collect();
    fields.join(", ")
}

impl Column {
    /// Parses `-F` (`overhead,sample,comm,sym`); an unknown name is an
    /// error listing the known ones.
    pub(crate) fn parse_fields(list: &str) -> Result<Vec<Column>, FieldListError> {
        let mut columns = Vec::new();
        for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let column = FIELDS
                .iter()
                .find(|(name, _)| *name == word)
                .map(|(_, c)| *c)
                .or_else(|| {
                    SortKey::parse_list(word)
                        .ok()?
                        .first()
                        .map(|&k| Column::Key(k))
                })
                .ok_or_else(|| FieldListError::Unknown(word.to_owned()))?;
            if !columns.contains(&column) {
                columns.push(column);
            }
        }
        if columns.is_empty() {
            return Err(FieldListError::Empty);
        }
        Ok(columns)
    }

    /// perf's columns without `-F`: `Children Self` or `Overhead`, then
    /// `Samples` with `-n`, then the sort keys.
    pub(crate) fn defaults(children: bool, show_samples: bool, sort: &[SortKey]) -> Vec<Column> {
        let mut columns = if children {
            vec![Column::Children, Column::SelfShare]
        } else {
            vec![Column::Overhead]
        };
        if show_samples {
            columns.push(Column::Samples);
        }
        columns.extend(sort.iter().map(|&k| Column::Key(k)));
        columns
    }

    pub(crate) fn header(self) -> &'static str {
        match self {
            Column::Children => "Children",
            Column::SelfShare => "Self",
            Column::Overhead => "Overhead",
            Column::Sys => "sys",
            Column::Usr => "usr",
            Column::Samples => "Samples",
            Column::Period => "Period",
            Column::Key(k) => k.header(),
        }
    }

    /// The narrowest the column is (its cells may widen a key column).
    pub(crate) fn min_width(self) -> usize {
        match self {
            Column::Samples | Column::Period => 12,
            Column::Key(SortKey::Pid | SortKey::Tid) => 7,
            Column::Key(SortKey::Socket) => 6,
            Column::Key(k) => k.header().len(),
            _ => 8,
        }
    }

    /// Whether wider cells widen the column (perf keeps `cpu` at 3 and
    /// lets `-001` stick out).
    pub(crate) fn widens(self) -> bool {
        self != Column::Key(SortKey::Cpu)
    }

    /// Numbers are right-aligned; names left-aligned.
    pub(crate) fn right_aligned(self) -> bool {
        !matches!(
            self,
            Column::Key(
                SortKey::Comm
                    | SortKey::Dso
                    | SortKey::Sym
                    | SortKey::Parent
                    | SortKey::Srcline
                    | SortKey::Cpu
            )
        )
    }

    /// How two entries compare in this column: numbers descending, names
    /// ascending (perf's order for `-F` columns and `-s` keys).
    pub(crate) fn compare(self, a: &Entry, b: &Entry, frames: &FrameTable) -> Ordering {
        let number = |e: &Entry| match self {
            Column::Children => Some(e.children_period),
            Column::SelfShare | Column::Overhead | Column::Period => Some(e.self_period),
            Column::Sys => Some(e.self_sys_period),
            Column::Usr => Some(e.self_period - e.self_sys_period),
            Column::Samples => Some(e.self_samples),
            Column::Key(_) => None,
        };
        match (self, number(a), number(b)) {
            (_, Some(x), Some(y)) => y.cmp(&x),
            (Column::Key(SortKey::Pid), ..) => a.pid.cmp(&b.pid),
            (Column::Key(SortKey::Tid), ..) => a.tid.cmp(&b.tid),
            (Column::Key(SortKey::Cpu), ..) => a.cpu.cmp(&b.cpu),
            (Column::Key(SortKey::Socket), ..) => a.socket.cmp(&b.socket),
            // By name, without the `[k]`/`[.]` marker.
            (Column::Key(SortKey::Sym), ..) => {
                let name = |e: &Entry| e.frame.and_then(|f| frames.get(f).sym.clone());
                name(a).cmp(&name(b))
            }
            (Column::Key(k), ..) => {
                super::report::key_cell(k, a, frames).cmp(&super::report::key_cell(k, b, frames))
            }
            _ => Ordering::Equal,
        }
    }

    /// The text of this column in `entry`'s row.
    pub(crate) fn cell(self, ev: &EventProfile, entry: &Entry, frames: &FrameTable) -> String {
        let pct = |period: u64| format!("{:>7.2}%", ev.percent(period));
        match self {
            Column::Children => pct(entry.children_period),
            Column::SelfShare | Column::Overhead => pct(entry.self_period),
            Column::Sys => pct(entry.self_sys_period),
            Column::Usr => pct(entry.self_period - entry.self_sys_period),
            Column::Samples => entry.self_samples.to_string(),
            Column::Period => entry.self_period.to_string(),
            Column::Key(k) => super::report::key_cell(k, entry, frames),
        }
    }
}

/// Sorts an event's entries by `by`, in order (stable: ties keep the
/// profile's order).
pub(crate) fn sort_entries(ev: &mut EventProfile, by: &[Column], frames: &FrameTable) {
    ev.entries.sort_by(|a, b| {
        by.iter()
            .map(|c| c.compare(a, b, frames))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_parse_as_perf_names_them() {
        assert_eq!(
            Column::parse_fields("overhead,sample,period,comm,symbol").unwrap(),
            vec![
                Column::Overhead,
                Column::Samples,
                Column::Period,
                Column::Key(SortKey::Comm),
                Column::Key(SortKey::Sym)
            ]
        );
        let err = Column::parse_fields("overhead,xx").unwrap_err().to_string();
        assert!(
            err.starts_with("unknown field 'xx' (known: overhead, overhead_sys, ")
                && err.ends_with("cpu, socket, srcline)"),
            "{err}"
        );
        assert_eq!(
            Column::defaults(true, true, &[SortKey::Sym]),
            vec![
                Column::Children,
                Column::SelfShare,
                Column::Samples,
                Column::Key(SortKey::Sym)
            ]
        );
    }
}
