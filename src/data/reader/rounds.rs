//! Records in time order, read straight from the file: the reader's path for
//! plain (uncompressed, non-pipe) files, which is nearly every file.
//!
//! Why not the crate's iterator: it reads each record into a `Vec` of its
//! own, keeps a queue of them, and moves every record twice; on a 400k-sample
//! file that was a quarter of `scry report`'s time. Here the file is read in
//! blocks straight into the buffer of the one sorter (`data::order`, perf's
//! FINISHED_ROUND rule, keyed by time and file offset, so equal times keep
//! file order), records are framed where they landed, and the sorter hands
//! a round's buffer out whole: no record is copied, but the few read past
//! a round's end (see `READ_BLOCK`). Records of an unknown event id go to
//! event 0, as the crate does.
//!
//! Framing is checked as it is read (`framing::RecordCursor`, lenient: what
//! it skips comes back with the end of the records), so this path needs no
//! separate validation pass.
//!
//! `RoundsThread` runs all of this on a thread of its own and hands each
//! round over whole, so reading, framing and sorting overlap the caller's
//! parsing and use of the records.

use std::collections::HashMap;
use std::io::{self, Read};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, Mutex};

use linux_perf_data::linux_perf_event_reader::{
    AttrFlags, Endianness, RecordIdParseInfo, RecordParseInfo, RecordType, SampleFormat,
    get_record_id, get_record_identifier, get_record_timestamp,
};

use super::EventDesc;
use super::framing::{RecordCursor, Skipped};
use super::layout::{Endian, LayoutError, RECORD_HEADER_SIZE, Section};
use crate::data::order::{Batch, RoundOrder};
use crate::data::raw::{
    PERF_RECORD_COMPRESSED, PERF_RECORD_COMPRESSED2, PERF_RECORD_FINISHED_ROUND, RawRecord,
};

/// The least one read of the data section asks for: big enough that
/// system calls are few (two thousand for 250 MB), small enough that what
/// is read past a round's end, copied to the next round's buffer, is
/// little (rounds are about 1 MB).
const READ_BLOCK: usize = 1 << 17;

/// How a record's event (attribute) is found, as the crate decides it.
enum IdLookup {
    OnlyOne,
    Same(RecordIdParseInfo),
    Identifier { sample_id_all: bool },
}

/// A record handed out in time order: its bytes borrow from the reader.
pub(crate) struct FileRecord<'a> {
    pub(crate) raw: RawRecord<'a>,
    pub(crate) offset: u64,
    /// None for perf's own (user) record types.
    pub(crate) attr_index: Option<usize>,
    /// The parse info of the record's event (with `attr_index`).
    pub(crate) parse_info: Option<RecordParseInfo>,
}

/// See the module doc.
pub(crate) struct Rounds<R: Read> {
    cursor: RecordCursor<R>,
    endian: Endianness,
    lookup: IdLookup,
    parse_infos: Vec<RecordParseInfo>,
    attr_by_id: HashMap<u64, usize>,
    order: RoundOrder,
    /// A round's batch, once it has ready records.
    outgoing: Option<Batch>,
    done: bool,
}

