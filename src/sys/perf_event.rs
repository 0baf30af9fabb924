//! perf_event_open(2) and the ioctls on its file descriptors.
//!
//! Attributes are the kernel's own `perf_event_attr` (from perf-event-open-sys)
//! with `size` set to `ATTR_SIZE`: PERF_ATTR_SIZE_VER7 (128 bytes), the
//! newest layout Debian's perf 6.1 knows. The same bytes go to the kernel and
//! into perf.data, so what the file says is exactly what was asked for.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use perf_event_open_sys::bindings as b;
pub(crate) use perf_event_open_sys::bindings::perf_event_attr;

/// The attribute size scry writes and asks for (PERF_ATTR_SIZE_VER7).
pub(crate) const ATTR_SIZE: u32 = b::PERF_ATTR_SIZE_VER7;

pub(crate) const PERF_TYPE_HARDWARE: u32 = b::PERF_TYPE_HARDWARE;
pub(crate) const PERF_TYPE_SOFTWARE: u32 = b::PERF_TYPE_SOFTWARE;
/// The software clock of each CPU (perf's `cpu-clock`).
pub(crate) const PERF_COUNT_SW_CPU_CLOCK: u64 = b::PERF_COUNT_SW_CPU_CLOCK as u64;
/// The software event a BPF program writes samples into (bpf_perf_event_output).
pub(crate) const PERF_COUNT_SW_BPF_OUTPUT: u64 = b::PERF_COUNT_SW_BPF_OUTPUT as u64;
pub(crate) const PERF_COUNT_SW_DUMMY: u64 = b::PERF_COUNT_SW_DUMMY as u64;
pub(crate) const PERF_TYPE_TRACEPOINT: u32 = b::PERF_TYPE_TRACEPOINT;
pub(crate) const PERF_TYPE_HW_CACHE: u32 = b::PERF_TYPE_HW_CACHE;
pub(crate) const PERF_TYPE_RAW: u32 = b::PERF_TYPE_RAW;

pub(crate) const PERF_SAMPLE_IP: u64 = b::PERF_SAMPLE_IP as u64;
pub(crate) const PERF_SAMPLE_TID: u64 = b::PERF_SAMPLE_TID as u64;
pub(crate) const PERF_SAMPLE_TIME: u64 = b::PERF_SAMPLE_TIME as u64;
pub(crate) const PERF_SAMPLE_ID: u64 = b::PERF_SAMPLE_ID as u64;
pub(crate) const PERF_SAMPLE_CPU: u64 = b::PERF_SAMPLE_CPU as u64;
pub(crate) const PERF_SAMPLE_PERIOD: u64 = b::PERF_SAMPLE_PERIOD as u64;
pub(crate) const PERF_SAMPLE_CALLCHAIN: u64 = b::PERF_SAMPLE_CALLCHAIN as u64;
pub(crate) const PERF_SAMPLE_RAW: u64 = b::PERF_SAMPLE_RAW as u64;
pub(crate) const PERF_SAMPLE_REGS_USER: u64 = b::PERF_SAMPLE_REGS_USER as u64;
pub(crate) const PERF_SAMPLE_STACK_USER: u64 = b::PERF_SAMPLE_STACK_USER as u64;
pub(crate) const PERF_SAMPLE_IDENTIFIER: u64 = b::PERF_SAMPLE_IDENTIFIER as u64;

pub(crate) const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = b::PERF_FORMAT_TOTAL_TIME_ENABLED as u64;
pub(crate) const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = b::PERF_FORMAT_TOTAL_TIME_RUNNING as u64;
pub(crate) const PERF_FORMAT_ID: u64 = b::PERF_FORMAT_ID as u64;
pub(crate) const PERF_FORMAT_GROUP: u64 = b::PERF_FORMAT_GROUP as u64;
pub(crate) const PERF_FORMAT_LOST: u64 = b::PERF_FORMAT_LOST as u64;

