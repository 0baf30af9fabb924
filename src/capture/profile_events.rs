//! The events `scry profile` and `scry record --profile` open: the default
//! hooks' tracepoints that exist here (trace-cmd profile's list), a `-H`
//! hook's events looked up by name, and the capture of them all:
//! system-wide with context-switch records, every event sampled, call
//! chains only where the report shows them.
//!
//! The decision: sched_switch is opened twice (`split_switch`), its
//! blocking switch-outs with call chains and the rest without, because a
//! kernel call chain costs microseconds and only a blocked task's stack is
//! shown.

use std::ffi::OsString;
use std::io;

use super::{CallGraph, CaptureOptions, DEFAULT_FP_STACK_SIZE, Target};
use crate::event::name::{self, EventError, ResolvedEvent};

/// Why the profile's events cannot be chosen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ProfileEventsError {
    /// No tracepoint of that name.
    #[error("unknown event '{0}' (see 'scry list')")]
    Unknown(String),
    /// Several systems have a tracepoint of that name.
    #[error("event name '{0}' is ambiguous: give it as system:name")]
    Ambiguous(String),
    /// `record --profile` with `-p`, `-t` or `-C`.
    #[error(
        "--profile records the whole system (wakeups happen in other tasks): \
         give a command after -- or -a; pick tasks later with 'scry report --profile --pid'"
    )]
    NotWholeSystem,
    /// tracefs is not there.
    #[error("--profile needs tracepoints: {0}")]
    NoTracefs(io::Error),
    /// tracefs's events could not be listed.
    #[error("listing tracepoints: {0}")]
    Listing(io::Error),
    /// None of `DEFAULT_EVENTS` exists here.
    #[error("--profile: none of the default hook tracepoints exist here")]
    NoDefaultEvents,
    /// An event name that does not parse or resolve.
    #[error("{0}")]
    Event(#[from] EventError),
}

/// The default hooks' events (trace-cmd profile's), as (system, name).
pub(crate) const DEFAULT_EVENTS: &[(&str, &str)] = &[
    ("sched", "sched_switch"),
    ("sched", "sched_waking"),
    ("sched", "sched_wakeup"),
    ("raw_syscalls", "sys_enter"),
    ("raw_syscalls", "sys_exit"),
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_raise"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
    ("exceptions", "page_fault_user"),
    ("exceptions", "page_fault_kernel"),
];

/// `name` or `system:name` → (system, name), looked up in tracefs.
pub(crate) fn find_event(
    text: &str,
    all: &[(String, String)],
) -> Result<(String, String), ProfileEventsError> {
    if let Some((system, event)) = text.split_once(':') {
        if all.iter().any(|(s, e)| s == system && e == event) {
            return Ok((system.to_string(), event.to_string()));
        }
        return Err(ProfileEventsError::Unknown(text.to_string()));
    }
    let matches: Vec<_> = all.iter().filter(|(_, e)| e == text).collect();
    match matches.as_slice() {
        [(s, e)] => Ok((s.clone(), e.clone())),
        [] => Err(ProfileEventsError::Unknown(text.to_string())),
        _ => Err(ProfileEventsError::Ambiguous(text.to_string())),
    }
}

/// The default hooks' events that exist here, in `DEFAULT_EVENTS` order.
pub(crate) fn default_events(all: &[(String, String)]) -> Vec<(String, String)> {
    DEFAULT_EVENTS
        .iter()
        .filter(|(s, e)| all.iter().any(|(a, b)| a == s && b == e))
        // sched_waking is the wakeup where it exists: sched_wakeup is then
        // superfluous.
        .filter(|&&(s, e)| {
            !(s == "sched"
                && e == "sched_wakeup"
                && all.iter().any(|(a, b)| a == "sched" && b == "sched_waking"))
        })
        .map(|(s, e)| (s.to_string(), e.to_string()))
        .collect()
}

