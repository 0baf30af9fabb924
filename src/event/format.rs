//! Tracepoint `format` files (tracefs `events/<system>/<name>/format`, or
//! the copies perf keeps in a perf.data's TRACING_DATA) parsed into
//! [`EventFormat`], and field values read out of a tracepoint's raw bytes
//! (a PERF_SAMPLE_RAW payload, or one ring-buffer entry of tracefs).
//!
//! Decisions:
//! - The parser takes text, not a path (`parse_format`), so it is fuzzable;
//!   `load_format` is the thin helper that reads tracefs.
//! - The `size:` of a field is the authority on its width; the declared
//!   array length is only used to find the element size (`char a[16]`,
//!   `unsigned long args[6]`). Lengths spelled with macros
//!   (`[TASK_COMM_LEN]`) are tolerated: the element size then comes from
//!   the type name.
//! - `signed:` is read when present and inferred from the type otherwise
//!   (formats of old kernels lack it).
//! - `print fmt:` is kept as text and parsed by `print_fmt`, which never
//!   fails the format: a print fmt we cannot parse renders as
//!   `field=value` pairs.
//!
//! Invariants: reading a field never panics on short or hostile data; an
//! out-of-range field reads as `None`.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::print_fmt::{self, PrintFmt, PrintFmtError};

/// Why a format could not be parsed or loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// A line of a tracepoint's `format` text does not parse.
    #[error("format of {event}: line {line}: {what}")]
    Malformed {
        /// The tracepoint whose format it is.
        event: String,
        /// The line's number in the format text, from 1.
        line: usize,
        /// What is wrong with the line.
        what: String,
    },
    /// The TRACING_DATA blob of a perf.data file is malformed.
    #[error("tracing data: {what} at offset {offset}")]
    TracingData {
        /// Byte offset in the blob where parsing failed.
        offset: usize,
        /// What was expected there.
        what: String,
    },
    /// No subsystem of that name under tracefs `events/`; holds the name.
    #[error("unknown tracepoint subsystem '{0}' (see 'scry list')")]
    NoSuchSubsystem(String),
    /// No tracepoint of that name; holds the name as given.
    #[error("unknown tracepoint '{0}' (see 'scry list')")]
    NoSuchEvent(String),
    /// A tracefs file could not be read.
    #[error("cannot read {path}: {err}")]
    Read {
        /// The file that failed.
        path: PathBuf,
        /// The underlying I/O error.
        err: io::Error,
    },
}

/// Why one `field:` line does not parse.
#[derive(Debug, thiserror::Error)]
enum FieldError {
    #[error("expected 'key:value', got '{0}'")]
    NotKeyValue(String),
    #[error("{key}: not a number: '{value}'")]
    NotANumber { key: String, value: String },
    #[error("no '{0}'")]
    Missing(&'static str),
    #[error("unbalanced '[' in '{0}'")]
    Unbalanced(String),
    #[error("no type in field declaration '{0}'")]
    NoType(String),
    #[error("no name in field declaration '{0}'")]
    NoName(String),
}

/// Byte order of the recorded data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Endian {
    /// Least significant byte first (x86, arm64, riscv).
    #[default]
    Little,
    /// Most significant byte first (s390x, some powerpc).
    Big,
}

impl Endian {
    /// The byte order of this machine.
    pub(crate) fn host() -> Endian {
        if cfg!(target_endian = "big") {
            Endian::Big
        } else {
            Endian::Little
        }
    }

    /// An unsigned integer of 1, 2, 4 or 8 bytes at `bytes[offset..]`.
    pub(crate) fn read_uint(self, bytes: &[u8], offset: usize, size: usize) -> Option<u64> {
        let slice = bytes.get(offset..offset.checked_add(size)?)?;
        let mut buf = [0u8; 8];
        match (size, self) {
            (1 | 2 | 4 | 8, Endian::Little) => {
                buf[..size].copy_from_slice(slice);
                Some(u64::from_le_bytes(buf))
            }
            (1 | 2 | 4 | 8, Endian::Big) => {
                buf[8 - size..].copy_from_slice(slice);
                Some(u64::from_be_bytes(buf))
            }
            _ => None,
        }
    }
}

