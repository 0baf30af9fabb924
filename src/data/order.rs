//! Per-CPU streams merged in time order: the one sorter of records, for
//! files (`reader::rounds`), live rings (`capture::live`) and the tracer
//! (`capture::trace`); and [`RingOrder`], which puts a live ring's bytes
//! through it and the dispatcher.
//!
//! Ordering is perf's (`FINISHED_ROUND`, linux-perf-data's `sorter.rs`):
//! records come in rounds (a file's FINISHED_ROUND, one drain of every
//! ring); at the end of a round, the records with a key not above the
//! previous round's largest are sorted and handed out, the rest wait for
//! the next round (a record of one ring may arrive a round after a newer
//! record of another ring; anything older than the previous round's newest
//! record has surely arrived); at the end, everything is. A key is the
//! record's time, then its sequence number (a file offset, or the order of
//! arrival), so equal times keep their arrival order.
//!
//! Memory: a round's records sit in one byte buffer and the sort moves
//! 40-byte keys; at the end of a round its buffer is frozen (an `Arc`) and
//! handed out (a [`Batch`]) with the previous round's, which holds the
//! records that waited, and the sorted keys of the ready records. Records
//! that must wait stay where they are: the sorter keeps the frozen buffer
//! for the next batch (every record a round leaves waiting is ready at the
//! end of the next one, so a batch spans two buffers at most). Copying the
//! waiting records into the next buffer instead was 8% of a deep report's
//! CPU: a file's records nearly all wait one round. Spent batches come back
//! (`recycle`) and their buffers and key lists are filled again (nothing
//! is allocated per round once the rounds' sizes have been seen). The next
//! round's buffer is taken only when its first bytes arrive (`buffer`),
//! not when a batch is handed out: a consumer that gives its spent batch
//! back before it takes the next (`reader::rounds`) has then returned the
//! buffer that is filled, so a stream holds only the rounds being read,
//! waiting and used, however long it is, not one more (on
//! a 400k-sample file, moving each record twice through the crate's queue
//! was a quarter of `scry report`'s time). A file's reader reads ahead of
//! a round's end: those bytes start the next buffer (`finish_round_at`).

use std::ops::Range;
use std::sync::Arc;

use linux_perf_event_reader::{CommonData, EventRecord};

use super::handler::{RecordHandler, dispatch};
use super::raw::{EventIds, RawRecord, RawRecords};
use super::read_buf::ReadBuf;

/// A record's place in the order: its time (`None` sorts first), then its
/// sequence number.
pub(crate) type Key = (Option<u64>, u64);

/// A record waiting in a buffer.
#[derive(Clone, Copy, Debug)]
struct Pending {
    key: Key,
    pos: usize,
    len: u32,
    record_type: u32,
    misc: u16,
    /// The event (attribute index) the record belongs to, if known.
    event: Option<u32>,
    /// In the newer of the two buffers (the sorter's `bytes`, a batch's
    /// second), else in the older (`held`, a batch's first).
    newer: bool,
}

/// A record handed out in order, borrowing from its batch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ordered<'a> {
    pub(crate) raw: RawRecord<'a>,
    /// The sequence number it was pushed with (a file offset, for files).
    pub(crate) seq: u64,
    pub(crate) event: Option<usize>,
}

/// Records handed out together, in order, and their bytes (the previous
/// round's buffer, then this round's).
#[derive(Debug, Default)]
pub(crate) struct Batch {
    bytes: [Arc<ReadBuf>; 2],
    records: Vec<Pending>,
}

impl Batch {
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The `i`th record in order.
    pub(crate) fn get(&self, i: usize) -> Option<Ordered<'_>> {
        let p = self.records.get(i)?;
        Some(Ordered {
            raw: RawRecord {
                record_type: p.record_type,
                misc: p.misc,
                body: self.bytes[usize::from(p.newer)].get(p.pos..p.pos + p.len as usize)?,
            },
            seq: p.key.1,
            event: p.event.map(|e| e as usize),
        })
    }

    /// The records in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Ordered<'_>> {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

