//! A tracefs instance of our own (`instances/scry-<pid>[-<n>]`): a private
//! ring buffer, event enables, filters and `error_log`, so that two scry
//! runs, or scry and perf/trace-cmd, never trample each other's settings in
//! the top-level tracefs.
//!
//! Decisions:
//! - The instance is removed on drop (`rmdir`, which the kernel refuses
//!   while one of its files is open). Events are disabled before removal.
//!   Instances of scry processes that died without dropping theirs
//!   (SIGKILL) are removed by the next `Instance::create`.
//! - `try_filter` is how the kernel's reason for refusing a filter is
//!   obtained: PERF_EVENT_IOC_SET_FILTER returns only EINVAL, while writing
//!   the same filter to an instance's `events/<sys>/<name>/filter` makes the
//!   kernel log the parse error, with a caret under the offending place, in
//!   the instance's `error_log`.
//!
//! Invariant: only files inside our own instance are written.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// One instance directory, removed on drop.
#[derive(Debug)]
pub struct Instance {
    path: PathBuf,
    enabled: Vec<(String, String)>,
}

impl Instance {
    /// Creates `instances/scry-<pid>-<n>` under the tracefs at `root`,
    /// first removing instances left by scry processes that no longer run.
    pub fn create(root: &Path) -> io::Result<Instance> {
        remove_stale(root);
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "scry-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let path = root.join("instances").join(name);
        std::fs::create_dir(&path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
        })?;
        Ok(Instance {
            path,
            enabled: Vec::new(),
        })
    }

    /// The instance directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `text` to a file of the instance (`buffer_size_kb`,
    /// `options/hash-ptr`, `trace_clock`...), in one write(2).
    pub fn write_file(&self, rel: &str, text: &str) -> io::Result<()> {
        let path = self.path.join(rel);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        file.write_all(text.as_bytes())
    }

    /// Reads a file of the instance whole (tracefs files report size 0).
    pub fn read_file(&self, rel: &str) -> io::Result<Vec<u8>> {
        let path = self.path.join(rel);
        let mut file = std::fs::File::open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match file.read(&mut buf) {
                Ok(0) => return Ok(out),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Enables `system:name` in this instance.
    pub fn enable(&mut self, system: &str, name: &str) -> io::Result<()> {
        self.write_file(&format!("events/{system}/{name}/enable"), "1")?;
        self.enabled.push((system.to_string(), name.to_string()));
        Ok(())
    }

    /// Turns recording into this instance's ring buffer on or off.
    pub fn set_tracing_on(&self, on: bool) -> io::Result<()> {
        self.write_file("tracing_on", if on { "1" } else { "0" })
    }

    /// Sets the event filter of `system:name` in this instance. On a refusal
    /// the error's text is the kernel's reason from `error_log`.
    pub fn set_filter(&self, system: &str, name: &str, filter: &str) -> io::Result<()> {
        let before = self.error_log().unwrap_or_default();
        match self.write_file(&format!("events/{system}/{name}/filter"), filter) {
            Ok(()) => Ok(()),
            Err(e) => {
                let log = self.error_log().unwrap_or_default();
                let reason = log
                    .strip_prefix(before.as_str())
                    .map(str::to_string)
                    .filter(|s| !s.trim().is_empty())
                    .unwrap_or(log);
                match error_log_reason(&reason) {
                    Some(reason) => Err(io::Error::new(e.kind(), reason)),
                    None => Err(e),
                }
            }
        }
    }

    /// The instance's `error_log` text.
    pub(crate) fn error_log(&self) -> io::Result<String> {
        Ok(String::from_utf8_lossy(&self.read_file("error_log")?).into_owned())
    }
}

/// Removes `instances/scry-<pid>-<n>` of dead pids (a scry that was
/// SIGKILLed cannot clean up after itself). Best effort.
pub(crate) fn remove_stale(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root.join("instances")) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("scry-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.set_tracing_on(false);
        for (system, name) in std::mem::take(&mut self.enabled) {
            let _ = self.write_file(&format!("events/{system}/{name}/enable"), "0");
        }
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// The last entry of an `error_log` as one line, `Field not found (at
/// column 8)`, from
///
/// ```text
/// [  969.19] event filter parse error: error: Field not found
///   Command: nosuch == 3
///                 ^
/// ```
pub(crate) fn error_log_reason(log: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines.iter().rposition(|l| l.starts_with('['))?;
    let head = lines[start];
    let message = head
        .rsplit_once("error: ")
        .map_or(head, |(_, m)| m)
        .trim()
        .to_string();
    let command_line = lines.get(start + 1).copied().unwrap_or("");
    if !command_line.trim_start().starts_with("Command: ") {
        return Some(message);
    }
    let command_col = command_line.len() - command_line.trim_start().len() + "Command: ".len();
    let caret = lines
        .get(start + 2)
        .and_then(|l| l.find('^'))
        .and_then(|c| c.checked_sub(command_col));
    Some(match caret {
        Some(col) => format!("{message} (at column {})", col + 1),
        None => message,
    })
}

/// Asks the kernel why it refuses `filter` for `system:name`: sets it in a
/// scratch instance and reads the reason from its `error_log`. `Ok(None)`
/// when the kernel accepts the filter there.
pub(crate) fn filter_error(
    root: &Path,
    system: &str,
    name: &str,
    filter: &str,
) -> io::Result<Option<String>> {
    let instance = Instance::create(root)?;
    match instance.set_filter(system, name, filter) {
        Ok(()) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(e),
        Err(e) => Ok(Some(
            e.get_ref()
                .map_or_else(|| e.to_string(), |inner| inner.to_string()),
        )),
    }
}

/// `err` (from PERF_EVENT_IOC_SET_FILTER on `system:name`) with the
/// kernel's reason in place of the bare errno when tracefs can tell it.
pub(crate) fn explain_filter_error(
    tracepoint: Option<&(String, String)>,
    filter: &str,
    err: io::Error,
) -> io::Error {
    let Some((system, name)) = tracepoint else {
        return err;
    };
    let Ok(root) = super::tracefs::root() else {
        return err;
    };
    match filter_error(root, system, name, filter) {
        Ok(Some(reason)) => io::Error::new(err.kind(), reason),
        _ => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_from_error_log() {
        let log = "[  969.178159] event filter parse error: error: Invalid value (did you forget quotes)?\n  Command: id ==\n                 ^\n[  969.191192] event filter parse error: error: Field not found\n  Command: nosuch == 3\n                  ^\n";
        assert_eq!(
            error_log_reason(log).as_deref(),
            Some("Field not found (at column 8)")
        );
        assert_eq!(
            error_log_reason("[ 1.0] x: error: Bad\n").as_deref(),
            Some("Bad")
        );
        assert_eq!(error_log_reason(""), None);
    }
}
