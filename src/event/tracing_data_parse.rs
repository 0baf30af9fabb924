//! Reading the TRACING_DATA feature of a perf.data file (the trace-cmd
//! "tracing data" blob that `data::tracing_data` writes and perf record
//! writes): the event `format` files, `header_page`, `printk_formats`,
//! `saved_cmdlines`. The layout is documented in `data/tracing_data.rs`.
//!
//! Decisions: integers are read in the byte order the blob declares (so a
//! big-endian recording reads on a little-endian host); versions before
//! 0.6 have no saved_cmdlines section; a format that does not parse fails
//! the whole blob with the event named, since a silently missing format
//! would only resurface later as unrendered samples.
//!
//! Invariants: every length is checked against the remaining bytes; no
//! read panics on a truncated or hostile blob.

use std::collections::HashMap;

use super::format::{Endian, EventFormat, FormatError, parse_format};

const MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// The parsed blob.
#[derive(Clone, Debug)]
pub struct TracingData {
    /// The blob's version string: "0.6" for perf and scry.
    pub version: String,
    /// Byte order of the recording machine.
    pub endian: Endian,
    /// `sizeof(long)` on the recording machine.
    pub long_size: u8,
    /// The recording machine's page size, in bytes.
    pub page_size: u32,
    /// `events/header_page` of tracefs, as text.
    pub header_page: String,
    /// `events/header_event` of tracefs, as text.
    pub header_event: String,
    /// Every event format, ftrace's own first.
    pub formats: Vec<EventFormat>,
    /// `/proc/kallsyms` text (perf 6.1 and scry write it empty).
    pub kallsyms: String,
    /// Address → string, from `printk_formats`.
    pub printk_formats: HashMap<u64, String>,
    /// Pid → comm, from `saved_cmdlines`.
    pub saved_cmdlines: HashMap<i32, String>,
}

struct Cursor<'a> {
    blob: &'a [u8],
    pos: usize,
    endian: Endian,
}

impl<'a> Cursor<'a> {
    fn err(&self, what: impl Into<String>) -> FormatError {
        FormatError::TracingData {
            offset: self.pos,
            what: what.into(),
        }
    }

    fn bytes(&mut self, len: usize, what: &str) -> Result<&'a [u8], FormatError> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|&e| e <= self.blob.len())
            .ok_or_else(|| {
                self.err(format!(
                    "{what}: {len} bytes needed, {} left",
                    self.blob.len().saturating_sub(self.pos)
                ))
            })?;
        let slice = &self.blob[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn uint(&mut self, size: usize, what: &str) -> Result<u64, FormatError> {
        let bytes = self.bytes(size, what)?;
        self.endian
            .read_uint(bytes, 0, size)
            .ok_or_else(|| self.err(what.to_string()))
    }

    fn cstr(&mut self, what: &str) -> Result<&'a str, FormatError> {
        let rest = self.blob.get(self.pos..).unwrap_or(&[]);
        let len = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| self.err(format!("{what}: no NUL terminator")))?;
        let text = std::str::from_utf8(&rest[..len])
            .map_err(|_| self.err(format!("{what}: not UTF-8")))?;
        self.pos += len + 1;
        Ok(text)
    }

    /// A u64-sized (or u32-sized) length followed by that many bytes.
    fn sized(&mut self, len_size: usize, what: &str) -> Result<&'a [u8], FormatError> {
        let len = self.uint(len_size, what)?;
        let len = usize::try_from(len).map_err(|_| self.err(format!("{what}: size {len}")))?;
        self.bytes(len, what)
    }
}

/// Parses a TRACING_DATA blob.
pub fn parse_tracing_data(blob: &[u8]) -> Result<TracingData, FormatError> {
    let mut c = Cursor {
        blob,
        pos: 0,
        endian: Endian::Little,
    };
    if c.bytes(MAGIC.len(), "magic")? != MAGIC {
        return Err(FormatError::TracingData {
            offset: 0,
            what: "bad magic (not trace-cmd tracing data)".to_string(),
        });
    }
    let version = c.cstr("version")?.to_string();
    let endian = match c.uint(1, "endianness")? {
        0 => Endian::Little,
        _ => Endian::Big,
    };
    c.endian = endian;
    let long_size = c.uint(1, "long size")? as u8;
    let page_size = c.uint(4, "page size")? as u32;
    let mut headers = Vec::new();
    for want in ["header_page", "header_event"] {
        let name = c.cstr("header name")?;
        if name != want {
            let shown: String = name.chars().take(40).flat_map(char::escape_debug).collect();
            return Err(c.err(format!("expected '{want}', found \"{shown}\"")));
        }
        headers.push(String::from_utf8_lossy(c.sized(8, want)?).into_owned());
    }
    let mut formats = Vec::new();
    let mut read_formats = |c: &mut Cursor<'_>, system: &str| -> Result<(), FormatError> {
        let count = c.uint(4, "format count")?;
        for _ in 0..count {
            let at = c.pos;
            let text = c.sized(8, "format file")?;
            let text = std::str::from_utf8(text).map_err(|_| FormatError::TracingData {
                offset: at,
                what: format!("a {system} format file is not UTF-8"),
            })?;
            formats.push(parse_format(system, text)?);
        }
        Ok(())
    };
    read_formats(&mut c, "ftrace")?;
    let systems = c.uint(4, "subsystem count")?;
    for _ in 0..systems {
        let at = c.pos;
        let system = c.cstr("subsystem name")?.to_string();
        if system.is_empty() || !system.bytes().all(|b| b.is_ascii_graphic()) {
            let shown: String = system
                .chars()
                .take(40)
                .flat_map(char::escape_debug)
                .collect();
            return Err(FormatError::TracingData {
                offset: at,
                what: format!("bad subsystem name \"{shown}\""),
            });
        }
        read_formats(&mut c, &system)?;
    }
    let kallsyms = String::from_utf8_lossy(c.sized(4, "kallsyms")?).into_owned();
    let printk = String::from_utf8_lossy(c.sized(4, "printk_formats")?).into_owned();
    let cmdlines = if version.as_str() >= "0.6" && c.pos < blob.len() {
        String::from_utf8_lossy(c.sized(8, "saved_cmdlines")?).into_owned()
    } else {
        String::new()
    };
    let [header_page, header_event] =
        <[String; 2]>::try_from(headers).map_err(|_| c.err("headers"))?;
    Ok(TracingData {
        version,
        endian,
        long_size,
        page_size,
        header_page,
        header_event,
        formats,
        kallsyms,
        printk_formats: parse_printk_formats(&printk),
        saved_cmdlines: parse_saved_cmdlines(&cmdlines),
    })
}

