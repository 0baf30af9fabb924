//! The reader's errors: each says what went wrong and where (file, offset,
//! record type). A file compressed whole (gzip, zstd, ...) is named as such
//! rather than as a bad magic number.

use std::io;

use super::layout::{LayoutError, record_type_name};

/// What went wrong reading a perf.data file, and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    #[error("{file}: empty file")]
    Empty { file: String },
    #[error("{file}: not a perf.data file (bad magic 0x{magic:016x})")]
    BadMagic { file: String, magic: u64 },
    #[error(
        "{file}: {format}-compressed: decompress it first ({tool}), then read the perf.data inside"
    )]
    Compressed {
        file: String,
        format: &'static str,
        tool: &'static str,
    },
    #[error("{file}: {what}, not a perf.data file")]
    NotPerfData { file: String, what: String },
    #[error(
        "{file}: a pipe is read once, and this walks the records again: save it to a file first"
    )]
    ReadOnce { file: String },
    #[error("{file}: truncated header ({len} bytes, the header needs {needed})")]
    TruncatedHeader { file: String, len: u64, needed: u64 },
    #[error("{file}: bad header: {what}")]
    BadHeader { file: String, what: String },
    #[error(
        "{file}: {section} section (offset 0x{offset:x}, size 0x{size:x}) runs past the end of the file ({len} bytes)"
    )]
    SectionOutOfBounds {
        file: String,
        section: String,
        offset: u64,
        size: u64,
        len: u64,
    },
    #[error("{file}: {section} section at offset 0x{offset:x}: {what}")]
    BadSection {
        file: String,
        section: String,
        offset: u64,
        what: String,
    },
    #[error(
        "{file}: truncated record at offset 0x{offset:x} ({record_type}, {needed} bytes needed, {left} left)"
    )]
    TruncatedRecord {
        file: String,
        offset: u64,
        record_type: String,
        needed: u64,
        left: u64,
    },
    #[error(
        "{file}: record at offset 0x{offset:x} ({record_type}) has size {size}, less than its 8-byte header"
    )]
    BadRecordSize {
        file: String,
        offset: u64,
        record_type: String,
        size: u64,
    },
    #[error("{file}: malformed {record_type} {location}: {reason}")]
    BadRecord {
        file: String,
        record_type: String,
        /// "at offset 0x..." or, inside compressed data, the record's number.
        location: String,
        reason: String,
    },
    #[error("{file}: {context}: {reason}")]
    Parse {
        file: String,
        context: String,
        reason: String,
    },
    #[error("{file}: {context}: the perf.data parser failed on malformed input ({message})")]
    ParserPanic {
        file: String,
        context: String,
        message: String,
    },
    #[error("{file}: {source}")]
    Io { file: String, source: io::Error },
}

impl ReadError {
    pub(super) fn from_layout(file: &str, e: LayoutError) -> Self {
        let file = file.to_owned();
        match e {
            LayoutError::Empty => ReadError::Empty { file },
            LayoutError::BadMagic(magic) => match compression(magic) {
                Some((format, tool)) => ReadError::Compressed { file, format, tool },
                None => ReadError::BadMagic { file, magic },
            },
            LayoutError::TruncatedHeader { len, needed } => {
                ReadError::TruncatedHeader { file, len, needed }
            }
            LayoutError::BadHeader(what) => ReadError::BadHeader { file, what },
            LayoutError::SectionOutOfBounds {
                section,
                section_at,
                len,
            } => ReadError::SectionOutOfBounds {
                file,
                section,
                offset: section_at.offset,
                size: section_at.size,
                len,
            },
            LayoutError::BadSection {
                section,
                offset,
                what,
            } => ReadError::BadSection {
                file,
                section,
                offset,
                what,
            },
            LayoutError::TruncatedRecord {
                offset,
                record_type,
                needed,
                left,
            } => ReadError::TruncatedRecord {
                file,
                offset,
                record_type: record_type_name(record_type),
                needed,
                left,
            },
            LayoutError::BadRecordSize {
                offset,
                record_type,
                size,
            } => ReadError::BadRecordSize {
                file,
                offset,
                record_type: record_type_name(record_type),
                size,
            },
            LayoutError::BadRecord {
                offset,
                record_type,
                what,
            } => ReadError::BadRecord {
                file,
                record_type: record_type_name(record_type),
                location: format!("record at offset 0x{offset:x}"),
                reason: what,
            },
            LayoutError::Io(source) => ReadError::Io { file, source },
        }
    }
}

/// The compressed format whose magic starts `magic` (big-endian), and the
/// tool that undoes it.
fn compression(magic: u64) -> Option<(&'static str, &'static str)> {
    let b = magic.to_be_bytes();
    Some(match b {
        [0x1f, 0x8b, ..] => ("gzip", "gunzip"),
        [0x28, 0xb5, 0x2f, 0xfd, ..] => ("zstd", "unzstd"),
        [0xfd, b'7', b'z', b'X', b'Z', 0, ..] => ("xz", "unxz"),
        [b'B', b'Z', b'h', ..] => ("bzip2", "bunzip2"),
        _ => return None,
    })
}
