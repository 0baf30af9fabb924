//! Records in time order, read straight from the file: the reader's path for
//! plain (uncompressed, non-pipe) files, which is nearly every file.
//!
//! Why not the crate's iterator: it reads each record into a `Vec` of its
//! own, keeps a queue of them, and moves every record twice; on a 400k-sample
//! file that was a quarter of `scry report`'s time. Here a round's records
//! sit in one byte buffer, the sort moves 40-byte keys, and each record is
//! copied once more, into the buffer of records ready to hand out.
//!
//! Ordering is perf's and the crate's (`FINISHED_ROUND`): at the end of a
//! round, the records with a key not above the previous round's largest are
//! sorted and handed out; the rest wait for the next round. A key is the
//! record's timestamp, then its file offset, so equal times keep file order.
//! Records of an unknown event id go to event 0, as the crate does.
//!
//! Framing is checked as it is read (`layout::RecordCursor`), so this path
//! needs no separate validation pass.
//!
//! `RoundsThread` runs all of this on a thread of its own and hands each
//! round over whole, so reading, framing and sorting overlap the caller's
//! parsing and use of the records.

use std::collections::HashMap;
use std::io::{self, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use linux_perf_data::linux_perf_event_reader::{
    AttrFlags, Endianness, RecordIdParseInfo, RecordParseInfo, RecordType, SampleFormat,
    get_record_id, get_record_identifier, get_record_timestamp,
};

use super::EventDesc;
use super::layout::{Endian, LayoutError, RecordCursor, Section};

const PERF_RECORD_FINISHED_ROUND: u32 = 68;
const PERF_RECORD_COMPRESSED: u32 = 81;
const PERF_RECORD_COMPRESSED2: u32 = 83;

/// How a record's event (attribute) is found, as the crate decides it.
enum IdLookup {
    OnlyOne,
    Same(RecordIdParseInfo),
    Identifier { sample_id_all: bool },
}

/// A record waiting in a buffer.
#[derive(Clone, Copy, Debug)]
struct Pending {
    key: (Option<u64>, u64),
    pos: usize,
    len: u32,
    record_type: u32,
    misc: u16,
    attr: Option<u32>,
}

/// A record handed out: its bytes borrow from the reader.
pub struct RawRecord<'a> {
    pub offset: u64,
    pub record_type: u32,
    pub misc: u16,
    /// None for perf's own (user) record types.
    pub attr_index: Option<usize>,
    /// The parse info of the record's event (with `attr_index`).
    pub parse_info: Option<RecordParseInfo>,
    pub body: &'a [u8],
}

/// See the module doc.
pub struct Rounds<R: Read> {
    cursor: RecordCursor<R>,
    endian: Endianness,
    lookup: IdLookup,
    parse_infos: Vec<RecordParseInfo>,
    attr_by_id: HashMap<u64, usize>,
    incoming: Vec<Pending>,
    in_bytes: Vec<u8>,
    spare: Vec<u8>,
    outgoing: Vec<Pending>,
    out_bytes: Vec<u8>,
    prev_max: (Option<u64>, u64),
    cur_max: (Option<u64>, u64),
    /// Records in `incoming` whose key is not above `prev_max`.
    ready: usize,
    done: bool,
}

impl<R: Read> Rounds<R> {
    /// Returns `None` when the crate would not read these events' records
    /// the same way (several events without a common way to find the id):
    /// the caller then takes the crate's path, and its error.
    pub fn new(r: R, data: Section, endian: Endian, events: &[EventDesc]) -> Option<Self> {
        let endianness = match endian {
            Endian::Little => Endianness::LittleEndian,
            Endian::Big => Endianness::BigEndian,
        };
        let parse_infos: Vec<RecordParseInfo> = events
            .iter()
            .map(|e| RecordParseInfo::new(&e.attr, endianness))
            .collect();
        let first = parse_infos.first()?;
        let lookup = if parse_infos.len() == 1 {
            IdLookup::OnlyOne
        } else if parse_infos
            .iter()
            .all(|p| p.id_parse_info == first.id_parse_info)
        {
            IdLookup::Same(first.id_parse_info)
        } else {
            let all = |e: &EventDesc| e.attr.flags.contains(AttrFlags::SAMPLE_ID_ALL);
            let sample_id_all = all(events.first()?);
            let usable = events.iter().all(|e| {
                e.attr.sample_format.contains(SampleFormat::IDENTIFIER) && all(e) == sample_id_all
            });
            if !usable {
                return None;
            }
            IdLookup::Identifier { sample_id_all }
        };
        let mut attr_by_id = HashMap::new();
        for (i, e) in events.iter().enumerate() {
            for &id in &e.ids {
                attr_by_id.insert(id, i);
            }
        }
        Some(Rounds {
            cursor: RecordCursor::new(r, data, endian, 1 << 20),
            endian: endianness,
            lookup,
            parse_infos,
            attr_by_id,
            incoming: Vec::new(),
            in_bytes: Vec::new(),
            spare: Vec::new(),
            outgoing: Vec::new(),
            out_bytes: Vec::new(),
            prev_max: (None, 0),
            cur_max: (None, 0),
            ready: 0,
            done: false,
        })
    }

