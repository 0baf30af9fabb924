//! The capture `scry profile` and `scry record --profile` open: the hook
//! events (named by `event::hook_events`) system-wide with context-switch
//! records, every event sampled, call chains only where the report shows
//! them (sched_switch split by `event::hook_events::split_switch`).

use std::ffi::OsString;
use std::io;

use super::{CallGraph, CaptureOptions, DEFAULT_FP_STACK_SIZE, Target};
use crate::event::hook_events::{default_events, is_switch, split_switch};
use crate::event::name::{self, EventError, ResolvedEvent};

/// Why the profile's events cannot be chosen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ProfileEventsError {
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
