//! User-space probes, both kinds the kernel offers.
//!
//! - Persistent probes: lines written to tracefs `uprobe_events`
//!   (`p:probe_libc/malloc /usr/lib/.../libc.so.6:0x9a8c0 size=%di:u64`).
//!   They appear as tracepoints under `events/<group>/<name>` and outlive
//!   the process that made them, as `perf probe` intends.
//! - Probes tied to a file descriptor: the `uprobe` PMU
//!   (/sys/bus/event_source/devices/uprobe). `perf_event_attr.type` is the
//!   PMU's type, `config1` a pointer to the path, `config2` the file offset,
//!   and the `retprobe` bit (its position read from the PMU's `format/`
//!   directory) asks for a return probe. The kernel removes the probe when
//!   the last descriptor closes, so it cannot outlive scry even after
//!   SIGKILL. These carry no fetch arguments: arguments come from sampled
//!   registers (`PERF_SAMPLE_REGS_USER`).
//! - `monotonic_ns`, the clock the tracer's counters use. (Nothing here
//!   reads a traced process's memory: `scry trace` copies strings in the
//!   kernel at the entry, `sys::bpf_trace`, as a later read races.)
//!
//! Invariant: nothing here parses ELF or DWARF; callers hand in file
//! offsets and fetch-argument text already built.

use std::ffi::CString;
use std::io::{self, Write};
use std::path::Path;

use super::perf_event::{PerfEventFd, perf_event_attr};

const PMU_DIR: &str = "/sys/bus/event_source/devices/uprobe";
/// The kprobe PMU: the same attribute layout, `config1` pointing at a
/// kernel function's name and `config2` the offset into it.
const KPROBE_PMU_DIR: &str = "/sys/bus/event_source/devices/kprobe";

/// The `uprobe` PMU, when the kernel has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UprobePmu {
    /// `perf_event_attr.type` for uprobes.
    pub(crate) type_: u32,
    /// The `config` bit that makes a return probe.
    pub(crate) retprobe_bit: u32,
}

impl UprobePmu {
    /// Reads the PMU's type and `format/retprobe` (`config:0`).
    pub(crate) fn detect() -> io::Result<UprobePmu> {
        Self::detect_in(PMU_DIR)
    }

    /// The kprobe PMU, read as the uprobe one (`sys::kprobe`).
    pub(crate) fn detect_kprobe() -> io::Result<UprobePmu> {
        Self::detect_in(KPROBE_PMU_DIR)
    }

    fn detect_in(pmu_dir: &str) -> io::Result<UprobePmu> {
        let dir = Path::new(pmu_dir);
        let type_text = std::fs::read_to_string(dir.join("type"))?;
        let type_ = type_text.trim().parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{pmu_dir}/type: not a number: {:?}", type_text.trim()),
            )
        })?;
        let format = std::fs::read_to_string(dir.join("format/retprobe"))?;
        let retprobe_bit = parse_format_bit(&format).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{pmu_dir}/format/retprobe: unexpected {:?}", format.trim()),
            )
        })?;
        Ok(UprobePmu {
            type_,
            retprobe_bit,
        })
    }

    /// `config` for a probe: the retprobe bit for a return probe, else 0.
    pub(crate) fn config(&self, retprobe: bool) -> u64 {
        if retprobe {
            1u64 << self.retprobe_bit
        } else {
            0
        }
    }
}

/// Opens a uprobe PMU counter: `attr` has the PMU's type, `config` and the
/// file offset in `config2`; `config1` points at `path` for the duration of
/// `open` only (the kernel resolves the path to an inode at once, and the
/// caller's attribute, which may be written to perf.data, keeps 0 there).
pub(crate) fn open_at(
    attr: &perf_event_attr,
    path: &Path,
    open: impl FnOnce(&perf_event_attr) -> io::Result<PerfEventFd>,
) -> io::Result<PerfEventFd> {
    let c_path = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
    let mut attr = *attr;
    attr.__bindgen_anon_3.config1 = c_path.as_ptr() as u64;
    open(&attr)
}

/// `config:0` → 0 (the first bit of a one-bit format).
fn parse_format_bit(text: &str) -> Option<u32> {
    let rest = text.trim().strip_prefix("config:")?;
    let first = rest.split('-').next()?;
    first.parse().ok()
}

/// tracefs `uprobe_events` under `tracefs_root`.
fn events_file(tracefs_root: &Path) -> std::path::PathBuf {
    tracefs_root.join("uprobe_events")
}

/// Whether this kernel has uprobes (a `uprobe_events` file).
pub(crate) fn available(tracefs_root: &Path) -> bool {
    events_file(tracefs_root).exists()
}

/// Appends one probe definition (`p:GROUP/NAME PATH:0xOFF ARGS...` or
/// `r:...`). The kernel checks it; its refusal comes back as the error,
/// with tracefs `error_log`'s last line when there is one.
pub(crate) fn add_event(tracefs_root: &Path, definition: &str) -> io::Result<()> {
    write_line(tracefs_root, definition)
}

/// Removes the probe `GROUP/NAME` (`-:GROUP/NAME`).
pub(crate) fn remove_event(tracefs_root: &Path, group: &str, name: &str) -> io::Result<()> {
    write_line(tracefs_root, &format!("-:{group}/{name}"))
}

fn write_line(tracefs_root: &Path, line: &str) -> io::Result<()> {
    append_line(&events_file(tracefs_root), tracefs_root, line)
}

/// Appends `line` to a tracefs control file (`uprobe_events`,
/// `kprobe_events`), the kernel's refusal explained from `error_log`.
pub(super) fn append_line(path: &Path, tracefs_root: &Path, line: &str) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
    file.write_all(format!("{line}\n").as_bytes())
        .map_err(|e| with_error_log(tracefs_root, e))
}

fn with_error_log(tracefs_root: &Path, err: io::Error) -> io::Error {
    let log = std::fs::read_to_string(tracefs_root.join("error_log")).unwrap_or_default();
    match log.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(last) => io::Error::new(err.kind(), format!("{err}; kernel says: {}", last.trim())),
        None => err,
    }
}

/// The text of `uprobe_events`: one definition a line, as the kernel
/// prints them (`p:probe_libc/malloc /usr/lib/...:0x...`).
pub(crate) fn list_events(tracefs_root: &Path) -> io::Result<String> {
    std::fs::read_to_string(events_file(tracefs_root))
}

/// CLOCK_MONOTONIC in nanoseconds: the clock trace counters stamp records
/// with (`use_clockid`), so a reader can tell which records it has drained.
pub(crate) fn monotonic_ns() -> u64 {
    super::localtime::clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_bits() {
        assert_eq!(parse_format_bit("config:0\n"), Some(0));
        assert_eq!(parse_format_bit("config:32-63"), Some(32));
        assert_eq!(parse_format_bit("bogus"), None);
    }
}
