//! The perf.data reader: files written by `perf record` (plain, `-z` zstd
//! compressed, and the pipe format of `-o -`) and by `scry record`, as the
//! event attributes (named from EVENT_DESC), the header features, and the
//! records in time order, each parsed into an `EventRecord` with the index of
//! its attribute (`next_record()?`).
//!
//! It is a thin layer over `linux-perf-data` (framing, compression, feature
//! sections, sorting by time in rounds) and `linux-perf-event-reader` (record
//! parsing). The layer exists for one rule: bad input is an error that says
//! what and where, never a panic or an abort.
//!
//! - Before the crate sees a file, [`layout`] checks the header, every section
//!   against the file length, the attribute descriptions and the framing of
//!   every record (one sequential pass over the data section). The crate
//!   allocates from lengths it reads, and a failed allocation aborts: only a
//!   check beforehand prevents that. The pass also gives framing errors their
//!   file offset, which the crate's errors lack.
//! - What cannot be checked beforehand — sample bodies parsed with the
//!   attribute's `sample_type`, compressed data — may still make the crate
//!   panic (the fuzzer found `callchain_length * 8` overflowing in
//!   `SampleRecord::parse` in builds with overflow checks, and an
//!   `assert!(build_id_len <= 20)` on MMAP2, now checked in the walk). As the
//!   last resort each call into the crate runs under `catch_unwind`, with a
//!   panic hook that stays silent while such a call runs (so nothing is
//!   printed), and the panic becomes [`ReadError::ParserPanic`] with the record
//!   type and offset. The reader stops after any error.
//! - A record that fails to parse is located afterwards by walking the file
//!   again in file order and matching its bytes, so the error names its offset.
//!
//! Pipe input (`-i -`) is read into memory first so that it gets the same
//! checks. Zstd-compressed data is checked only as far as the crate checks it.

mod layout;
mod rounds;

use std::cell::Cell;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

pub use layout::{
    Endian, FileLayout, RecordFrame, Section, feature_name, record_type_name, walk_records,
};

pub use linux_perf_data::linux_perf_event_reader::CommonData;
use linux_perf_data::linux_perf_event_reader::{
    Endianness, HardwareEventId, PerfEventAttr, PerfEventType, RawEventRecord, RecordType,
    SoftwareCounterType,
};
/// The parsed record types `next_record` returns.
pub use linux_perf_data::linux_perf_event_reader::{EventRecord, SampleRecord};
use linux_perf_data::{Feature, PerfFile, PerfFileReader, PerfFileRecord, PerfRecordIter};
pub use linux_perf_data::{RawUserRecord, UserRecordType};

use layout::LayoutError;