/// The sorter described in the module doc.
#[derive(Debug, Default)]
pub(crate) struct RoundOrder {
    incoming: Vec<Pending>,
    bytes: ReadBuf,
    /// The last batch's newer buffer: the records that wait are in it.
    held: Arc<ReadBuf>,
    /// Bytes at the end of `held` that were read ahead of its round: they
    /// start the next buffer, which is taken (from `spent`) only when it is
    /// first needed, so a buffer a spent batch gives back in the meantime
    /// is the one filled (see the module doc).
    carry: Option<Range<usize>>,
    /// Buffers of spent batches, to fill again.
    spent: Vec<ReadBuf>,
    /// The key list of a spent batch, to fill again.
    spent_records: Option<Vec<Pending>>,
    prev_max: Key,
    cur_max: Key,
    /// Records in `incoming` whose key is not above `prev_max`.
    ready: usize,
}

impl RoundOrder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The buffer to read records into before [`Self::push`] takes them
    /// (bytes that no pushed record holds are kept but not used).
    pub(crate) fn buffer(&mut self) -> &mut ReadBuf {
        if let Some(carry) = self.carry.take() {
            let mut next = self.spent.pop().unwrap_or_default();
            next.clear();
            next.extend_from_slice(self.held.get(carry).unwrap_or(&[]));
            self.bytes = next;
        }
        &mut self.bytes
    }

    /// The buffer's bytes.
    pub(crate) fn buffered(&self) -> &[u8] {
        self.bytes.filled()
    }

    /// Takes the record whose body is `buffer()[pos..pos + len]`.
    pub(crate) fn push(
        &mut self,
        key: Key,
        pos: usize,
        len: usize,
        record_type: u32,
        misc: u16,
        event: Option<u32>,
    ) {
        if key <= self.prev_max {
            self.ready += 1;
        } else if key > self.cur_max {
            self.cur_max = key;
        }
        self.incoming.push(Pending {
            key,
            pos,
            len: len as u32,
            record_type,
            misc,
            event,
            newer: true,
        });
    }

    /// Copies `raw`'s body in and takes it.
    pub(crate) fn push_copy(&mut self, key: Key, raw: &RawRecord<'_>, event: Option<u32>) {
        let bytes = self.buffer();
        let pos = bytes.len();
        bytes.extend_from_slice(raw.body);
        self.push(key, pos, raw.body.len(), raw.record_type, raw.misc, event);
    }

    /// The end of a round: the records not above the previous round's
    /// largest key, in order (`None` when there are none yet).
    pub(crate) fn finish_round(&mut self) -> Option<Batch> {
        let end = self.buffer().len();
        self.finish_round_at(end)
    }

    /// [`Self::finish_round`], when the buffer's bytes from `end` on were
    /// read ahead, past the round: if a batch is handed out they move to
    /// the start of the next buffer.
    pub(crate) fn finish_round_at(&mut self, end: usize) -> Option<Batch> {
        let n = self.ready.min(self.incoming.len());
        let batch = if n > 0 {
            self.incoming.sort_by_key(|p| p.key);
            Some(self.hand_out(n, end))
        } else {
            None
        };
        self.prev_max = self.cur_max;
        self.ready = self.incoming.len();
        batch
    }

    /// The end of the stream: everything, in order.
    pub(crate) fn finish(&mut self) -> Option<Batch> {
        self.incoming.sort_by_key(|p| p.key);
        let n = self.incoming.len();
        self.prev_max = self.cur_max;
        self.ready = 0;
        let end = self.buffer().len();
        (n > 0).then(|| self.hand_out(n, end))
    }

    /// Takes back a batch the consumer is done with: the buffers no one
    /// else holds are filled again.
    pub(crate) fn recycle(&mut self, batch: Batch) {
        self.spent_records = Some(batch.records);
        for bytes in batch.bytes {
            if let Ok(bytes) = Arc::try_unwrap(bytes)
                && self.spent.len() < 2
            {
                self.spent.push(bytes);
            }
        }
    }

    /// The first `n` records of `incoming` (sorted) as a batch, with the
    /// held buffer and this round's, frozen; the rest wait in the latter,
    /// held now (see the module doc). This round's bytes from `end` on
    /// start the next buffer.
    fn hand_out(&mut self, n: usize, end: usize) -> Batch {
        self.buffer();
        let ahead = end.min(self.bytes.len())..self.bytes.len();
        // Not expected (a record waits one round at most), but a record
        // still waiting in the held buffer is copied, not lost: after this
        // round's bytes.
        for p in &mut self.incoming[n..] {
            if !p.newer {
                let bytes = self.held.get(p.pos..p.pos + p.len as usize).unwrap_or(&[]);
                p.pos = self.bytes.len();
                self.bytes.extend_from_slice(bytes);
            }
        }
        self.carry = Some(ahead);
        let round = Arc::new(std::mem::take(&mut self.bytes));
        let older = std::mem::replace(&mut self.held, Arc::clone(&round));
        for p in &mut self.incoming[n..] {
            p.newer = false;
        }
        let mut records = self.spent_records.take().unwrap_or_default();
        records.clear();
        records.extend(self.incoming.drain(..n));
        Batch {
            bytes: [older, round],
            records,
        }
    }
}

