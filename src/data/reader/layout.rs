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
pub(crate) const FILE_HEADER_SIZE: u64 = 104;
/// `sizeof(struct perf_pipe_file_header)`.
pub(crate) const PIPE_HEADER_SIZE: u64 = 16;
/// `PERF_ATTR_SIZE_VER0`: the smallest `perf_event_attr`.
const ATTR_SIZE_MIN: u64 = 64;
/// Larger than any `perf_event_attr` a kernel has defined (136 in 6.x) plus
/// perf's 16-byte id section: a bigger value is corruption, not a new kernel.
const ATTR_SIZE_MAX: u64 = 4096;
/// `sizeof(struct perf_event_header)`.
pub(crate) const RECORD_HEADER_SIZE: u64 = 8;

pub(super) const HEADER_EVENT_DESC: u32 = 12;

/// The byte order of a file, from its magic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endian {
    Little,
    Big,
}

impl Endian {
    pub(crate) fn u16(self, b: &[u8], at: usize) -> Option<u16> {
        let bytes: [u8; 2] = b.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u16::from_le_bytes(bytes),
            Endian::Big => u16::from_be_bytes(bytes),
        })
    }

    pub(crate) fn u32(self, b: &[u8], at: usize) -> Option<u32> {
        let bytes: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u32::from_le_bytes(bytes),
            Endian::Big => u32::from_be_bytes(bytes),
        })
    }

    pub(crate) fn u64(self, b: &[u8], at: usize) -> Option<u64> {
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
    pub(crate) size: u64,
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
    pub(crate) file_len: u64,
    pub(crate) endian: Endian,
    /// True for the pipe format (`perf record -o -`): a 16-byte header, then
    /// records, the attributes and features among them.
    pub(crate) pipe: bool,
    pub(crate) header_size: u64,
    pub(crate) attr_size: u64,
    pub(crate) attrs: Section,
    /// The records. In the pipe format: everything after the header.
    pub(crate) data: Section,
    pub(crate) event_types: Section,
    /// The feature bits set in the header with their sections, in bit order.
    pub(crate) features: Vec<(u32, Section)>,
    /// What was wrong with a header that is not stale, as lines for
    /// stderr, each with the file offset of the feature table entry to
    /// blank (0: the whole table, the header's feature bits).
    pub(crate) notes: Vec<(u64, String)>,
    /// Set when the header was written before the recording ended: the
    /// data then runs to the end of the file, and `features` is empty.
    pub(crate) stale: Option<StaleHeader>,
}

/// A header that does not describe the file: written before the recording
/// ended (perf writes its real header at the end; scry every moment), and
/// the recorder was killed. Detected when the data section runs past the
/// end of the file, when the feature table after it does not fit (perf's
/// data size of 0: the "table" is then records), or when there are no
/// features and bytes follow the data (scry's header between updates).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StaleHeader {
    /// The data size the header says.
    pub(crate) data_size: u64,
    /// Why the header is taken as stale.
    pub(crate) why: String,
}

