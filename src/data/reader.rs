//! The perf.data reader: files written by `perf record` (plain, `-z` zstd
//! compressed, and the pipe format of `-o -`) and by `scry record`, as the
//! event attributes (named from EVENT_DESC), the header features, and the
//! records in time order, each parsed into an `EventRecord` with the index of
//! its attribute (`next_record()?`).
//!
//! It is a thin layer over `linux-perf-data` (framing, compression, feature
//! sections, sorting by time in rounds) and `linux-perf-event-reader` (record
//! parsing). The layer exists for two rules: bad input is an error that says
//! what and where, never a panic or an abort; and every record that reached
//! the file is read, whatever happened to the recorder or to one record.
//!
//! - Before the crate sees a file, [`layout`] checks the header, every section
//!   against the file length and the attribute descriptions. The crate
//!   allocates from lengths it reads, and a failed allocation aborts: only a
//!   check beforehand prevents that.
//! - A header written before the recording ended (the recorder was killed:
//!   perf's data size is then 0, scry's a moment old) is stale: the records
//!   are read to the end of the file, the crate is shown a corrected header
//!   ([`input::Patched`]), and one line on stderr says what was
//!   recovered.
//! - Records are framed by [`framing`] (file order, lenient): a record that
//!   cannot be framed is stepped over to the next that can, one whose
//!   contents would hurt the crate is left out, and one that fails to parse
//!   is returned as [`Record::Skipped`]. All of it is counted and said in one
//!   line on stderr at the end, with the first offset and reason.
//! - Plain files go through [`rounds`]; pipe streams through
//!   [`pipe::CheckedPipe`] (framed as they are read, never read ahead, so
//!   `-i -` streams); compressed files through the crate after a strict
//!   framing pass (the crate reads the records up to the first problem).
//!   What the crate then cannot read (zstd data that does not decompress,
//!   a bad record inside it) ends the records, said in one line like the
//!   framing's finds: never a second line with an error after the first.
//! - Samples with read values are made parseable by [`read_format`] (the
//!   crate lays them out wrong).
//! - On the direct path, samples of events [`sample_layout`] knows are read
//!   by it, without the crate (the same `SampleRecord`, a fraction of the
//!   cost); it declines what it is unsure of, which the crate then reads.
//! - What cannot be checked beforehand (sample bodies, compressed data) may
//!   still make the crate panic: each call into it runs under
//!   [`guard::guard`], which turns the panic into an error or a skipped
//!   record.

mod error;
mod framing;
mod guard;
mod input;
mod layout;
mod open;
mod pipe;
mod read_format;
mod rounds;
mod sample_layout;

use std::fs::File;
use std::io::{self, Cursor, Read, Seek};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub use error::ReadError;
pub(crate) use framing::{RecordFrame, Skipped, walk_records};
pub(crate) use layout::{Endian, FileLayout, record_type_name};

pub(crate) use linux_perf_data::linux_perf_event_reader::CommonData;
use linux_perf_data::linux_perf_event_reader::{
    Endianness, PerfEventAttr, RawData, RawEventRecord, RecordType, SampleFormat,
};
/// The parsed record types `next_record` returns.
pub use linux_perf_data::linux_perf_event_reader::{EventRecord, SampleRecord};
use linux_perf_data::{Feature, PerfFile, PerfFileRecord, PerfRecordIter};

use super::function_rows::{FUNCTION_ROWS_BIT, FUNCTION_ROWS_NAME, FunctionRows};
use super::handler::{ChainWords, InPlace, RecordHandler, dispatch};
use guard::{Panicked, guard};
use layout::LayoutError;
pub(crate) use linux_perf_data::{RawUserRecord, UserRecordType};
use pipe::PipeState;
use read_format::ReadFix;
use sample_layout::SampleLayout;

/// One event of the file: its attribute, its name and its sample ids.
#[derive(Clone, Debug)]
pub struct EventDesc {
    /// From EVENT_DESC (`cpu-clock:ppp`, `sched:sched_switch`), else made up
    /// from the attribute's type and config (`cpu-clock`, `tracepoint 316`).
    pub name: String,
    /// The event's `perf_event_attr`, from the file's attrs section.
    pub attr: PerfEventAttr,
    /// The sample ids the kernel gave this event (one per CPU or thread
    /// opened), which map a record's id back to this event.
    pub ids: Vec<u64>,
}