/// Drained ring bytes in, parsed records out in time order: the walk
/// (`data::raw`), the sorter and the dispatcher (`data::handler`), as every
/// live consumer (`capture::live`, `capture::trace`) uses them. A round is
/// whatever the caller takes in between two `finish_round` calls.
#[derive(Debug)]
pub(crate) struct RingOrder {
    ids: EventIds,
    order: RoundOrder,
    /// Bytes taken in so far: each record's sequence number.
    taken: u64,
    /// Records that could not be framed or parsed (a kernel/ABI mismatch,
    /// not expected).
    pub(crate) malformed: u64,
}

impl RingOrder {
    pub(crate) fn new(ids: EventIds) -> Self {
        RingOrder {
            ids,
            order: RoundOrder::new(),
            taken: 0,
            malformed: 0,
        }
    }

    /// Takes in drained bytes: each kernel record, keyed by its time and
    /// the order it came in, unless `divert` takes it (returns true) first.
    pub(crate) fn take(&mut self, bytes: &[u8], mut divert: impl FnMut(&RawRecord<'_>) -> bool) {
        let mut records = RawRecords::new(bytes);
        loop {
            let raw = match records.next_record() {
                Ok(Some(raw)) => raw,
                Ok(None) => break,
                Err(_) => {
                    self.malformed += 1;
                    break;
                }
            };
            if divert(&raw) {
                continue;
            }
            let seq = self.taken + records.offset() as u64;
            if let Some((index, event)) = self.ids.event_of(&raw) {
                let time = event.timestamp().unwrap_or(0);
                self.order
                    .push_copy((Some(time), seq), &raw, Some(index as u32));
            }
        }
        self.taken += bytes.len() as u64;
    }

    /// The end of a round: what is ready goes to `handler`, in order.
    pub(crate) fn finish_round<H: RecordHandler + ?Sized>(&mut self, handler: &mut H) {
        if let Some(batch) = self.order.finish_round() {
            self.hand_out(batch, handler);
        }
    }

    /// The end of the capture: everything still held goes to `handler`.
    pub(crate) fn finish<H: RecordHandler + ?Sized>(&mut self, handler: &mut H) {
        if let Some(batch) = self.order.finish() {
            self.hand_out(batch, handler);
        }
    }

    fn hand_out<H: RecordHandler + ?Sized>(&mut self, batch: Batch, handler: &mut H) {
        for record in batch.iter() {
            let Some((index, info)) = record.event.and_then(|e| Some((e, self.ids.info(e)?)))
            else {
                continue;
            };
            let raw = record.raw.event(info);
            match raw.parse() {
                Ok(parsed) => {
                    let id = match parsed {
                        EventRecord::Sample(_) => CommonData::default(),
                        _ => raw.common_data().unwrap_or_default(),
                    };
                    dispatch(handler, index, &parsed, &id);
                }
                Err(_) => self.malformed += 1,
            }
        }
        self.order.recycle(batch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(order: &mut RoundOrder, time: u64, seq: u64) {
        let body = time.to_ne_bytes();
        let raw = RawRecord {
            record_type: 9,
            misc: 0,
            body: &body,
        };
        order.push_copy((Some(time), seq), &raw, Some(0));
    }

    fn times(batch: Option<Batch>) -> Vec<u64> {
        batch.map_or_else(Vec::new, |b| {
            b.iter()
                .map(|r| u64::from_ne_bytes(r.raw.body.try_into().unwrap()))
                .collect()
        })
    }

    #[test]
    fn a_round_waits_for_the_next_and_late_records_still_sort() {
        let mut order = RoundOrder::new();
        // Round 1 (two rings): nothing is known to be complete yet.
        push(&mut order, 30, 0);
        push(&mut order, 10, 1);
        assert!(order.finish_round().is_none());
        // Round 2: a record older than round 1's newest arrives late.
        push(&mut order, 40, 2);
        push(&mut order, 20, 3);
        assert_eq!(times(order.finish_round()), [10, 20, 30]);
        push(&mut order, 35, 4);
        assert_eq!(times(order.finish_round()), [35, 40]);
        push(&mut order, 50, 5);
        assert_eq!(times(order.finish()), [50]);
        assert!(order.finish().is_none());
    }

    /// A recycled batch's key list holds the next batch's keys: no list is
    /// allocated per round.
    #[test]
    fn a_spent_batchs_key_list_is_filled_again() {
        let mut order = RoundOrder::new();
        for time in [1, 2, 3, 4] {
            push(&mut order, time, time);
        }
        let first = order.finish().expect("four records");
        let list = first.records.as_ptr();
        order.recycle(first);
        push(&mut order, 6, 6);
        push(&mut order, 5, 5);
        let second = order.finish().expect("two records");
        // A list collected anew would hold two keys' room.
        assert_eq!(second.records.as_ptr(), list);
        assert!(second.records.capacity() >= 4);
        assert_eq!(times(Some(second)), [5, 6]);
    }

    /// Bytes read past a round's end start the next round's buffer, which
    /// is a spent one given back meanwhile when there is one.
    #[test]
    fn read_ahead_moves_to_the_next_buffer() {
        let mut order = RoundOrder::new();
        order.buffer().extend_from_slice(b"record A");
        order.push((Some(1), 0), 0, 8, 9, 0, Some(0));
        assert!(order.finish_round_at(8).is_none());
        // Round 2: B, then bytes read past the round.
        order.buffer().extend_from_slice(b"record Bahead!!!");
        order.push((Some(3), 8), 8, 8, 9, 0, Some(0));
        let first = order.finish_round_at(16).expect("A is ready");
        let bodies: Vec<&[u8]> = first.iter().map(|r| r.raw.body).collect();
        assert_eq!(bodies, [b"record A"]);
        order.recycle(first);
        // The next buffer starts with what was read ahead; B still waits.
        assert_eq!(order.buffer().filled(), b"ahead!!!");
        order.push((Some(4), 16), 0, 8, 9, 0, Some(0));
        let rest = order.finish().expect("the rest");
        let bodies: Vec<&[u8]> = rest.iter().map(|r| r.raw.body).collect();
        assert_eq!(bodies, [b"record B", b"ahead!!!"]);
    }

    #[test]
    fn equal_times_go_by_sequence_and_untimed_records_first() {
        let mut order = RoundOrder::new();
        for (time, seq) in [(Some(7), 3), (Some(7), 1), (None, 9), (Some(7), 2)] {
            let body = [seq as u8];
            let raw = RawRecord {
                record_type: 9,
                misc: 0,
                body: &body,
            };
            order.push_copy((time, seq), &raw, None);
        }
        let batch = order.finish().unwrap();
        let bodies: Vec<u8> = batch.iter().map(|r| r.raw.body[0]).collect();
        assert_eq!(bodies, [9, 1, 2, 3]);
    }
}
