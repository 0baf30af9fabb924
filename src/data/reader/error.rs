//! The reader's errors: each says what went wrong and where (file, offset,
//! record type). A file compressed whole (gzip, zstd, ...) is named as such
//! rather than as a bad magic number.

use std::io;

use super::layout::{LayoutError, record_type_name};

/// What went wrong reading a perf.data file, and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file holds no bytes at all.
    #[error("{file}: empty file")]
    Empty {
        /// Path of the file read, as the user gave it.
        file: String,
    },
    /// The first eight bytes are neither `PERFILE2` nor a known compression.
    #[error("{file}: not a perf.data file (bad magic 0x{magic:016x})")]
    BadMagic {
        /// Path of the file read, as the user gave it.
        file: String,
        /// The file's first eight bytes, read little-endian.
        magic: u64,
    },
    /// The whole file is compressed (gzip, zstd, xz, bzip2).
    #[error(
        "{file}: {format}-compressed: decompress it first ({tool}), then read the perf.data inside"
    )]
    Compressed {
        /// Path of the file read, as the user gave it.
        file: String,
        /// The compression the magic names: "gzip", "zstd", "xz" or "bzip2".
        format: &'static str,
        /// The command that undoes it, e.g. "gunzip".
        tool: &'static str,
    },
    /// The file is recognisably something else (e.g. a perf pipe-mode
    /// stream where a file was needed, or a text file).
    #[error("{file}: {what}, not a perf.data file")]
    NotPerfData {
        /// Path of the file read, as the user gave it.
        file: String,
        /// What the file looks like instead, as a short phrase.
        what: String,
    },
    /// The input is a pipe, which cannot be read a second time.
    #[error(
        "{file}: a pipe is read once, and this walks the records again: save it to a file first"
    )]
    ReadOnce {
        /// Path of the pipe or `-`, as the user gave it.
        file: String,
    },
    /// The file ends before its fixed-size header does.
    #[error("{file}: truncated header ({len} bytes, the header needs {needed})")]
    TruncatedHeader {
        /// Path of the file read, as the user gave it.
        file: String,
        /// Length of the file in bytes.
        len: u64,
        /// Bytes the header needs, from its own size field.
        needed: u64,
    },
    /// A header field holds an impossible value.
    #[error("{file}: bad header: {what}")]
    BadHeader {
        /// Path of the file read, as the user gave it.
        file: String,
        /// Which field and what is wrong with it.
        what: String,
    },
    /// A section the header points at extends past the end of the file.
    #[error(
        "{file}: {section} section (offset 0x{offset:x}, size 0x{size:x}) runs past the end of the file ({len} bytes)"
    )]
    SectionOutOfBounds {
        /// Path of the file read, as the user gave it.
        file: String,
        /// The section's name ("attrs", "data", a feature's name, ...).
        section: String,
        /// Byte offset of the section in the file, from the header.
        offset: u64,
        /// Size of the section in bytes, from the header.
        size: u64,
        /// Length of the file in bytes.
        len: u64,
    },
    /// A section is in bounds but its contents are malformed.
    #[error("{file}: {section} section at offset 0x{offset:x}: {what}")]
    BadSection {
        /// Path of the file read, as the user gave it.
        file: String,
        /// The section's name ("attrs", "data", a feature's name, ...).
        section: String,
        /// Byte offset of the section in the file.
        offset: u64,
        /// What is malformed in it.
        what: String,
    },
    /// A record's header says it is longer than the bytes left in its
    /// section.
    #[error(
        "{file}: truncated record at offset 0x{offset:x} ({record_type}, {needed} bytes needed, {left} left)"
    )]
    TruncatedRecord {
        /// Path of the file read, as the user gave it.
        file: String,
        /// Byte offset of the record's header in the file.
        offset: u64,
        /// The record's kind, by its kernel name (e.g. `PERF_RECORD_SAMPLE`).
        record_type: String,
        /// Bytes the record's header says it spans.
        needed: u64,
        /// Bytes left in the section from the record's start.
        left: u64,
    },
    /// A record's size field is below the 8 bytes of its own header, so the
    /// walk could not advance.
    #[error(
        "{file}: record at offset 0x{offset:x} ({record_type}) has size {size}, less than its 8-byte header"
    )]
    BadRecordSize {
        /// Path of the file read, as the user gave it.
        file: String,
        /// Byte offset of the record's header in the file.
        offset: u64,
        /// The record's kind, by its kernel name (e.g. `PERF_RECORD_SAMPLE`).
        record_type: String,
        /// The size field the record's header holds, in bytes.
        size: u64,
    },
    /// A record's body does not parse as its type says it should.
    #[error("{file}: malformed {record_type} {location}: {reason}")]
    BadRecord {
        /// Path of the file read, as the user gave it.
        file: String,
        /// The record's kind, by its kernel name (e.g. `PERF_RECORD_MMAP2`).
        record_type: String,
        /// "at offset 0x..." or, inside compressed data, the record's number.
        location: String,
        /// What in the body is malformed.
        reason: String,
    },
    /// The perf.data parser returned an error while reading some part of the
    /// file.
    #[error("{file}: {context}: {reason}")]
    Parse {
        /// Path of the file read, as the user gave it.
        file: String,
        /// The part being read when it failed (e.g. "BUILD_ID feature").
        context: String,
        /// The parser's own message.
        reason: String,
    },
    /// The perf.data parser panicked on malformed input; the panic was
    /// caught and turned into this error.
    #[error("{file}: {context}: the perf.data parser failed on malformed input ({message})")]
    ParserPanic {
        /// Path of the file read, as the user gave it.
        file: String,
        /// The part being read when it panicked.
        context: String,
        /// The panic's payload, when it was a string.
        message: String,
    },
    /// Reading the file failed at the operating-system level.
    #[error("{file}: {source}")]
    Io {
        /// Path of the file read, as the user gave it.
        file: String,
        /// The underlying I/O error.
        source: io::Error,
    },
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
