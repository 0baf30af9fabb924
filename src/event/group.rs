//! perf's event groups: `'{task-clock,page-faults}'`, `'{cycles,instructions}:u'`.
//! A group is counted (or sampled) as one unit: its members are opened
//! with the leader's descriptor as `group_fd`, so the kernel schedules them
//! together, never one without the other.
//!
//! A group is kept as positions, not numbers: the leader carries
//! [`GroupRole::Leader`] and its members follow it, each
//! [`GroupRole::Member`]. That survives lists joined from several `-e`
//! and tracepoint globs expanded in place (the first expansion of a leader
//! leads, the rest are members).
//!
//! Modifiers after the braces apply to every member (perf's rule: a
//! member's own `:u`/`:k` are widened by the group's, precision is the
//! higher one); names stay as the members were written, as perf prints
//! them.

use super::name::{self, EventError, EventSpec, Modifiers};

/// Where an event stands in its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GroupRole {
    Leader,
    Member,
}

/// `{a,b}:mods` (one item of `name::split_list`) into its events.
pub(crate) fn parse_group(text: &str) -> Result<Vec<EventSpec>, EventError> {
    let bad = |why: &str| EventError::BadGroup(text.to_string(), why.to_string());
    let inner_start = text
        .strip_prefix('{')
        .ok_or_else(|| bad("must start with '{'"))?;
    let close = inner_start
        .rfind('}')
        .ok_or_else(|| bad("no closing '}'"))?;
    let (inner, after) = (&inner_start[..close], &inner_start[close + 1..]);
    if inner.contains(['{', '}']) {
        return Err(bad("groups do not nest"));
    }
    let group_mods = match after {
        "" => None,
        m => match m.strip_prefix(':') {
            Some(mods) => Some(name::parse_modifiers(text, mods)?),
            None => return Err(bad("expected ':MODIFIERS' after '}'")),
        },
    };
    let items = name::split_list(inner);
    if items.is_empty() {
        return Err(bad("no events in it"));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let mut spec = name::parse(item)?;
        if let Some(g) = group_mods {
            spec.modifiers = widen(spec.modifiers, g);
        }
        spec.group = Some(if i == 0 {
            GroupRole::Leader
        } else {
            GroupRole::Member
        });
        out.push(spec);
    }
    Ok(out)
}

/// A member's modifiers with the group's applied.
fn widen(member: Modifiers, group: Modifiers) -> Modifiers {
    let member_limited = member.exclude_user || member.exclude_kernel;
    let group_limited = group.exclude_user || group.exclude_kernel;
    let (exclude_user, exclude_kernel) = match (member_limited, group_limited) {
        (_, false) => (member.exclude_user, member.exclude_kernel),
        (false, true) => (group.exclude_user, group.exclude_kernel),
        (true, true) => (
            member.exclude_user && group.exclude_user,
            member.exclude_kernel && group.exclude_kernel,
        ),
    };
    Modifiers {
        exclude_user,
        exclude_kernel,
        precise_ip: member.precise_ip.max(group.precise_ip),
    }
}

/// The index of event `index`'s group leader when it is a member of a
/// group of two or more; None for leaders and ungrouped events.
pub(crate) fn group_leader<E: HasGroup>(events: &[E], index: usize) -> Option<usize> {
    if events.get(index)?.role() != Some(GroupRole::Member) {
        return None;
    }
    (0..index)
        .rev()
        .find(|&i| events[i].role() != Some(GroupRole::Member))
        .filter(|&i| events[i].role() == Some(GroupRole::Leader))
}

/// How many events the group led by `index` has (1 when it is no leader).
pub(crate) fn group_size<E: HasGroup>(events: &[E], index: usize) -> usize {
    match events.get(index).and_then(HasGroup::role) {
        Some(GroupRole::Leader) => {
            1 + events[index + 1..]
                .iter()
                .take_while(|e| e.role() == Some(GroupRole::Member))
                .count()
        }
        _ => 1,
    }
}

/// Anything that knows its place in a group.
pub(crate) trait HasGroup {
    fn role(&self) -> Option<GroupRole>;
}

impl HasGroup for EventSpec {
    fn role(&self) -> Option<GroupRole> {
        self.group
    }
}

impl HasGroup for name::ResolvedEvent {
    fn role(&self) -> Option<GroupRole> {
        self.group
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::name::{EventKind, parse_list};

    #[test]
    fn parses_groups_with_modifiers() {
        let specs = parse_list("{task-clock,page-faults}:u,cs").unwrap();
        assert_eq!(specs.len(), 3);
        assert_eq!(specs[0].name, "task-clock");
        assert_eq!(specs[0].kind, EventKind::Software(1));
        assert_eq!(specs[0].group, Some(GroupRole::Leader));
        assert_eq!(specs[1].group, Some(GroupRole::Member));
        assert_eq!(specs[2].group, None);
        assert!(specs[1].modifiers.exclude_kernel && !specs[1].modifiers.exclude_user);
        assert_eq!(group_leader(&specs, 1), Some(0));
        assert_eq!(group_leader(&specs, 0), None);
        assert_eq!(group_leader(&specs, 2), None);
        assert_eq!(group_size(&specs, 0), 2);
        assert_eq!(group_size(&specs, 2), 1);
        // A member's own :k widened by the group's :u; precision is the max.
        let s = parse_list("{cycles:k,instructions:p}:upp").unwrap();
        assert!(!s[0].modifiers.exclude_user && !s[0].modifiers.exclude_kernel);
        assert_eq!(s[1].modifiers.precise_ip, 2);
        // Two groups side by side stay two.
        let s = parse_list("{cs,faults},{cpu-clock,migrations}").unwrap();
        assert_eq!(group_leader(&s, 3), Some(2));
        assert_eq!(group_size(&s, 0), 2);
    }

    #[test]
    fn rejects_bad_groups() {
        for bad in ["{cs,faults", "{cs}x", "{}", "{cs,{faults}}", "{cs,nosuch}"] {
            assert!(parse_list(bad).is_err(), "{bad} parsed");
        }
        let msg = parse_list("{cs}u").unwrap_err().to_string();
        assert!(
            msg.contains("{cs}u") && msg.contains("':MODIFIERS'"),
            "{msg}"
        );
    }
}
