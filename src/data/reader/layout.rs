//! The bytes of a perf.data file checked before `linux-perf-data` sees them:
//! the header, the sections it points to, the attribute descriptions, the
//! feature strings scry shows, and the framing of the data section (walked in
//! file order, which is also what `scry script -D` prints).
//!
//! Why this exists: the crate trusts lengths it reads (it allocates
//! `vec![0; section.size]`, `Vec::with_capacity(nr)` with `nr` from the file,
//! `buffer.resize(auxtrace.size)`), and an allocation that fails aborts the
//! process: no `catch_unwind` can turn that into an error. So every length the
//! crate will allocate from is checked here against the file's length first.
//!
//! Invariants: every function takes the file's bytes through `Read + Seek`
//! (or a slice) and the file length, never trusts a length before comparing
//! it with what is left, and reports the absolute file offset of the problem.

use std::io::{self, Read, Seek, SeekFrom};

/// `sizeof(struct perf_file_header)`.
pub const FILE_HEADER_SIZE: u64 = 104;
/// `sizeof(struct perf_pipe_file_header)`.
pub const PIPE_HEADER_SIZE: u64 = 16;
/// `PERF_ATTR_SIZE_VER0`: the smallest `perf_event_attr`.
const ATTR_SIZE_MIN: u64 = 64;
/// Larger than any `perf_event_attr` a kernel has defined (136 in 6.x) plus
/// perf's 16-byte id section: a bigger value is corruption, not a new kernel.
const ATTR_SIZE_MAX: u64 = 4096;
/// `sizeof(struct perf_event_header)`.
pub const RECORD_HEADER_SIZE: u64 = 8;

pub const PERF_RECORD_HEADER_FEATURE: u32 = 80;
pub const PERF_RECORD_AUXTRACE: u32 = 71;
const PERF_RECORD_MMAP2: u32 = 10;
/// `PERF_RECORD_MISC_MMAP_BUILD_ID`: the MMAP2 record holds a build-id.
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
const HEADER_EVENT_DESC: u32 = 12;
/// `HEADER_FEAT_BITS`: feature ids are below it.
const FEATURE_BITS: u64 = 256;

/// The byte order of a file, from its magic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

impl Endian {
    pub fn u16(self, b: &[u8], at: usize) -> Option<u16> {
        let bytes: [u8; 2] = b.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u16::from_le_bytes(bytes),
            Endian::Big => u16::from_be_bytes(bytes),
        })
    }

    pub fn u32(self, b: &[u8], at: usize) -> Option<u32> {
        let bytes: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u32::from_le_bytes(bytes),
            Endian::Big => u32::from_be_bytes(bytes),
        })
    }

    pub fn u64(self, b: &[u8], at: usize) -> Option<u64> {
        let bytes: [u8; 8] = b.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u64::from_le_bytes(bytes),
            Endian::Big => u64::from_be_bytes(bytes),
        })
    }
}

/// A `perf_file_section`: where a part of the file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Section {
    pub offset: u64,
    pub size: u64,
}

impl Section {
    /// One past the last byte; callers only use it after `check_section`.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.size)
    }
}

/// What the header says about the file, after checking it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileLayout {
    /// The file's length in bytes.
    pub file_len: u64,
    pub endian: Endian,
    /// True for the pipe format (`perf record -o -`): a 16-byte header, then
    /// records, the attributes and features among them.
    pub pipe: bool,
    pub header_size: u64,
    pub attr_size: u64,
    pub attrs: Section,
    /// The records. In the pipe format: everything after the header.
    pub data: Section,
    pub event_types: Section,
    /// The feature bits set in the header with their sections, in bit order.
    pub features: Vec<(u32, Section)>,
}

impl FileLayout {
    /// Where the feature section table starts (just after the data).
    pub fn features_offset(&self) -> u64 {
        self.data.end()
    }

    pub fn feature(&self, bit: u32) -> Option<Section> {
        self.features
            .iter()
            .find(|(b, _)| *b == bit)
            .map(|(_, section)| *section)
    }
}

