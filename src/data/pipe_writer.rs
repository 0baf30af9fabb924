//! perf.data in pipe mode (`perf record -o -`): the same records as a file,
//! for outputs that cannot seek (`scry record -o - | perf script -i -`).
//!
//! Stream layout, as perf 6.1 writes and reads it:
//!
//! ```text
//! "PERFILE2" u64 16                                  (perf_pipe_file_header)
//! PERF_RECORD_HEADER_ATTR     per event: attr + its ids
//! PERF_RECORD_HEADER_FEATURE  per feature: u64 feature bit + section bytes
//! PERF_RECORD_HEADER_FEATURE  HEADER_LAST_FEATURE (32), no bytes: "end of features"
//! PERF_RECORD_HEADER_TRACING_DATA  u32 size, then the blob, 8-aligned,
//!                                  *after* the record (outside its size)
//! kernel records ...
//! ```
//!
//! Decisions:
//! - Everything about the recording must be known before the first record:
//!   features whose values only exist at the end (build-ids, the sample
//!   time range) are left out, as perf does in pipe mode. Readers then find
//!   binaries by path, which is right for a stream read as it is recorded.
//! - Event names travel in the EVENT_DESC feature: perf 6.1 names the attrs
//!   of the stream from it (matching ids), so no EVENT_UPDATE is needed.
//! - Record sizes are u16: a feature section longer than a record can hold
//!   (64 KiB) is left out rather than corrupting the stream; an attr with
//!   too many ids for one record is an error (perf could not read it).
//! - Attrs are normalized exactly as in the file writer (`writer`).

use std::io::{self, BufWriter, Write};

use super::features::{Features, bit};
use super::raw::{
    PERF_RECORD_HEADER_ATTR, PERF_RECORD_HEADER_FEATURE, PERF_RECORD_HEADER_TRACING_DATA,
};
use super::writer::{
    EventDesc, FINISHED_ROUND, append_records, encode_event_desc, normalize_events,
};

/// `HEADER_LAST_FEATURE` of perf 6.1: the end-of-features marker.
const HEADER_LAST_FEATURE: u64 = 32;
const PIPE_HEADER_SIZE: u64 = 16;
const BUF_CAPACITY: usize = 1 << 20;

#[cfg(target_endian = "little")]
const MAGIC: &[u8; 8] = b"PERFILE2";
#[cfg(target_endian = "big")]
const MAGIC: &[u8; 8] = b"2ELIFREP";

/// Streams a recording in perf's pipe format. See the module doc.
pub struct PerfPipeWriter<W: Write> {
    out: BufWriter<W>,
    data_size: u64,
}

impl<W: Write> PerfPipeWriter<W> {
    /// Writes the pipe header, the attrs, the features and the tracing
    /// data; records follow with [`write_records`](Self::write_records).
    pub fn new(w: W, events: &[EventDesc], features: &Features) -> io::Result<Self> {
        let mut out = BufWriter::with_capacity(BUF_CAPACITY, w);
        out.write_all(MAGIC)?;
        out.write_all(&PIPE_HEADER_SIZE.to_ne_bytes())?;

        let events = normalize_events(events)?;
        for e in &events {
            let mut body = e.attr.clone();
            for id in &e.ids {
                body.extend_from_slice(&id.to_ne_bytes());
            }
            let rec = record(PERF_RECORD_HEADER_ATTR, &body).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "perf.data pipe writer: event {:?} has {} ids, too many for one \
                         PERF_RECORD_HEADER_ATTR",
                        e.name,
                        e.ids.len()
                    ),
                )
            })?;
            out.write_all(&rec)?;
        }

        let mut sections = features.sections();
        // perf warns of a feature record past its last feature (scry's own
        // sections): the pipe format carries perf's only.
        sections.retain(|(b, _)| {
            ![bit::TRACING_DATA, bit::BUILD_ID, bit::EVENT_DESC].contains(b)
                && u64::from(*b) < HEADER_LAST_FEATURE
        });
        sections.push((bit::EVENT_DESC, encode_event_desc(&events)));
        sections.sort_by_key(|(b, _)| *b);
        for (feature, bytes) in &sections {
            let mut body = u64::from(*feature).to_ne_bytes().to_vec();
            body.extend_from_slice(bytes);
            if let Some(rec) = record(PERF_RECORD_HEADER_FEATURE, &body) {
                out.write_all(&rec)?;
            }
        }
        let last = record(
            PERF_RECORD_HEADER_FEATURE,
            &HEADER_LAST_FEATURE.to_ne_bytes(),
        );
        out.write_all(&last.unwrap_or_default())?;

        if let Some(blob) = &features.tracing_data {
            let aligned = blob.len().next_multiple_of(8);
            let size = u32::try_from(aligned).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("perf.data pipe writer: tracing data of {aligned} bytes"),
                )
            })?;
            // perf's struct is 12 bytes; its record is 16 (u64-aligned).
            let mut body = size.to_ne_bytes().to_vec();
            body.extend_from_slice(&[0; 4]);
            out.write_all(&record(PERF_RECORD_HEADER_TRACING_DATA, &body).unwrap_or_default())?;
            out.write_all(blob)?;
            out.write_all(&vec![0; aligned - blob.len()])?;
        }
        Ok(PerfPipeWriter { out, data_size: 0 })
    }

    /// Appends one or more whole kernel records, as `PerfDataWriter` does.
    pub fn write_records(&mut self, raw: &[u8]) -> io::Result<()> {
        append_records(&mut self.out, &mut self.data_size, raw)
    }

    /// Appends a `PERF_RECORD_FINISHED_ROUND` (see `PerfDataWriter`).
    pub(crate) fn write_finished_round(&mut self) -> io::Result<()> {
        self.write_records(&FINISHED_ROUND)
    }

    /// Bytes of records written after the metadata.
    pub(crate) fn data_size(&self) -> u64 {
        self.data_size
    }

    /// Flushes whatever is buffered, so a reader sees records promptly.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the output.
    pub fn finish(self) -> io::Result<W> {
        self.out
            .into_inner()
            .map_err(io::IntoInnerError::into_error)
    }
}