/// A HEADER_BUILD_ID entry: `(path, build-id bytes)`.
pub(crate) type RawBuildId = (Vec<u8>, Vec<u8>);

/// The header features scry shows (`scry script --header`); each is `None`
/// when the file lacks it.
#[derive(Clone, Debug, Default)]
pub struct FileInfo {
    pub(crate) hostname: Option<String>,
    pub(crate) os_release: Option<String>,
    pub(crate) perf_version: Option<String>,
    pub(crate) arch: Option<String>,
    /// `(online, available)`.
    pub(crate) nr_cpus: Option<(u32, u32)>,
    pub(crate) cpu_desc: Option<String>,
    pub(crate) cpu_id: Option<String>,
    pub(crate) total_mem_kb: Option<u64>,
    pub(crate) cmdline: Option<Vec<String>>,
    /// `(first, last)` sample time, ns.
    pub(crate) sample_time: Option<(u64, u64)>,
    /// `(path, build-id in hex)`, sorted by path.
    pub(crate) build_ids: Vec<(String, String)>,
    /// The names of the features present (`HOSTNAME`, `BUILD_ID`, ...).
    pub(crate) features: Vec<String>,
}

impl FileInfo {
    /// The command line that wrote the file (perf's `HEADER_CMDLINE`).
    pub fn cmdline(&self) -> Option<&[String]> {
        self.cmdline.as_deref()
    }
}

/// A record in time order.
// Samples are the big variant and the common one: boxing them would cost an
// allocation per record to save a move of 400 bytes.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Record<'a> {
    /// A kernel record (sample, mmap, comm, ...) of event `attr_index`.
    Event {
        /// Index of the record's event in the file's attributes.
        attr_index: usize,
        /// The record, parsed as far as its kind.
        record: EventRecord<'a>,
    },
    /// A record perf adds (ID_INDEX, THREAD_MAP, TIME_CONV, ...), unparsed.
    User(RawUserRecord<'a>),
    /// A record left out: malformed (counted, and reported at the end) or
    /// of a type this reader does not know.
    Skipped,
}

trait ReadSeek: Read + Seek + Send {}
impl<T: Read + Seek + Send> ReadSeek for T {}
type Input = Box<dyn ReadSeek>;

/// Where the bytes come from, kept to walk the file again (`-D`, and to
/// locate a record that failed to parse).
enum Source {
    Path(PathBuf),
    Bytes(Arc<[u8]>),
    /// A pipe: read once.
    Stream,
}

impl Source {
    fn open(&self) -> io::Result<Input> {
        Ok(match self {
            Source::Path(p) => Box::new(File::open(p)?),
            Source::Bytes(b) => Box::new(Cursor::new(Arc::clone(b))),
            Source::Stream => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "a stream is read once: save it to a file to walk it again",
                ));
            }
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
    /// Per event: how to cut out the read values of its samples.
    read_fixes: Vec<Option<ReadFix>>,
    /// Per event: how the direct path reads its samples itself (`None`:
    /// through the crate).
    sample_layouts: Vec<Option<SampleLayout>>,
    /// A sample without its read values, as the last record returned.
    scratch: Vec<u8>,
    /// A pipe stream's HEADER_TRACING_DATA blob.
    tracing: Option<Vec<u8>>,
    status: Status,
    /// Records returned so far.
    count: u64,
    /// The size of the last record returned, header included.
    last_size: u64,
    /// Set after an error or at the end.
    failed: bool,
}

/// What was recovered and skipped, and the lines that say it.
struct Status {
    file: String,
    /// Records that failed to parse (the framing's skips join at the end).
    skipped: Skipped,
    /// Lines for stderr not printed yet (see `say_notes`).
    notes: Vec<String>,
    quiet: bool,
    /// What the framing skips, filled in at the end of the records.
    framing: Option<Arc<Mutex<Skipped>>>,
    pipe: Option<Arc<Mutex<PipeState>>>,
}