/// What is wrong with the layout; `reader` adds the file name.
#[derive(Debug)]
pub enum LayoutError {
    Empty,
    BadMagic(u64),
    TruncatedHeader {
        len: u64,
        needed: u64,
    },
    BadHeader(String),
    SectionOutOfBounds {
        section: String,
        section_at: Section,
        len: u64,
    },
    BadSection {
        section: String,
        offset: u64,
        what: String,
    },
    TruncatedRecord {
        offset: u64,
        record_type: u32,
        needed: u64,
        left: u64,
    },
    BadRecordSize {
        offset: u64,
        record_type: u32,
        size: u64,
    },
    BadRecord {
        offset: u64,
        record_type: u32,
        what: String,
    },
    Io(io::Error),
}

impl From<io::Error> for LayoutError {
    fn from(e: io::Error) -> Self {
        LayoutError::Io(e)
    }
}

/// Reads `len` bytes at `offset`. Callers check the range against the file
/// length first, so `len` is never larger than the file.
pub fn read_at<R: Read + Seek + ?Sized>(r: &mut R, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    r.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::new();
    r.take(len).read_to_end(&mut buf)?;
    if (buf.len() as u64) < len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(buf)
}

fn check_section(name: &str, s: Section, len: u64) -> Result<(), LayoutError> {
    match s.offset.checked_add(s.size) {
        Some(end) if end <= len => Ok(()),
        _ => Err(LayoutError::SectionOutOfBounds {
            section: name.to_owned(),
            section_at: s,
            len,
        }),
    }
}

/// Checks the header of a file of `len` bytes and every section it points to.
pub fn check_file<R: Read + Seek + ?Sized>(r: &mut R, len: u64) -> Result<FileLayout, LayoutError> {
    if len == 0 {
        return Err(LayoutError::Empty);
    }
    let head = read_at(r, 0, len.min(FILE_HEADER_SIZE))?;
    let endian = match head.get(..8) {
        Some(b"PERFILE2") => Endian::Little,
        Some(b"2ELIFREP") => Endian::Big,
        Some(m) => {
            let magic = u64::from_be_bytes(m.try_into().unwrap_or([0; 8]));
            return Err(LayoutError::BadMagic(magic));
        }
        None => {
            if b"PERFILE2".starts_with(&head) || b"2ELIFREP".starts_with(&head) {
                return Err(LayoutError::TruncatedHeader { len, needed: 8 });
            }
            let mut m = [0u8; 8];
            m[..head.len()].copy_from_slice(&head);
            return Err(LayoutError::BadMagic(u64::from_be_bytes(m)));
        }
    };
    let header_size = endian
        .u64(&head, 8)
        .ok_or(LayoutError::TruncatedHeader { len, needed: 16 })?;
    if header_size == PIPE_HEADER_SIZE {
        return Ok(FileLayout {
            file_len: len,
            endian,
            pipe: true,
            header_size,
            attr_size: 0,
            attrs: Section::default(),
            data: Section {
                offset: PIPE_HEADER_SIZE,
                size: len - PIPE_HEADER_SIZE,
            },
            event_types: Section::default(),
            features: Vec::new(),
        });
    }
    if header_size < FILE_HEADER_SIZE {
        return Err(LayoutError::BadHeader(format!(
            "header size {header_size} is neither 16 (pipe format) nor at least {FILE_HEADER_SIZE}"
        )));
    }
    if len < header_size {
        return Err(LayoutError::TruncatedHeader {
            len,
            needed: header_size,
        });
    }
    let field = |at: usize| endian.u64(&head, at).unwrap_or(0);
    let section = |at: usize| Section {
        offset: field(at),
        size: field(at + 8),
    };
    let attr_size = field(16);
    if !(ATTR_SIZE_MIN..=ATTR_SIZE_MAX).contains(&attr_size) {
        return Err(LayoutError::BadHeader(format!(
            "attribute size {attr_size} is outside {ATTR_SIZE_MIN}..={ATTR_SIZE_MAX}"
        )));
    }
    let attrs = section(24);
    let data = section(40);
    let event_types = section(56);
    check_section("attribute", attrs, len)?;
    check_section("data", data, len)?;
    check_section("event types", event_types, len)?;

    let bits: Vec<u32> = (0..4u32)
        .flat_map(|word| {
            let w = field(72 + 8 * word as usize);
            (0..64u32)
                .filter(move |b| w >> b & 1 == 1)
                .map(move |b| word * 64 + b)
        })
        .collect();
    let table = Section {
        offset: data.end(),
        size: bits.len() as u64 * 16,
    };
    check_section("feature table", table, len)?;
    let table_bytes = read_at(r, table.offset, table.size)?;
    let mut features = Vec::with_capacity(bits.len());
    for (i, bit) in bits.into_iter().enumerate() {
        let s = Section {
            offset: endian.u64(&table_bytes, i * 16).unwrap_or(0),
            size: endian.u64(&table_bytes, i * 16 + 8).unwrap_or(0),
        };
        check_section(&format!("feature {}", feature_name(bit)), s, len)?;
        features.push((bit, s));
    }
    let layout = FileLayout {
        file_len: len,
        endian,
        pipe: false,
        header_size,
        attr_size,
        attrs,
        data,
        event_types,
        features,
    };
    check_attributes(r, &layout)?;
    Ok(layout)
}