/// A user record `kind` around `body`, or `None` if it does not fit the
/// u16 size of a record header.
fn record(kind: u32, body: &[u8]) -> Option<Vec<u8>> {
    let size = u16::try_from(8 + body.len()).ok()?;
    let mut rec = Vec::with_capacity(usize::from(size));
    rec.extend_from_slice(&kind.to_ne_bytes());
    rec.extend_from_slice(&0u16.to_ne_bytes());
    rec.extend_from_slice(&size.to_ne_bytes());
    rec.extend_from_slice(body);
    Some(rec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn attr() -> Vec<u8> {
        let mut a = vec![0u8; 128];
        a[0..4].copy_from_slice(&1u32.to_ne_bytes());
        a[4..8].copy_from_slice(&128u32.to_ne_bytes());
        a[24..32].copy_from_slice(&7u64.to_ne_bytes()); // IP | TID | TIME
        a
    }

    fn sample(time: u64) -> Vec<u8> {
        let mut r = 9u32.to_ne_bytes().to_vec();
        r.extend_from_slice(&2u16.to_ne_bytes());
        r.extend_from_slice(&32u16.to_ne_bytes());
        r.extend_from_slice(&0x1000u64.to_ne_bytes());
        r.extend_from_slice(&[7, 0, 0, 0, 7, 0, 0, 0]);
        r.extend_from_slice(&time.to_ne_bytes());
        r
    }

    #[test]
    fn linux_perf_data_reads_the_stream() {
        let events = [EventDesc {
            attr: attr(),
            ids: vec![3, 4],
            name: "cpu-clock".into(),
        }];
        let features = Features {
            hostname: "host".into(),
            cmdline: vec!["scry".into()],
            ..Features::default()
        };
        let mut w = PerfPipeWriter::new(Vec::new(), &events, &features).unwrap();
        w.write_records(&sample(10)).unwrap();
        w.write_finished_round().unwrap();
        w.write_records(&sample(20)).unwrap();
        assert!(w.write_records(&sample(30)[..20]).is_err());
        let stream = w.finish().unwrap();
        assert_eq!(&stream[..16], b"PERFILE2\x10\0\0\0\0\0\0\0");

        use linux_perf_data::{PerfFileReader, PerfFileRecord};
        let PerfFileReader {
            mut perf_file,
            mut record_iter,
        } = PerfFileReader::parse_pipe(Cursor::new(stream)).unwrap();
        assert_eq!(perf_file.hostname().unwrap(), Some("host"));
        let attrs = perf_file.event_attributes();
        assert_eq!(
            (attrs[0].name(), attrs[0].ids()),
            (Some("cpu-clock"), &[3u64, 4][..])
        );
        let mut times = Vec::new();
        let mut user = Vec::new();
        while let Some(rec) = record_iter.next_record(&mut perf_file).unwrap() {
            match rec {
                PerfFileRecord::EventRecord { record, .. } => {
                    times.push(record.timestamp().unwrap_or(0));
                }
                PerfFileRecord::UserRecord(r) => user.push(r.record_type.record_type().0),
            }
        }
        assert_eq!(times, [10, 20]);
        assert!(user.is_empty(), "FINISHED_ROUND is consumed: {user:?}");
    }

    #[test]
    fn oversized_features_are_left_out_not_corrupting() {
        let events = [EventDesc {
            attr: attr(),
            ids: vec![1],
            name: "x".into(),
        }];
        let features = Features {
            cmdline: vec!["y".repeat(70_000)],
            ..Features::default()
        };
        let stream = PerfPipeWriter::new(Vec::new(), &events, &features)
            .unwrap()
            .finish()
            .unwrap();
        let mut at = 16;
        let mut kinds = Vec::new();
        while at < stream.len() {
            let kind = u32::from_ne_bytes(stream[at..at + 4].try_into().unwrap());
            let feature = u64::from_ne_bytes(stream[at + 8..at + 16].try_into().unwrap());
            kinds.push((
                kind,
                if kind == PERF_RECORD_HEADER_FEATURE {
                    feature
                } else {
                    0
                },
            ));
            at += usize::from(u16::from_ne_bytes([stream[at + 6], stream[at + 7]]));
        }
        assert_eq!(at, stream.len());
        assert!(!kinds.contains(&(PERF_RECORD_HEADER_FEATURE, u64::from(bit::CMDLINE))));
        assert_eq!(
            kinds.last(),
            Some(&(PERF_RECORD_HEADER_FEATURE, HEADER_LAST_FEATURE))
        );
    }
}
