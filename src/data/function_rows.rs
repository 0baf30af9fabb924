//! The kernel function rows of `scry record --profile` (the function
//! tracer's calls summed per task and function: what `scry profile` prints
//! as `func: NAME()` rows) in a perf.data feature section of scry's own,
//! so that `scry report --profile` prints them from the file.
//!
//! The decision: perf.data has no place for them, so they take feature bit
//! [`FUNCTION_ROWS_BIT`] (240), far above perf's (`HEADER_LAST_FEATURE` is
//! 32 in perf 6.1, under 40 today) and simpleperf's (128-132). A section's
//! table entry goes in bit order, so this one is the last: perf walks the
//! bits below its `HEADER_LAST_FEATURE` only, takes their entries from the
//! front of the table and never reads this one (`perf report -i` and `perf
//! script -i` read such files without a word: the suite checks it).
//!
//! Layout, in the byte order of the file (the writer's: the host's; the
//! magic says which):
//!
//! ```text
//! u32 version (1)   u32 nr (rows)
//! perf_header_string tracer ("function_graph" or "function")
//! nr × { i32 tid, u32 name_len,
//!        u64 count, total, max, max_ts, min, min_ts  (ns; durations 0 with `function`)
//!        name_len bytes of the function's name, zero-padded to 8 }
//! ```
//!
//! Invariant: decoding never allocates from a length it has not checked
//! against what is left of the section (`nr` against the smallest row,
//! `name_len` against [`MAX_NAME`] and the bytes left), and never panics.

use super::features::{header_string, len_u32};
use super::reader::Endian;

/// The feature bit of the section (see the module doc).
pub(crate) const FUNCTION_ROWS_BIT: u32 = 240;
/// The section's name where scry lists a file's features.
pub(crate) const FUNCTION_ROWS_NAME: &str = "SCRY_FUNCTION_ROWS";
const VERSION: u32 = 1;
/// The kernel's `KSYM_NAME_LEN`: no function name is longer.
const MAX_NAME: u32 = 512;
/// A row without its name: tid, name_len, six u64s.
const ROW_FIXED: usize = 4 + 4 + 6 * 8;
/// The longest tracer name taken.
const MAX_TRACER: u32 = 64;

/// One task's calls of one kernel function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionRow {
    /// The task (thread id) that called it.
    pub tid: i32,
    /// The function's name (at most the kernel's 512 bytes are kept).
    pub function: String,
    /// `[count, total, max, max_ts, min, min_ts]`, ns.
    pub sums: [u64; 6],
}

/// The rows of one recording and the tracer that made them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionRows {
    /// `function_graph` (durations) or `function` (counts).
    pub tracer: String,
    /// One per task and function.
    pub rows: Vec<FunctionRow>,
}

/// Why the section does not decode.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum FunctionRowsError {
    /// Shorter than its fixed fields say.
    #[error("cut short at byte {at} of {len}")]
    Short { at: usize, len: usize },
    /// A version this scry does not know.
    #[error("version {0} (this scry reads version {VERSION})")]
    Version(u32),
    /// More rows than the section has room for.
    #[error("{nr} rows do not fit in {len} bytes")]
    TooMany { nr: u32, len: usize },
    /// A name longer than any kernel function's, or past the section.
    #[error("row {row}: a name of {len} bytes (at most {MAX_NAME}, and within the section)")]
    Name { row: u32, len: u32 },
    /// A tracer name that is not a tracer's.
    #[error("bad tracer name")]
    Tracer,
}

