//! The last resort against the perf.data crates' panics: each call into
//! them runs under `catch_unwind`, with a panic hook that stays silent while
//! such a call runs, and a panic becomes its message (see the reader's doc).
//! Also the name of an event the file does not name.

use std::cell::Cell;
use std::panic::AssertUnwindSafe;
use std::sync::Once;

use linux_perf_data::linux_perf_event_reader::{
    HardwareEventId, PerfEventAttr, PerfEventType, SoftwareCounterType,
};

thread_local! {
    /// True while this thread runs a call into the crate under `guard`.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// A panic inside the perf.data crates, as its message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct Panicked(pub(super) String);

/// Runs `f` (a call into the perf.data crates), turning a panic into its
/// message. While `f` runs, the panic hook prints nothing on this thread;
/// other threads and other panics keep the previous hook.
pub(super) fn guard<T>(f: impl FnOnce() -> T) -> Result<T, Panicked> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was_quiet = QUIET.with(|q| q.replace(true));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was_quiet));
    result.map_err(|payload| {
        Panicked(
            payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".to_owned()),
        )
    })
}

/// A name for an event the file does not name.
pub(super) fn fallback_name(attr: &PerfEventAttr) -> String {
    match attr.type_ {
        PerfEventType::Software(sw) => match sw {
            SoftwareCounterType::CpuClock => "cpu-clock",
            SoftwareCounterType::TaskClock => "task-clock",
            SoftwareCounterType::PageFaults => "page-faults",
            SoftwareCounterType::ContextSwitches => "context-switches",
            SoftwareCounterType::CpuMigrations => "cpu-migrations",
            SoftwareCounterType::PageFaultsMin => "minor-faults",
            SoftwareCounterType::PageFaultsMaj => "major-faults",
            SoftwareCounterType::AlignmentFaults => "alignment-faults",
            SoftwareCounterType::EmulationFaults => "emulation-faults",
            SoftwareCounterType::Dummy => "dummy",
            _ => "software",
        }
        .to_owned(),
        PerfEventType::Hardware(hw, _) => match hw {
            HardwareEventId::CpuCycles => "cycles",
            HardwareEventId::Instructions => "instructions",
            HardwareEventId::CacheReferences => "cache-references",
            HardwareEventId::CacheMisses => "cache-misses",
            HardwareEventId::BranchInstructions => "branches",
            HardwareEventId::BranchMisses => "branch-misses",
            _ => "hardware",
        }
        .to_owned(),
        PerfEventType::Tracepoint(id) => format!("tracepoint {id}"),
        PerfEventType::HwCache(..) => "hw-cache".to_owned(),
        PerfEventType::Breakpoint(..) => "breakpoint".to_owned(),
        PerfEventType::DynamicPmu(pmu, config, ..) => format!("pmu{pmu}/config=0x{config:x}/"),
    }
}