/// Checks the attribute descriptions where the crate will look for them:
/// EVENT_DESC first, then the old event types section, then simpleperf's
/// attribute section, then the plain attribute section.
fn check_attributes<R: Read + Seek + ?Sized>(r: &mut R, l: &FileLayout) -> Result<(), LayoutError> {
    const SIMPLEPERF_META_INFO: u32 = 129;
    if let Some(s) = l.feature(HEADER_EVENT_DESC) {
        let bytes = read_at(r, s.offset, s.size)?;
        return check_event_desc(&bytes, l.endian).map_err(|(at, what)| LayoutError::BadSection {
            section: "EVENT_DESC".into(),
            offset: s.offset + at as u64,
            what,
        });
    }
    let (section, entry, ids_at, name) = if l.event_types.size != 0 {
        (l.event_types, l.attr_size + 16, l.attr_size, "event types")
    } else if l.feature(SIMPLEPERF_META_INFO).is_some() {
        if l.attr_size < ATTR_SIZE_MIN + 16 {
            return Err(LayoutError::BadHeader(format!(
                "attribute size {} is too small for a simpleperf file",
                l.attr_size
            )));
        }
        (l.attrs, l.attr_size, l.attr_size - 16, "attribute")
    } else {
        return Ok(());
    };
    let bytes = read_at(r, section.offset, section.size)?;
    for i in 0..section.size / entry {
        let at = (i * entry + ids_at) as usize;
        let ids = Section {
            offset: l.endian.u64(&bytes, at).unwrap_or(0),
            size: l.endian.u64(&bytes, at + 8).unwrap_or(0),
        };
        check_section(&format!("{name} #{i} ids"), ids, l.file_len)?;
    }
    Ok(())
}

/// Checks a HEADER_EVENT_DESC body: every count and length fits in what is
/// left. Returns the offset in `b` and what is wrong.
pub fn check_event_desc(b: &[u8], e: Endian) -> Result<(), (usize, String)> {
    let short = |at: usize, what: &str| (at, format!("{what} runs past the end of the section"));
    let nr = e.u32(b, 0).ok_or_else(|| short(0, "event count"))?;
    let attr_size = e.u32(b, 4).ok_or_else(|| short(4, "attribute size"))? as usize;
    if !(ATTR_SIZE_MIN as usize..=ATTR_SIZE_MAX as usize).contains(&attr_size) {
        return Err((4, format!("attribute size {attr_size} is out of range")));
    }
    let mut at = 8usize;
    for i in 0..nr {
        let attr_end = at
            .checked_add(attr_size)
            .filter(|&end| end <= b.len())
            .ok_or_else(|| short(at, &format!("event {i}'s attribute")))?;
        let own_size = e.u32(b, at + 4).unwrap_or(0) as usize;
        if own_size > attr_size || (own_size as u64) < ATTR_SIZE_MIN {
            return Err((
                at + 4,
                format!(
                    "event {i}'s attribute says it has {own_size} bytes, the section {attr_size}"
                ),
            ));
        }
        at = attr_end;
        let nr_ids = e.u32(b, at).ok_or_else(|| short(at, "id count"))? as usize;
        let name_len = e
            .u32(b, at + 4)
            .ok_or_else(|| short(at + 4, "name length"))? as usize;
        at += 8;
        at = at
            .checked_add(name_len)
            .filter(|&end| end <= b.len())
            .ok_or_else(|| short(at, &format!("event {i}'s name ({name_len} bytes)")))?;
        at = nr_ids
            .checked_mul(8)
            .and_then(|n| at.checked_add(n))
            .filter(|&end| end <= b.len())
            .ok_or_else(|| short(at, &format!("event {i}'s {nr_ids} ids")))?;
    }
    Ok(())
}