/// What went wrong reading a perf.data file, and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    #[error("{file}: empty file")]
    Empty { file: String },
    #[error("{file}: not a perf.data file (bad magic 0x{magic:016x})")]
    BadMagic { file: String, magic: u64 },
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
    fn from_layout(file: &str, e: LayoutError) -> Self {
        let file = file.to_owned();
        match e {
            LayoutError::Empty => ReadError::Empty { file },
            LayoutError::BadMagic(magic) => ReadError::BadMagic { file, magic },
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

/// One event of the file: its attribute, its name and its sample ids.
#[derive(Clone, Debug)]
pub struct EventDesc {
    /// From EVENT_DESC (`cpu-clock:ppp`, `sched:sched_switch`), else made up
    /// from the attribute's type and config (`cpu-clock`, `tracepoint 316`).
    pub name: String,
    pub attr: PerfEventAttr,
    pub ids: Vec<u64>,
}

/// A HEADER_BUILD_ID entry: `(path, build-id bytes)`.
pub type RawBuildId = (Vec<u8>, Vec<u8>);

/// The header features scry shows (`scry script --header`); each is `None`
/// when the file lacks it.
#[derive(Clone, Debug, Default)]
pub struct FileInfo {
    pub hostname: Option<String>,
    pub os_release: Option<String>,
    pub perf_version: Option<String>,
    pub arch: Option<String>,
    /// `(online, available)`.
    pub nr_cpus: Option<(u32, u32)>,
    pub cpu_desc: Option<String>,
    pub cpu_id: Option<String>,
    pub total_mem_kb: Option<u64>,
    pub cmdline: Option<Vec<String>>,
    /// `(first, last)` sample time, ns.
    pub sample_time: Option<(u64, u64)>,
    /// `(path, build-id in hex)`, sorted by path.
    pub build_ids: Vec<(String, String)>,
    /// The names of the features present (`HOSTNAME`, `BUILD_ID`, ...).
    pub features: Vec<String>,
}

/// A record in time order.
// Samples are the big variant and the common one: boxing them would cost an
// allocation per record to save a move of 400 bytes.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Record<'a> {
    /// A kernel record (sample, mmap, comm, ...) of event `attr_index`.
    Event {
        attr_index: usize,
        record: EventRecord<'a>,
    },
    /// A record perf adds (ID_INDEX, THREAD_MAP, TIME_CONV, ...), unparsed.
    User(RawUserRecord<'a>),
}

trait ReadSeek: Read + Seek + Send {}
impl<T: Read + Seek + Send> ReadSeek for T {}
type Input = Box<dyn ReadSeek>;

/// Where the bytes come from, kept to walk the file again to locate a
/// record that failed to parse.
enum Source {
    Path(PathBuf),
    Bytes(Arc<[u8]>),
}

impl Source {
    fn open(&self) -> io::Result<Input> {
        Ok(match self {
            Source::Path(p) => Box::new(File::open(p)?),
            Source::Bytes(b) => Box::new(Cursor::new(Arc::clone(b))),
        })
    }
}

/// An open perf.data file; see the module doc.
pub struct PerfReader {
    file: String,
    source: Source,
    layout: FileLayout,
    perf_file: PerfFile,
    records: PerfRecordIter<Input>,
    /// The direct path for plain files (`rounds`); `records` otherwise.
    rounds: Option<rounds::RoundsThread>,
    events: Vec<EventDesc>,
    /// Records returned so far.
    count: u64,
    /// Set after an error: the crate's state is then unknown.
    failed: bool,
}

impl PerfReader {
    /// Opens `path`; errors name it as given.
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        let file = path.display().to_string();
        let io_err = |source| ReadError::Io {
            file: file.clone(),
            source,
        };
        let handle = File::open(path).map_err(io_err)?;
        let len = handle.metadata().map_err(io_err)?.len();
        Self::from_input(
            file.clone(),
            Source::Path(path.into()),
            Box::new(handle),
            len,
        )
    }

    /// Reads a file held in memory; `name` is how errors call it.
    pub fn from_bytes(name: &str, bytes: impl Into<Arc<[u8]>>) -> Result<Self, ReadError> {
        let bytes: Arc<[u8]> = bytes.into();
        let len = bytes.len() as u64;
        let input = Box::new(Cursor::new(Arc::clone(&bytes)));
        Self::from_input(name.to_owned(), Source::Bytes(bytes), input, len)
    }

    /// Reads a stream (stdin, a pipe) to its end, then as [`Self::from_bytes`].
    pub fn from_stream(name: &str, mut stream: impl Read) -> Result<Self, ReadError> {
        let mut bytes = Vec::new();
        stream
            .read_to_end(&mut bytes)
            .map_err(|source| ReadError::Io {
                file: name.to_owned(),
                source,
            })?;
        Self::from_bytes(name, bytes)
    }

    fn from_input(
        file: String,
        source: Source,
        mut input: Input,
        len: u64,
    ) -> Result<Self, ReadError> {
        let layout =
            layout::check_file(&mut input, len).map_err(|e| ReadError::from_layout(&file, e))?;
        // Plain files are read by `rounds`, which checks framing as it
        // reads; the crate's path needs the whole walk first.
        const HEADER_COMPRESSED: u32 = 27;
        const SIMPLEPERF_META_INFO: u32 = 129;
        let direct = !layout.pipe
            && layout.feature(HEADER_COMPRESSED).is_none()
            && layout.feature(SIMPLEPERF_META_INFO).is_none();
        if !direct {
            walk_records(&mut input, layout.data, layout.endian, |_, _| Ok(()))
                .map_err(|e| ReadError::from_layout(&file, e))?;
        }
        input
            .seek(io::SeekFrom::Start(0))
            .map_err(|source| ReadError::Io {
                file: file.clone(),
                source,
            })?;
        let input: Input = Box::new(BufReader::with_capacity(1 << 16, input));
        let pipe = layout.pipe;
        let parsed = guard(move || {
            if pipe {
                PerfFileReader::parse_pipe(input)
            } else {
                PerfFileReader::parse_file(input)
            }
        });
        let context = "reading the header and attributes";
        let PerfFileReader {
            perf_file,
            record_iter,
        } = match parsed {
            Ok(Ok(reader)) => reader,
            Ok(Err(e)) => {
                return Err(ReadError::Parse {
                    file,
                    context: context.into(),
                    reason: e.to_string(),
                });
            }
            Err(message) => {
                return Err(ReadError::ParserPanic {
                    file,
                    context: context.into(),
                    message,
                });
            }
        };
        let events = perf_file
            .event_attributes()
            .iter()
            .map(|a| EventDesc {
                name: a
                    .name()
                    .map(str::to_owned)
                    .unwrap_or_else(|| fallback_name(&a.attr)),
                attr: a.attr,
                ids: a.event_ids.clone(),
            })
            .collect::<Vec<_>>();
        let rounds = if direct {
            let mut input = source.open().map_err(|source| ReadError::Io {
                file: file.clone(),
                source,
            })?;
            input
                .seek(io::SeekFrom::Start(layout.data.offset))
                .map_err(|source| ReadError::Io {
                    file: file.clone(),
                    source,
                })?;
            match rounds::Rounds::new(input, layout.data, layout.endian, &events) {
                Some(r) => {
                    Some(
                        rounds::RoundsThread::spawn(r).map_err(|source| ReadError::Io {
                            file: file.clone(),
                            source,
                        })?,
                    )
                }
                // The crate's path after all: it needs the framing checked
                // first (see the module doc), which was skipped above.
                None => {
                    let mut again = source.open().map_err(|source| ReadError::Io {
                        file: file.clone(),
                        source,
                    })?;
                    walk_records(&mut again, layout.data, layout.endian, |_, _| Ok(()))
                        .map_err(|e| ReadError::from_layout(&file, e))?;
                    None
                }
            }
        } else {
            None
        };
        Ok(PerfReader {
            file,
            source,
            layout,
            perf_file,
            records: record_iter,
            rounds,
            events,
            count: 0,
            failed: false,
        })
    }

    /// The file's name as errors show it.
    pub fn file_name(&self) -> &str {
        &self.file
    }

    /// The header and section layout (offsets for `--header` and `-D`).
    pub fn layout(&self) -> &FileLayout {
        &self.layout
    }

    /// The events, indexed by a record's `attr_index`. Never empty.
    pub fn events(&self) -> &[EventDesc] {
        &self.events
    }

    /// True if the records are zstd-compressed (`perf record -z`).
    pub fn is_compressed(&self) -> bool {
        self.perf_file.features().has_feature(Feature::COMPRESSED)
    }

    /// The header features. Malformed strings are skipped; a malformed
    /// build-id section is an error.
    pub fn info(&self) -> Result<FileInfo, ReadError> {
        let e = self.layout.endian;
        let data = |f: Feature| self.perf_file.feature_section_data(f);
        let string = |f: Feature| {
            data(f)
                .and_then(|b| layout::header_string(b, 0, e))
                .map(|s| s.0)
        };
        let build_ids = match guard(|| self.perf_file.build_ids()) {
            Ok(Ok(map)) => map,
            Ok(Err(err)) => {
                return Err(ReadError::Parse {
                    file: self.file.clone(),
                    context: "BUILD_ID feature".into(),
                    reason: err.to_string(),
                });
            }
            Err(message) => {
                return Err(ReadError::ParserPanic {
                    file: self.file.clone(),
                    context: "BUILD_ID feature".into(),
                    message,
                });
            }
        };
        let mut build_ids: Vec<(String, String)> = build_ids
            .into_values()
            .map(|info| {
                let hex = info.build_id.iter().map(|b| format!("{b:02x}")).collect();
                (String::from_utf8_lossy(&info.path).into_owned(), hex)
            })
            .collect();
        build_ids.sort();
        Ok(FileInfo {
            hostname: string(Feature::HOSTNAME),
            os_release: string(Feature::OSRELEASE),
            perf_version: string(Feature::VERSION),
            arch: string(Feature::ARCH),
            nr_cpus: data(Feature::NRCPUS).and_then(|b| Some((e.u32(b, 4)?, e.u32(b, 0)?))),
            cpu_desc: string(Feature::CPUDESC),
            cpu_id: string(Feature::CPUID),
            total_mem_kb: data(Feature::TOTAL_MEM).and_then(|b| e.u64(b, 0)),
            cmdline: data(Feature::CMDLINE).and_then(|b| layout::header_string_list(b, e)),
            sample_time: data(Feature::SAMPLE_TIME)
                .and_then(|b| Some((e.u64(b, 0)?, e.u64(b, 8)?))),
            build_ids,
            features: self
                .perf_file
                .features()
                .iter()
                .map(|f| f.to_string())
                .collect(),
        })
    }

    /// Walks the records again in file order (what `perf script -D` shows),
    /// calling `visit` with each record's frame, its 8 header bytes and body.
    pub fn walk_file_order(
        &self,
        mut visit: impl FnMut(RecordFrame, &[u8], &[u8]) -> io::Result<()>,
    ) -> Result<(), ReadError> {
        let io_err = |source| ReadError::Io {
            file: self.file.clone(),
            source,
        };
        let mut input = self.source.open().map_err(io_err)?;
        let e = self.layout.endian;
        walk_records(&mut input, self.layout.data, e, |frame, body| {
            let mut head = [0u8; 8];
            let (t, m, z) = match e {
                Endian::Little => (
                    frame.record_type.to_le_bytes(),
                    frame.misc.to_le_bytes(),
                    frame.size.to_le_bytes(),
                ),
                Endian::Big => (
                    frame.record_type.to_be_bytes(),
                    frame.misc.to_be_bytes(),
                    frame.size.to_be_bytes(),
                ),
            };
            head[..4].copy_from_slice(&t);
            head[4..6].copy_from_slice(&m);
            head[6..].copy_from_slice(&z);
            visit(frame, &head, body)
        })
        .map_err(|e| match e {
            LayoutError::Io(source) => io_err(source),
            other => ReadError::from_layout(&self.file, other),
        })
    }

    /// HEADER_BUILD_ID as `(path, build-id bytes)`, what the symbol stage
    /// takes.
    pub fn build_ids_raw(&self) -> Result<Vec<RawBuildId>, ReadError> {
        match guard(|| self.perf_file.build_ids()) {
            Ok(Ok(map)) => Ok(map
                .into_values()
                .map(|info| (info.path, info.build_id))
                .collect()),
            Ok(Err(err)) => Err(ReadError::Parse {
                file: self.file.clone(),
                context: "BUILD_ID feature".into(),
                reason: err.to_string(),
            }),
            Err(message) => Err(ReadError::ParserPanic {
                file: self.file.clone(),
                context: "BUILD_ID feature".into(),
                message,
            }),
        }
    }

    /// The TRACING_DATA feature (tracepoint formats), if the file has it.
    pub fn tracing_data(&self) -> Option<&[u8]> {
        self.perf_file.feature_section_data(Feature::TRACING_DATA)
    }

    /// The next record in time order, parsed; `None` at the end (and after
    /// an error was returned).
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, ReadError> {
        Ok(self.next_record_with_id()?.map(|(record, _)| record))
    }

    /// As `next_record`, with the record's sample_id fields (time, tid,
    /// cpu) when it is a kernel record other than a sample (samples carry
    /// their own; they and user records get defaults): context-switch and
    /// lost records need them.
    pub fn next_record_with_id(&mut self) -> Result<Option<(Record<'_>, CommonData)>, ReadError> {
        if self.failed {
            return Ok(None);
        }
        let number = self.count;
        self.count += 1;
        if self.rounds.is_some() {
            return self.next_direct();
        }
        let PerfReader {
            file,
            source,
            layout,
            perf_file,
            records,
            failed,
            ..
        } = self;
        let next = match guard(|| records.next_record(perf_file)) {
            Ok(Ok(next)) => next,
            Ok(Err(e)) => {
                *failed = true;
                return Err(ReadError::Parse {
                    file: file.clone(),
                    context: format!("reading record #{number} in time order"),
                    reason: e.to_string(),
                });
            }
            Err(message) => {
                *failed = true;
                return Err(ReadError::ParserPanic {
                    file: file.clone(),
                    context: format!("reading record #{number} in time order"),
                    message,
                });
            }
        };
        let (attr_index, raw) = match next {
            None => return Ok(None),
            Some(PerfFileRecord::UserRecord(user)) => {
                return Ok(Some((Record::User(user), CommonData::default())));
            }
            Some(PerfFileRecord::EventRecord { attr_index, record }) => (attr_index, record),
        };
        let id = if raw.record_type == RecordType::SAMPLE {
            CommonData::default()
        } else {
            raw.common_data().unwrap_or_default()
        };
        let reason = match guard(|| raw.parse()) {
            Ok(Ok(record)) => return Ok(Some((Record::Event { attr_index, record }, id))),
            Ok(Err(e)) => e.to_string(),
            Err(message) => format!("the parser panicked: {message}"),
        };
        *failed = true;
        let body = raw.data.as_slice().into_owned();
        let record_type = raw.record_type.0;
        let location = match locate(source, layout, record_type, &body) {
            Some(offset) => format!("record at offset 0x{offset:x}"),
            None => format!("record #{number} in time order (inside compressed data)"),
        };
        Err(ReadError::BadRecord {
            file: file.clone(),
            record_type: record_type_name(record_type),
            location,
            reason,
        })
    }

    /// `next_record` on the direct path (`rounds`): the same records, and
    /// errors that name the record's file offset.
    fn next_direct(&mut self) -> Result<Option<(Record<'_>, CommonData)>, ReadError> {
        let PerfReader {
            file,
            layout,
            rounds,
            failed,
            ..
        } = self;
        let Some(rounds) = rounds else {
            return Ok(None);
        };
        let endian = match layout.endian {
            Endian::Little => Endianness::LittleEndian,
            Endian::Big => Endianness::BigEndian,
        };
        let raw = match rounds.next_record() {
            Ok(Some(raw)) => raw,
            Ok(None) => return Ok(None),
            Err(e) => {
                *failed = true;
                return Err(ReadError::from_layout(file, e));
            }
        };
        let record_type = RecordType(raw.record_type);
        let (Some(attr_index), Some(parse_info)) = (raw.attr_index, raw.parse_info) else {
            // Not a kernel record type: perf's own (user) records.
            return Ok(UserRecordType::try_from(record_type).map(|record_type| {
                let user = Record::User(RawUserRecord {
                    record_type,
                    endian,
                    misc: raw.misc,
                    data: raw.body.into(),
                });
                (user, CommonData::default())
            }));
        };
        let event = RawEventRecord::new(record_type, raw.misc, raw.body.into(), parse_info);
        let id = if record_type == RecordType::SAMPLE {
            CommonData::default()
        } else {
            event.common_data().unwrap_or_default()
        };
        let reason = match guard(|| event.parse()) {
            Ok(Ok(record)) => return Ok(Some((Record::Event { attr_index, record }, id))),
            Ok(Err(e)) => e.to_string(),
            Err(message) => format!("the parser panicked: {message}"),
        };
        *failed = true;
        Err(ReadError::BadRecord {
            file: file.clone(),
            record_type: record_type_name(raw.record_type),
            location: format!("record at offset 0x{:x}", raw.offset),
            reason,
        })
    }
}

/// The command name of each thread as COMM and FORK records set it: what
/// perf shows as a sample's `comm`. Feed it every record in time order.
#[derive(Debug, Default)]
pub struct Comms {
    by_tid: HashMap<i32, Arc<str>>,
}

impl Comms {
    pub fn handle_record(&mut self, record: &EventRecord<'_>) {
        match record {
            EventRecord::Comm(c) => {
                let name = String::from_utf8_lossy(&c.name.as_slice()).into_owned();
                self.by_tid.insert(c.tid, name.into());
            }
            EventRecord::Fork(f) => {
                if let Some(parent) = self.by_tid.get(&f.ptid).cloned() {
                    self.by_tid.insert(f.tid, parent);
                }
            }
            _ => {}
        }
    }

    /// The thread's name; as perf: `swapper` for the idle thread (tid 0),
    /// `:tid` for a thread no record named.
    pub fn get(&mut self, tid: i32) -> Arc<str> {
        self.by_tid
            .entry(tid)
            .or_insert_with(|| match tid {
                0 => "swapper".into(),
                _ => format!(":{tid}").into(),
            })
            .clone()
    }
}

/// The file offset of the first record of `record_type` whose body is `body`.
fn locate(source: &Source, layout: &FileLayout, record_type: u32, body: &[u8]) -> Option<u64> {
    let mut input = source.open().ok()?;
    let mut found = None;
    let _ = walk_records(&mut input, layout.data, layout.endian, |frame, b| {
        if frame.record_type == record_type && b == body {
            found = Some(frame.offset);
            return Err(io::Error::other("found"));
        }
        Ok(())
    });
    found
}

thread_local! {
    /// True while this thread runs a call into the crate under `guard`.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` (a call into the perf.data crates), turning a panic into its
/// message. While `f` runs, the panic hook prints nothing on this thread;
/// other threads and other panics keep the previous hook.
fn guard<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was_quiet = QUIET.with(|q| q.replace(true));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was_quiet));
    result.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".to_owned())
    })
}

