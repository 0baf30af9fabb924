//! BPF without an object file: maps created and programs loaded from
//! instructions scry generated itself (`scry run`), programs attached to
//! perf events (tracepoints, software clocks, uprobes) and raw
//! tracepoints, run once with BPF_PROG_TEST_RUN (BEGIN and END), and the
//! BPF ring buffer its events come through.
//!
//! Ownership: every map, program and attachment is a file descriptor of
//! this process, nothing is pinned, so however scry ends (even SIGKILL)
//! the kernel detaches and frees them.
//!
//! A program is loaded without a verifier log first (the log costs time on
//! every load); only when the kernel refuses it is it loaded again with the
//! log, which the caller maps back to the source.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

use libbpf_rs::libbpf_sys;
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

use super::bpf::io_error;
use super::perf_event::PerfEventFd;

/// The program types `scry run` makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProgType {
    Kprobe,
    /// A kprobe program for one kprobe.multi link over many functions.
    KprobeMulti,
    Tracepoint,
    PerfEvent,
    RawTracepoint,
    /// fentry on the kernel function of this BTF id (vmlinux's).
    Fentry(u32),
    /// fexit on the kernel function of this BTF id.
    Fexit(u32),
}

impl ProgType {
    fn raw(self) -> libbpf_sys::bpf_prog_type {
        match self {
            ProgType::Kprobe | ProgType::KprobeMulti => libbpf_sys::BPF_PROG_TYPE_KPROBE,
            ProgType::Tracepoint => libbpf_sys::BPF_PROG_TYPE_TRACEPOINT,
            ProgType::PerfEvent => libbpf_sys::BPF_PROG_TYPE_PERF_EVENT,
            ProgType::RawTracepoint => libbpf_sys::BPF_PROG_TYPE_RAW_TRACEPOINT,
            ProgType::Fentry(_) | ProgType::Fexit(_) => libbpf_sys::BPF_PROG_TYPE_TRACING,
        }
    }

    /// The expected attach type and BTF id a tracing program is loaded
    /// with (0, 0 for the others).
    fn attach_target(self) -> (libbpf_sys::bpf_attach_type, u32) {
        match self {
            ProgType::Fentry(id) => (libbpf_sys::BPF_TRACE_FENTRY, id),
            ProgType::Fexit(id) => (libbpf_sys::BPF_TRACE_FEXIT, id),
            ProgType::KprobeMulti => (libbpf_sys::BPF_TRACE_KPROBE_MULTI, 0),
            _ => (0, 0),
        }
    }
}

/// A refused program: the error and the verifier's log.
#[derive(Debug)]
pub(crate) struct LoadError {
    pub(crate) error: io::Error,
    pub(crate) log: String,
}

/// The most verifier log kept (the kernel truncates past it).
const LOG_SIZE: usize = 4 << 20;

/// Loads a program of `insns` (8-byte `struct bpf_insn`s). The licence is
/// GPL: the helpers that read kernel memory require it.
pub(crate) fn load_program(
    prog_type: ProgType,
    name: &str,
    insns: &[[u8; 8]],
) -> Result<OwnedFd, LoadError> {
    let fail = |error: io::Error| LoadError {
        error,
        log: String::new(),
    };
    let name = CString::new(name.chars().take(15).collect::<String>())
        .map_err(|_| fail(io::Error::other("program name holds a NUL byte")))?;
    let license = c"GPL";
    let attempt = |log: Option<&mut Vec<u8>>| -> io::Result<OwnedFd> {
        // SAFETY: bpf_prog_load_opts is plain data; all-zero is its
        // documented default before `sz` is set.
        let mut opts: libbpf_sys::bpf_prog_load_opts = unsafe { std::mem::zeroed() };
        opts.sz = std::mem::size_of::<libbpf_sys::bpf_prog_load_opts>() as _;
        (opts.expected_attach_type, opts.attach_btf_id) = prog_type.attach_target();
        if let Some(buf) = log {
            opts.log_level = 1;
            opts.log_size = buf.len() as u32;
            opts.log_buf = buf.as_mut_ptr().cast();
        }
        // SAFETY: `insns` is a slice of 8-byte instructions laid out as
        // `struct bpf_insn`; the name and licence are NUL-terminated and
        // outlive the call; the log buffer (if any) is writable for
        // `log_size` bytes.
        let fd = unsafe {
            libbpf_sys::bpf_prog_load(
                prog_type.raw(),
                name.as_ptr(),
                license.as_ptr(),
                insns.as_ptr().cast(),
                insns.len() as _,
                &mut opts,
            )
        };
        if fd < 0 {
            return Err(io::Error::from_raw_os_error(-fd));
        }
        // SAFETY: a new descriptor, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    };
    match attempt(None) {
        Ok(fd) => Ok(fd),
        Err(first) => {
            let mut buf = vec![0u8; LOG_SIZE];
            match attempt(Some(&mut buf)) {
                Ok(fd) => Ok(fd),
                Err(error) => {
                    // A log too long for the buffer fails with ENOSPC
                    // (its end is kept): the reason is the first error.
                    let error = if error.raw_os_error() == Some(libc::ENOSPC) {
                        first
                    } else {
                        error
                    };
                    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
                    Err(LoadError {
                        error,
                        log: String::from_utf8_lossy(&buf[..end]).into_owned(),
                    })
                }
            }
        }
    }
}

/// A map of this process.
#[derive(Debug)]
pub(crate) struct Map(MapHandle);

/// The kinds of map `scry run` makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MapKind {
    Array,
    Hash,
    PerCpuHash,
    PerCpuArray,
    RingBuf,
    StackTrace,
}