/// sched_switch's two halves when stacks are taken only where tasks block
/// (`split_switch`): the switch-outs `analysis::offcpu::state_letter` calls
/// blocked (a state bit in the low byte: S, D, I, ...), whose stacks the
/// report shows, and the rest (preemptions, `R+`, and every switch-out of
/// an idle task), which need none. Complements, so each switch is in one.
const SWITCH_BLOCKED: &str = "prev_state & 255";
const SWITCH_NOT_BLOCKED: &str = "!(prev_state & 255)";

/// Opens sched_switch (`events[switch]`) twice: itself, filtered to the
/// blocking switch-outs, keeps its call chains; a copy appended to
/// `events`, filtered to the others, takes none. A kernel call chain costs
/// microseconds (the unwinder walks a dozen frames), and a blocking
/// switch-out is the only one whose stack the report shows: preemptions
/// and idle tasks' switch-outs are a fifth of the switches of a messaging
/// storm and half those of a ping-pong. Returns the copy's index and the
/// filters of both halves.
pub(crate) fn split_switch(
    events: &mut Vec<(String, String)>,
    switch: usize,
) -> (usize, Vec<(usize, String)>) {
    events.push(events[switch].clone());
    let copy = events.len() - 1;
    let filters = vec![
        (switch, SWITCH_BLOCKED.to_string()),
        (copy, SWITCH_NOT_BLOCKED.to_string()),
    ];
    (copy, filters)
}

/// Whether an event is sched_switch.
pub(crate) fn is_switch((system, event): &(String, String)) -> bool {
    system == "sched" && event == "sched_switch"
}

/// Capture options for the hook events: every event sampled, call chains
/// on `stack_events` only, tracepoint `filters`, switch-ins from
/// context-switch records, the whole system watched (a wakeup fires in the
/// waker's context).
pub(crate) fn hook_capture(
    events: &[(String, String)],
    stack_events: &[usize],
    filters: Vec<(usize, String)>,
    command: Vec<OsString>,
    mmap_pages: Option<usize>,
) -> Result<CaptureOptions, EventError> {
    let specs: Vec<_> = events
        .iter()
        .map(|(s, e)| name::parse(&format!("{s}:{e}")))
        .collect::<Result<_, _>>()?;
    let resolved_events: Vec<ResolvedEvent> = name::resolve(&specs)?;
    let no_callchain: Vec<usize> = (0..events.len())
        .filter(|i| !stack_events.contains(i))
        .collect();
    let mut options = CaptureOptions::every_switch(
        resolved_events,
        command,
        CallGraph::FramePointerStack {
            stack_size: DEFAULT_FP_STACK_SIZE,
        },
    );
    options.filters = filters;
    options.no_callchain = no_callchain;
    if let Some(pages) = mmap_pages {
        options.mmap_pages = pages;
    }
    Ok(options)
}

/// `scry record --profile`: the default hooks' events (stacks on
/// sched_switch), system-wide, with context-switch records, for
/// `scry report --profile`. `target` is record's, already checked.
pub(crate) fn record_options(
    target: &Target,
    mmap_pages: Option<usize>,
) -> Result<CaptureOptions, ProfileEventsError> {
    if !target.pids.is_empty() || !target.tids.is_empty() || target.cpus.is_some() {
        return Err(ProfileEventsError::NotWholeSystem);
    }
    crate::sys::tracefs::root().map_err(ProfileEventsError::NoTracefs)?;
    let all = crate::sys::tracefs::list_events().map_err(ProfileEventsError::Listing)?;
    let mut events = default_events(&all);
    if events.is_empty() {
        return Err(ProfileEventsError::NoDefaultEvents);
    }
    // Both halves of sched_switch are the engine's sched_switch in the file.
    let (stacks, filters) = match events.iter().position(is_switch) {
        Some(switch) => (vec![switch], split_switch(&mut events, switch).1),
        None => (Vec::new(), Vec::new()),
    };
    Ok(hook_capture(
        &events,
        &stacks,
        filters,
        target.command.clone(),
        mmap_pages,
    )?)
}
