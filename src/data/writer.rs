//! The perf.data (PERFILE2) writer: kernel records stream into the data
//! section; attrs, sample ids and feature sections are laid out at the end
//! and the 104-byte header is written last, pointing at all of them.
//!
//! File layout written by [`PerfDataWriter::new`]:
//!
//! ```text
//! header (104) | data ... | feature table (16 × n) | feature sections | ids | attrs
//! ```
//!
//! and by [`PerfDataWriter::with_events`] (perf's own layout):
//!
//! ```text
//! header (104) | ids | attrs | data ... | feature table | feature sections
//! ```
//!
//! Decisions:
//! - The data section streams through a 4 MiB `BufWriter`; nothing of it is
//!   held in memory, so files of any size cost the same memory.
//! - The feature table must sit right after the data (readers find it at
//!   `data.offset + data.size`), so the attrs go wherever is free: before
//!   the data when the events are known up front, after the features if not.
//! - Crash safety. Until `finish`, the header says `data.size = 0` and has no
//!   feature bits. perf 6.1 reads a data size of 0 as "not properly
//!   terminated": it warns and shows no records (measured). What makes a
//!   cut file useful is [`PerfDataWriter::checkpoint`]: it rewrites the
//!   header with the data size written so far, so a file cut after a
//!   checkpoint is a complete, warning-free perf.data holding every record up
//!   to that checkpoint (the records after it are ignored). A file from
//!   `with_events` cut before any checkpoint still has its attrs and ids in
//!   place and whole records from the data offset on, for a recovering
//!   reader that scans to the end of the file. A file from `new` cut before
//!   `finish` has no attrs at all: recorders should use `with_events`.
//! - Attr normalization. perf reads each attrs-section entry as `attr.size`
//!   bytes then a `perf_file_section`, and refuses (`unsupported ABI`) an
//!   attr bigger than its own struct (128 bytes in perf 6.1). So every attr
//!   is written with one common size: bytes past 128 are dropped when they
//!   are zero (they mean "feature not used"), shorter attrs are zero-padded,
//!   and the `size` field is patched to match.
//! - Byte order is the host's; the magic says which (perf swaps on read).
//!
//! Invariants: the data section holds only whole records (`write_records`
//! checks the headers chain exactly over its input); `data_size` is the
//! number of data bytes accepted so far.

use super::raw::{PERF_RECORD_FINISHED_ROUND, RawRecords};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};

use super::features::{Features, bit, header_string, len_u32};

/// `PERF_ATTR_SIZE_VER0`: the smallest `perf_event_attr` there is.
const ATTR_SIZE_VER0: usize = 64;
/// `PERF_ATTR_SIZE_VER7`: the attr size perf 6.1 (Debian 12) understands.
const ATTR_SIZE_COMPAT: usize = 128;
/// `sizeof(struct perf_file_header)`.
pub(crate) const HEADER_SIZE: u64 = 104;
/// `sizeof(struct perf_file_section)`.
const SECTION_SIZE: u64 = 16;
const BUF_CAPACITY: usize = 4 << 20;

#[cfg(target_endian = "little")]
const MAGIC: &[u8; 8] = b"PERFILE2";
#[cfg(target_endian = "big")]
const MAGIC: &[u8; 8] = b"2ELIFREP";

/// One event as recorded: its attr, the ids of its fds, its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventDesc {
    /// The raw `perf_event_attr` bytes exactly as passed to the kernel
    /// (`attr.size` long).
    pub attr: Vec<u8>,
    /// Sample ids (`PERF_EVENT_IOC_ID`) of every fd of this event.
    pub ids: Vec<u64>,
    /// `cpu-clock`, `sched:sched_switch`.
    pub name: String,
}

/// Where an attrs section was written: (offset, size) of the section.
#[derive(Clone, Copy, Debug)]
struct AttrsSection {
    offset: u64,
    size: u64,
    /// `attr_size` of the header: attr bytes + 16.
    entry_size: u64,
}

/// Streams kernel records into a perf.data file. See the module doc.
pub struct PerfDataWriter<W: Write + Seek> {
    out: BufWriter<W>,
    data_offset: u64,
    data_size: u64,
    /// Attrs written before the data by `with_events`, and the normalized
    /// events they hold (to tell whether `finish` may keep them).
    upfront: Option<(AttrsSection, Vec<EventDesc>)>,
}

