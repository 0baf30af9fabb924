//! The records of a data section in file order: each an 8-byte header
//! (type, misc, size) and its body, checked before anything parses it.
//!
//! The decision here: one bad record does not lose the file. A header whose
//! size cannot be right (less than the header, past the end, a record cut
//! by a killed recorder) is not trusted: the cursor steps on 8 bytes at a
//! time (perf pads every record to 8 bytes) until a header that could be a
//! record (a type perf writes, a size that is a multiple of 8 and fits),
//! and reads on from there. A record framed soundly but whose contents the
//! crates must not see (a build-id longer than 20 bytes, a feature id past
//! perf's 256, an EVENT_DESC whose counts run past it) is left out whole.
//! Both are counted in [`Skipped`], which the reader reports in one line.
//! A strict cursor (`lenient = false`) stops at the first such problem with
//! its error instead, for callers that must not read past it.
//!
//! Records with data after them (outside their `size`): AUXTRACE (its
//! trace data, skipped) and, in the pipe format, HEADER_TRACING_DATA (the
//! tracepoint formats, kept in [`RecordCursor::tracing_data`]).
//!
//! The section's end may be unknown (a stream, `end == u64::MAX`): the end
//! of the input is then the end of the records, and a record cut by it is
//! skipped as above. A file is never read past its data section.
//!
//! Bytes are read in blocks into a [`ReadBuf`] and framed in place, so the
//! time-order pass keeps each record where it was read (`next_in`).

use std::io::{self, Read, Seek, SeekFrom};

use crate::data::raw::{
    PERF_RECORD_AUXTRACE, PERF_RECORD_HEADER_FEATURE, PERF_RECORD_HEADER_TRACING_DATA,
};
use crate::data::read_buf::ReadBuf;
use crate::sys::perf_event::PERF_RECORD_MMAP2;

use super::layout::{
    Endian, HEADER_EVENT_DESC, LayoutError, RECORD_HEADER_SIZE, Section, check_event_desc,
    record_type_name,
};

/// `PERF_RECORD_MISC_MMAP_BUILD_ID`: the MMAP2 record holds a build-id.
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// `HEADER_FEAT_BITS`: feature ids are below it.
const FEATURE_BITS: u64 = 256;
/// The most trailing data (tracing data, AUXTRACE) one record may carry in
/// a stream, where nothing else bounds it: the crate allocates it whole.
const TRAILING_MAX: u64 = 1 << 30;

/// A record's place in the file, as the walk found it.
#[derive(Clone, Copy, Debug)]
pub struct RecordFrame {
    pub offset: u64,
    pub record_type: u32,
    pub(crate) misc: u16,
    /// From the header: header plus body, without AUXTRACE's trailing data.
    pub(crate) size: u16,
    /// Where the next record starts (trailing data included).
    pub(crate) next: u64,
}

