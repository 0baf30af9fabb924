//! Event groups in `scry stat` (`capture::counting`): where each event
//! stands in its group, the attribute bits that make perf's group (one
//! `PERF_FORMAT_GROUP` read for all, members that follow their leader),
//! and reading one counter's value out of its group's read by its id.

use crate::event::name::{self, ResolvedEvent};
use crate::model::counter::Reading;
use crate::sys::perf_event::{self as pe, PerfEventFd, perf_event_attr};

use super::CaptureError;

/// How an event opens: alone, leading a group of `len`, or in the group of
/// the event at `leader`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GroupPlace {
    Alone,
    Leader { len: usize },
    Member { leader: usize, len: usize },
}

pub(super) fn group_place(events: &[ResolvedEvent], index: usize) -> GroupPlace {
    if let Some(leader) = name::group_leader(events, index) {
        return GroupPlace::Member {
            leader,
            len: name::group_size(events, leader),
        };
    }
    match name::group_size(events, index) {
        1 => GroupPlace::Alone,
        len => GroupPlace::Leader { len },
    }
}

/// `attr` for its place in a group, as perf stat opens groups: the whole
/// group reads at once (`PERF_FORMAT_GROUP`, ids to tell members apart);
/// members follow their leader, so they start enabled and never enable on
/// exec themselves.
pub(super) fn grouped_attr(mut attr: perf_event_attr, place: GroupPlace) -> perf_event_attr {
    match place {
        GroupPlace::Alone => {}
        GroupPlace::Leader { .. } => {
            attr.read_format |= pe::PERF_FORMAT_ID | pe::PERF_FORMAT_GROUP;
        }
        GroupPlace::Member { .. } => {
            attr.read_format |= pe::PERF_FORMAT_ID | pe::PERF_FORMAT_GROUP;
            attr.set_disabled(0);
            attr.set_enable_on_exec(0);
        }
    }
    attr
}

/// One counter's value and times; from its group's read when grouped
/// (`nr, time_enabled, time_running, {value, id} * nr`).
pub(super) fn read_counter(
    fd: &PerfEventFd,
    group: Option<(u64, usize)>,
    buf: &mut Vec<u64>,
) -> Result<Reading, CaptureError> {
    let words = match group {
        Some((_, len)) => 3 + 2 * len,
        None => 3,
    };
    buf.clear();
    buf.resize(words, 0);
    let n = fd.read_values(buf).map_err(CaptureError::System)?;
    let Some((id, _)) = group else {
        return Ok(if n >= 3 {
            Reading {
                value: buf[0],
                enabled: buf[1],
                running: buf[2],
            }
        } else {
            Reading::default()
        });
    };
    let nr = buf.first().map_or(0, |&nr| nr as usize);
    let value = buf
        .get(3..n.min(3 + 2 * nr))
        .unwrap_or(&[])
        .chunks_exact(2)
        .find(|pair| pair[1] == id)
        .map(|pair| pair[0]);
    Ok(match (value, buf.get(1..3)) {
        (Some(value), Some(&[enabled, running])) => Reading {
            value,
            enabled,
            running,
        },
        _ => Reading::default(),
    })
}