/// A name for an event the file does not name.
fn fallback_name(attr: &PerfEventAttr) -> String {
    match attr.type_ {
        PerfEventType::Software(sw) => match sw {
            SoftwareCounterType::CpuClock => "cpu-clock",
            SoftwareCounterType::TaskClock => "task-clock",
            SoftwareCounterType::PageFaults => "page-faults",
            SoftwareCounterType::ContextSwitches => "context-switches",
            SoftwareCounterType::CpuMigrations => "cpu-migrations",
            SoftwareCounterType::PageFaultsMin => "minor-faults",
            SoftwareCounterType::PageFaultsMaj => "major-faults",
            SoftwareCounterType::AlignmentFaults => "alignment-faults",
            SoftwareCounterType::EmulationFaults => "emulation-faults",
            SoftwareCounterType::Dummy => "dummy",
            _ => "software",
        }
        .to_owned(),
        PerfEventType::Hardware(hw, _) => match hw {
            HardwareEventId::CpuCycles => "cycles",
            HardwareEventId::Instructions => "instructions",
            HardwareEventId::CacheReferences => "cache-references",
            HardwareEventId::CacheMisses => "cache-misses",
            HardwareEventId::BranchInstructions => "branches",
            HardwareEventId::BranchMisses => "branch-misses",
            _ => "hardware",
        }
        .to_owned(),
        PerfEventType::Tracepoint(id) => format!("tracepoint {id}"),
        PerfEventType::HwCache(..) => "hw-cache".to_owned(),
        PerfEventType::Breakpoint(..) => "breakpoint".to_owned(),
        PerfEventType::DynamicPmu(pmu, config, ..) => format!("pmu{pmu}/config=0x{config:x}/"),
    }
}