/// The 8 header bytes of `frame`, as they were in the file.
pub(crate) fn header_bytes(frame: &RecordFrame, endian: Endian) -> [u8; 8] {
    let mut head = [0u8; 8];
    let (t, m, z) = match endian {
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
    head
}

/// What was left out while reading: stretches of bytes that were not whole
/// records, and whole records refused. Offsets are file offsets.
#[derive(Clone, Debug, Default)]
pub(crate) struct Skipped {
    pub(crate) spans: u64,
    pub(crate) span_bytes: u64,
    pub(crate) first_span: Option<(u64, String)>,
    pub(crate) records: u64,
    pub(crate) record_bytes: u64,
    /// Where (none inside compressed data or a stream) and what.
    pub(crate) first_record: Option<(Option<u64>, String)>,
}

impl Skipped {
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.spans == 0 && self.records == 0
    }

    pub(crate) fn add_span(&mut self, offset: u64, bytes: u64, why: impl FnOnce() -> String) {
        self.spans += 1;
        self.span_bytes += bytes;
        if self.first_span.is_none() {
            self.first_span = Some((offset, why()));
        }
    }

    /// `what` names the record and the reason: `PERF_RECORD_SAMPLE: ...`.
    pub(crate) fn add_record(
        &mut self,
        offset: Option<u64>,
        bytes: u64,
        what: impl FnOnce() -> String,
    ) {
        self.records += 1;
        self.record_bytes += bytes;
        if self.first_record.is_none() {
            self.first_record = Some((offset, what()));
        }
    }

    pub(crate) fn merge(&mut self, other: &Skipped) {
        self.spans += other.spans;
        self.span_bytes += other.span_bytes;
        self.records += other.records;
        self.record_bytes += other.record_bytes;
        if self.first_span.is_none() {
            self.first_span.clone_from(&other.first_span);
        }
        if self.first_record.is_none() {
            self.first_record.clone_from(&other.first_record);
        }
    }

    /// One line saying where and how much was left out; `None` if nothing.
    pub(crate) fn describe(&self) -> Option<String> {
        let plural = |n: u64, one: &str, many: &str| {
            if n == 1 {
                one.to_owned()
            } else {
                format!("{n} {many}")
            }
        };
        let mut parts = Vec::new();
        if let Some((at, why)) = &self.first_record {
            let at = at.map_or(String::new(), |at| format!(" at offset {at:#x}"));
            parts.push(format!(
                "skipped {} ({} bytes), the first{at}: {why}",
                plural(self.records, "1 malformed record", "malformed records"),
                self.record_bytes
            ));
        }
        if let Some((at, why)) = &self.first_span {
            parts.push(format!(
                "skipped {} bytes that are not whole records ({}), the first at offset {at:#x}: {why}",
                self.span_bytes,
                plural(self.spans, "1 stretch", "stretches")
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// Walks the records of `data` in file order (see the module doc; lenient),
/// calling `visit` with each record's frame and body (trailing data not
/// included). Returns what was skipped.
pub(crate) fn walk_records<R: Read + Seek + ?Sized>(
    r: &mut R,
    data: Section,
    endian: Endian,
    mut visit: impl FnMut(RecordFrame, &[u8]) -> io::Result<()>,
) -> Result<Skipped, LayoutError> {
    r.seek(SeekFrom::Start(data.offset))?;
    let mut cursor = RecordCursor::new(r, data, endian, 1 << 18, true);
    let mut body = Vec::with_capacity(1 << 16);
    loop {
        body.clear();
        let Some(frame) = cursor.next_into(&mut body)? else {
            return Ok(cursor.skipped);
        };
        visit(frame, &body)?;
    }
}

/// The first problem a strict walk of `data` meets, as its offset and error;
/// `None` if every record is sound.
pub(crate) fn first_problem<R: Read + Seek + ?Sized>(
    r: &mut R,
    data: Section,
    endian: Endian,
) -> Result<Option<(u64, LayoutError)>, LayoutError> {
    r.seek(SeekFrom::Start(data.offset))?;
    let mut cursor = RecordCursor::new(r, data, endian, 1 << 18, false);
    let mut body = Vec::with_capacity(1 << 16);
    loop {
        body.clear();
        let at = cursor.offset;
        match cursor.next_into(&mut body) {
            Ok(Some(_)) => {}
            Ok(None) => return Ok(None),
            Err(LayoutError::Io(e)) => return Err(LayoutError::Io(e)),
            Err(e) => return Ok(Some((at, e))),
        }
    }
}

/// How reading one record went.
enum Framed {
    /// The record and where its body starts in the buffer.
    Record(RecordFrame, usize),
    /// Framed soundly but refused; the cursor is past it.
    Refused(LayoutError),
    /// Not a record: the cursor must look for the next one.
    Broken(LayoutError),
    /// The input ended inside the record (streams only).
    Cut,
}

/// See the module doc; the reader's time-order pass reads through it.
///
/// No `BufReader`: the input is read in blocks straight into a
/// [`ReadBuf`], the caller's ([`Self::next_in`]: the sorter's round buffer,
/// where the records then stay) or the cursor's own ([`Self::next_into`],
/// which copies each body out).
pub(crate) struct RecordCursor<R: Read> {
    r: R,
    endian: Endian,
    /// Where the next record starts.
    offset: u64,
    /// How far the input has been taken: the file offset of the buffer's
    /// byte at `at`; the bytes after it were read ahead.
    pos: u64,
    at: usize,
    end: u64,
    /// How much one read asks for, at least.
    block: usize,
    lenient: bool,
    /// A header found by resynchronizing, not yet read as a record.
    pending: Option<[u8; 8]>,
    /// The buffer of [`Self::next_into`].
    own: ReadBuf,
    pub(crate) skipped: Skipped,
    /// The blob after a HEADER_TRACING_DATA record (pipe format), if any.
    pub(crate) tracing_data: Option<Vec<u8>>,
}

impl<R: Read> RecordCursor<R> {
    /// `r` must be positioned at `data.offset`; a `data.size` of `u64::MAX`
    /// (less the offset) means "to the end of the input". `block`: the
    /// least one read asks for.
    pub(crate) fn new(r: R, data: Section, endian: Endian, block: usize, lenient: bool) -> Self {
        RecordCursor {
            r,
            endian,
            offset: data.offset,
            pos: data.offset,
            at: 0,
            end: data.end(),
            block: block.max(RECORD_HEADER_SIZE as usize),
            lenient,
            pending: None,
            own: ReadBuf::default(),
            skipped: Skipped::default(),
            tracing_data: None,
        }
    }

    fn stream(&self) -> bool {
        self.end == u64::MAX
    }

    /// Where in the buffer the next unread byte is: the bytes from here on
    /// were read ahead.
    pub(crate) fn at(&self) -> usize {
        self.at
    }

    /// The buffer's bytes before `at()` were dropped (the read-ahead moved
    /// to the start of a new buffer).
    pub(crate) fn rebase(&mut self, dropped: usize) {
        self.at = self.at.saturating_sub(dropped);
    }

    /// Reads until `need` bytes after `at` are in `buf`, or the input (or
    /// the section) ends; returns how many are (at most `need`).
    fn fill(&mut self, buf: &mut ReadBuf, need: usize) -> io::Result<usize> {
        loop {
            let ahead = buf.len().saturating_sub(self.at);
            if ahead >= need {
                return Ok(need);
            }
            // Not past the section: what follows it is not records.
            let read_to = self.pos.saturating_add(ahead as u64);
            let mut want = (need - ahead).max(self.block);
            if !self.stream() {
                let left = self.end.saturating_sub(read_to);
                want = want.min(usize::try_from(left).unwrap_or(usize::MAX));
            }
            if want == 0 {
                return Ok(ahead);
            }
            let room = buf.room(want);
            let n = loop {
                match self.r.read(room) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            };
            if n == 0 {
                return Ok(ahead);
            }
            buf.commit(n);
        }
    }

    /// Takes `n` bytes the buffer holds.
    fn consume(&mut self, n: usize) {
        self.at += n;
        self.pos += n as u64;
    }

    /// Reads the next 8 bytes, if there are 8 more.
    fn read_head(&mut self, buf: &mut ReadBuf) -> io::Result<Option<[u8; 8]>> {
        let got = self.fill(buf, RECORD_HEADER_SIZE as usize)?;
        let head = buf
            .get(self.at..self.at + got)
            .and_then(|b| <[u8; 8]>::try_from(b).ok());
        self.consume(got);
        Ok(head)
    }

    /// Skips `n` bytes: those read ahead, then the input's.
    fn skip(&mut self, buf: &mut ReadBuf, n: u64) -> io::Result<u64> {
        let ahead = buf.len().saturating_sub(self.at);
        let from_buf = usize::try_from(n).unwrap_or(usize::MAX).min(ahead);
        self.consume(from_buf);
        let rest = n - from_buf as u64;
        if rest == 0 {
            return Ok(n);
        }
        let k = io::copy(&mut (&mut self.r).take(rest), &mut io::sink())?;
        self.pos += k;
        Ok(from_buf as u64 + k)
    }

    /// Appends the next record's body (without trailing data) to `body` and
    /// returns its frame; `None` at the end of the section.
    pub(crate) fn next_into(
        &mut self,
        body: &mut Vec<u8>,
    ) -> Result<Option<RecordFrame>, LayoutError> {
        let mut own = std::mem::take(&mut self.own);
        if self.at >= own.len() {
            own.clear();
            self.at = 0;
        } else if self.at >= self.block {
            own.keep_from(self.at);
            self.at = 0;
        }
        let next = self.next_in(&mut own);
        if let Ok(Some((frame, at))) = &next {
            let len = usize::from(frame.size) - RECORD_HEADER_SIZE as usize;
            body.extend_from_slice(own.get(*at..*at + len).unwrap_or(&[]));
        }
        self.own = own;
        Ok(next?.map(|(frame, _)| frame))
    }

    /// The next record, read into `buf` (which holds what was read ahead
    /// from `at()` on): its frame and where its body (without trailing
    /// data) starts in `buf`; `None` at the end of the section.
    pub(crate) fn next_in(
        &mut self,
        buf: &mut ReadBuf,
    ) -> Result<Option<(RecordFrame, usize)>, LayoutError> {
        loop {
            let offset = self.offset;
            if offset >= self.end {
                return Ok(None);
            }
            let left = self.end - offset;
            let head = match self.pending.take() {
                Some(head) => head,
                None => {
                    let before = self.pos;
                    let head = if left < RECORD_HEADER_SIZE {
                        None
                    } else {
                        self.read_head(buf)?
                    };
                    let Some(head) = head else {
                        let got = if left < RECORD_HEADER_SIZE {
                            self.skip(buf, left)?
                        } else {
                            self.pos - before
                        };
                        if got == 0 && self.stream() {
                            return Ok(None);
                        }
                        let e = LayoutError::TruncatedRecord {
                            offset,
                            record_type: 0,
                            needed: RECORD_HEADER_SIZE,
                            left: got,
                        };
                        if !self.lenient {
                            return Err(e);
                        }
                        self.skipped.add_span(offset, got, || describe(&e));
                        self.offset = self.pos;
                        return Ok(None);
                    };
                    head
                }
            };
            match self.frame(buf, offset, head)? {
                Framed::Record(frame, at) => return Ok(Some((frame, at))),
                Framed::Refused(e) => {
                    if !self.lenient {
                        return Err(e);
                    }
                    let size = self.offset - offset;
                    let record_type = self.endian.u32(&head, 0).unwrap_or(0);
                    self.skipped.add_record(Some(offset), size, || {
                        format!("{}: {}", record_type_name(record_type), describe(&e))
                    });
                }
                Framed::Broken(e) => {
                    if !self.lenient {
                        return Err(e);
                    }
                    self.resync(buf, offset, &e)?;
                }
                Framed::Cut => {
                    let record_type = self.endian.u32(&head, 0).unwrap_or(0);
                    let e = LayoutError::TruncatedRecord {
                        offset,
                        record_type,
                        needed: self.endian.u16(&head, 6).unwrap_or(0).into(),
                        left: self.pos - offset,
                    };
                    if !self.lenient {
                        return Err(e);
                    }
                    self.skipped
                        .add_span(offset, self.pos - offset, || describe(&e));
                    self.offset = self.pos;
                    self.end = self.pos;
                    return Ok(None);
                }
            }
        }
    }

    /// Steps from a broken record at `start` to the next header that could
    /// be a record (or the end), counting the bytes stepped over.
    fn resync(&mut self, buf: &mut ReadBuf, start: u64, why: &LayoutError) -> io::Result<()> {
        // Keep to the 8-byte grid of `start`.
        let misaligned = (self.pos - start) % 8;
        if misaligned != 0 {
            self.skip(buf, 8 - misaligned)?;
        }
        loop {
            let at = self.pos;
            let left = self.end.saturating_sub(at);
            let head = if left < RECORD_HEADER_SIZE {
                self.skip(buf, left)?;
                None
            } else {
                self.read_head(buf)?
            };
            let Some(head) = head else {
                self.skipped
                    .add_span(start, self.pos - start, || describe(why));
                self.offset = self.pos;
                self.end = self.end.min(self.pos);
                return Ok(());
            };
            if plausible(self.endian, &head, left) {
                self.skipped.add_span(start, at - start, || describe(why));
                self.offset = at;
                self.pending = Some(head);
                return Ok(());
            }
        }
    }

    /// Reads the record whose header is `head`, at `offset`.
    fn frame(
        &mut self,
        buf: &mut ReadBuf,
        offset: u64,
        head: [u8; 8],
    ) -> Result<Framed, LayoutError> {
        let endian = self.endian;
        let left = self.end - offset;
        let record_type = endian.u32(&head, 0).unwrap_or(0);
        let misc = endian.u16(&head, 4).unwrap_or(0);
        let size = endian.u16(&head, 6).unwrap_or(0);
        if u64::from(size) < RECORD_HEADER_SIZE {
            return Ok(Framed::Broken(LayoutError::BadRecordSize {
                offset,
                record_type,
                size: size.into(),
            }));
        }
        if u64::from(size) > left {
            return Ok(Framed::Broken(LayoutError::TruncatedRecord {
                offset,
                record_type,
                needed: size.into(),
                left,
            }));
        }
        let len = usize::from(size) - RECORD_HEADER_SIZE as usize;
        let got = self.fill(buf, len)?;
        let at = self.at;
        self.consume(got);
        if got < len {
            return Ok(Framed::Cut);
        }
        let rec = buf.get(at..at + len).unwrap_or(&[]);
        let mut next = offset + u64::from(size);
        let trailing = match record_type {
            PERF_RECORD_AUXTRACE => endian.u64(rec, 0),
            PERF_RECORD_HEADER_TRACING_DATA => endian.u32(rec, 0).map(u64::from),
            _ => None,
        };
        if let Some(extra) = trailing {
            let fits = next.checked_add(extra).is_some_and(|n| n <= self.end)
                && (!self.stream() || extra <= TRAILING_MAX);
            if !fits {
                return Ok(Framed::Broken(LayoutError::TruncatedRecord {
                    offset,
                    record_type,
                    needed: u64::from(size).saturating_add(extra),
                    left,
                }));
            }
            let got = if record_type == PERF_RECORD_HEADER_TRACING_DATA {
                let ahead = buf.get(self.at..buf.len()).unwrap_or(&[]);
                let from_buf = usize::try_from(extra)
                    .unwrap_or(usize::MAX)
                    .min(ahead.len());
                let mut blob = ahead.get(..from_buf).unwrap_or(&[]).to_vec();
                self.consume(from_buf);
                let rest = extra - from_buf as u64;
                let got = (&mut self.r).take(rest).read_to_end(&mut blob)? as u64;
                self.pos += got;
                self.tracing_data = Some(blob);
                from_buf as u64 + got
            } else {
                self.skip(buf, extra)?
            };
            if got < extra {
                return Ok(Framed::Cut);
            }
            next += extra;
        }
        self.offset = next;
        let rec = buf.get(at..at + len).unwrap_or(&[]);
        if let Some(e) = refusal(endian, offset, record_type, misc, rec) {
            return Ok(Framed::Refused(e));
        }
        let frame = RecordFrame {
            offset,
            record_type,
            misc,
            size,
            next,
        };
        Ok(Framed::Record(frame, at))
    }
}

/// Why a soundly framed record must not reach the crates, if it must not.
fn refusal(
    endian: Endian,
    offset: u64,
    record_type: u32,
    misc: u16,
    body: &[u8],
) -> Option<LayoutError> {
    // The crate keeps the low 32 bits of the feature id (`as u32`): an id
    // with high bits set would reach it as EVENT_DESC unchecked.
    let feature =
        (record_type == PERF_RECORD_HEADER_FEATURE).then(|| endian.u64(body, 0).unwrap_or(0));
    if let Some(id) = feature
        && id >= FEATURE_BITS
    {
        return Some(LayoutError::BadRecord {
            offset,
            record_type,
            what: format!("feature id {id:#x} (perf's are below {FEATURE_BITS})"),
        });
    }
    if feature == Some(HEADER_EVENT_DESC.into()) {
        let desc = body.get(8..).unwrap_or(&[]);
        if let Err((at, what)) = check_event_desc(desc, endian) {
            return Some(LayoutError::BadSection {
                section: "EVENT_DESC".into(),
                offset: offset + RECORD_HEADER_SIZE + 8 + at as u64,
                what,
            });
        }
    }
    // linux-perf-event-reader asserts (panics) on a longer build-id.
    if record_type == PERF_RECORD_MMAP2
        && misc & MISC_MMAP_BUILD_ID != 0
        && let Some(&len) = body.get(32)
        && len > 20
    {
        return Some(LayoutError::BadRecord {
            offset,
            record_type,
            what: format!("build-id size {len} (at most 20)"),
        });
    }
    None
}

/// Whether `head` could start a record with `left` bytes to go: a type
/// perf writes (kernel 1..=21 with a cpumode perf knows, perf's own
/// 64..=83 with misc 0), a size that is a multiple of 8 and fits.
fn plausible(endian: Endian, head: &[u8; 8], left: u64) -> bool {
    let record_type = endian.u32(head, 0).unwrap_or(0);
    let misc = endian.u16(head, 4).unwrap_or(0);
    let size = u64::from(endian.u16(head, 6).unwrap_or(0));
    let known = match record_type {
        1..=21 => misc & 7 <= 5,
        64..=83 => misc == 0,
        _ => false,
    };
    known && size >= RECORD_HEADER_SIZE && size % 8 == 0 && size <= left
}

/// A framing problem in words, without the offset (the caller gives it).
pub(crate) fn describe(e: &LayoutError) -> String {
    match e {
        LayoutError::TruncatedRecord {
            record_type: 0,
            needed: 8,
            left,
            ..
        } => format!("{left} bytes, less than a record header"),
        LayoutError::TruncatedRecord {
            record_type,
            needed,
            left,
            ..
        } => format!(
            "{} of {needed} bytes, {left} left",
            record_type_name(*record_type)
        ),
        LayoutError::BadRecordSize {
            record_type, size, ..
        } => format!("{} with size {size}", record_type_name(*record_type)),
        LayoutError::BadRecord { what, .. } => what.clone(),
        LayoutError::BadSection { section, what, .. } => format!("{section}: {what}"),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests;