/// A record's place in the file, as the walk found it.
#[derive(Clone, Copy, Debug)]
pub struct RecordFrame {
    pub offset: u64,
    pub record_type: u32,
    pub misc: u16,
    /// From the header: header plus body, without AUXTRACE's trailing data.
    pub size: u16,
}

/// Walks the records of `data` in file order, checking that each fits in
/// the section (and, for AUXTRACE, that its trailing data does too), and
/// that pipe-format EVENT_DESC features are sound. Calls `visit` with each
/// record's frame and body (AUXTRACE data not included).
pub fn walk_records<R: Read + Seek + ?Sized>(
    r: &mut R,
    data: Section,
    endian: Endian,
    mut visit: impl FnMut(RecordFrame, &[u8]) -> io::Result<()>,
) -> Result<(), LayoutError> {
    r.seek(SeekFrom::Start(data.offset))?;
    let mut cursor = RecordCursor::new(r, data, endian, 1 << 18);
    let mut body = Vec::with_capacity(1 << 16);
    loop {
        body.clear();
        let Some(frame) = cursor.next_into(&mut body)? else {
            return Ok(());
        };
        visit(frame, &body)?;
    }
}

/// The records of a data section in file order, each checked as
/// [`walk_records`] describes; the reader's time-order pass reads through it.
pub struct RecordCursor<R: Read> {
    r: io::BufReader<R>,
    endian: Endian,
    offset: u64,
    end: u64,
}

impl<R: Read> RecordCursor<R> {
    /// `r` must be positioned at `data.offset`.
    pub fn new(r: R, data: Section, endian: Endian, buffer: usize) -> Self {
        RecordCursor {
            r: io::BufReader::with_capacity(buffer, r),
            endian,
            offset: data.offset,
            end: data.end(),
        }
    }

