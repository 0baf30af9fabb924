//! A byte buffer that reads fill in place: the file reader reads blocks of
//! the data section straight into the sorter's round buffer
//! (`data::order`), and records are framed where they landed.
//!
//! The decision: the buffer's `Vec` is as long as the most it has ever
//! held and is never cut back; `filled` says how much of it is this use's
//! data. A buffer filled again (the sorter recycles its round buffers) is
//! read into without zeroing it first: zeroing the room for each record's
//! body was 6% of the reading thread's instructions, and the copy out of a
//! `BufReader` another 25%.

use std::ops::Range;

/// See the module doc.
#[derive(Debug, Default)]
pub(crate) struct ReadBuf {
    /// `bytes[..filled]` hold data; the rest is initialized room.
    bytes: Vec<u8>,
    filled: usize,
}

impl ReadBuf {
    /// The bytes filled so far.
    pub(crate) fn filled(&self) -> &[u8] {
        self.bytes.get(..self.filled).unwrap_or(&[])
    }

    /// The filled bytes in `range`, if they are all filled.
    pub(crate) fn get(&self, range: Range<usize>) -> Option<&[u8]> {
        self.filled().get(range)
    }

    pub(crate) fn len(&self) -> usize {
        self.filled
    }

    /// Empties the buffer, keeping its room.
    pub(crate) fn clear(&mut self) {
        self.filled = 0;
    }

    /// `want` bytes of room after the filled ones, to read into; [`Self::commit`]
    /// then says how many were read.
    pub(crate) fn room(&mut self, want: usize) -> &mut [u8] {
        let need = self.filled.saturating_add(want);
        if self.bytes.len() < need {
            self.bytes.resize(need, 0);
        }
        self.bytes.get_mut(self.filled..need).unwrap_or(&mut [])
    }

    /// The first `n` bytes of the room are filled now.
    pub(crate) fn commit(&mut self, n: usize) {
        self.filled = self.filled.saturating_add(n).min(self.bytes.len());
    }

    pub(crate) fn extend_from_slice(&mut self, data: &[u8]) {
        let room = self.room(data.len());
        room.copy_from_slice(data);
        self.commit(data.len());
    }

    /// Moves `filled()[from..]` to the start, dropping what was before it.
    pub(crate) fn keep_from(&mut self, from: usize) {
        let from = from.min(self.filled);
        self.bytes.copy_within(from..self.filled, 0);
        self.filled -= from;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_kept_and_reused_without_losing_data() {
        let mut buf = ReadBuf::default();
        buf.extend_from_slice(b"abcdef");
        let room = buf.room(4);
        assert_eq!(room.len(), 4);
        room[..2].copy_from_slice(b"gh");
        buf.commit(2);
        assert_eq!(buf.filled(), b"abcdefgh");
        buf.keep_from(5);
        assert_eq!(buf.filled(), b"fgh");
        buf.clear();
        assert_eq!(buf.len(), 0);
        // The room of the earlier fill is still there, not zeroed again.
        assert!(buf.room(8).starts_with(b"fgh"));
        assert_eq!(buf.get(0..1), None);
    }
}