impl Status {
    fn new(file: &str, notes: Vec<String>) -> Self {
        Status {
            file: file.to_owned(),
            skipped: Skipped::default(),
            notes,
            quiet: false,
            framing: None,
            pipe: None,
        }
    }

    /// Prints the pending lines on stderr (unless quiet), each once.
    fn say_notes(&mut self) {
        for note in self.notes.drain(..) {
            if !self.quiet {
                eprintln!("scry: {}: {note}", self.file);
            }
        }
    }

    /// The crate could not read record `number` in time order, for
    /// `reason`: the records end there, and a line says so.
    fn stopped(&mut self, number: u64, reason: &str) {
        self.notes.push(format!(
            "the records from record #{number} in time order on are not read ({reason})"
        ));
    }

    /// The end of the records: the framing's skips join the parse failures
    /// and the whole is said in one line.
    fn finish(&mut self) {
        if let Some(framing) = &self.framing {
            let framing = framing.lock().unwrap_or_else(|p| p.into_inner());
            self.skipped.merge(&framing);
        }
        if let Some(state) = &self.pipe {
            self.skipped.merge(&lock(state).skipped);
        }
        self.notes.extend(self.skipped.describe());
        self.say_notes();
    }
}

impl PerfReader {
    /// Keeps the reader's lines (what was recovered or skipped) off stderr;
    /// [`Self::notes`] still has them.
    pub fn quiet(&mut self) {
        self.status.quiet = true;
    }