impl<R: Read> Rounds<R> {
    /// Returns `None` when the crate would not read these events' records
    /// the same way (several events without a common way to find the id):
    /// the caller then takes the crate's path, and its error.
    pub(crate) fn new(r: R, data: Section, endian: Endian, events: &[EventDesc]) -> Option<Self> {
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
            cursor: RecordCursor::new(r, data, endian, READ_BLOCK, true),
            endian: endianness,
            lookup,
            parse_infos,
            attr_by_id,
            order: RoundOrder::new(),
            outgoing: None,
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
            if let Some(batch) = self.outgoing.take() {
                if !batch.is_empty() {
                    return Ok(Some(batch));
                }
                self.order.recycle(batch);
            }
        }
    }

    /// Reads until a round hands out records, or to the end.
    fn read_round(&mut self) -> Result<(), LayoutError> {
        loop {
            let Some((frame, pos)) = self.cursor.next_in(self.order.buffer())? else {
                self.outgoing = self.order.finish();
                self.done = true;
                return Ok(());
            };
            match frame.record_type {
                PERF_RECORD_FINISHED_ROUND => {
                    // What was read past the round moves to the next buffer.
                    let end = self.cursor.at();
                    self.outgoing = self.order.finish_round_at(end);
                    if self.outgoing.is_some() {
                        self.cursor.rebase(end);
                        return Ok(());
                    }
                    continue;
                }
                PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2 => {
                    let size = u64::from(frame.size);
                    self.cursor
                        .skipped
                        .add_record(Some(frame.offset), size, || {
                            "compressed data in a file whose header does not say it is compressed"
                                .into()
                        });
                    continue;
                }
                _ => {}
            }
            let len = usize::from(frame.size).saturating_sub(RECORD_HEADER_SIZE as usize);
            let body = self.order.buffered().get(pos..pos + len).unwrap_or(&[]);
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
            self.order
                .push(key, pos, len, frame.record_type, frame.misc, attr);
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
}

enum Message {
    Batch(Batch),
    End(Skipped),
    Failed(LayoutError),
}

/// `Rounds` on a thread of its own; see the module doc.
pub(crate) struct RoundsThread {
    rx: Receiver<Message>,
    /// Spent batches, back to the reading thread.
    back: Sender<Batch>,
    parse_infos: Vec<RecordParseInfo>,
    batch: Batch,
    next: usize,
    done: bool,
    /// What the framing skipped, once the end is reached.
    pub(crate) skipped: Arc<Mutex<Skipped>>,
}

impl RoundsThread {
    pub(crate) fn spawn<R: Read + Send + 'static>(mut rounds: Rounds<R>) -> io::Result<Self> {
        // One round queued: the thread reads the next round while the
        // caller uses this one and another waits. With a rendezvous (no
        // queue) the two threads waited on each other whenever one round
        // took longer to read than the last took to use: measured with
        // perf stat -r 15, interleaved, a queue of one took the bench's
        // shallow report from 36-38 ms to 32-33 ms and the deep one from
        // 169 to 160 ms, for one round more in memory (2.5 MB on the
        // shallow file, 3.5 MB on the deep one).
        let (tx, rx): (SyncSender<Message>, _) = sync_channel(1);
        let (back, spent) = channel::<Batch>();
        let parse_infos = rounds.parse_infos.clone();
        std::thread::Builder::new()
            .name("perf.data".into())
            .spawn(move || {
                loop {
                    while let Ok(batch) = spent.try_recv() {
                        rounds.order.recycle(batch);
                    }
                    let message = match rounds.next_batch() {
                        Ok(Some(batch)) => Message::Batch(batch),
                        Ok(None) => Message::End(std::mem::take(&mut rounds.cursor.skipped)),
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
            back,
            parse_infos,
            batch: Batch::default(),
            next: 0,
            done: false,
            skipped: Arc::default(),
        })
    }

    /// The next record in time order.
    pub(crate) fn next_record(&mut self) -> Result<Option<FileRecord<'_>>, LayoutError> {
        while self.next >= self.batch.len() {
            if self.done {
                return Ok(None);
            }
            // Given back before the next is taken: the thread, let go by
            // the taking, fills its buffer again rather than a new one
            // (one round fewer in memory). The thread may have ended: the
            // batch is then dropped.
            if !self.batch.is_empty() {
                let _ = self.back.send(std::mem::take(&mut self.batch));
            }
            match self.rx.recv() {
                Ok(Message::Batch(batch)) => {
                    self.batch = batch;
                    self.next = 0;
                }
                Ok(Message::End(skipped)) => {
                    self.done = true;
                    *self.skipped.lock().unwrap_or_else(|p| p.into_inner()) = skipped;
                }
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
        let Some(record) = self.batch.get(self.next) else {
            return Ok(None);
        };
        self.next += 1;
        let attr_index = record.event;
        Ok(Some(FileRecord {
            raw: record.raw,
            offset: record.seq,
            attr_index,
            parse_info: attr_index.and_then(|a| self.parse_infos.get(a).copied()),
        }))
    }
}