impl Map {
    pub(crate) fn create(
        kind: MapKind,
        name: &str,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
    ) -> io::Result<Map> {
        let map_type = match kind {
            MapKind::Array => MapType::Array,
            MapKind::Hash => MapType::Hash,
            MapKind::PerCpuHash => MapType::PercpuHash,
            MapKind::PerCpuArray => MapType::PercpuArray,
            MapKind::RingBuf => MapType::RingBuf,
            MapKind::StackTrace => MapType::StackTrace,
        };
        let opts = libbpf_sys::bpf_map_create_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
            ..Default::default()
        };
        let name: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(15)
            .collect();
        MapHandle::create(
            map_type,
            Some(name),
            key_size,
            value_size,
            max_entries,
            &opts,
        )
        .map(Map)
        .map_err(|e| io_error("creating a BPF map", e))
    }

    pub(crate) fn raw_fd(&self) -> i32 {
        self.0.as_fd().as_raw_fd()
    }

    /// Every key of the map, as it holds them now.
    pub(crate) fn keys(&self) -> Vec<Vec<u8>> {
        self.0.keys().collect()
    }

    /// The value of `key`, one per CPU for per-CPU maps.
    pub(crate) fn lookup(&self, key: &[u8], per_cpu: bool) -> io::Result<Option<Vec<Vec<u8>>>> {
        if per_cpu {
            self.0
                .lookup_percpu(key, MapFlags::ANY)
                .map_err(|e| io_error("reading a BPF map", e))
        } else {
            self.0
                .lookup(key, MapFlags::ANY)
                .map(|v| v.map(|v| vec![v]))
                .map_err(|e| io_error("reading a BPF map", e))
        }
    }

    pub(crate) fn delete(&self, key: &[u8]) -> io::Result<()> {
        self.0
            .delete(key)
            .map_err(|e| io_error("deleting from a BPF map", e))
    }

    /// Writes `value` to every CPU's slot of `key` (zeroing a per-CPU map).
    pub(crate) fn set_all(&self, key: &[u8], value: &[u8], per_cpu: bool) -> io::Result<()> {
        let result = if per_cpu {
            let cpus = libbpf_rs::num_possible_cpus().map_err(|e| io_error("counting CPUs", e))?;
            self.0
                .update_percpu(key, &vec![value.to_vec(); cpus], MapFlags::ANY)
        } else {
            self.0.update(key, value, MapFlags::ANY)
        };
        result.map_err(|e| io_error("writing a BPF map", e))
    }

    pub(crate) fn handle(&self) -> &MapHandle {
        &self.0
    }
}

/// A BPF ring buffer's consumer: `callback` gets each record.
pub(crate) struct EventRing<'a>(libbpf_rs::RingBuffer<'a>);

impl<'a> EventRing<'a> {
    pub(crate) fn new(map: &'a Map, callback: impl FnMut(&[u8]) -> i32 + 'a) -> io::Result<Self> {
        let mut builder = libbpf_rs::RingBufferBuilder::new();
        builder
            .add(map.handle(), callback)
            .map_err(|e| io_error("opening the BPF ring buffer", e))?;
        builder
            .build()
            .map(EventRing)
            .map_err(|e| io_error("opening the BPF ring buffer", e))
    }

    /// A descriptor that polls readable when records are waiting.
    pub(crate) fn fd(&self) -> i32 {
        self.0.epoll_fd()
    }

    /// Hands every waiting record to the callback.
    pub(crate) fn consume(&self) -> io::Result<()> {
        self.0
            .consume()
            .map_err(|e| io_error("reading the BPF ring buffer", e))
    }
}