/// `0xffffffff81e3a4c8 : "string"` lines.
pub(crate) fn parse_printk_formats(text: &str) -> HashMap<u64, String> {
    text.lines()
        .filter_map(|line| {
            let (addr, s) = line.split_once(" : ")?;
            let addr = u64::from_str_radix(addr.trim().trim_start_matches("0x"), 16).ok()?;
            let s = s.trim();
            let s = s.strip_prefix('"').unwrap_or(s);
            let s = s.strip_suffix('"').unwrap_or(s);
            Some((addr, s.replace("\\n", "\n")))
        })
        .collect()
}

/// `pid comm` lines.
pub(crate) fn parse_saved_cmdlines(text: &str) -> HashMap<i32, String> {
    text.lines()
        .filter_map(|line| {
            let (pid, comm) = line.split_once(' ')?;
            Some((pid.parse().ok()?, comm.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(formats: &[(&str, &str)]) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(b"0.6\0");
        b.push(0);
        b.push(8);
        b.extend_from_slice(&4096u32.to_le_bytes());
        for (name, text) in [("header_page", "HP"), ("header_event", "HE")] {
            b.extend_from_slice(name.as_bytes());
            b.push(0);
            b.extend_from_slice(&(text.len() as u64).to_le_bytes());
            b.extend_from_slice(text.as_bytes());
        }
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(formats.len() as u32).to_le_bytes());
        for (system, text) in formats {
            b.extend_from_slice(system.as_bytes());
            b.push(0);
            b.extend_from_slice(&1u32.to_le_bytes());
            b.extend_from_slice(&(text.len() as u64).to_le_bytes());
            b.extend_from_slice(text.as_bytes());
        }
        b.extend_from_slice(&0u32.to_le_bytes());
        let printk = "0xffffffff81000010 : \"hello\\n\"\n";
        b.extend_from_slice(&(printk.len() as u32).to_le_bytes());
        b.extend_from_slice(printk.as_bytes());
        let cmd = "1 init\n42 bash\n";
        b.extend_from_slice(&(cmd.len() as u64).to_le_bytes());
        b.extend_from_slice(cmd.as_bytes());
        b
    }

    const FMT: &str = "name: e\nID: 7\nformat:\n\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: \"x=%d\", REC->x\n";

    #[test]
    fn parses_every_section() {
        let td = parse_tracing_data(&blob(&[("sys", FMT)])).expect("parse");
        assert_eq!(
            (td.version.as_str(), td.long_size, td.page_size),
            ("0.6", 8, 4096)
        );
        assert_eq!(
            (td.header_page.as_str(), td.header_event.as_str()),
            ("HP", "HE")
        );
        assert_eq!(td.formats.len(), 1);
        assert_eq!(
            (td.formats[0].full_name(), td.formats[0].id),
            ("sys:e".to_string(), 7)
        );
        assert_eq!(
            td.printk_formats
                .get(&0xffffffff81000010)
                .map(String::as_str),
            Some("hello\n")
        );
        assert_eq!(td.saved_cmdlines.get(&42).map(String::as_str), Some("bash"));
    }

    #[test]
    fn truncation_and_bad_formats_are_errors() {
        let full = blob(&[("sys", FMT)]);
        // Without saved_cmdlines the blob reads as an older version's.
        let cmdlines_at = full.len() - 8 - "1 init\n42 bash\n".len();
        for len in (0..full.len()).filter(|&l| l != cmdlines_at) {
            assert!(
                parse_tracing_data(&full[..len]).is_err(),
                "truncated at {len}"
            );
        }
        let err = parse_tracing_data(&blob(&[("sys", "name: e\nID: x\n")])).unwrap_err();
        assert!(err.to_string().contains("sys:e"), "{err}");
        let mut bad = full.clone();
        let at = bad
            .windows(12)
            .position(|w| w == b"header_event")
            .expect("header");
        bad[at..at + 2].copy_from_slice(b"\n\n");
        let err = parse_tracing_data(&bad).unwrap_err().to_string();
        assert!(err.contains(r#"found "\n\nader_event""#), "{err}");
        let err = parse_tracing_data(b"garbage").unwrap_err();
        assert!(err.to_string().contains("magic"), "{err}");
    }
}