    /// The lines the reader prints (or printed) about what it recovered and
    /// skipped, so far.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = self.status.notes.clone();
        notes.extend(self.status.skipped.describe());
        notes
    }

    /// The file's name as errors show it.
    pub(crate) fn file_name(&self) -> &str {
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
            Err(Panicked(message)) => {
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
                .map(|f| match f.0 {
                    FUNCTION_ROWS_BIT => FUNCTION_ROWS_NAME.to_string(),
                    _ => f.to_string(),
                })
                .collect(),
        })
    }

    /// The socket (physical package) of each CPU, by CPU number, from the
    /// CPU_TOPOLOGY feature; empty when the file does not say (scry's own
    /// files; perf then shows socket -1).
    pub(crate) fn cpu_sockets(&self) -> Vec<i32> {
        let e = self.layout.endian;
        let data = |f: Feature| self.perf_file.feature_section_data(f);
        let (Some(b), Some(avail)) = (
            data(Feature::CPU_TOPOLOGY),
            data(Feature::NRCPUS).and_then(|b| e.u32(b, 0)),
        ) else {
            return Vec::new();
        };
        // Two string lists (sibling cores, sibling threads), then per CPU
        // (core_id, socket_id).
        let mut at = 0usize;
        for _ in 0..2 {
            let Some(nr) = e.u32(b, at) else {
                return Vec::new();
            };
            at += 4;
            for _ in 0..nr {
                match layout::header_string(b, at, e) {
                    Some((_, next)) => at = next,
                    None => return Vec::new(),
                }
            }
        }
        let room = b.len().saturating_sub(at) / 8;
        (0..(avail as usize).min(room))
            .map_while(|cpu| e.u32(b, at + cpu * 8 + 4).map(|s| s as i32))
            .collect()
    }

    /// Walks the records again in file order (what `perf script -D` shows),
    /// calling `visit` with each record's frame, its 8 header bytes and body.
    /// What the framing skips is said on stderr, as for `next_record`.
    pub fn walk_file_order(
        &mut self,
        mut visit: impl FnMut(RecordFrame, &[u8], &[u8]) -> io::Result<()>,
    ) -> Result<(), ReadError> {
        let io_err = |source| ReadError::Io {
            file: self.file.clone(),
            source,
        };
        if matches!(self.source, Source::Stream) {
            return Err(ReadError::ReadOnce {
                file: self.file.clone(),
            });
        }
        let mut input = self.source.open().map_err(io_err)?;
        let e = self.layout.endian;
        let skipped = walk_records(&mut input, self.layout.data, e, |frame, body| {
            visit(frame, &framing::header_bytes(&frame, e), body)
        })
        .map_err(|e| match e {
            LayoutError::Io(source) => io_err(source),
            other => ReadError::from_layout(&self.file, other),
        })?;
        self.status.notes.extend(skipped.describe());
        self.status.say_notes();
        Ok(())
    }

    /// HEADER_BUILD_ID as `(path, build-id bytes)`, what the symbol stage
    /// takes.
    pub(crate) fn build_ids_raw(&self) -> Result<Vec<RawBuildId>, ReadError> {
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
            Err(Panicked(message)) => Err(ReadError::ParserPanic {
                file: self.file.clone(),
                context: "BUILD_ID feature".into(),
                message,
            }),
        }
    }

    /// `scry record --profile`'s kernel function rows (scry's own feature
    /// section, `data::function_rows`), `None` when the file has none; a
    /// section that does not decode is an error naming the file.
    pub fn function_rows(&self) -> Result<Option<FunctionRows>, ReadError> {
        let Some(bytes) = self
            .perf_file
            .feature_section_data(Feature(FUNCTION_ROWS_BIT))
        else {
            return Ok(None);
        };
        FunctionRows::decode(bytes, self.layout.endian)
            .map(Some)
            .map_err(|err| ReadError::Parse {
                file: self.file.clone(),
                context: format!("{FUNCTION_ROWS_NAME} feature (kernel function rows)"),
                reason: err.to_string(),
            })
    }

    /// The tracepoint formats: the TRACING_DATA feature of a file, or the
    /// HEADER_TRACING_DATA record of a pipe stream.
    pub(crate) fn tracing_data(&self) -> Option<&[u8]> {
        self.tracing
            .as_deref()
            .or_else(|| self.perf_file.feature_section_data(Feature::TRACING_DATA))
    }

    /// The size in the file of the record `next_record` (or another
    /// `next_` call) returned last, its 8-byte header included: what a
    /// ring held for it (a compressed file's: decompressed).
    pub fn last_record_size(&self) -> u64 {
        self.last_size
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
        if self.count == 0 {
            self.status.say_notes();
        }
        let number = self.count;
        self.count += 1;
        if self.rounds.is_some() {
            return self.direct(
                &mut (),
                |(), attr_index, sample, _| {
                    let record = EventRecord::Sample(sample.clone());
                    (Record::Event { attr_index, record }, CommonData::default())
                },
                |(), attr_index, record, id, _| (Record::Event { attr_index, record }, id),
                |(), other| (other, CommonData::default()),
            );
        }
        let PerfReader {
            layout,
            perf_file,
            records,
            read_fixes,
            scratch,
            status,
            failed,
            last_size,
            ..
        } = self;
        let next = match guard(|| records.next_record(perf_file)) {
            Ok(Ok(next)) => next,
            // The crate stops at the first record it cannot read (zstd data
            // that does not decompress, a decompressed record of size < 8,
            // a panic): the records before it were read, the rest cannot be.
            // That is the end of the records and one line, as for damage
            // the framing finds, not an error: a line the framing pass said
            // first ("the records from offset ... on are not read") would
            // otherwise come with a second one and exit 2.
            Ok(Err(e)) => {
                status.stopped(number, &e.to_string());
                None
            }
            Err(Panicked(message)) => {
                status.stopped(number, &format!("the parser panicked: {message}"));
                None
            }
        };
        let (attr_index, raw) = match next {
            None => {
                *failed = true;
                status.finish();
                return Ok(None);
            }
            Some(PerfFileRecord::UserRecord(user)) => {
                *last_size = user.data.len() as u64 + 8;
                return Ok(Some((Record::User(user), CommonData::default())));
            }
            Some(PerfFileRecord::EventRecord { attr_index, record }) => (attr_index, record),
        };
        let record_type = raw.record_type.0;
        let size = raw.data.len() as u64 + 8;
        *last_size = size;
        let fix = read_fixes.get(attr_index).copied().flatten();
        let (event, reason) = match prepare(raw, fix, layout.endian, scratch) {
            Ok(event) => (Some(event), None),
            Err(reason) => (None, Some(reason)),
        };
        let reason = match event.map(|event| parse(&event)) {
            Some(Ok((record, id))) => return Ok(Some((Record::Event { attr_index, record }, id))),
            Some(Err(reason)) => reason.to_string(),
            None => reason.map_or_else(String::new, |r| r.to_string()),
        };
        // No file offset here: compressed data and streams have none.
        status.skipped.add_record(None, size, || {
            format!(
                "{} (record #{number} in time order): {reason}",
                record_type_name(record_type)
            )
        });
        Ok(Some((Record::Skipped, CommonData::default())))
    }

    /// Every kernel record, in time order, to `handler` (the one
    /// dispatcher: `super::handler::dispatch`); perf's own records are left
    /// out.
    pub(crate) fn feed<H: RecordHandler + ?Sized>(
        &mut self,
        handler: &mut H,
    ) -> Result<(), ReadError> {
        if self.rounds.is_some() {
            // Each record dispatched where it is parsed: a sample record is
            // a few hundred bytes, and each wrapper it is returned through
            // copied it (a tenth of the parsing thread's time).
            loop {
                if self.failed {
                    return Ok(());
                }
                if self.count == 0 {
                    self.status.say_notes();
                }
                self.count += 1;
                let on_sample = |handler: &mut H, attr_index, sample: &SampleRecord<'_>, place| {
                    handler.handle_sample_in_place(attr_index, sample, place);
                };
                let on_event = |handler: &mut H,
                                attr_index,
                                record: EventRecord<'_>,
                                id,
                                place: InPlace<'_>| {
                    match (&record, place.chain) {
                        (EventRecord::Sample(s), Some(_)) => {
                            handler.handle_sample_in_place(attr_index, s, place);
                        }
                        _ => dispatch(handler, attr_index, &record, &id),
                    }
                };
                if self
                    .direct(handler, on_sample, on_event, |_, _| ())?
                    .is_none()
                {
                    return Ok(());
                }
            }
        }
        while let Some((record, id)) = self.next_record_with_id()? {
            if let Record::Event { attr_index, record } = record {
                dispatch(handler, attr_index, &record, &id);
            }
        }
        Ok(())
    }

    /// `next_record` on the direct path (`rounds`): the same records, and
    /// skips that name the record's file offset; a sample its event's
    /// `SampleLayout` reads goes to `on_sample` (event index, sample, what
    /// was read in place), any other kernel record to `on_event` (event
    /// index, record, sample_id fields, a sample's callchain in place), any
    /// other record to `on_other`; each with `to`, what they write to.
    fn direct<'s, C: ?Sized, T>(
        &'s mut self,
        to: &mut C,
        on_sample: impl FnOnce(&mut C, usize, &SampleRecord<'s>, InPlace<'s>) -> T,
        on_event: impl FnOnce(&mut C, usize, EventRecord<'s>, CommonData, InPlace<'s>) -> T,
        on_other: impl FnOnce(&mut C, Record<'s>) -> T,
    ) -> Result<Option<T>, ReadError> {
        let PerfReader {
            file,
            layout,
            rounds,
            read_fixes,
            sample_layouts,
            scratch,
            status,
            failed,
            last_size,
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
            Ok(None) => {
                *failed = true;
                status.finish();
                return Ok(None);
            }
            Err(e) => {
                *failed = true;
                return Err(ReadError::from_layout(file, e));
            }
        };
        *last_size = raw.raw.body.len() as u64 + 8;
        let record_type = RecordType(raw.raw.record_type);
        let (Some(attr_index), Some(parse_info)) = (raw.attr_index, raw.parse_info) else {
            // Not a kernel record type: perf's own (user) records.
            let Some(record_type) = UserRecordType::try_from(record_type) else {
                return Ok(Some(on_other(to, Record::Skipped)));
            };
            let user = Record::User(RawUserRecord {
                record_type,
                endian,
                misc: raw.raw.misc,
                data: raw.raw.body.into(),
            });
            return Ok(Some(on_other(to, user)));
        };
        if raw.raw.record_type == RecordType::SAMPLE.0
            && let Some(Some(sample_layout)) = sample_layouts.get(attr_index)
            && let Some(done) = sample_layout.read(raw.raw.body, raw.raw.misc, |sample, place| {
                on_sample(to, attr_index, sample, place)
            })
        {
            return Ok(Some(done));
        }
        let event = raw.raw.event(parse_info);
        let fix = read_fixes.get(attr_index).copied().flatten();
        let (offset, size) = (raw.offset, raw.raw.body.len() as u64 + 8);
        let reason = match prepare(event, fix, layout.endian, scratch) {
            Ok(event) => match parse(&event) {
                Ok((record, id)) => {
                    let place = InPlace {
                        chain: chain_words(&event),
                        user_regs: None,
                    };
                    return Ok(Some(on_event(to, attr_index, record, id, place)));
                }
                Err(reason) => reason,
            },
            Err(reason) => reason,
        };
        status.skipped.add_record(Some(offset), size, || {
            format!("{}: {reason}", record_type_name(record_type.0))
        });
        Ok(Some(on_other(to, Record::Skipped)))
    }
}

