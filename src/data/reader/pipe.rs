//! The pipe format (`perf record -o -`) as the crate reads it: a stream
//! that has passed the framing checks, record by record, as it is read.
//!
//! Why an adapter: a stream can neither be checked ahead nor read twice, and
//! the crate must only see records it cannot be hurt by. So the crate reads
//! through [`CheckedPipe`], which hands it the 16-byte header and then each
//! record the lenient [`RecordCursor`] accepts. Left out on the way, and
//! kept in [`PipeState`] for the reader:
//! - what the framing skipped (bad records, bytes that are not records, a
//!   record cut by the end, such as perf's own "[ perf record: ..." text
//!   written into the stream by a `2>&1`);
//! - HEADER_TRACING_DATA: its blob follows the record outside its size,
//!   which the crate does not know (it would read the blob as records); the
//!   blob is kept for `tracing_data()`;
//! - AUXTRACE records and their data (scry decodes no hardware trace).
//!
//! The raw `read_format` of each HEADER_ATTR is noted on the way too: the
//! crate drops bits it does not know (PERF_FORMAT_LOST).

use std::io::{self, Read};
use std::sync::{Arc, Mutex};

use crate::data::raw::{
    PERF_RECORD_AUXTRACE, PERF_RECORD_HEADER_ATTR, PERF_RECORD_HEADER_TRACING_DATA,
};

use super::framing::{RecordCursor, Skipped, header_bytes};
use super::layout::{Endian, LayoutError, PIPE_HEADER_SIZE, Section};

/// What the adapter found, for the reader.
#[derive(Debug, Default)]
pub(super) struct PipeState {
    pub(super) skipped: Skipped,
    pub(super) tracing_data: Option<Vec<u8>>,
    /// `attr.read_format` of each HEADER_ATTR, in order.
    pub(super) read_formats: Vec<u64>,
}

/// See the module doc.
pub(super) struct CheckedPipe<R: Read> {
    cursor: RecordCursor<R>,
    endian: Endian,
    header: Option<Vec<u8>>,
    out: Vec<u8>,
    at: usize,
    body: Vec<u8>,
    state: Arc<Mutex<PipeState>>,
}

impl<R: Read> CheckedPipe<R> {
    /// `header` is the stream's first 16 bytes, already read; `r` the rest.
    pub(super) fn new(header: Vec<u8>, r: R, endian: Endian) -> (Self, Arc<Mutex<PipeState>>) {
        let state = Arc::new(Mutex::new(PipeState::default()));
        let records = Section {
            offset: PIPE_HEADER_SIZE,
            size: u64::MAX - PIPE_HEADER_SIZE,
        };
        let pipe = CheckedPipe {
            cursor: RecordCursor::new(r, records, endian, 1 << 16, true),
            endian,
            header: Some(header),
            out: Vec::with_capacity(1 << 16),
            at: 0,
            body: Vec::with_capacity(1 << 16),
            state: Arc::clone(&state),
        };
        (pipe, state)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PipeState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Fills `out` with the next record; false at the end.
    fn refill(&mut self) -> io::Result<bool> {
        self.out.clear();
        self.at = 0;
        if let Some(header) = self.header.take() {
            self.out.extend_from_slice(&header);
            return Ok(true);
        }
        loop {
            self.body.clear();
            let frame = match self.cursor.next_into(&mut self.body) {
                Ok(Some(frame)) => frame,
                Ok(None) => {
                    // The crate may read again after the end: merge, once.
                    let skipped = std::mem::take(&mut self.cursor.skipped);
                    self.state().skipped.merge(&skipped);
                    return Ok(false);
                }
                Err(LayoutError::Io(e)) => return Err(e),
                Err(e) => return Err(io::Error::other(format!("{e:?}"))),
            };
            match frame.record_type {
                PERF_RECORD_AUXTRACE => continue,
                PERF_RECORD_HEADER_TRACING_DATA => {
                    let blob = self.cursor.tracing_data.take();
                    self.state().tracing_data = blob;
                    continue;
                }
                PERF_RECORD_HEADER_ATTR => {
                    let read_format = self.endian.u64(&self.body, 32).unwrap_or(0);
                    self.state().read_formats.push(read_format);
                }
                _ => {}
            }
            self.out
                .extend_from_slice(&header_bytes(&frame, self.endian));
            self.out.extend_from_slice(&self.body);
            return Ok(true);
        }
    }
}

impl<R: Read> Read for CheckedPipe<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.out.len() && !self.refill()? {
            return Ok(0);
        }
        let rest = &self.out[self.at..];
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.at += n;
        Ok(n)
    }
}