pub(crate) const PERF_RECORD_MMAP: u32 = b::PERF_RECORD_MMAP;
pub(crate) const PERF_RECORD_LOST: u32 = b::PERF_RECORD_LOST;
pub(crate) const PERF_RECORD_COMM: u32 = b::PERF_RECORD_COMM;
pub(crate) const PERF_RECORD_SAMPLE: u32 = b::PERF_RECORD_SAMPLE;
pub(crate) const PERF_RECORD_MMAP2: u32 = b::PERF_RECORD_MMAP2;
pub(crate) const PERF_RECORD_LOST_SAMPLES: u32 = b::PERF_RECORD_LOST_SAMPLES;
pub(crate) const PERF_RECORD_KSYMBOL: u32 = b::PERF_RECORD_KSYMBOL;
pub(crate) const PERF_RECORD_BPF_EVENT: u32 = b::PERF_RECORD_BPF_EVENT;
pub(crate) const PERF_RECORD_KSYMBOL_TYPE_BPF: u16 = b::PERF_RECORD_KSYMBOL_TYPE_BPF as u16;
pub(crate) const PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER: u16 =
    b::PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER as u16;
pub(crate) const PERF_BPF_EVENT_PROG_LOAD: u16 = b::PERF_BPF_EVENT_PROG_LOAD as u16;

pub(crate) const PERF_RECORD_MISC_KERNEL: u16 = b::PERF_RECORD_MISC_KERNEL as u16;
pub(crate) const PERF_RECORD_MISC_USER: u16 = b::PERF_RECORD_MISC_USER as u16;

/// x86-64 user registers perf samples for DWARF unwinding: every general
/// purpose register, ip, sp and flags, without the segment registers.
pub(crate) const PERF_REGS_MASK_X86_64: u64 = 0xff0fff;
/// %bp, %sp and %ip only (perf register numbers 6, 7 and 8).
pub(crate) const PERF_REGS_MASK_IP_SP_BP: u64 = (1 << 6) | (1 << 7) | (1 << 8);

/// A zeroed attribute with `size` set.
pub(crate) fn new_attr() -> perf_event_attr {
    perf_event_attr {
        size: ATTR_SIZE,
        ..Default::default()
    }
}

/// The first `ATTR_SIZE` bytes of `attr`, as the kernel reads them and as
/// perf.data stores them.
pub(crate) fn attr_bytes(attr: &perf_event_attr) -> Vec<u8> {
    let len = (ATTR_SIZE as usize).min(std::mem::size_of::<perf_event_attr>());
    // SAFETY: perf_event_attr is a plain #[repr(C)] struct of integers with
    // no padding bytes in its first ATTR_SIZE bytes (the kernel ABI packs it),
    // and `len` does not exceed its size.
    let bytes =
        unsafe { std::slice::from_raw_parts((attr as *const perf_event_attr).cast::<u8>(), len) };
    bytes.to_vec()
}

/// One counter's file descriptor.
#[derive(Debug)]
pub(crate) struct PerfEventFd(OwnedFd);

/// A software clock (`cpu-clock`) sampling `frequency` times a second on
/// each of `cpus`, counting every task: the events a BPF program that
/// samples (runqlen, oncpu) is attached to.
pub(crate) fn cpu_clocks(cpus: &[u32], frequency: u64) -> io::Result<Vec<PerfEventFd>> {
    let mut attr = new_attr();
    attr.type_ = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.set_freq(1);
    attr.__bindgen_anon_1.sample_freq = frequency;
    cpus.iter()
        .map(|&cpu| {
            PerfEventFd::open(&attr, -1, cpu as i32).map_err(|e| {
                io::Error::new(e.kind(), format!("opening cpu-clock on CPU {cpu}: {e}"))
            })
        })
        .collect()
}

impl PerfEventFd {
    /// perf_event_open(attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC).
    pub(crate) fn open(attr: &perf_event_attr, pid: i32, cpu: i32) -> io::Result<Self> {
        Self::open_in_group(attr, pid, cpu, None)
    }