/// How a field's bytes are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldKind {
    /// A number of `size` bytes.
    Scalar,
    /// A fixed array: `size` bytes of `elem_size`-byte elements.
    Array { elem_size: usize },
    /// `__data_loc T[] name`: a u32 holding `offset | len << 16`, offset
    /// from the start of the record.
    DataLoc { elem_size: usize },
    /// `__rel_loc T[] name`: as `DataLoc`, offset from the end of the field.
    RelLoc { elem_size: usize },
}

/// One field of a tracepoint record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The field's name as the format declares it (`prev_pid`).
    pub name: String,
    /// The C type as the kernel spells it (`char`, `pid_t`, `const char *`),
    /// without the array suffix and `__data_loc`/`__rel_loc`.
    pub(crate) type_name: String,
    /// Byte offset of the field in the raw record, from the format's
    /// `offset:`.
    pub offset: usize,
    pub(crate) size: usize,
    pub(crate) signed: bool,
    pub(crate) kind: FieldKind,
}

/// A field's value in one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FieldValue<'a> {
    /// A scalar, sign-extended when the field is signed.
    Int { value: u64, signed: bool },
    /// The bytes of an array or a dynamic (`__data_loc`/`__rel_loc`) field.
    Bytes { bytes: &'a [u8], elem_size: usize },
}

impl Field {
    /// Whether the field holds text (`char` arrays and dynamic strings).
    pub(crate) fn is_string(&self) -> bool {
        !matches!(self.kind, FieldKind::Scalar) && is_char_type(&self.type_name)
    }

    /// Whether the field is a pointer or a `long` (printed in hex by the
    /// `field=value` fallback, like libtraceevent).
    pub(crate) fn is_long_or_pointer(&self) -> bool {
        self.type_name.contains('*') || self.type_name.split_whitespace().any(|w| w == "long")
    }

    /// The field's value in `raw` as a number, in the host's byte order:
    /// `None` when `raw` is too short or the field is not a number.
    pub(crate) fn int(&self, raw: &[u8]) -> Option<u64> {
        match self.value(raw, Endian::host())? {
            FieldValue::Int { value, .. } => Some(value),
            FieldValue::Bytes { .. } => None,
        }
    }

    /// The field's value in `raw` (a whole record, starting at
    /// `common_type`), or `None` when `raw` is too short for it.
    pub(crate) fn value<'a>(&self, raw: &'a [u8], endian: Endian) -> Option<FieldValue<'a>> {
        match self.kind {
            FieldKind::Scalar => {
                let value = endian.read_uint(raw, self.offset, self.size)?;
                Some(FieldValue::Int {
                    value: if self.signed {
                        sign_extend(value, self.size)
                    } else {
                        value
                    },
                    signed: self.signed,
                })
            }
            FieldKind::Array { elem_size } => Some(FieldValue::Bytes {
                bytes: raw.get(self.offset..self.offset.checked_add(self.size)?)?,
                elem_size,
            }),
            FieldKind::DataLoc { elem_size } | FieldKind::RelLoc { elem_size } => {
                let loc = endian.read_uint(raw, self.offset, 4)?;
                let mut start = (loc & 0xffff) as usize;
                let len = (loc >> 16) as usize;
                if matches!(self.kind, FieldKind::RelLoc { .. }) {
                    start = start.checked_add(self.offset + 4)?;
                }
                Some(FieldValue::Bytes {
                    bytes: raw.get(start..start.checked_add(len)?)?,
                    elem_size,
                })
            }
        }
    }
}

/// `value` of `size` bytes, sign-extended to 64 bits.
pub(crate) fn sign_extend(value: u64, size: usize) -> u64 {
    match size {
        1 => value as u8 as i8 as i64 as u64,
        2 => value as u16 as i16 as i64 as u64,
        4 => value as u32 as i32 as i64 as u64,
        _ => value,
    }
}

