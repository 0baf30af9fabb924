//! The TRACING_DATA feature: the trace-cmd "tracing data" blob perf stores
//! so that `perf script`/`perf report` can decode tracepoint fields later,
//! on any machine (what `util/trace-event-info.c` writes, version 0.6).
//!
//! Layout (all integers in host byte order):
//!
//! ```text
//! "\x17\x08\x44tracing" "0.6\0"  endian (u8, 0 = little)  sizeof(long) (u8)  page size (u32)
//! "header_page\0"  u64 size, events/header_page
//! "header_event\0" u64 size, events/header_event
//! u32 count, then u64 size + format, of the recorded ftrace/* events
//! u32 number of subsystems; each: name NUL, u32 count, then u64 size + format
//! u32 size + kallsyms (always 0, as perf 6.1 writes it)
//! u32 size + printk_formats
//! u64 size + saved_cmdlines
//! ```
//!
//! Decisions:
//! - Only the recorded tracepoints' `format` files go in (like perf), sorted
//!   by subsystem then name, so the blob is small and deterministic.
//! - kallsyms is written empty, as perf 6.1 does: symbols are resolved from
//!   the MMAP records and build-ids, and /proc/kallsyms is megabytes.
//! - tracefs files report size 0 in `stat`, and `events/header_page` and
//!   `header_event` answer only the first `read(2)` (later reads at a
//!   non-zero offset return EOF). `std::fs::read` probes with a 32-byte read
//!   first and so got 32 bytes of them; every file here is read with a
//!   64 KiB first read instead, then on to EOF.
//! - `saved_cmdlines` maps pids to comms for events that print pids; build
//!   the blob at the end of a recording so it covers the processes seen.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

const MAGIC: &[u8] = b"\x17\x08\x44tracing";
const VERSION: &[u8] = b"0.6\0";

/// Why the tracing data could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TracingDataError {
    /// A tracefs file (header_page, a format, kallsyms, ...) could not be
    /// read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file that failed.
        path: PathBuf,
        /// The underlying I/O error.
        source: io::Error,
    },
    /// A tracepoint asked for has no directory under `events/`.
    #[error("tracepoint {subsystem}:{name} not found in tracefs ({path} is missing)")]
    NoSuchEvent {
        /// The tracepoint's subsystem (`sched`).
        subsystem: String,
        /// The tracepoint's name (`sched_switch`).
        name: String,
        /// The `format` file looked for.
        path: PathBuf,
    },
    /// A file's size does not fit the format's length field.
    #[error("tracefs file {path} is {len} bytes, too big for the tracing data format")]
    TooBig {
        /// The file that is too big.
        path: PathBuf,
        /// Its size in bytes.
        len: usize,
    },
}

/// Builds the TRACING_DATA blob for `tracepoints` (`(subsystem, name)`
/// pairs, duplicates allowed) from the tracefs mounted at `tracefs_root`.
pub fn build(
    tracefs_root: &Path,
    tracepoints: &[(String, String)],
) -> Result<Vec<u8>, TracingDataError> {
    let events = tracefs_root.join("events");
    let mut by_system: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (subsystem, name) in tracepoints {
        let names = by_system.entry(subsystem.as_str()).or_default();
        if !names.contains(&name.as_str()) {
            names.push(name.as_str());
        }
    }
    for names in by_system.values_mut() {
        names.sort_unstable();
    }

    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(VERSION);
    out.push(u8::from(cfg!(target_endian = "big")));
    out.push(std::mem::size_of::<std::ffi::c_long>() as u8);
    let page_size = u32::try_from(crate::sys::ring::page_size()).unwrap_or(4096);
    out.extend_from_slice(&page_size.to_ne_bytes());

    for header in ["header_page", "header_event"] {
        out.extend_from_slice(header.as_bytes());
        out.push(0);
        put_file_u64(&mut out, &read(&events.join(header))?);
    }

    let formats = |subsystem: &str, names: &[&str]| -> Result<Vec<Vec<u8>>, TracingDataError> {
        names
            .iter()
            .map(|name| {
                let path = events.join(subsystem).join(name).join("format");
                match read_whole(&path) {
                    Ok(bytes) => Ok(bytes),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        Err(TracingDataError::NoSuchEvent {
                            subsystem: subsystem.to_string(),
                            name: name.to_string(),
                            path,
                        })
                    }
                    Err(source) => Err(TracingDataError::Read { path, source }),
                }
            })
            .collect()
    };
    let put_formats = |out: &mut Vec<u8>, formats: Vec<Vec<u8>>| {
        out.extend_from_slice(&u32_len(formats.len()).to_ne_bytes());
        for format in formats {
            put_file_u64(out, &format);
        }
    };

    // ftrace's own events (function, print, ...) have their own slot.
    let ftrace = by_system.remove("ftrace").unwrap_or_default();
    put_formats(&mut out, formats("ftrace", &ftrace)?);

    out.extend_from_slice(&u32_len(by_system.len()).to_ne_bytes());
    for (subsystem, names) in &by_system {
        out.extend_from_slice(subsystem.as_bytes());
        out.push(0);
        put_formats(&mut out, formats(subsystem, names)?);
    }

    // kallsyms: empty, as perf 6.1 writes it.
    out.extend_from_slice(&0u32.to_ne_bytes());

    let printk_path = tracefs_root.join("printk_formats");
    let printk = read_optional(&printk_path)?;
    let printk_len = u32::try_from(printk.len()).map_err(|_| TracingDataError::TooBig {
        path: printk_path,
        len: printk.len(),
    })?;
    out.extend_from_slice(&printk_len.to_ne_bytes());
    out.extend_from_slice(&printk);

    put_file_u64(
        &mut out,
        &read_optional(&tracefs_root.join("saved_cmdlines"))?,
    );
    Ok(out)
}