    /// As `open`, as a member of `leader`'s group when given (`group_fd`).
    pub(crate) fn open_in_group(
        attr: &perf_event_attr,
        pid: i32,
        cpu: i32,
        leader: Option<&PerfEventFd>,
    ) -> io::Result<Self> {
        let mut attr = *attr;
        let group_fd = leader.map_or(-1, |l| l.0.as_raw_fd());
        // SAFETY: `attr` is a valid, initialized perf_event_attr whose `size`
        // field does not exceed the struct; the kernel only reads it.
        // `group_fd` is -1 or a perf event descriptor we own.
        let fd = unsafe {
            perf_event_open_sys::perf_event_open(
                &mut attr,
                pid,
                cpu,
                group_fd,
                b::PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor and nothing else owns it.
        Ok(PerfEventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// perf_event_open on a cgroup: `cgroup_dir` is an open descriptor of
    /// the cgroup's directory (PERF_FLAG_PID_CGROUP); `cpu` must be a CPU.
    /// `leader`, when given, makes the counter a member of its group.
    pub(crate) fn open_cgroup(
        attr: &perf_event_attr,
        cgroup_dir: RawFd,
        cpu: i32,
        leader: Option<&PerfEventFd>,
    ) -> io::Result<Self> {
        let mut attr = *attr;
        let flags = b::PERF_FLAG_FD_CLOEXEC | b::PERF_FLAG_PID_CGROUP;
        let group_fd = leader.map_or(-1, |l| l.0.as_raw_fd());
        // SAFETY: as in `open`; the cgroup descriptor is only read by the kernel.
        let fd = unsafe {
            perf_event_open_sys::perf_event_open(
                &mut attr,
                cgroup_dir,
                cpu,
                group_fd,
                flags as libc::c_ulong,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this descriptor and nothing else owns it.
        Ok(PerfEventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub(crate) fn enable(&self) -> io::Result<()> {
        // SAFETY: a valid perf event fd; ENABLE takes no pointer.
        check(unsafe { perf_event_open_sys::ioctls::ENABLE(self.0.as_raw_fd(), 0) })
    }

    pub(crate) fn disable(&self) -> io::Result<()> {
        // SAFETY: a valid perf event fd; DISABLE takes no pointer.
        check(unsafe { perf_event_open_sys::ioctls::DISABLE(self.0.as_raw_fd(), 0) })
    }

    /// The sample id the kernel puts in this counter's records.
    pub(crate) fn id(&self) -> io::Result<u64> {
        let mut id = 0u64;
        // SAFETY: ID writes one u64 through the pointer, which is valid.
        check(unsafe { perf_event_open_sys::ioctls::ID(self.0.as_raw_fd(), &mut id) })?;
        Ok(id)
    }

    /// Send this counter's records to `target`'s ring buffer.
    pub(crate) fn set_output(&self, target: &PerfEventFd) -> io::Result<()> {
        // SAFETY: both are valid perf event fds owned by us.
        check(unsafe {
            perf_event_open_sys::ioctls::SET_OUTPUT(self.0.as_raw_fd(), target.0.as_raw_fd())
        })
    }

    /// Apply a tracepoint filter (ftrace syntax).
    pub(crate) fn set_filter(&self, filter: &str) -> io::Result<()> {
        let filter = CString::new(filter).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "filter contains a NUL byte")
        })?;
        // SAFETY: the kernel reads the NUL-terminated string, which outlives the call.
        check(unsafe {
            perf_event_open_sys::ioctls::SET_FILTER(
                self.0.as_raw_fd(),
                filter.as_ptr() as *mut libc::c_char,
            )
        })
    }

    /// read(2) of the counter: `[value, time_enabled, time_running, id]`
    /// as far as `read_format` asked for them.
    pub(crate) fn read_values(&self, buf: &mut [u64]) -> io::Result<usize> {
        // SAFETY: buf is valid writable memory of the given byte length.
        let n = unsafe {
            libc::read(
                self.0.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                std::mem::size_of_val(buf),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize / 8)
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Gives the descriptor up to a new owner (a BPF link, which closes
    /// it when it goes).
    pub(crate) fn into_raw_fd(self) -> RawFd {
        std::os::fd::IntoRawFd::into_raw_fd(self.0)
    }
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `/proc/sys/kernel/perf_event_paranoid`, if readable.
pub(crate) fn paranoid_level() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `/proc/sys/kernel/perf_event_max_sample_rate`, if readable.
pub(crate) fn max_sample_rate() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()?
        .trim()
        .parse()
        .ok()
}