/// One tracepoint's format.
#[derive(Clone, Debug)]
pub struct EventFormat {
    /// The subsystem (`sched`), from the directory or the tracing data.
    pub(crate) system: String,
    /// The tracepoint's name within its subsystem (`sched_switch`).
    pub name: String,
    /// The tracepoint id: `perf_event_attr.config` and `common_type`.
    pub id: u64,
    /// `common_type`, `common_flags`, `common_preempt_count`, `common_pid`...
    pub(crate) common_fields: Vec<Field>,
    /// The event's own fields, in declaration order.
    pub fields: Vec<Field>,
    /// The `print fmt:` text (format string and arguments), as written.
    pub print_fmt_text: String,
    /// The parsed print fmt; `Err` holds why it did not parse.
    pub print_fmt: Result<PrintFmt, PrintFmtError>,
}

impl EventFormat {
    /// `system:name`, as perf prints it.
    pub fn full_name(&self) -> String {
        format!("{}:{}", self.system, self.name)
    }

    /// The event or common field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields
            .iter()
            .chain(&self.common_fields)
            .find(|f| f.name == name)
    }

    /// The field called `name`, or an error naming the event and the field.
    pub(crate) fn require_field(&self, name: &str) -> Result<Field, MissingField> {
        self.field(name).cloned().ok_or_else(|| MissingField {
            event: self.full_name(),
            field: name.to_owned(),
        })
    }
}

/// A field an analysis needs that the event's format does not have.
#[derive(Debug, thiserror::Error)]
#[error("{event} has no field '{field}'")]
pub(crate) struct MissingField {
    /// `system:name` of the event.
    pub(crate) event: String,
    /// The field asked for.
    pub(crate) field: String,
}

fn is_char_type(type_name: &str) -> bool {
    let last = type_name
        .split_whitespace()
        .rfind(|w| *w != "const" && *w != "volatile");
    matches!(
        last,
        Some("char" | "u8" | "__u8" | "s8" | "__s8" | "uint8_t" | "int8_t")
    )
}

/// The size of a C scalar type name, when it is a well-known one.
pub(crate) fn type_size(type_name: &str) -> Option<usize> {
    if type_name.contains('*') {
        return Some(8);
    }
    let words: Vec<&str> = type_name
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile" | "unsigned" | "signed" | "struct"))
        .collect();
    let size = match words.as_slice() {
        [] | ["int"] => 4,
        ["char"] | ["bool"] | ["_Bool"] => 1,
        ["short"] | ["short", "int"] | ["ushort"] => 2,
        ["uint"] => 4,
        ["ulong"] => 8,
        ["uchar"] => 1,
        ["long"] | ["long", "int"] | ["long", "long"] | ["long", "long", "int"] => 8,
        [w] => match w.trim_start_matches('_') {
            "u8" | "s8" | "uint8_t" | "int8_t" => 1,
            "u16" | "s16" | "uint16_t" | "int16_t" | "be16" | "le16" | "umode_t" => 2,
            "u32" | "s32" | "uint32_t" | "int32_t" | "be32" | "le32" | "pid_t" | "dev_t"
            | "gfp_t" | "uid_t" | "gid_t" => 4,
            "u64" | "s64" | "uint64_t" | "int64_t" | "be64" | "le64" | "size_t" | "ssize_t"
            | "loff_t" | "sector_t" | "ino_t" | "off_t" | "blkcnt_t" | "ktime_t" => 8,
            _ => return None,
        },
        _ => return None,
    };
    Some(size)
}

/// Whether a C type name is signed when the format does not say.
fn type_is_signed(type_name: &str) -> bool {
    if type_name.contains('*') || type_name.contains("unsigned") {
        return false;
    }
    let last = type_name.split_whitespace().last().unwrap_or("");
    matches!(
        last.trim_start_matches('_'),
        "int" | "long" | "short" | "s8" | "s16" | "s32" | "s64" | "pid_t" | "ssize_t" | "loff_t"
    ) || last == "char"
}