impl FunctionRows {
    /// The section's bytes, in the host's byte order.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = VERSION.to_ne_bytes().to_vec();
        out.extend_from_slice(&len_u32(self.rows.len()).to_ne_bytes());
        out.extend_from_slice(&header_string(&self.tracer));
        for row in &self.rows {
            let name = &row.function.as_bytes()[..row.function.len().min(MAX_NAME as usize)];
            out.extend_from_slice(&row.tid.to_ne_bytes());
            out.extend_from_slice(&len_u32(name.len()).to_ne_bytes());
            for v in row.sums {
                out.extend_from_slice(&v.to_ne_bytes());
            }
            out.extend_from_slice(name);
            out.resize(out.len().next_multiple_of(8), 0);
        }
        out
    }

    /// The section read back (`e`: the file's byte order).
    pub(crate) fn decode(b: &[u8], e: Endian) -> Result<FunctionRows, FunctionRowsError> {
        let short = |at: usize| FunctionRowsError::Short { at, len: b.len() };
        let version = e.u32(b, 0).ok_or_else(|| short(0))?;
        if version != VERSION {
            return Err(FunctionRowsError::Version(version));
        }
        let nr = e.u32(b, 4).ok_or_else(|| short(4))?;
        let tracer_len = e.u32(b, 8).ok_or_else(|| short(8))?;
        if tracer_len > MAX_TRACER {
            return Err(FunctionRowsError::Tracer);
        }
        let mut at = 12usize;
        let tracer = b
            .get(at..at + tracer_len as usize)
            .ok_or_else(|| short(at))?;
        let end = tracer.iter().position(|&c| c == 0).unwrap_or(tracer.len());
        let tracer = std::str::from_utf8(&tracer[..end]).map_err(|_| FunctionRowsError::Tracer)?;
        at += tracer_len as usize;
        let room = b.len().saturating_sub(at) / ROW_FIXED;
        if nr as usize > room {
            return Err(FunctionRowsError::TooMany { nr, len: b.len() });
        }
        let mut rows = Vec::with_capacity(nr as usize);
        for row in 0..nr {
            let tid = e.u32(b, at).ok_or_else(|| short(at))? as i32;
            let name_len = e.u32(b, at + 4).ok_or_else(|| short(at + 4))?;
            let mut sums = [0u64; 6];
            for (i, v) in sums.iter_mut().enumerate() {
                let off = at + 8 + i * 8;
                *v = e.u64(b, off).ok_or_else(|| short(off))?;
            }
            at += ROW_FIXED;
            let bad_name = FunctionRowsError::Name { row, len: name_len };
            if name_len > MAX_NAME {
                return Err(bad_name);
            }
            let name = b.get(at..at + name_len as usize).ok_or(bad_name)?;
            at = (at + name_len as usize).next_multiple_of(8);
            rows.push(FunctionRow {
                tid,
                function: String::from_utf8_lossy(name).into_owned(),
                sums,
            });
        }
        Ok(FunctionRows {
            tracer: tracer.to_string(),
            rows,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Endian {
        if cfg!(target_endian = "little") {
            Endian::Little
        } else {
            Endian::Big
        }
    }

    fn rows() -> FunctionRows {
        FunctionRows {
            tracer: "function_graph".into(),
            rows: vec![
                FunctionRow {
                    tid: 98,
                    function: "__do_sys_getppid".into(),
                    sums: [300, 177_600, 1408, 13_475_800_000, 592, 13_475_733_000],
                },
                FunctionRow {
                    tid: -1,
                    function: "x".into(),
                    sums: [1, 0, 0, 0, 0, 0],
                },
            ],
        }
    }

    #[test]
    fn rows_read_back_as_written() {
        let bytes = rows().encode();
        assert_eq!(bytes.len() % 8, 0);
        assert_eq!(FunctionRows::decode(&bytes, host()).unwrap(), rows());
        let empty = FunctionRows::default();
        assert_eq!(
            FunctionRows::decode(&empty.encode(), host()).unwrap(),
            empty
        );
    }

    #[test]
    fn hostile_sections_are_errors() {
        let good = rows().encode();
        // Every cut before the last name's end is an error, none a panic
        // (the last row's padding, 7 bytes after "x", is not needed).
        for cut in 0..good.len() - 7 {
            let err = FunctionRows::decode(&good[..cut], host());
            assert!(err.is_err(), "cut at {cut} decoded");
        }
        // A row count far past the section is refused before allocating.
        let mut many = good.clone();
        many[4..8].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert!(matches!(
            FunctionRows::decode(&many, host()),
            Err(FunctionRowsError::TooMany { .. })
        ));
        // A name length past the kernel's longest.
        let mut long = good.clone();
        let first_row = 12 + 64;
        long[first_row + 4..first_row + 8].copy_from_slice(&4096u32.to_ne_bytes());
        assert!(matches!(
            FunctionRows::decode(&long, host()),
            Err(FunctionRowsError::Name { row: 0, len: 4096 })
        ));
        let mut version = good;
        version[..4].copy_from_slice(&9u32.to_ne_bytes());
        assert_eq!(
            FunctionRows::decode(&version, host())
                .unwrap_err()
                .to_string(),
            "version 9 (this scry reads version 1)"
        );
    }
}