impl FileLayout {
    /// Where the feature section table starts (just after the data).
    pub(crate) fn features_offset(&self) -> u64 {
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
pub(crate) enum LayoutError {
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
pub(crate) fn read_at<R: Read + Seek + ?Sized>(
    r: &mut R,
    offset: u64,
    len: u64,
) -> io::Result<Vec<u8>> {
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
pub(crate) fn check_file<R: Read + Seek + ?Sized>(
    r: &mut R,
    len: u64,
) -> Result<FileLayout, LayoutError> {
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
            notes: Vec::new(),
            stale: None,
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
    let mut data = section(40);
    let event_types = section(56);
    check_section("attribute", attrs, len)?;
    check_section("event types", event_types, len)?;
    if data.offset < header_size || data.offset > len {
        return Err(LayoutError::SectionOutOfBounds {
            section: "data".into(),
            section_at: data,
            len,
        });
    }

    let bits: Vec<u32> = (0..4u32)
        .flat_map(|word| {
            let w = field(72 + 8 * word as usize);
            (0..64u32)
                .filter(move |b| w >> b & 1 == 1)
                .map(move |b| word * 64 + b)
        })
        .collect();
    // A header written before the recording ended (see `stale`): the
    // records go on to the end of the file and no feature is trusted.
    let header_data_size = data.size;
    let out_of_bounds = |e: LayoutError| match e {
        LayoutError::SectionOutOfBounds { section, .. } => {
            format!("its {section} section runs past the end of the file")
        }
        other => format!("{other:?}"),
    };
    let mut notes = Vec::new();
    let found = match check_section("data", data, len) {
        Err(_) => Err("its data section runs past the end of the file".to_owned()),
        Ok(()) if bits.is_empty() && len > data.end() => {
            Err("it has no features, and the file goes on after its data".to_owned())
        }
        // perf's header until the end: the "feature table" is records.
        Ok(()) if data.size == 0 => {
            feature_sections(r, &bits, data.end(), len, endian, None).map_err(out_of_bounds)
        }
        // A sound data section with a bad feature: the others are kept.
        Ok(()) => {
            feature_sections(r, &bits, data.end(), len, endian, Some(&mut notes)).or_else(|e| {
                // The table itself is cut: the crate must not read it.
                notes.push((0, format!("{}: no header features read", out_of_bounds(e))));
                Ok(Vec::new())
            })
        }
    };
    let (features, stale) = match found {
        Ok(features) => (features, None),
        Err(why) => {
            data.size = len - data.offset;
            (Vec::new(), Some(why))
        }
    };
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
        notes,
        stale: stale.map(|why| StaleHeader {
            data_size: header_data_size,
            why,
        }),
    };
    check_attributes(r, &layout)?;
    Ok(layout)
}

/// The feature table (right after the data) and the sections it points to,
/// each checked against the file length.
fn feature_sections<R: Read + Seek + ?Sized>(
    r: &mut R,
    bits: &[u32],
    table_at: u64,
    len: u64,
    endian: Endian,
    mut ignored: Option<&mut Vec<(u64, String)>>,
) -> Result<Vec<(u32, Section)>, LayoutError> {
    let table = Section {
        offset: table_at,
        size: bits.len() as u64 * 16,
    };
    check_section("feature table", table, len)?;
    let table_bytes = read_at(r, table.offset, table.size)?;
    let mut features = Vec::with_capacity(bits.len());
    for (i, &bit) in bits.iter().enumerate() {
        let s = Section {
            offset: endian.u64(&table_bytes, i * 16).unwrap_or(0),
            size: endian.u64(&table_bytes, i * 16 + 8).unwrap_or(0),
        };
        let name = format!("feature {}", feature_name(bit));
        match (check_section(&name, s, len), ignored.as_deref_mut()) {
            (Ok(()), _) => features.push((bit, s)),
            (Err(_), Some(notes)) => notes.push((
                table.offset + 16 * i as u64,
                format!(
                    "its {name} section (offset {:#x}, size {:#x}) runs past the end of the file: ignored",
                    s.offset, s.size
                ),
            )),
            (Err(e), None) => return Err(e),
        }
    }
    Ok(features)
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

/// `attr.read_format` of each event as the file holds it (the crate drops
/// bits it does not know), in the order the crate lists the events:
/// EVENT_DESC, else the attribute section. Empty for the old event types
/// section and simpleperf's files. Runs after `check_file`.
pub(crate) fn raw_read_formats<R: Read + Seek + ?Sized>(
    r: &mut R,
    l: &FileLayout,
) -> Result<Vec<u64>, LayoutError> {
    const SIMPLEPERF_META_INFO: u32 = 129;
    const READ_FORMAT_AT: usize = 32;
    let mut out = Vec::new();
    if let Some(s) = l.feature(HEADER_EVENT_DESC) {
        let b = read_at(r, s.offset, s.size)?;
        let e = l.endian;
        let nr = e.u32(&b, 0).unwrap_or(0);
        let attr_size = e.u32(&b, 4).unwrap_or(0) as usize;
        let mut at = 8usize;
        for _ in 0..nr {
            let Some(rf) = e.u64(&b, at + READ_FORMAT_AT) else {
                break;
            };
            out.push(rf);
            at += attr_size;
            let nr_ids = e.u32(&b, at).unwrap_or(0) as usize;
            let name_len = e.u32(&b, at + 4).unwrap_or(0) as usize;
            at = at.saturating_add(8 + name_len).saturating_add(8 * nr_ids);
        }
    } else if l.event_types.size == 0 && l.feature(SIMPLEPERF_META_INFO).is_none() {
        let b = read_at(r, l.attrs.offset, l.attrs.size)?;
        let entry = l.attr_size as usize;
        out.extend(
            (0..b.len() / entry).filter_map(|i| l.endian.u64(&b, i * entry + READ_FORMAT_AT)),
        );
    }
    Ok(out)
}

/// Checks a HEADER_EVENT_DESC body: every count and length fits in what is
/// left. Returns the offset in `b` and what is wrong.
pub(crate) fn check_event_desc(b: &[u8], e: Endian) -> Result<(), (usize, String)> {
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

/// perf's name for a record type: `PERF_RECORD_SAMPLE`, ...
pub(crate) fn record_type_name(t: u32) -> String {
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
pub(crate) fn feature_name(bit: u32) -> String {
    let name = linux_perf_data::Feature(bit).to_string();
    if name.starts_with("Unknown") {
        format!("bit {bit}")
    } else {
        name
    }
}

/// A `perf_header_string`: u32 length, then that many bytes, NUL padded.
pub(crate) fn header_string(b: &[u8], at: usize, e: Endian) -> Option<(String, usize)> {
    let len = e.u32(b, at)? as usize;
    let start = at.checked_add(4)?;
    let bytes = b.get(start..start.checked_add(len)?)?;
    let text = bytes.split(|&c| c == 0).next().unwrap_or(&[]);
    Some((String::from_utf8_lossy(text).into_owned(), start + len))
}

/// A `perf_header_string_list`: u32 count, then that many strings.
pub(crate) fn header_string_list(b: &[u8], e: Endian) -> Option<Vec<String>> {
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
}