/// Parses one `field:...;` line (without the leading tab).
fn parse_field(line: &str) -> Result<Field, FieldError> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, None);
    for part in line.split(';') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let Some((key, value)) = part.split_once(':') else {
            return Err(FieldError::NotKeyValue(part.to_string()));
        };
        let value = value.trim();
        let number = || {
            value.parse::<usize>().map_err(|_| FieldError::NotANumber {
                key: key.to_string(),
                value: value.to_string(),
            })
        };
        match key.trim() {
            "field" | "field special" => decl = Some(value),
            "offset" => offset = Some(number()?),
            "size" => size = Some(number()?),
            "signed" => signed = Some(number()? != 0),
            _ => {} // unknown keys of future kernels
        }
    }
    let decl = decl.ok_or(FieldError::Missing("field:"))?;
    let offset = offset.ok_or(FieldError::Missing("offset:"))?;
    let size = size.ok_or(FieldError::Missing("size:"))?;
    let (mut decl, mut loc) = (decl, None);
    for (prefix, which) in [("__data_loc ", 0u8), ("__rel_loc ", 1u8)] {
        if let Some(rest) = decl.strip_prefix(prefix) {
            decl = rest.trim();
            loc = Some(which);
        }
    }
    // `TYPE NAME`, `TYPE NAME[N]`, `TYPE[] NAME`, `TYPE *NAME`.
    let (head, array_len) = match decl.strip_suffix(']') {
        Some(rest) => {
            let open = rest
                .rfind('[')
                .ok_or_else(|| FieldError::Unbalanced(decl.to_string()))?;
            (rest[..open].trim_end(), Some(rest[open + 1..].trim()))
        }
        None => (decl, None),
    };
    // The name is the trailing identifier; `split` is the byte after the
    // character before it (which may be multi-byte in hostile input).
    let split = head
        .char_indices()
        .rfind(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
        .map(|(i, c)| i + c.len_utf8())
        .ok_or_else(|| FieldError::NoType(decl.to_string()))?;
    let name = head[split..].to_string();
    if name.is_empty() {
        return Err(FieldError::NoName(decl.to_string()));
    }
    let type_name = head[..split]
        .trim()
        .trim_end_matches("[]")
        .trim()
        .to_string();
    if type_name.is_empty() {
        return Err(FieldError::NoType(decl.to_string()));
    }
    let elem_size = || {
        type_size(&type_name).unwrap_or_else(|| {
            match array_len.and_then(|n| n.parse::<usize>().ok()) {
                Some(n) if n > 0 && size % n == 0 => size / n,
                _ => 1,
            }
        })
    };
    let kind = match (loc, array_len) {
        (Some(0), _) => FieldKind::DataLoc {
            elem_size: elem_size(),
        },
        (Some(_), _) => FieldKind::RelLoc {
            elem_size: elem_size(),
        },
        (None, Some(len)) => FieldKind::Array {
            elem_size: match len.parse::<usize>() {
                Ok(n) if n > 0 && size % n == 0 => size / n,
                _ => type_size(&type_name).unwrap_or(1),
            },
        },
        (None, None) => FieldKind::Scalar,
    };
    let signed = signed.unwrap_or_else(|| type_is_signed(&type_name));
    Ok(Field {
        name,
        type_name,
        offset,
        size,
        signed,
        kind,
    })
}

/// Parses a `format` file. `system` names the subsystem (the file does not).
pub fn parse_format(system: &str, text: &str) -> Result<EventFormat, FormatError> {
    let mut name = None;
    let mut id = None;
    let mut common_fields = Vec::new();
    let mut fields = Vec::new();
    let mut print_fmt_text = None;
    // Fields before the first blank line after `format:` are the common ones.
    let mut in_common = true;
    let mut seen_field = false;
    let label = |name: &Option<String>| format!("{system}:{}", name.as_deref().unwrap_or("?"));
    for (index, line) in text.lines().enumerate() {
        let malformed = |what: String| FormatError::Malformed {
            event: label(&name),
            line: index + 1,
            what,
        };
        let trimmed = line.trim();
        if let Some(rest) = line.strip_prefix("name:") {
            name = Some(rest.trim().to_string());
        } else if let Some(rest) = line.strip_prefix("ID:") {
            id = Some(
                rest.trim()
                    .parse::<u64>()
                    .map_err(|_| malformed(format!("ID is not a number: '{}'", rest.trim())))?,
            );
        } else if trimmed == "format:" {
        } else if let Some(rest) = line.strip_prefix("print fmt:") {
            print_fmt_text = Some(rest.trim().to_string());
        } else if trimmed.starts_with("field") {
            let field = parse_field(trimmed).map_err(|e| malformed(e.to_string()))?;
            seen_field = true;
            if in_common {
                common_fields.push(field);
            } else {
                fields.push(field);
            }
        } else if trimmed.is_empty() {
            if seen_field {
                in_common = false;
            }
        } else if print_fmt_text.is_some() {
            // A print fmt continued on another line (never seen, tolerated).
            if let Some(p) = print_fmt_text.as_mut() {
                p.push(' ');
                p.push_str(trimmed);
            }
        } else {
            return Err(malformed(format!("unexpected line '{trimmed}'")));
        }
    }
    let missing = |what: &str| FormatError::Malformed {
        event: label(&name),
        line: text.lines().count(),
        what: format!("no '{what}' line"),
    };
    let name = name.clone().ok_or_else(|| missing("name:"))?;
    let id = id.ok_or_else(|| missing("ID:"))?;
    if in_common {
        // No blank line after the common fields: split on the `common_` prefix.
        let (common, own): (Vec<Field>, Vec<Field>) = common_fields
            .into_iter()
            .partition(|f| f.name.starts_with("common_"));
        common_fields = common;
        fields = own;
    }
    let print_fmt_text = print_fmt_text.unwrap_or_default();
    let print_fmt = print_fmt::parse(&print_fmt_text);
    Ok(EventFormat {
        system: system.to_string(),
        name,
        id,
        common_fields,
        fields,
        print_fmt_text,
        print_fmt,
    })
}