    /// The next round's records in time order, taken whole.
    fn next_batch(&mut self) -> Result<Option<Batch>, LayoutError> {
        loop {
            if self.done {
                return Ok(None);
            }
            self.read_round()?;
            if !self.outgoing.is_empty() {
                return Ok(Some(Batch {
                    bytes: std::mem::take(&mut self.out_bytes),
                    records: std::mem::take(&mut self.outgoing),
                }));
            }
        }
    }

    /// Reads until a round hands out records, or to the end.
    fn read_round(&mut self) -> Result<(), LayoutError> {
        self.outgoing.clear();
        self.out_bytes.clear();
        loop {
            let pos = self.in_bytes.len();
            let Some(frame) = self.cursor.next_into(&mut self.in_bytes)? else {
                self.finish();
                return Ok(());
            };
            match frame.record_type {
                PERF_RECORD_FINISHED_ROUND => {
                    self.in_bytes.truncate(pos);
                    self.finish_round();
                    if !self.outgoing.is_empty() {
                        return Ok(());
                    }
                    continue;
                }
                PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2 => {
                    return Err(LayoutError::BadRecord {
                        offset: frame.offset,
                        record_type: frame.record_type,
                        what:
                            "compressed data in a file whose header does not say it is compressed"
                                .into(),
                    });
                }
                _ => {}
            }
            let body = self.in_bytes.get(pos..).unwrap_or(&[]);
            let record_type = RecordType(frame.record_type);
            let (attr, time) = if record_type.is_builtin_type() {
                let attr = self.attr_of(record_type, body);
                let time =
                    self.parse_infos
                        .get(attr)
                        .and_then(|info| match self.endian {
                            Endianness::LittleEndian => get_record_timestamp::<
                                byteorder::LittleEndian,
                            >(
                                record_type, body.into(), info
                            ),
                            Endianness::BigEndian => get_record_timestamp::<byteorder::BigEndian>(
                                record_type,
                                body.into(),
                                info,
                            ),
                        });
                (Some(attr as u32), time)
            } else {
                (None, None)
            };
            let key = (time, frame.offset);
            if key <= self.prev_max {
                self.ready += 1;
            } else if key > self.cur_max {
                self.cur_max = key;
            }
            self.incoming.push(Pending {
                key,
                pos,
                len: (self.in_bytes.len() - pos) as u32,
                record_type: frame.record_type,
                misc: frame.misc,
                attr,
            });
        }
    }

    fn attr_of(&self, record_type: RecordType, body: &[u8]) -> usize {
        let id = match (&self.lookup, self.endian) {
            (IdLookup::OnlyOne, _) => return 0,
            (IdLookup::Same(info), Endianness::LittleEndian) => {
                get_record_id::<byteorder::LittleEndian>(record_type, body.into(), info)
            }
            (IdLookup::Same(info), Endianness::BigEndian) => {
                get_record_id::<byteorder::BigEndian>(record_type, body.into(), info)
            }
            (IdLookup::Identifier { sample_id_all }, Endianness::LittleEndian) => {
                get_record_identifier::<byteorder::LittleEndian>(
                    record_type,
                    body.into(),
                    *sample_id_all,
                )
            }
            (IdLookup::Identifier { sample_id_all }, Endianness::BigEndian) => {
                get_record_identifier::<byteorder::BigEndian>(
                    record_type,
                    body.into(),
                    *sample_id_all,
                )
            }
        };
        id.and_then(|id| self.attr_by_id.get(&id).copied())
            .unwrap_or(0)
    }