impl Drop for PerfReader {
    /// Lines not said yet (a caller that stopped early) are said now.
    fn drop(&mut self) {
        self.status.say_notes();
    }
}

fn lock(state: &Mutex<PipeState>) -> std::sync::MutexGuard<'_, PipeState> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Why one record could not be parsed (it is then skipped and counted).
#[derive(Debug, thiserror::Error)]
enum RecordError {
    #[error("its read values run past the end of the record")]
    ReadValuesPastEnd,
    #[error("{0}")]
    Parse(std::io::Error),
    #[error("the parser panicked: {0}")]
    Panicked(Panicked),
}

/// The record as the crate must see it: a sample of an event with read
/// values gets them cut out (into `scratch`).
fn prepare<'a>(
    raw: RawEventRecord<'a>,
    fix: Option<ReadFix>,
    endian: Endian,
    scratch: &'a mut Vec<u8>,
) -> Result<RawEventRecord<'a>, RecordError> {
    let Some(fix) = fix.filter(|_| raw.record_type == RecordType::SAMPLE) else {
        return Ok(raw);
    };
    let body = raw.data.as_slice();
    fix.strip(&body, endian, scratch)
        .ok_or(RecordError::ReadValuesPastEnd)?;
    Ok(RawEventRecord::new(
        raw.record_type,
        raw.misc,
        RawData::Single(scratch),
        fix.parse_info,
    ))
}