/// Reads and parses `events/<system>/<name>/format` under `tracefs_root`.
pub(crate) fn load_format(
    tracefs_root: &Path,
    system: &str,
    name: &str,
) -> Result<EventFormat, FormatError> {
    let events = tracefs_root.join("events");
    if !events.join(system).is_dir() {
        return Err(FormatError::NoSuchSubsystem(system.to_string()));
    }
    let path = events.join(system).join(name).join("format");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(FormatError::NoSuchEvent(format!("{system}:{name}")));
        }
        Err(err) => return Err(FormatError::Read { path, err }),
    };
    parse_format(system, &text)
}

/// Writes `name=value` for each of the event's own fields, as libtraceevent
/// does when it cannot render the print fmt.
pub(crate) fn write_field_pairs(
    format: &EventFormat,
    raw: &[u8],
    endian: Endian,
    out: &mut String,
) {
    for (i, field) in format.fields.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&field.name);
        out.push('=');
        write_field_value(field, raw, endian, out);
    }
}

/// One field's value as the `field=value` fallback prints it.
pub(crate) fn write_field_value(field: &Field, raw: &[u8], endian: Endian, out: &mut String) {
    match field.value(raw, endian) {
        None => out.push_str("<out of range>"),
        Some(FieldValue::Int { value, signed }) => {
            let _ = if signed {
                write!(out, "{}", value as i64)
            } else if field.is_long_or_pointer() {
                write!(out, "0x{value:x}")
            } else {
                write!(out, "{value}")
            };
        }
        Some(FieldValue::Bytes { bytes, elem_size }) => {
            if field.is_string() {
                out.push_str(&c_string(bytes));
            } else {
                out.push_str("ARRAY[");
                let step = elem_size.max(1);
                for (i, chunk) in bytes.chunks(step).enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    for b in chunk {
                        let _ = write!(out, "{b:02x}");
                    }
                }
                out.push(']');
            }
        }
    }
}

