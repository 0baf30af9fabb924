//! What `scry profile` pairs, decided before the capture: the default
//! hooks' events (less those a BPF program sums in the kernel) and the
//! `-H` hooks' events, each event's tracepoint format and the fields the
//! engine reads of it, the events whose call chains are taken, and each
//! event's role. `capture::profile_events::hook_capture` opens them.
//!
//! Stacks are taken on blocking switch-outs only (sched_switch split in
//! two, the copy aliased to it in the feed), unless a `-H` hook wants them
//! on every sched_switch it starts at. An event the kernel sums may come
//! back as a `-H` hook's: it then serves the hook only.

use std::path::Path;

use super::pairs::{Builtin, Hook};
use super::pairs_feed::{HookFieldError, wanted_fields};
use super::pairs_report::covered_by;
use crate::event::format::{EventFormat, FormatError, load_format};
use crate::event::hook_events::{
    HookEventError, default_events, find_event, is_switch, split_switch,
};
use crate::sys::bpf_profile::Covered;

/// Why the events cannot be planned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum PairsPlanError {
    /// A hook's event is not there.
    #[error("{0}")]
    Event(#[from] HookEventError),
    /// Nothing left to pair.
    #[error("no events to profile (--no-default-hooks without -H)")]
    NoEvents,
    /// A tracepoint's format file.
    #[error("reading the format of {system}:{name}")]
    Format {
        /// The tracepoint's system.
        system: String,
        /// The tracepoint's name.
        name: String,
        /// What went wrong.
        #[source]
        err: FormatError,
    },
    /// A hook's field is not in its event.
    #[error("-H")]
    Fields(#[source] HookFieldError),
}

/// The events, as opened and as the engine reads them.
#[derive(Debug)]
pub(crate) struct PairsPlan {
    /// The tracepoints, as (system, name), in the capture's order.
    pub(crate) events: Vec<(String, String)>,
    /// The events whose call chains are taken.
    pub(crate) stack_events: Vec<usize>,
    /// Tracepoint filters by event (sched_switch's halves).
    pub(crate) filters: Vec<(usize, String)>,
    /// Each event's format.
    pub(crate) formats: Vec<EventFormat>,
    /// The fields the engine reads of each event.
    pub(crate) wanted: Vec<Vec<String>>,
    /// The `-H` hooks with their start and end events.
    pub(crate) hook_events: Vec<(Hook, usize, usize)>,
    /// Each event's role for the engine.
    pub(crate) roles: Vec<Builtin>,
    /// sched_switch's copy and the event it stands for, when split.
    pub(crate) switch_copy: Option<(usize, usize)>,
}

impl PairsPlan {
    /// Plans the events among tracefs's `all` (formats read under
    /// `root`): the default hooks' unless `!default_hooks`, less those
    /// `covered` in the kernel, then `hooks`'.
    pub(crate) fn new(
        root: &Path,
        all: &[(String, String)],
        hooks: &[Hook],
        default_hooks: bool,
        covered: Covered,
    ) -> Result<PairsPlan, PairsPlanError> {
        // The events: defaults that exist here, then the hooks' events.
        let mut events: Vec<(String, String)> = if !default_hooks {
            Vec::new()
        } else {
            default_events(all)
        };
        events.retain(|(s, e)| !covered_by(covered, Builtin::of(s, e)));
        let index_of = |events: &mut Vec<(String, String)>, ev: (String, String)| {
            events.iter().position(|x| *x == ev).unwrap_or_else(|| {
                events.push(ev);
                events.len() - 1
            })
        };
        let mut hook_events = Vec::new();
        for hook in hooks {
            let start = index_of(&mut events, find_event(&hook.start, all)?);
            let end = index_of(&mut events, find_event(&hook.end, all)?);
            hook_events.push((hook.clone(), start, end));
        }
        if events.is_empty() {
            return Err(PairsPlanError::NoEvents);
        }
        let formats: Vec<EventFormat> = events
            .iter()
            .map(|(s, e)| {
                load_format(root, s, e).map_err(|err| PairsPlanError::Format {
                    system: s.clone(),
                    name: e.clone(),
                    err,
                })
            })
            .collect::<Result<_, _>>()?;
        // Check the hooks' fields exist, and collect what each event needs.
        let refs: Vec<Option<&EventFormat>> = formats.iter().map(Some).collect();
        let wanted = wanted_fields(&refs, &hook_events).map_err(PairsPlanError::Fields)?;
        let switch = events.iter().position(is_switch);
        let stack_events: Vec<usize> = switch
            .filter(|_| default_hooks)
            .into_iter()
            .chain(
                hook_events
                    .iter()
                    .filter(|(h, ..)| h.stack)
                    .map(|(_, s, _)| *s),
            )
            .collect();
        // Stacks on blocking switch-outs only, unless a -H hook wants them on
        // every sched_switch it starts at.
        let mut formats = formats;
        let mut wanted = wanted;
        let mut switch_copy = None;
        let mut filters = Vec::new();
        if let Some(switch) = switch
            && stack_events.contains(&switch)
            && !hook_events
                .iter()
                .any(|(h, start, _)| h.stack && *start == switch)
        {
            let (copy, split) = split_switch(&mut events, switch);
            formats.push(formats[switch].clone());
            wanted.push(wanted[switch].clone());
            switch_copy = Some((copy, switch));
            filters = split;
        }
        // An event the kernel sums may be back as a -H hook's: the hook only.
        let roles: Vec<Builtin> = events
            .iter()
            .map(|(s, e)| Builtin::of(s, e))
            .map(|r| {
                if covered_by(covered, r) {
                    Builtin::Other
                } else {
                    r
                }
            })
            .collect();
        Ok(PairsPlan {
            events,
            stack_events,
            filters,
            formats,
            wanted,
            hook_events,
            roles,
            switch_copy,
        })
    }
}
