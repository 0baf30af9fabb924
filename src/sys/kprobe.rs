//! Kernel probes in tracefs `kprobe_events`: lasting probes on kernel
//! functions (`p:probe/do_sys_openat2 do_sys_openat2 filename=+0(%si):string`,
//! `r:probe/FUNC__return FUNC arg1=$retval:s64`), which appear as
//! tracepoints under `events/probe/` until deleted, as `perf probe` makes
//! them. Probes for one run go through the kprobe PMU instead
//! (`sys::uprobe::UprobePmu::detect_kprobe`, opened as a uprobe is with the
//! function's name where a uprobe has its path): nothing in tracefs.
//!
//! Invariant: nothing here reads BTF or builds fetch arguments; callers hand
//! in the whole definition line.

use std::io;
use std::path::{Path, PathBuf};

fn events_file(tracefs_root: &Path) -> PathBuf {
    tracefs_root.join("kprobe_events")
}

/// Whether this kernel has kprobes (a `kprobe_events` file).
pub(crate) fn available(tracefs_root: &Path) -> bool {
    events_file(tracefs_root).exists()
}

/// Appends one definition; the kernel's refusal comes back with tracefs
/// `error_log`'s last line.
pub(crate) fn add_event(tracefs_root: &Path, definition: &str) -> io::Result<()> {
    super::uprobe::append_line(&events_file(tracefs_root), tracefs_root, definition)
}

/// Removes the probe `GROUP/NAME` (`-:GROUP/NAME`); EBUSY while in use.
pub(crate) fn remove_event(tracefs_root: &Path, group: &str, name: &str) -> io::Result<()> {
    add_event(tracefs_root, &format!("-:{group}/{name}"))
}

/// The text of `kprobe_events`, one definition a line as the kernel prints
/// them (`r10:probe/FUNC__return FUNC arg1=$retval:s64`).
pub(crate) fn list_events(tracefs_root: &Path) -> io::Result<String> {
    std::fs::read_to_string(events_file(tracefs_root))
}