/// The callchain of sample `event`, read in place: its record whole, in
/// the host's byte order, without read values (their size varies; the
/// crate's reading is used then). The fields before the callchain are one
/// word each (`read_format::fixed_words`).
fn chain_words<'a>(event: &RawEventRecord<'a>) -> Option<ChainWords<'a>> {
    let info = &event.parse_info;
    let format = info.sample_format;
    let native = if cfg!(target_endian = "little") {
        Endianness::LittleEndian
    } else {
        Endianness::BigEndian
    };
    if event.record_type != RecordType::SAMPLE
        || info.endian != native
        || !format.contains(SampleFormat::CALLCHAIN)
        || format.contains(SampleFormat::READ)
    {
        return None;
    }
    let RawData::Single(body) = event.data else {
        return None;
    };
    let at = 8 * read_format::fixed_words(format);
    let nr = u64::from_ne_bytes(body.get(at..at + 8)?.try_into().ok()?);
    let len = usize::try_from(nr).ok()?.checked_mul(8)?;
    ChainWords::new(body.get(at + 8..(at + 8).checked_add(len)?)?)
}

/// Parses `event` under `guard`, with its sample_id fields.
fn parse<'a>(event: &RawEventRecord<'a>) -> Result<(EventRecord<'a>, CommonData), RecordError> {
    let id = if event.record_type == RecordType::SAMPLE {
        CommonData::default()
    } else {
        event.common_data().unwrap_or_default()
    };
    match guard(|| event.parse()) {
        Ok(Ok(record)) => Ok((record, id)),
        Ok(Err(e)) => Err(RecordError::Parse(e)),
        Err(panic) => Err(RecordError::Panicked(panic)),
    }
}
