//! Opening a perf.data file: the layout checked, a stale header or a bad
//! feature table corrected for the crate, the path chosen (`rounds` for
//! plain files, the crate for compressed ones, [`CheckedPipe`] for the pipe
//! format), and what was recovered noted for stderr.

use std::io::{self, BufReader, Cursor, Read, Seek};
use std::path::Path;
use std::sync::{Arc, Mutex};

use linux_perf_data::linux_perf_event_reader::{Endianness, RecordParseInfo};
use linux_perf_data::{PerfFile, PerfFileReader};

use super::guard::{Panicked, fallback_name, guard};
use super::input::{self, NoSeek, Opened, Patched};
use super::layout::{self, Endian, FileLayout, LayoutError, Section};
use super::pipe::{CheckedPipe, PipeState};
use super::read_format::ReadFix;
use super::sample_layout::SampleLayout;
use super::{
    EventDesc, Input, PerfReader, ReadError, Source, Status, framing, lock, rounds, walk_records,
};

impl PerfReader {
    /// Opens `path`: a file, a FIFO, or `-` for standard input (see
    /// `input`); errors name it as given (`<stdin>` for `-`).
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        let file = if path.as_os_str() == "-" {
            "<stdin>".to_owned()
        } else {
            path.display().to_string()
        };
        match input::open_input(path, &file)? {
            Opened::File(handle, len) => {
                let source = if path.as_os_str() == "-" {
                    Source::Path("/dev/stdin".into())
                } else {
                    Source::Path(path.into())
                };
                Self::from_input(file, source, Box::new(handle), len)
            }
            Opened::Stream(stream) => Self::from_stream(&file, stream),
        }
    }

    /// Reads a file held in memory; `name` is how errors call it.
    pub fn from_bytes(name: &str, bytes: impl Into<Arc<[u8]>>) -> Result<Self, ReadError> {
        let bytes: Arc<[u8]> = bytes.into();
        let len = bytes.len() as u64;
        let input = Box::new(Cursor::new(Arc::clone(&bytes)));
        Self::from_input(name.to_owned(), Source::Bytes(bytes), input, len)
    }

    /// Reads a stream (stdin, a pipe): the magic is checked in its first 8
    /// bytes; the pipe format is then read as it comes (never ahead), and
    /// the file format, which needs seeking, is read into memory first.
    pub(crate) fn from_stream(
        name: &str,
        mut stream: impl Read + Send + 'static,
    ) -> Result<Self, ReadError> {
        let io_err = |source| ReadError::Io {
            file: name.to_owned(),
            source,
        };
        let mut head = vec![0u8; layout::PIPE_HEADER_SIZE as usize];
        let got = read_full(&mut stream, &mut head).map_err(io_err)?;
        head.truncate(got);
        // The header checks on what was read (a short stream ends here).
        let mut probe = Cursor::new(head.clone());
        match layout::check_file(&mut probe, got as u64) {
            Err(LayoutError::TruncatedHeader { .. }) if got == head.capacity() => {}
            Err(e) => return Err(ReadError::from_layout(name, e)),
            Ok(l) if l.pipe => {
                let endian = l.endian;
                let (pipe, state) = CheckedPipe::new(head, stream, endian);
                return Self::from_pipe(name.to_owned(), Source::Stream, pipe, state, endian);
            }
            Ok(_) => {}
        }
        let mut bytes = head;
        stream.read_to_end(&mut bytes).map_err(io_err)?;
        Self::from_bytes(name, bytes)
    }

    fn from_input(
        file: String,
        source: Source,
        mut input: Input,
        len: u64,
    ) -> Result<Self, ReadError> {
        let layout_err = |e| ReadError::from_layout(&file, e);
        let io_err = |source: io::Error| ReadError::Io {
            file: file.clone(),
            source,
        };
        let mut layout = layout::check_file(&mut input, len).map_err(layout_err)?;
        if layout.pipe {
            input.seek(io::SeekFrom::Start(0)).map_err(io_err)?;
            let mut head = vec![0u8; layout::PIPE_HEADER_SIZE as usize];
            input.read_exact(&mut head).map_err(io_err)?;
            let (pipe, state) = CheckedPipe::new(head, input, layout.endian);
            return Self::from_pipe(file, source, pipe, state, layout.endian);
        }
        let mut notes: Vec<String> = layout.notes.iter().map(|(_, n)| n.clone()).collect();
        const HEADER_COMPRESSED: u32 = 27;
        const SIMPLEPERF_META_INFO: u32 = 129;
        let mut direct = layout.feature(HEADER_COMPRESSED).is_none()
            && layout.feature(SIMPLEPERF_META_INFO).is_none();
        // Where the crate's records must stop, when not where the header
        // says: after the last whole record of a stale file, or before the
        // first problem of a file the crate reads itself.
        let mut data_end = None;
        if let Some(stale) = &layout.stale {
            let mut end = layout.data.offset;
            let mut records = 0u64;
            walk_records(&mut input, layout.data, layout.endian, |frame, _| {
                end = frame.next;
                records += 1;
                // `perf record -z` killed: the crate decompresses.
                direct &= !matches!(frame.record_type, 81 | 83);
                Ok(())
            })
            .map_err(layout_err)?;
            let cut = layout.data.end() - end;
            notes.push(format!(
                "the header was written before the recording ended ({}; was the recorder killed?): \
                 it says {} bytes of data; recovered {records} records ({} bytes) to the end of the file{}",
                stale.why,
                stale.data_size,
                end - layout.data.offset,
                if cut > 0 {
                    format!(", the last {cut} bytes are a cut record")
                } else {
                    String::new()
                }
            ));
            data_end = Some(end);
        } else if !direct
            && let Some((at, e)) = framing::first_problem(&mut input, layout.data, layout.endian)
                .map_err(layout_err)?
        {
            notes.push(format!(
                "the records from offset {at:#x} on are not read ({}; {} bytes)",
                framing::describe(&e),
                layout.data.end() - at
            ));
            data_end = Some(at);
        }
        let mut patches: Vec<(u64, Vec<u8>)> = layout
            .notes
            .iter()
            .filter(|(at, _)| *at != 0)
            .map(|(at, _)| (*at, vec![0u8; 16]))
            .collect();
        if data_end.is_some() || layout.notes.iter().any(|(at, _)| *at == 0) {
            if let Some(end) = data_end {
                layout.data.size = end - layout.data.offset;
            }
            let whole_table = layout.notes.iter().any(|(at, _)| *at == 0);
            patches.push((
                0,
                corrected_header(&mut input, &layout, whole_table).map_err(layout_err)?,
            ));
        }
        let input: Input = if patches.is_empty() {
            input.seek(io::SeekFrom::Start(0)).map_err(io_err)?;
            input
        } else {
            Box::new(Patched::new(input, patches).map_err(io_err)?)
        };
        let read_formats = {
            let mut again = source.open().map_err(io_err)?;
            layout::raw_read_formats(&mut again, &layout).map_err(layout_err)?
        };
        let input: Input = Box::new(BufReader::with_capacity(1 << 16, input));
        let PerfFileReader {
            perf_file,
            record_iter,
        } = parse_header(&file, move || PerfFileReader::parse_file(input))?;
        let events = event_descs(&perf_file);
        let rounds = if direct {
            let mut input = source.open().map_err(io_err)?;
            input
                .seek(io::SeekFrom::Start(layout.data.offset))
                .map_err(io_err)?;
            match rounds::Rounds::new(input, layout.data, layout.endian, &events) {
                Some(r) => Some(rounds::RoundsThread::spawn(r).map_err(io_err)?),
                // Several events without a common way to find a record's
                // event: the crate's path, and its error.
                None => None,
            }
        } else {
            None
        };
        let read_fixes = read_fixes(&events, &read_formats, layout.endian);
        let sample_layouts = sample_layouts(&events, layout.endian);
        let framing = rounds.as_ref().map(|r| Arc::clone(&r.skipped));
        Ok(PerfReader {
            source,
            layout,
            perf_file,
            records: record_iter,
            rounds,
            events,
            read_fixes,
            sample_layouts,
            scratch: Vec::new(),
            tracing: None,
            status: Status {
                framing,
                ..Status::new(&file, notes)
            },
            file,
            count: 0,
            last_size: 0,
            failed: false,
        })
    }

    /// The pipe format, read through the checking adapter.
    fn from_pipe<R: Read + Send + 'static>(
        file: String,
        source: Source,
        pipe: CheckedPipe<R>,
        state: Arc<Mutex<PipeState>>,
        endian: Endian,
    ) -> Result<Self, ReadError> {
        let input: Input = Box::new(NoSeek(pipe));
        let PerfFileReader {
            perf_file,
            record_iter,
        } = parse_header(&file, move || PerfFileReader::parse_pipe(input))?;
        let events = event_descs(&perf_file);
        let (read_formats, tracing) = {
            let mut state = lock(&state);
            (state.read_formats.clone(), state.tracing_data.take())
        };
        let read_fixes = read_fixes(&events, &read_formats, endian);
        Ok(PerfReader {
            source,
            layout: FileLayout {
                notes: Vec::new(),
                file_len: 0,
                endian,
                pipe: true,
                header_size: layout::PIPE_HEADER_SIZE,
                attr_size: 0,
                attrs: Section::default(),
                data: Section {
                    offset: layout::PIPE_HEADER_SIZE,
                    size: u64::MAX - layout::PIPE_HEADER_SIZE,
                },
                event_types: Section::default(),
                features: Vec::new(),
                stale: None,
            },
            perf_file,
            records: record_iter,
            rounds: None,
            events,
            read_fixes,
            // Read through the crate: streams take no direct path.
            sample_layouts: Vec::new(),
            scratch: Vec::new(),
            tracing,
            status: Status {
                pipe: Some(state),
                ..Status::new(&file, Vec::new())
            },
            file,
            count: 0,
            last_size: 0,
            failed: false,
        })
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The file's header as it should have been: the data size `layout` says,
/// and no features when none can be trusted (a stale data size, a cut
/// feature table).
fn corrected_header(
    input: &mut Input,
    layout: &FileLayout,
    no_features: bool,
) -> Result<Vec<u8>, LayoutError> {
    let mut head = layout::read_at(input, 0, layout::FILE_HEADER_SIZE)?;
    let size = match layout.endian {
        Endian::Little => layout.data.size.to_le_bytes(),
        Endian::Big => layout.data.size.to_be_bytes(),
    };
    // The crate finds the feature table right after the data: a data size
    // other than the header's moves it onto records, so no features then.
    let moved = head[48..56] != size;
    head[48..56].copy_from_slice(&size);
    if layout.stale.is_some() || no_features || moved {
        head[72..104].fill(0);
    }
    Ok(head)
}

/// Runs the crate's header parse under `guard`.
fn parse_header<R: Read>(
    file: &str,
    parse: impl FnOnce() -> Result<PerfFileReader<R>, linux_perf_data::Error>,
) -> Result<PerfFileReader<R>, ReadError> {
    let context = "reading the header and attributes";
    match guard(parse) {
        Ok(Ok(reader)) => Ok(reader),
        Ok(Err(e)) => Err(ReadError::Parse {
            file: file.to_owned(),
            context: context.into(),
            reason: e.to_string(),
        }),
        Err(Panicked(message)) => Err(ReadError::ParserPanic {
            file: file.to_owned(),
            context: context.into(),
            message,
        }),
    }
}

fn event_descs(perf_file: &PerfFile) -> Vec<EventDesc> {
    perf_file
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
        .collect()
}

/// Per event, how the direct path reads its samples (`sample_layout`).
fn sample_layouts(events: &[EventDesc], endian: Endian) -> Vec<Option<SampleLayout>> {
    let endian = match endian {
        Endian::Little => Endianness::LittleEndian,
        Endian::Big => Endianness::BigEndian,
    };
    events
        .iter()
        .map(|e| SampleLayout::new(&RecordParseInfo::new(&e.attr, endian)))
        .collect()
}

fn read_fixes(events: &[EventDesc], raw: &[u64], endian: Endian) -> Vec<Option<ReadFix>> {
    let endian = match endian {
        Endian::Little => Endianness::LittleEndian,
        Endian::Big => Endianness::BigEndian,
    };
    events
        .iter()
        .enumerate()
        .map(|(i, e)| ReadFix::new(&e.attr, raw.get(i).copied(), endian))
        .collect()
}