    /// Appends the next record's body (without AUXTRACE's trailing data) to
    /// `body` and returns its frame; `None` at the end of the section.
    pub fn next_into(&mut self, body: &mut Vec<u8>) -> Result<Option<RecordFrame>, LayoutError> {
        let (offset, end, endian) = (self.offset, self.end, self.endian);
        if offset >= end {
            return Ok(None);
        }
        let left = end - offset;
        if left < RECORD_HEADER_SIZE {
            return Err(LayoutError::TruncatedRecord {
                offset,
                record_type: 0,
                needed: RECORD_HEADER_SIZE,
                left,
            });
        }
        let mut head = [0u8; 8];
        self.r.read_exact(&mut head)?;
        let record_type = endian.u32(&head, 0).unwrap_or(0);
        let misc = endian.u16(&head, 4).unwrap_or(0);
        let size = endian.u16(&head, 6).unwrap_or(0);
        if u64::from(size) < RECORD_HEADER_SIZE {
            return Err(LayoutError::BadRecordSize {
                offset,
                record_type,
                size: size.into(),
            });
        }
        if u64::from(size) > left {
            return Err(LayoutError::TruncatedRecord {
                offset,
                record_type,
                needed: size.into(),
                left,
            });
        }
        let at = body.len();
        let len = usize::from(size) - RECORD_HEADER_SIZE as usize;
        body.resize(at + len, 0);
        self.r.read_exact(&mut body[at..])?;
        let body = &body[at..];
        let mut next = offset + u64::from(size);
        if record_type == PERF_RECORD_AUXTRACE {
            let aux = endian.u64(body, 0).unwrap_or(0);
            match next.checked_add(aux) {
                Some(n) if n <= end => {
                    io::copy(&mut (&mut self.r).take(aux), &mut io::sink())?;
                    next = n;
                }
                _ => {
                    return Err(LayoutError::TruncatedRecord {
                        offset,
                        record_type,
                        needed: u64::from(size).saturating_add(aux),
                        left,
                    });
                }
            }
        }
        // The crate keeps the low 32 bits of the feature id (`as u32`): an id
        // with high bits set would reach it as EVENT_DESC unchecked. perf's
        // feature bits are below 256 (`HEADER_FEAT_BITS`).
        let feature =
            (record_type == PERF_RECORD_HEADER_FEATURE).then(|| endian.u64(body, 0).unwrap_or(0));
        if let Some(id) = feature
            && id >= FEATURE_BITS
        {
            return Err(LayoutError::BadRecord {
                offset,
                record_type,
                what: format!("feature id {id:#x} (perf's are below {FEATURE_BITS})"),
            });
        }
        if feature == Some(HEADER_EVENT_DESC.into()) {
            let desc = body.get(8..).unwrap_or(&[]);
            check_event_desc(desc, endian).map_err(|(at, what)| LayoutError::BadSection {
                section: "EVENT_DESC".into(),
                offset: offset + RECORD_HEADER_SIZE + 8 + at as u64,
                what,
            })?;
        }
        // linux-perf-event-reader asserts (panics) on a longer build-id.
        if record_type == PERF_RECORD_MMAP2
            && misc & MISC_MMAP_BUILD_ID != 0
            && let Some(&len) = body.get(32)
            && len > 20
        {
            return Err(LayoutError::BadRecord {
                offset,
                record_type,
                what: format!("build-id size {len} (at most 20)"),
            });
        }
        self.offset = next;
        Ok(Some(RecordFrame {
            offset,
            record_type,
            misc,
            size,
        }))
    }
}

/// perf's name for a record type: `PERF_RECORD_SAMPLE`, ...
pub fn record_type_name(t: u32) -> String {
    let name = match t {
        1 => "MMAP",
        2 => "LOST",
        3 => "COMM",
        4 => "EXIT",
        5 => "THROTTLE",
        6 => "UNTHROTTLE",
        7 => "FORK",
        8 => "READ",
        9 => "SAMPLE",
        10 => "MMAP2",
        11 => "AUX",
        12 => "ITRACE_START",
        13 => "LOST_SAMPLES",
        14 => "SWITCH",
        15 => "SWITCH_CPU_WIDE",
        16 => "NAMESPACES",
        17 => "KSYMBOL",
        18 => "BPF_EVENT",
        19 => "CGROUP",
        20 => "TEXT_POKE",
        21 => "AUX_OUTPUT_HW_ID",
        64 => "HEADER_ATTR",
        65 => "HEADER_EVENT_TYPE",
        66 => "HEADER_TRACING_DATA",
        67 => "HEADER_BUILD_ID",
        68 => "FINISHED_ROUND",
        69 => "ID_INDEX",
        70 => "AUXTRACE_INFO",
        71 => "AUXTRACE",
        72 => "AUXTRACE_ERROR",
        73 => "THREAD_MAP",
        74 => "CPU_MAP",
        75 => "STAT_CONFIG",
        76 => "STAT",
        77 => "STAT_ROUND",
        78 => "EVENT_UPDATE",
        79 => "TIME_CONV",
        80 => "HEADER_FEATURE",
        81 => "COMPRESSED",
        82 => "FINISHED_INIT",
        83 => "COMPRESSED2",
        _ => return format!("record type {t}"),
    };
    format!("PERF_RECORD_{name}")
}

/// perf's name for a feature bit (`HEADER_<name>` without the prefix), or
/// `bit N` for a bit perf has not defined.
pub fn feature_name(bit: u32) -> String {
    let name = linux_perf_data::Feature(bit).to_string();
    if name.starts_with("Unknown") {
        format!("bit {bit}")
    } else {
        name
    }
}