/// Bytes up to the first NUL, as text (invalid UTF-8 replaced).
pub(crate) fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:__data_loc char[] cmd;\toffset:28;\tsize:4;\tsigned:0;\n\
\tfield:__rel_loc u32[] ids;\toffset:32;\tsize:4;\tsigned:0;\n\
\tfield:const char * filename;\toffset:40;\tsize:8;\tsigned:0;\n\
\n\
print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid\n";

    #[test]
    fn parses_fields_and_kinds() {
        let f = parse_format("sched", SWITCH).expect("parse");
        assert_eq!(f.full_name(), "sched:sched_switch");
        assert_eq!(f.id, 372);
        assert_eq!(f.common_fields.len(), 4);
        let names: Vec<&str> = f.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["prev_comm", "prev_pid", "cmd", "ids", "filename"]);
        assert_eq!(f.fields[0].kind, FieldKind::Array { elem_size: 1 });
        assert!(f.fields[0].is_string());
        assert_eq!(f.fields[1].type_name, "pid_t");
        assert!(f.fields[1].signed);
        assert_eq!(f.fields[2].kind, FieldKind::DataLoc { elem_size: 1 });
        assert_eq!(f.fields[3].kind, FieldKind::RelLoc { elem_size: 4 });
        assert_eq!(f.fields[4].type_name, "const char *");
        assert!(f.print_fmt.is_ok());
    }

    #[test]
    fn reads_values_and_dynamic_fields() {
        let f = parse_format("sched", SWITCH).expect("parse");
        let mut raw = vec![0u8; 64];
        raw[8..12].copy_from_slice(b"bash");
        raw[24..28].copy_from_slice(&(-5i32).to_le_bytes());
        // cmd: 3 bytes at offset 48.
        raw[28..32].copy_from_slice(&(48u32 | 3 << 16).to_le_bytes());
        raw[48..51].copy_from_slice(b"ls\0");
        // ids: 8 bytes at 36 + 16 = 52 (relative to the field's end).
        raw[32..36].copy_from_slice(&(16u32 | 8 << 16).to_le_bytes());
        let e = Endian::Little;
        assert_eq!(
            f.fields[1].value(&raw, e),
            Some(FieldValue::Int {
                value: -5i64 as u64,
                signed: true
            })
        );
        match f.fields[2].value(&raw, e) {
            Some(FieldValue::Bytes { bytes, .. }) => assert_eq!(bytes, b"ls\0"),
            other => panic!("{other:?}"),
        }
        match f.fields[3].value(&raw, e) {
            Some(FieldValue::Bytes { bytes, elem_size }) => {
                assert_eq!(bytes.as_ptr(), raw[52..].as_ptr());
                assert_eq!((bytes.len(), elem_size), (8, 4));
            }
            other => panic!("{other:?}"),
        }
        // Short data reads as None, never panics.
        assert_eq!(f.fields[1].value(&raw[..20], e), None);
        raw[28..32].copy_from_slice(&(0xfff0u32 | 0xff << 16).to_le_bytes());
        assert_eq!(f.fields[2].value(&raw, e), None);
        let mut out = String::new();
        write_field_pairs(&f, &raw, e, &mut out);
        assert!(
            out.starts_with("prev_comm=bash prev_pid=-5 cmd=<out of range>"),
            "{out}"
        );
    }

    #[test]
    fn malformed_formats_say_where() {
        let err = parse_format("x", "name: e\nID: zz\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "format of x:e: line 2: ID is not a number: 'zz'"
        );
        let err =
            parse_format("x", "name: e\nID: 1\n\tfield:int a;\toffset:q;\tsize:4;\n").unwrap_err();
        assert!(
            err.to_string().contains("line 3: offset: not a number"),
            "{err}"
        );
        let err = parse_format("x", "ID: 1\n").unwrap_err();
        assert!(err.to_string().contains("no 'name:' line"), "{err}");
        let err = parse_format("x", "name: e\nID: 1\nbogus\n").unwrap_err();
        assert!(err.to_string().contains("unexpected line 'bogus'"), "{err}");
    }

    #[test]
    fn multibyte_text_is_an_error_not_a_panic() {
        // Found by the fuzzer: a non-ASCII byte inside a declaration.
        let f = parse_field("field:size_t b\u{fffd}ytes_alloc;\toffset:8;\tsize:8;").expect("f");
        assert_eq!(
            (f.name.as_str(), f.type_name.as_str()),
            ("ytes_alloc", "size_t b\u{fffd}")
        );
        assert!(parse_field("field:\u{e9};\toffset:8;\tsize:8;").is_err());
    }

    #[test]
    fn header_page_style_fields() {
        let f = parse_field("field: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;").expect("field");
        assert_eq!(
            (f.name.as_str(), f.type_name.as_str()),
            ("timestamp", "u64")
        );
        let f = parse_field("field:char name[TASK_COMM_LEN];\toffset:8;\tsize:16;").expect("f");
        assert_eq!(f.kind, FieldKind::Array { elem_size: 1 });
        assert!(f.signed, "char is signed when the format does not say");
    }
}
