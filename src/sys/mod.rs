//! The kernel layer: every syscall and every `unsafe` block of scry lives
//! here, next to the `#[repr(C)]` structs with the kernel's own names.
//! Wrappers return `io::Result`; nothing here formats text for people.

pub mod block;
pub mod bpf;
pub mod bpf_bio;
pub mod bpf_capable;
pub mod bpf_cpudist;
pub mod bpf_drsnoop;
pub mod bpf_engine;
pub mod bpf_events;
pub mod bpf_execsnoop;
pub mod bpf_exitsnoop;
pub mod bpf_futexctn;
pub mod bpf_hists;
pub mod bpf_irqs;
pub mod bpf_memleak;
pub mod bpf_offcputime;
pub mod bpf_offwaketime;
pub mod bpf_oomkill;
pub mod bpf_opensnoop;
pub mod bpf_profile;
pub mod bpf_raw;
pub mod bpf_runqlat;
pub mod bpf_runqlen;
pub mod bpf_runqslower;
pub mod bpf_sigsnoop;
pub mod bpf_statsnoop;
pub mod bpf_syscount;
pub mod bpf_tcp;
pub mod bpf_threadsnoop;
pub mod bpf_trace;
pub mod bpf_vfsstat;
pub mod bpf_wakeuptime;
pub mod kprobe;
pub mod localtime;
pub mod mapped;
pub mod perf_event;
pub mod pmu;
pub mod private_file;
pub mod proc;
pub mod process;
pub mod ring;
pub mod signal;
pub mod tracefs;
pub mod tracefs_instance;
pub mod uprobe;