    /// Hands out the first `ready` records in key order; the rest wait.
    fn finish_round(&mut self) {
        let n = self.ready.min(self.incoming.len());
        if n > 0 {
            self.incoming.sort_by_key(|p| p.key);
            self.hand_out(n);
        }
        self.prev_max = self.cur_max;
        self.ready = self.incoming.len();
    }

    /// The end of the data: everything in key order.
    fn finish(&mut self) {
        self.incoming.sort_by_key(|p| p.key);
        self.hand_out(self.incoming.len());
        self.prev_max = self.cur_max;
        self.done = true;
    }

    /// Moves the first `n` records of `incoming` (sorted) to `outgoing`,
    /// their bytes to `out_bytes`, and packs the rest into a fresh buffer.
    fn hand_out(&mut self, n: usize) {
        for p in self.incoming.drain(..n) {
            let bytes = self
                .in_bytes
                .get(p.pos..p.pos + p.len as usize)
                .unwrap_or(&[]);
            let pos = self.out_bytes.len();
            self.out_bytes.extend_from_slice(bytes);
            self.outgoing.push(Pending { pos, ..p });
        }
        self.spare.clear();
        for p in &mut self.incoming {
            let bytes = self
                .in_bytes
                .get(p.pos..p.pos + p.len as usize)
                .unwrap_or(&[]);
            p.pos = self.spare.len();
            self.spare.extend_from_slice(bytes);
        }
        std::mem::swap(&mut self.in_bytes, &mut self.spare);
    }
}

/// A round's records and their bytes, as the reading thread hands them over.
#[derive(Debug, Default)]
struct Batch {
    bytes: Vec<u8>,
    records: Vec<Pending>,
}

enum Message {
    Batch(Batch),
    End,
    Failed(LayoutError),
}

/// `Rounds` on a thread of its own; see the module doc.
pub struct RoundsThread {
    rx: Receiver<Message>,
    parse_infos: Vec<RecordParseInfo>,
    batch: Batch,
    next: usize,
    done: bool,
}

impl RoundsThread {
    pub fn spawn<R: Read + Send + 'static>(mut rounds: Rounds<R>) -> io::Result<Self> {
        // Two rounds in flight: enough to overlap, and memory stays bounded.
        let (tx, rx): (SyncSender<Message>, _) = sync_channel(2);
        let parse_infos = rounds.parse_infos.clone();
        std::thread::Builder::new()
            .name("perf.data".into())
            .spawn(move || {
                loop {
                    let message = match rounds.next_batch() {
                        Ok(Some(batch)) => Message::Batch(batch),
                        Ok(None) => Message::End,
                        Err(e) => Message::Failed(e),
                    };
                    let last = !matches!(message, Message::Batch(_));
                    // A closed channel: the reader was dropped early.
                    if tx.send(message).is_err() || last {
                        return;
                    }
                }
            })?;
        Ok(RoundsThread {
            rx,
            parse_infos,
            batch: Batch::default(),
            next: 0,
            done: false,
        })
    }

    /// The next record in time order.
    pub fn next_record(&mut self) -> Result<Option<RawRecord<'_>>, LayoutError> {
        while self.next >= self.batch.records.len() {
            if self.done {
                return Ok(None);
            }
            match self.rx.recv() {
                Ok(Message::Batch(batch)) => {
                    self.batch = batch;
                    self.next = 0;
                }
                Ok(Message::End) => self.done = true,
                Ok(Message::Failed(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Err(LayoutError::Io(io::Error::other(
                        "the thread reading the file stopped before the end",
                    )));
                }
            }
        }
        let Some(p) = self.batch.records.get(self.next).copied() else {
            return Ok(None);
        };
        self.next += 1;
        let body = self
            .batch
            .bytes
            .get(p.pos..p.pos + p.len as usize)
            .unwrap_or(&[]);
        Ok(Some(RawRecord {
            offset: p.key.1,
            record_type: p.record_type,
            misc: p.misc,
            attr_index: p.attr.map(|a| a as usize),
            parse_info: p
                .attr
                .and_then(|a| self.parse_infos.get(a as usize).copied()),
            body,
        }))
    }
}