impl<W: Write + Seek> PerfDataWriter<W> {
    /// Writes a placeholder header; the data section starts right after it.
    pub fn new(w: W) -> io::Result<Self> {
        let mut out = BufWriter::with_capacity(BUF_CAPACITY, w);
        out.seek(SeekFrom::Start(0))?;
        let mut this = PerfDataWriter {
            out,
            data_offset: HEADER_SIZE,
            data_size: 0,
            upfront: None,
        };
        this.write_header(None, &[])?;
        Ok(this)
    }

    /// Writes the header and the attrs (with their ids) first, as perf does,
    /// so that a file cut before `finish` can still be read (see the module
    /// doc). `finish` keeps these attrs when it is given the same events.
    pub fn with_events(w: W, events: &[EventDesc]) -> io::Result<Self> {
        let mut this = Self::new(w)?;
        let events = normalize_events(events)?;
        let section = write_attrs(&mut this.out, HEADER_SIZE, &events)?;
        this.data_offset = section.offset + section.size;
        this.upfront = Some((section, events));
        this.write_header(None, &[])?;
        Ok(this)
    }

    /// Appends one or more whole kernel records (`perf_event_header` + body)
    /// as copied from the ring. Fails, writing nothing, if the headers do not
    /// chain exactly over `raw` (a torn or partial record).
    pub fn write_records(&mut self, raw: &[u8]) -> io::Result<()> {
        append_records(&mut self.out, &mut self.data_size, raw)
    }

    /// Appends a `PERF_RECORD_FINISHED_ROUND`: every record written before
    /// it is older than every record written after the previous one, so
    /// readers can sort in bounded memory. Write one after each pass over
    /// all rings.
    pub(crate) fn write_finished_round(&mut self) -> io::Result<()> {
        self.write_records(&FINISHED_ROUND)
    }

    /// Bytes of records written to the data section so far.
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// Flushes and rewrites the header with the data written so far, so the
    /// file is readable as it stands should the process die now. Only
    /// useful after `with_events`; costs a flush and a 104-byte write.
    pub fn checkpoint(&mut self) -> io::Result<()> {
        let attrs = self.upfront.as_ref().map(|(section, _)| *section);
        self.write_header(attrs, &[])?;
        self.out.flush()
    }

    /// Writes the feature sections, the attrs and ids (unless written up
    /// front for the same events), then the real header; returns the writer.
    pub fn finish(mut self, events: &[EventDesc], features: &Features) -> io::Result<W> {
        let events = normalize_events(events)?;
        let data_end = self.data_offset + self.data_size;
        self.out.seek(SeekFrom::Start(data_end))?;

        let mut sections = features.sections();
        sections.retain(|(b, _)| *b != bit::EVENT_DESC);
        sections.push((bit::EVENT_DESC, encode_event_desc(&events)));
        sections.sort_by_key(|(b, _)| *b);
        if let Some(w) = sections.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(invalid(format!("feature {} given twice", w[0].0)));
        }

        let table_size = SECTION_SIZE * sections.len() as u64;
        let mut offset = data_end + table_size;
        for (_, bytes) in &sections {
            self.out.write_all(&offset.to_ne_bytes())?;
            self.out.write_all(&(bytes.len() as u64).to_ne_bytes())?;
            offset += bytes.len() as u64;
        }
        for (_, bytes) in &sections {
            self.out.write_all(bytes)?;
        }

