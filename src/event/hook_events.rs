//! The tracepoints `scry profile`'s hooks pair: trace-cmd profile's
//! default list (those that exist here), a `-H` hook's events found by
//! `name` or `system:name` among tracefs's, and sched_switch's two halves.
//!
//! The decision: sched_switch is opened twice (`split_switch`), its
//! blocking switch-outs with call chains and the rest without, because a
//! kernel call chain costs microseconds and only a blocked task's stack is
//! shown.

/// A hook's event that is not there, or not said clearly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum HookEventError {
    /// No tracepoint of that name.
    #[error("unknown event '{0}' (see 'scry list')")]
    Unknown(String),
    /// Several systems have a tracepoint of that name.
    #[error("event name '{0}' is ambiguous: give it as system:name")]
    Ambiguous(String),
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
) -> Result<(String, String), HookEventError> {
    if let Some((system, event)) = text.split_once(':') {
        if all.iter().any(|(s, e)| s == system && e == event) {
            return Ok((system.to_string(), event.to_string()));
        }
        return Err(HookEventError::Unknown(text.to_string()));
    }
    let matches: Vec<_> = all.iter().filter(|(_, e)| e == text).collect();
    match matches.as_slice() {
        [(s, e)] => Ok((s.clone(), e.clone())),
        [] => Err(HookEventError::Unknown(text.to_string())),
        _ => Err(HookEventError::Ambiguous(text.to_string())),
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