/// A `perf_header_string`: u32 length, then that many bytes, NUL padded.
pub fn header_string(b: &[u8], at: usize, e: Endian) -> Option<(String, usize)> {
    let len = e.u32(b, at)? as usize;
    let start = at.checked_add(4)?;
    let bytes = b.get(start..start.checked_add(len)?)?;
    let text = bytes.split(|&c| c == 0).next().unwrap_or(&[]);
    Some((String::from_utf8_lossy(text).into_owned(), start + len))
}

/// A `perf_header_string_list`: u32 count, then that many strings.
pub fn header_string_list(b: &[u8], e: Endian) -> Option<Vec<String>> {
    let nr = e.u32(b, 0)?;
    let mut at = 4;
    let mut out = Vec::new();
    for _ in 0..nr {
        let (s, next) = header_string(b, at, e)?;
        out.push(s);
        at = next;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn event_desc_counts_must_fit_the_section() {
        // nr = 4 billion events in a 16-byte section: the crate would
        // reserve room for all of them before reading one.
        let mut b = Vec::new();
        b.extend(u32::MAX.to_le_bytes());
        b.extend(136u32.to_le_bytes());
        b.extend([0; 8]);
        let (at, what) = check_event_desc(&b, Endian::Little).unwrap_err();
        assert_eq!(at, 8);
        assert!(what.contains("event 0's attribute"), "{what}");
        // One sound event: attr (own size 136), 1 id, a 8-byte name.
        let mut ok = Vec::new();
        ok.extend(1u32.to_le_bytes());
        ok.extend(136u32.to_le_bytes());
        let mut attr = vec![0u8; 136];
        attr[4..8].copy_from_slice(&136u32.to_le_bytes());
        ok.extend(attr);
        ok.extend(1u32.to_le_bytes());
        ok.extend(8u32.to_le_bytes());
        ok.extend(b"cycles\0\0");
        ok.extend(7u64.to_le_bytes());
        check_event_desc(&ok, Endian::Little).unwrap();
        ok.truncate(ok.len() - 1);
        assert!(check_event_desc(&ok, Endian::Little).is_err());
    }

    fn record(t: u32, size: u16, body: &[u8]) -> Vec<u8> {
        let mut r = t.to_le_bytes().to_vec();
        r.extend(0u16.to_le_bytes());
        r.extend(size.to_le_bytes());
        r.extend(body);
        r
    }

    #[test]
    fn walk_reports_offsets_of_bad_framing() {
        let mut data = vec![0u8; 16];
        data.extend(record(9, 16, &[1; 8]));
        data.extend(record(3, 64, &[2; 8]));
        let section = Section {
            offset: 16,
            size: data.len() as u64 - 16,
        };
        let mut seen = Vec::new();
        let err = walk_records(&mut Cursor::new(&data), section, Endian::Little, |f, _| {
            seen.push(f.offset);
            Ok(())
        })
        .unwrap_err();
        assert_eq!(seen, [16]);
        match err {
            LayoutError::TruncatedRecord {
                offset,
                record_type,
                needed,
                left,
            } => assert_eq!((offset, record_type, needed, left), (32, 3, 64, 16)),
            other => panic!("{other:?}"),
        }
        let mut tiny = vec![0u8; 16];
        tiny.extend(record(9, 4, &[]));
        let s = Section {
            offset: 16,
            size: 8,
        };
        let err = walk_records(&mut Cursor::new(&tiny), s, Endian::Little, |_, _| Ok(()));
        assert!(matches!(
            err,
            Err(LayoutError::BadRecordSize { offset: 16, .. })
        ));
    }

    #[test]
    fn auxtrace_data_must_fit() {
        let mut data = record(PERF_RECORD_AUXTRACE, 16, &u64::MAX.to_le_bytes());
        data.extend([0; 8]);
        let s = Section {
            offset: 0,
            size: data.len() as u64,
        };
        let err = walk_records(&mut Cursor::new(&data), s, Endian::Little, |_, _| Ok(()));
        assert!(matches!(
            err,
            Err(LayoutError::TruncatedRecord { offset: 0, .. })
        ));
    }
}