        let attrs = match &self.upfront {
            Some((section, upfront)) if *upfront == events => *section,
            _ => write_attrs(&mut self.out, offset, &events)?,
        };
        let bits: Vec<u32> = sections.iter().map(|(b, _)| *b).collect();
        self.write_header(Some(attrs), &bits)?;
        self.out.flush()?;
        self.out
            .into_inner()
            .map_err(io::IntoInnerError::into_error)
    }

    /// Writes the header at offset 0 and returns to the end of the data.
    /// `attrs = None` with no upfront attrs writes an empty attrs section.
    fn write_header(
        &mut self,
        attrs: Option<AttrsSection>,
        feature_bits: &[u32],
    ) -> io::Result<()> {
        let attrs = attrs.or(self.upfront.as_ref().map(|(s, _)| *s));
        let (attr_entry, attr_off, attr_len) =
            attrs.map_or((0, 0, 0), |a| (a.entry_size, a.offset, a.size));
        let mut features = [0u64; 4];
        for &b in feature_bits {
            if let Some(word) = features.get_mut((b / 64) as usize) {
                *word |= 1 << (b % 64);
            }
        }
        // data.size is 0 until a checkpoint or finish publishes the size
        // reached (see the module doc).
        let mut h = Vec::with_capacity(HEADER_SIZE as usize);
        h.extend_from_slice(MAGIC);
        for v in [
            HEADER_SIZE,
            attr_entry,
            attr_off,
            attr_len,
            self.data_offset,
            self.data_size,
            0,
            0,
        ] {
            h.extend_from_slice(&v.to_ne_bytes());
        }
        for word in features {
            h.extend_from_slice(&word.to_ne_bytes());
        }
        self.out.seek(SeekFrom::Start(0))?;
        self.out.write_all(&h)?;
        self.out
            .seek(SeekFrom::Start(self.data_offset + self.data_size))?;
        Ok(())
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// A `PERF_RECORD_FINISHED_ROUND`: a bare header (type, misc 0, size 8).
pub(crate) const FINISHED_ROUND: [u8; 8] = {
    let kind = PERF_RECORD_FINISHED_ROUND.to_ne_bytes();
    let size = 8u16.to_ne_bytes();
    [kind[0], kind[1], kind[2], kind[3], 0, 0, size[0], size[1]]
};

/// Appends whole records `raw` to `out` (both writers' data), checked
/// first (nothing is written if they are torn); `size` counts the bytes.
pub(crate) fn append_records(out: &mut impl Write, size: &mut u64, raw: &[u8]) -> io::Result<()> {
    check_whole_records(raw, *size)?;
    out.write_all(raw)?;
    *size += raw.len() as u64;
    Ok(())
}

/// Checks that record headers chain exactly over `raw`. `base` is the data
/// offset of `raw[0]`, for the error message.
pub(crate) fn check_whole_records(raw: &[u8], base: u64) -> io::Result<()> {
    let mut records = RawRecords::new(raw);
    loop {
        match records.next_record() {
            Ok(Some(_)) => {}
            Ok(None) => return Ok(()),
            Err(bad) if bad.left < 8 => {
                return Err(invalid(format!(
                    "perf.data writer: partial record header at data offset {}",
                    base + bad.offset as u64
                )));
            }
            Err(bad) => {
                return Err(invalid(format!(
                    "perf.data writer: record type {} at data offset {} has size {} but {} bytes remain",
                    bad.record_type,
                    base + bad.offset as u64,
                    bad.size,
                    bad.left
                )));
            }
        }
    }
}

/// Gives every attr one common size (see the module doc) and checks them.
pub(crate) fn normalize_events(events: &[EventDesc]) -> io::Result<Vec<EventDesc>> {
    if events.is_empty() {
        return Err(invalid(
            "perf.data writer: no events (perf needs at least one attr)".into(),
        ));
    }
    let mut size = ATTR_SIZE_VER0;
    for e in events {
        if e.attr.len() < ATTR_SIZE_VER0 {
            return Err(invalid(format!(
                "perf.data writer: attr of event {:?} is {} bytes, less than the {ATTR_SIZE_VER0} of any perf_event_attr",
                e.name,
                e.attr.len()
            )));
        }
        let needed = match e.attr.get(ATTR_SIZE_COMPAT..) {
            Some(tail) if tail.iter().any(|&b| b != 0) => e.attr.len(),
            Some(_) => ATTR_SIZE_COMPAT,
            None => e.attr.len(),
        };
        size = size.max(needed);
    }
    let size_field =
        u32::try_from(size).map_err(|_| invalid(format!("perf.data writer: attr size {size}")))?;
    Ok(events
        .iter()
        .map(|e| {
            let mut attr = e.attr.clone();
            attr.resize(size, 0);
            attr[4..8].copy_from_slice(&size_field.to_ne_bytes());
            EventDesc {
                attr,
                ids: e.ids.clone(),
                name: e.name.clone(),
            }
        })
        .collect())
}

/// Writes every event's ids, then the attrs section (attr + section of its
/// ids), starting at `offset` where `out` must be positioned.
fn write_attrs<W: Write>(
    out: &mut W,
    offset: u64,
    events: &[EventDesc],
) -> io::Result<AttrsSection> {
    let mut id_sections = Vec::with_capacity(events.len());
    let mut at = offset;
    for e in events {
        for id in &e.ids {
            out.write_all(&id.to_ne_bytes())?;
        }
        let len = 8 * e.ids.len() as u64;
        id_sections.push((at, len));
        at += len;
    }
    let attr_len = events.first().map_or(0, |e| e.attr.len()) as u64;
    let entry_size = attr_len + SECTION_SIZE;
    let section = AttrsSection {
        offset: at,
        size: entry_size * events.len() as u64,
        entry_size,
    };
    for (e, (ids_at, ids_len)) in events.iter().zip(id_sections) {
        out.write_all(&e.attr)?;
        out.write_all(&ids_at.to_ne_bytes())?;
        out.write_all(&ids_len.to_ne_bytes())?;
    }
    Ok(section)
}

/// HEADER_EVENT_DESC: u32 nr, u32 attr size, then per event the attr, u32
/// number of ids, the name as a `perf_header_string`, the ids.
pub(crate) fn encode_event_desc(events: &[EventDesc]) -> Vec<u8> {
    let attr_size = events.first().map_or(0, |e| e.attr.len());
    let mut out = Vec::new();
    out.extend_from_slice(&len_u32(events.len()).to_ne_bytes());
    out.extend_from_slice(&len_u32(attr_size).to_ne_bytes());
    for e in events {
        out.extend_from_slice(&e.attr);
        out.extend_from_slice(&len_u32(e.ids.len()).to_ne_bytes());
        out.extend_from_slice(&header_string(&e.name));
        for id in &e.ids {
            out.extend_from_slice(&id.to_ne_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    use crate::sys::perf_event::PERF_TYPE_SOFTWARE;
    const SAMPLE_IP_TID_TIME: u64 = 1 | 2 | 4;
    const SAMPLE_ID_ALL: u64 = 1 << 18;

    /// A cpu-clock attr of `len` bytes sampling IP, TID and TIME.
    fn attr(len: usize) -> Vec<u8> {
        let mut a = vec![0u8; len];
        a[0..4].copy_from_slice(&PERF_TYPE_SOFTWARE.to_ne_bytes());
        a[4..8].copy_from_slice(&(len as u32).to_ne_bytes());
        a[16..24].copy_from_slice(&4000u64.to_ne_bytes());
        a[24..32].copy_from_slice(&SAMPLE_IP_TID_TIME.to_ne_bytes());
        a[40..48].copy_from_slice(&SAMPLE_ID_ALL.to_ne_bytes());
        a
    }

    fn record(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut r = kind.to_ne_bytes().to_vec();
        r.extend_from_slice(&misc.to_ne_bytes());
        r.extend_from_slice(&((8 + body.len()) as u16).to_ne_bytes());
        r.extend_from_slice(body);
        r
    }

    fn sample(ip: u64, pid: u32, time: u64) -> Vec<u8> {
        let mut body = ip.to_ne_bytes().to_vec();
        body.extend_from_slice(&pid.to_ne_bytes());
        body.extend_from_slice(&pid.to_ne_bytes());
        body.extend_from_slice(&time.to_ne_bytes());
        record(9, 2, &body)
    }

    fn comm(pid: u32, name: &[u8; 8], time: u64) -> Vec<u8> {
        let mut body = pid.to_ne_bytes().to_vec();
        body.extend_from_slice(&pid.to_ne_bytes());
        body.extend_from_slice(name);
        // sample_id_all trailer: TID, TIME.
        body.extend_from_slice(&pid.to_ne_bytes());
        body.extend_from_slice(&pid.to_ne_bytes());
        body.extend_from_slice(&time.to_ne_bytes());
        record(3, 0, &body)
    }

    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
    }

    fn tiny_features() -> Features {
        Features {
            hostname: "host".into(),
            osrelease: "6.18.0".into(),
            version: "scry 0.1.0".into(),
            arch: "x86_64".into(),
            nr_cpus_online: 2,
            nr_cpus_avail: 4,
            cpudesc: "Test CPU".into(),
            total_mem_kb: 1024,
            cmdline: vec!["scry".into(), "record".into()],
            sample_time: Some((100, 200)),
            ..Features::default()
        }
    }

    fn events() -> Vec<EventDesc> {
        vec![EventDesc {
            attr: attr(128),
            ids: vec![7, 8],
            name: "cpu-clock".into(),
        }]
    }

    fn records() -> Vec<u8> {
        let mut data = comm(42, b"worker\0\0", 100);
        data.extend(sample(0x1234, 42, 150));
        data.extend(sample(0x5678, 42, 200));
        data
    }

    #[test]
    fn header_and_sections_layout() {
        let data = records();
        let mut w = PerfDataWriter::new(Cursor::new(Vec::new())).unwrap();
        w.write_records(&data[..72]).unwrap();
        w.write_records(&data[72..]).unwrap();
        assert_eq!(w.data_size(), data.len() as u64);
        let file = w.finish(&events(), &tiny_features()).unwrap().into_inner();

        assert_eq!(&file[..8], b"PERFILE2");
        assert_eq!(u64_at(&file, 8), 104, "header size");
        assert_eq!(
            u64_at(&file, 16),
            128 + 16,
            "attr_size counts the ids section"
        );
        assert_eq!(
            (u64_at(&file, 40), u64_at(&file, 48)),
            (104, data.len() as u64),
            "data section"
        );
        assert_eq!(&file[104..104 + data.len()], &data[..]);
        assert_eq!(
            (u64_at(&file, 56), u64_at(&file, 64)),
            (0, 0),
            "event_types unused"
        );
        let expected_bits = [3, 4, 5, 6, 7, 8, 10, 11, 12, 21]
            .iter()
            .fold(0u64, |acc, b| acc | 1 << b);
        assert_eq!(u64_at(&file, 72), expected_bits);
        assert_eq!(u64_at(&file, 80) | u64_at(&file, 88) | u64_at(&file, 96), 0);

        // The feature table sits right after the data, sections follow it.
        let table = 104 + data.len();
        let host_off = u64_at(&file, table) as usize;
        assert_eq!(host_off, table + 10 * 16);
        assert_eq!(u64_at(&file, table + 8), 4 + 64);
        assert_eq!(
            &file[host_off..host_off + 8],
            &[64, 0, 0, 0, b'h', b'o', b's', b't']
        );

        // One attrs entry: the attr, then the section of its two ids.
        let (attrs_off, attrs_len) = (u64_at(&file, 24) as usize, u64_at(&file, 32) as usize);
        assert_eq!(attrs_len, 144);
        assert_eq!(&file[attrs_off..attrs_off + 128], &attr(128)[..]);
        let (ids_off, ids_len) = (
            u64_at(&file, attrs_off + 128) as usize,
            u64_at(&file, attrs_off + 136),
        );
        assert_eq!(ids_len, 16);
        assert_eq!((u64_at(&file, ids_off), u64_at(&file, ids_off + 8)), (7, 8));
        assert_eq!(attrs_off + attrs_len, file.len(), "attrs are last");
    }

    /// linux-perf-data (samply's reader) reads our file back: same records,
    /// same event name and ids, same feature values.
    fn read_back(file: Vec<u8>) -> Vec<(u32, Vec<u8>)> {
        use linux_perf_data::{PerfFileReader, PerfFileRecord};
        let PerfFileReader {
            mut perf_file,
            mut record_iter,
        } = PerfFileReader::parse_file(Cursor::new(file)).unwrap();
        let attrs = perf_file.event_attributes();
        assert_eq!(attrs.len(), 1);
        assert_eq!(attrs[0].name(), Some("cpu-clock"));
        assert_eq!(attrs[0].ids(), &[7, 8]);
        assert_eq!(perf_file.hostname().unwrap(), Some("host"));
        assert_eq!(perf_file.os_release().unwrap(), Some("6.18.0"));
        assert_eq!(perf_file.perf_version().unwrap(), Some("scry 0.1.0"));
        assert_eq!(perf_file.arch().unwrap(), Some("x86_64"));
        assert_eq!(perf_file.cpu_desc().unwrap(), Some("Test CPU"));
        assert_eq!(perf_file.total_mem().unwrap(), Some(1024));
        assert_eq!(perf_file.cmdline().unwrap(), Some(vec!["scry", "record"]));
        let cpus = perf_file.nr_cpus().unwrap().unwrap();
        assert_eq!((cpus.nr_cpus_online, cpus.nr_cpus_available), (2, 4));
        let time = perf_file.sample_time_range().unwrap().unwrap();
        assert_eq!((time.first_sample_time, time.last_sample_time), (100, 200));
        let mut out = Vec::new();
        while let Some(rec) = record_iter.next_record(&mut perf_file).unwrap() {
            match rec {
                PerfFileRecord::EventRecord { record, .. } => {
                    out.push((record.record_type.0, record.data.as_slice().to_vec()))
                }
                PerfFileRecord::UserRecord(r) => {
                    out.push((r.record_type.record_type().0, Vec::new()))
                }
            }
        }
        out
    }

    #[test]
    fn linux_perf_data_reads_it_back_both_layouts() {
        let data = records();
        // COMM is 40 bytes, each SAMPLE 32.
        let expected = vec![
            (3, data[8..40].to_vec()),
            (9, data[48..72].to_vec()),
            (9, data[80..].to_vec()),
        ];

        let mut w = PerfDataWriter::new(Cursor::new(Vec::new())).unwrap();
        w.write_records(&data).unwrap();
        assert_eq!(
            read_back(w.finish(&events(), &tiny_features()).unwrap().into_inner()),
            expected
        );

        let mut w = PerfDataWriter::with_events(Cursor::new(Vec::new()), &events()).unwrap();
        w.write_records(&data).unwrap();
        let file = w.finish(&events(), &tiny_features()).unwrap().into_inner();
        let attrs_off = u64_at(&file, 24);
        assert!(attrs_off < u64_at(&file, 40), "attrs before data");
        assert_eq!(read_back(file), expected);
    }

    #[test]
    fn upfront_attrs_are_replaced_when_events_change() {
        let mut w = PerfDataWriter::with_events(Cursor::new(Vec::new()), &events()).unwrap();
        w.write_records(&records()).unwrap();
        let mut changed = events();
        changed[0].ids.push(9);
        let file = w.finish(&changed, &tiny_features()).unwrap().into_inner();
        let attrs_off = u64_at(&file, 24) as usize;
        assert!(
            attrs_off as u64 > u64_at(&file, 40),
            "new attrs after the data"
        );
        let ids_len = u64_at(&file, attrs_off + 136);
        assert_eq!(ids_len, 24);
    }

    #[test]
    fn a_file_cut_after_checkpoint_is_whole() {
        let data = records();
        let mut w = PerfDataWriter::with_events(Cursor::new(Vec::new()), &events()).unwrap();
        w.write_records(&data[..40]).unwrap();
        w.checkpoint().unwrap();
        w.write_records(&data[40..]).unwrap();
        // Simulate a crash: take the bytes as they are on "disk" now.
        w.out.flush().unwrap();
        let file = w.out.get_ref().get_ref().clone();
        assert_eq!(u64_at(&file, 48), 40, "checkpoint published the data size");
        assert_eq!(u64_at(&file, 72), 0, "no features yet");
        use linux_perf_data::PerfFileReader;
        let PerfFileReader {
            mut perf_file,
            mut record_iter,
        } = PerfFileReader::parse_file(Cursor::new(file)).unwrap();
        let mut n = 0;
        while record_iter.next_record(&mut perf_file).unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 1, "the COMM written before the checkpoint");
    }

    #[test]
    fn partial_records_are_refused_and_nothing_is_written() {
        let data = records();
        let mut w = PerfDataWriter::new(Cursor::new(Vec::new())).unwrap();
        for cut in [1, 7, 39, 41, 47, data.len() - 1] {
            let err = w.write_records(&data[..cut]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains("data offset"), "{err}");
        }
        let mut zero = data.clone();
        zero[6..8].copy_from_slice(&0u16.to_ne_bytes());
        assert!(
            w.write_records(&zero).is_err(),
            "size 0 would loop forever in readers"
        );
        assert_eq!(w.data_size(), 0);
        w.write_finished_round().unwrap();
        assert_eq!(w.data_size(), 8);
    }

    #[test]
    fn attrs_get_one_size_perf_61_accepts() {
        let mut big = attr(144);
        let small = attr(112);
        let e = |a: &Vec<u8>| EventDesc {
            attr: a.clone(),
            ids: vec![1],
            name: "x".into(),
        };
        let norm = normalize_events(&[e(&big), e(&small)]).unwrap();
        for n in &norm {
            assert_eq!(n.attr.len(), 128);
            assert_eq!(u32::from_ne_bytes(n.attr[4..8].try_into().unwrap()), 128);
        }
        assert_eq!(&norm[0].attr[8..], &big[8..128]);
        // A used field past 128 bytes (config3) must be kept, whatever perf 6.1 says.
        big[136] = 1;
        let norm = normalize_events(&[e(&big), e(&small)]).unwrap();
        assert!(norm.iter().all(|n| n.attr.len() == 144));
        assert!(normalize_events(&[]).is_err());
        assert!(normalize_events(&[e(&vec![0; 32])]).is_err());
    }

    #[test]
    fn event_desc_layout() {
        let b = encode_event_desc(&normalize_events(&events()).unwrap());
        assert_eq!(&b[0..8], &[1, 0, 0, 0, 128, 0, 0, 0]);
        assert_eq!(&b[136..140], &2u32.to_ne_bytes());
        assert_eq!(&b[140..144], &64u32.to_ne_bytes());
        assert_eq!(&b[144..153], b"cpu-clock");
        assert_eq!(u64_at(&b, 208), 7);
        assert_eq!(b.len(), 224);
    }
}