/// Attaches `prog` to a perf event (PERF_EVENT_IOC_SET_BPF) and enables it.
pub(crate) fn attach_perf_event(event: &PerfEventFd, prog: &OwnedFd) -> io::Result<()> {
    // SAFETY: both descriptors are valid and ours; SET_BPF takes the
    // program's descriptor by value.
    let rc =
        unsafe { perf_event_open_sys::ioctls::SET_BPF(event.raw_fd(), prog.as_raw_fd() as u32) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    event.enable()
}

/// Attaches a raw tracepoint program to `name` (`sched_switch`).
pub(crate) fn attach_raw_tracepoint(name: &str, prog: &OwnedFd) -> io::Result<OwnedFd> {
    let name = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name holds a NUL byte"))?;
    // SAFETY: the name is NUL-terminated and outlives the call.
    let fd = unsafe { libbpf_sys::bpf_raw_tracepoint_open(name.as_ptr(), prog.as_raw_fd()) };
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: a new descriptor, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Attaches an fentry/fexit program to the function it was loaded for
/// (BPF_RAW_TRACEPOINT_OPEN without a name: kernels from 5.5).
pub(crate) fn attach_tracing(prog: &OwnedFd) -> io::Result<OwnedFd> {
    // SAFETY: a NULL name is how a tracing program is attached to the
    // target it was loaded with; the descriptor is ours.
    let fd = unsafe { libbpf_sys::bpf_raw_tracepoint_open(std::ptr::null(), prog.as_raw_fd()) };
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: a new descriptor, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Attaches a `ProgType::KprobeMulti` program to every function of
/// `functions` (their entries, or their returns when `ret`) with one
/// BPF_TRACE_KPROBE_MULTI link (kernels from 5.18 with CONFIG_FPROBE; the
/// kernel sorts the names and finds them in kallsyms, refusing the whole
/// link when one is missing). `cookies` has one value per function, what
/// bpf_get_attach_cookie returns when the program runs for it (the kernel
/// sorts them with the names).
pub(crate) fn attach_kprobe_multi(
    prog: &OwnedFd,
    functions: &[&str],
    cookies: &[u64],
    ret: bool,
) -> io::Result<OwnedFd> {
    if cookies.len() != functions.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "one cookie per function",
        ));
    }
    let names = functions
        .iter()
        .map(|f| CString::new(*f))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name holds a NUL byte"))?;
    let mut syms: Vec<*const libc::c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let cnt = u32::try_from(syms.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many functions"))?;
    // SAFETY: bpf_link_create_opts is plain data (pointers and integers);
    // all-zero is its documented default before `sz` is set.
    let mut opts: libbpf_sys::bpf_link_create_opts = unsafe { std::mem::zeroed() };
    opts.sz = std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _;
    opts.__bindgen_anon_1.kprobe_multi =
        libbpf_sys::bpf_link_create_opts__bindgen_ty_1__bindgen_ty_2 {
            flags: if ret {
                libbpf_sys::BPF_F_KPROBE_MULTI_RETURN
            } else {
                0
            },
            cnt,
            syms: syms.as_mut_ptr(),
            addrs: std::ptr::null(),
            cookies: cookies.as_ptr(),
        };
    // SAFETY: `syms` holds `cnt` pointers to NUL-terminated names, all
    // alive (`names`) until the call returns, which copies them, as it
    // copies the `cnt` cookies (checked above); the program descriptor is
    // ours; no target descriptor (0) for this type.
    let fd = unsafe {
        libbpf_sys::bpf_link_create(
            prog.as_raw_fd(),
            0,
            libbpf_sys::BPF_TRACE_KPROBE_MULTI,
            &opts,
        )
    };
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: a new descriptor, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Runs a raw tracepoint program once on this CPU (BPF_PROG_TEST_RUN).
pub(crate) fn test_run(prog: &OwnedFd) -> io::Result<()> {
    let mut opts = libbpf_sys::bpf_test_run_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_test_run_opts>() as _,
        ..Default::default()
    };
    // SAFETY: `opts` is a valid, initialized bpf_test_run_opts with no
    // buffers; the program descriptor is ours.
    let rc = unsafe { libbpf_sys::bpf_prog_test_run_opts(prog.as_raw_fd(), &mut opts) };
    if rc < 0 {
        return Err(io::Error::from_raw_os_error(-rc));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `r0 = 0; exit`: needs BPF privileges, so it only checks the error
    /// path stays an error without them.
    #[test]
    fn smallest_program_loads_or_says_why() {
        let insns = [[0xb7, 0, 0, 0, 0, 0, 0, 0], [0x95, 0, 0, 0, 0, 0, 0, 0]];
        match load_program(ProgType::RawTracepoint, "scry_test", &insns) {
            Ok(fd) => assert!(fd.as_raw_fd() >= 0),
            Err(e) => assert!(e.error.raw_os_error().is_some()),
        }
    }
}
