//! The mmap'ed ring buffer of a perf event: one metadata page followed by
//! 2^n data pages. The kernel advances `data_head`; we copy out whole records
//! between our tail and its head, then publish the new `data_tail`.
//!
//! Records are copied as bytes, never parsed here. The kernel only publishes
//! whole records, so the bytes between tail and head are whole records; the
//! copy unwraps the ring so the caller sees them contiguous.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};

use perf_event_open_sys::bindings::perf_event_mmap_page;

/// A mapped ring buffer. Unmapped on drop.
#[derive(Debug)]
pub(crate) struct RingBuffer {
    base: *mut u8,
    map_len: usize,
    data_offset: usize,
    data_size: usize,
}

// SAFETY: the mapping is owned by this value and only touched through &mut self
// (reads) or atomics; moving it to another thread is sound.
unsafe impl Send for RingBuffer {}

pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as usize } else { 4096 }
}

impl RingBuffer {
    /// Map `1 + data_pages` pages of `fd`. `data_pages` must be a power of two.
    pub(crate) fn map(fd: RawFd, data_pages: usize) -> io::Result<Self> {
        if !data_pages.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("ring buffer size must be a power of two pages, got {data_pages}"),
            ));
        }
        let page = page_size();
        let map_len = (1 + data_pages) * page;
        // SAFETY: a fresh shared mapping of a perf event fd; the kernel checks
        // the length. We own the result until munmap in Drop.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut ring = RingBuffer {
            base: base.cast(),
            map_len,
            data_offset: page,
            data_size: data_pages * page,
        };
        // Newer kernels say where the data area is; older ones imply one page.
        let meta = ring.meta();
        // SAFETY: meta points at the mapped, kernel-initialized metadata page.
        let (offset, size) = unsafe { ((*meta).data_offset as usize, (*meta).data_size as usize) };
        if offset != 0 && size != 0 && offset + size <= map_len {
            ring.data_offset = offset;
            ring.data_size = size;
        }
        Ok(ring)
    }

    fn meta(&self) -> *mut perf_event_mmap_page {
        self.base.cast()
    }

    pub(crate) fn data_size(&self) -> usize {
        self.data_size
    }

    fn head_tail(&self) -> (u64, u64) {
        let meta = self.meta();
        // SAFETY: data_head/data_tail are naturally aligned u64 fields of the
        // mapped metadata page; the kernel writes head, we write tail, and
        // AtomicU64 has the same layout as u64.
        unsafe {
            let head = &*(std::ptr::addr_of_mut!((*meta).data_head) as *const AtomicU64);
            let tail = &*(std::ptr::addr_of_mut!((*meta).data_tail) as *const AtomicU64);
            (head.load(Ordering::Acquire), tail.load(Ordering::Relaxed))
        }
    }

    /// Append every whole record waiting in the ring to `out` and free the
    /// space. Returns the number of bytes copied.
    pub(crate) fn read_into(&mut self, out: &mut Vec<u8>) -> usize {
        let (head, tail) = self.head_tail();
        let avail = head.wrapping_sub(tail) as usize;
        if avail == 0 {
            return 0;
        }
        // A head more than a ring ahead of our tail cannot happen in
        // non-overwrite mode; clamp rather than read garbage.
        let avail = avail.min(self.data_size);
        let start = (tail as usize) & (self.data_size - 1);
        let first = avail.min(self.data_size - start);
        // SAFETY: [data_offset, data_offset + data_size) is inside the mapping;
        // start + first <= data_size and avail - first <= start, so both
        // slices stay inside the data area. The kernel does not write the
        // bytes between tail and head until we publish the new tail below.
        unsafe {
            let data = self.base.add(self.data_offset);
            out.extend_from_slice(std::slice::from_raw_parts(data.add(start), first));
            if first < avail {
                out.extend_from_slice(std::slice::from_raw_parts(data, avail - first));
            }
            let meta = self.meta();
            let tail_ptr = &*(std::ptr::addr_of_mut!((*meta).data_tail) as *const AtomicU64);
            tail_ptr.store(tail.wrapping_add(avail as u64), Ordering::Release);
        }
        avail
    }
}

impl Drop for RingBuffer {
    fn drop(&mut self) {
        // SAFETY: base/map_len are exactly what mmap returned; nothing borrows
        // the mapping past this point.
        unsafe {
            libc::munmap(self.base.cast(), self.map_len);
        }
    }
}