fn u32_len(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn put_file_u64(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_ne_bytes());
    out.extend_from_slice(bytes);
}

/// Reads a tracefs file whole, starting with one big `read(2)` (see the
/// module doc for why `std::fs::read` is not enough).
fn read_whole(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 64 << 10];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(len * 2, 0);
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    Ok(buf)
}

fn read(path: &Path) -> Result<Vec<u8>, TracingDataError> {
    read_whole(path).map_err(|source| TracingDataError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// A file that older kernels may lack: missing reads as empty.
fn read_optional(path: &Path) -> Result<Vec<u8>, TracingDataError> {
    match read_whole(path) {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(TracingDataError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake tracefs tree: the builder only reads files, so a directory
    /// with the same layout tests the encoding byte for byte.
    fn fake_tracefs() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let events = dir.path().join("events");
        for (sub, name, fmt) in [
            ("sched", "sched_switch", "name: sched_switch\n"),
            ("sched", "sched_wakeup", "name: sched_wakeup\n"),
            ("irq", "irq_handler_entry", "name: irq_handler_entry\n"),
            ("ftrace", "print", "name: print\n"),
        ] {
            let d = events.join(sub).join(name);
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(d.join("format"), fmt).expect("write format");
        }
        std::fs::write(events.join("header_page"), "HP").expect("write");
        std::fs::write(events.join("header_event"), "HE!").expect("write");
        std::fs::write(dir.path().join("saved_cmdlines"), "1 init\n").expect("write");
        dir
    }

    fn tp(s: &str, n: &str) -> (String, String) {
        (s.to_string(), n.to_string())
    }

    #[test]
    fn layout_byte_for_byte() {
        let dir = fake_tracefs();
        let blob = build(
            dir.path(),
            &[
                tp("sched", "sched_wakeup"),
                tp("sched", "sched_switch"),
                tp("sched", "sched_switch"),
            ],
        )
        .expect("build");
        let page = u32::try_from(crate::sys::ring::page_size()).unwrap();
        let mut want = b"\x17\x08\x44tracing0.6\0".to_vec();
        want.push(0);
        want.push(8);
        want.extend_from_slice(&page.to_ne_bytes());
        want.extend_from_slice(b"header_page\0");
        want.extend_from_slice(&2u64.to_ne_bytes());
        want.extend_from_slice(b"HP");
        want.extend_from_slice(b"header_event\0");
        want.extend_from_slice(&3u64.to_ne_bytes());
        want.extend_from_slice(b"HE!");
        want.extend_from_slice(&0u32.to_ne_bytes()); // no ftrace events
        want.extend_from_slice(&1u32.to_ne_bytes()); // one subsystem
        want.extend_from_slice(b"sched\0");
        want.extend_from_slice(&2u32.to_ne_bytes());
        for fmt in ["name: sched_switch\n", "name: sched_wakeup\n"] {
            want.extend_from_slice(&(fmt.len() as u64).to_ne_bytes());
            want.extend_from_slice(fmt.as_bytes());
        }
        want.extend_from_slice(&0u32.to_ne_bytes()); // kallsyms
        want.extend_from_slice(&0u32.to_ne_bytes()); // no printk_formats file
        want.extend_from_slice(&7u64.to_ne_bytes());
        want.extend_from_slice(b"1 init\n");
        assert_eq!(blob, want);
    }

    #[test]
    fn ftrace_events_go_in_their_own_slot() {
        let dir = fake_tracefs();
        let blob = build(
            dir.path(),
            &[tp("ftrace", "print"), tp("irq", "irq_handler_entry")],
        )
        .expect("build");
        let after_headers = 10 + 4 + 2 + 4 + 12 + 8 + 2 + 13 + 8 + 3;
        let rest = &blob[after_headers..];
        assert_eq!(&rest[..4], &1u32.to_ne_bytes());
        let fmt = b"name: print\n";
        assert_eq!(&rest[12..12 + fmt.len()], fmt);
        let rest = &rest[12 + fmt.len()..];
        assert_eq!(&rest[..4], &1u32.to_ne_bytes());
        assert_eq!(&rest[4..8], b"irq\0");
    }

    #[test]
    fn missing_event_is_named() {
        let dir = fake_tracefs();
        let err = build(dir.path(), &[tp("sched", "nope")]).unwrap_err();
        assert!(err.to_string().contains("sched:nope"), "{err}");
        let err = build(Path::new("/nonexistent"), &[]).unwrap_err();
        assert!(
            err.to_string().contains("/nonexistent/events/header_page"),
            "{err}"
        );
    }
}
