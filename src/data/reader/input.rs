//! Where a perf.data file comes from, said plainly: `-i` names a regular
//! file, a FIFO, or `-` (standard input: a redirected file, or a pipe);
//! anything else (a directory, a character device such as `/dev/zero`, a
//! socket) is refused by what it is, before a byte is read.
//!
//! A FIFO with no writer would block the open forever, silently: it is
//! opened without blocking first, and if no writer is there scry says it is
//! waiting for one before it blocks. Pipes are streams: nothing here reads
//! them ahead; the reader checks the magic in the first 8 bytes and reads
//! on record by record.
//!
//! Also here: the two small adapters the crate's reader is given, patched
//! bytes (a corrected header where the file's is stale, empty sections for
//! features out of bounds) and a `Seek` for streams that never seek.

use std::fs::{File, OpenOptions};
use std::io::{self, Cursor, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use super::ReadError;

/// An input, opened.
pub(super) enum Opened {
    /// A regular file and its length.
    File(File, u64),
    /// A pipe or FIFO, read once from its start.
    Stream(Box<dyn Read + Send>),
}

/// Opens `path` (`-`: standard input) as the module doc says; `file` is
/// the name errors give.
pub(super) fn open_input(path: &Path, file: &str) -> Result<Opened, ReadError> {
    let io_err = |source| ReadError::Io {
        file: file.to_owned(),
        source,
    };
    if path.as_os_str() == "-" {
        // A redirected file is a file (and seekable); reopening it through
        // /dev/stdin starts at its beginning, as perf reads it.
        let meta = std::fs::metadata("/dev/stdin").map_err(io_err)?;
        if meta.is_file() {
            let handle = File::open("/dev/stdin").map_err(io_err)?;
            return Ok(Opened::File(handle, meta.len()));
        }
        return Ok(Opened::Stream(Box::new(io::stdin())));
    }
    let meta = std::fs::metadata(path).map_err(io_err)?;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        let handle = File::open(path).map_err(io_err)?;
        return Ok(Opened::File(handle, meta.len()));
    } else if kind.is_fifo() {
        return open_fifo(path, file).map_err(io_err);
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(ReadError::NotPerfData {
        file: file.to_owned(),
        what: what.to_owned(),
    })
}

/// Opens a FIFO for reading, saying so when it has to wait for a writer.
fn open_fifo(path: &Path, file: &str) -> io::Result<Opened> {
    // Opening for reading without O_NONBLOCK waits for a writer; with it,
    // the open returns at once and a read says whether one is there: 0
    // bytes (no writer), WouldBlock (a writer, no data yet) or data.
    let mut probe = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let mut first = [0u8; 8];
    let got = match probe.read(&mut first) {
        Ok(0) => {
            eprintln!("scry: {file}: waiting for a writer on this FIFO");
            0
        }
        Ok(n) => n,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
        Err(e) => return Err(e),
    };
    // The blocking descriptor is opened before the probe is closed, so a
    // writer already there never sees the FIFO without a reader.
    let handle = File::open(path)?;
    drop(probe);
    let head = Cursor::new(first[..got].to_vec());
    Ok(Opened::Stream(Box::new(head.chain(handle))))
}

/// A reader with some of its bytes replaced: the crate reads a corrected
/// header where the file's is stale, and empty sections where the file's
/// feature table points out of bounds. `patches` are `(offset, bytes)`,
/// sorted and apart.
pub(super) struct Patched<R> {
    inner: R,
    patches: Vec<(u64, Vec<u8>)>,
    pos: u64,
}

impl<R: Read + Seek> Patched<R> {
    pub(super) fn new(mut inner: R, mut patches: Vec<(u64, Vec<u8>)>) -> io::Result<Self> {
        inner.seek(SeekFrom::Start(0))?;
        patches.sort_by_key(|(at, _)| *at);
        Ok(Patched {
            inner,
            patches,
            pos: 0,
        })
    }
}

impl<R: Read + Seek> Read for Patched<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let pos = self.pos;
        let inside = self.patches.iter().find_map(|(at, bytes)| {
            let skip = usize::try_from(pos.checked_sub(*at)?).ok()?;
            bytes.get(skip..).filter(|rest| !rest.is_empty())
        });
        let n = match inside {
            Some(rest) => {
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                self.inner.seek(SeekFrom::Current(n as i64))?;
                n
            }
            None => {
                // Up to the next patch at most.
                let next = self.patches.iter().map(|(at, _)| *at).find(|&at| at > pos);
                let room = next.map_or(buf.len() as u64, |at| (at - pos).min(buf.len() as u64));
                self.inner.read(&mut buf[..room as usize])?
            }
        };
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read + Seek> Seek for Patched<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = self.inner.seek(to)?;
        Ok(self.pos)
    }
}

/// A stream as the crate's `Read + Seek` input: it never seeks a pipe.
pub(super) struct NoSeek<R>(pub(super) R);

impl<R: Read> Read for NoSeek<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl<R> Seek for NoSeek<R> {
    fn seek(&mut self, _: SeekFrom) -> io::Result<u64> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a stream cannot seek",
        ))
    }
}
