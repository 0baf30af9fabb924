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

use std::collections::HashMap;
use std::io::Read;

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
    next: usize,
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
            next: 0,
            prev_max: (None, 0),
            cur_max: (None, 0),
            ready: 0,
            done: false,
        })
    }

    /// The next record in time order.
    pub fn next_record(&mut self) -> Result<Option<RawRecord<'_>>, LayoutError> {
        while self.next >= self.outgoing.len() {
            if self.done {
                return Ok(None);
            }
            self.read_round()?;
        }
        let Some(p) = self.outgoing.get(self.next).copied() else {
            return Ok(None);
        };
        self.next += 1;
        let body = self
            .out_bytes
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

    /// Reads until a round hands out records, or to the end.
    fn read_round(&mut self) -> Result<(), LayoutError> {
        self.outgoing.clear();
        self.out_bytes.clear();
        self.next = 0;
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
