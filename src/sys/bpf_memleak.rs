//! `scry memleak`'s kernel side: loads `src/bpf/memleak.bpf.c` through
//! the engine, either its uprobes (attached here to one process, at the
//! file offsets the caller found in its allocator) or its kmem
//! tracepoints (kmem's, or with --percpu the per-CPU allocator's), and
//! reads the allocations still outstanding with their stacks' addresses,
//! and for -t the calls its trace ring streams. What each hook records is in the program's header.

use std::io;
use std::path::Path;

use super::bpf_engine::{self, Attach, GroupRules, Hook, Loaded, RingReader, u32_at, u64_at};
use super::bpf_events::{c_string_at, i32_at};

super::bpf::bpf_skeleton!("memleak.skel.rs");

use skel::{MemleakSkel, MemleakSkelBuilder};

/// The allocator's functions probed, in user mode; each has a program
/// `scry_ml_NAME`, and those that return an address `scry_ml_NAME_ret`.
pub(crate) const USER_FUNCTIONS: [&str; 11] = [
    "malloc",
    "calloc",
    "realloc",
    "posix_memalign",
    "aligned_alloc",
    "valloc",
    "memalign",
    "pvalloc",
    "mmap",
    "free",
    "munmap",
];

/// The functions that release rather than allocate (no return probe).
const RELEASES: [&str; 2] = ["free", "munmap"];

/// The kernel mode's groups (kmem).
const KERNEL_GROUPS: [&str; 4] = [
    "scry_ml_kmalloc",
    "scry_ml_kfree",
    "scry_ml_cache_alloc",
    "scry_ml_cache_free",
];

/// The kernel mode's groups with --percpu.
const PERCPU_GROUPS: [&str; 2] = ["scry_ml_percpu_alloc", "scry_ml_percpu_free"];

/// The program's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemleakSettings {
    /// Allocations smaller than this are not followed (0: all; bcc's -z).
    pub(crate) min_size: u64,
    /// Allocations larger than this are not followed (0: all; bcc's -Z).
    pub(crate) max_size: u64,
    /// Distinct stacks the stack map holds.
    pub(crate) stack_storage: u32,
    /// Every N-th allocation is followed (0 or 1: all; bcc's -s).
    pub(crate) sample_rate: u64,
    /// Each call followed is sent to the trace ring (bcc's -t).
    pub(crate) trace_all: bool,
}

/// Which call a [`TraceEvent`] is (bcc's three trace messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TraceKind {
    /// An allocation entered (its size).
    AllocEntered,
    /// An allocation returned (its size and address).
    AllocExited,
    /// A followed allocation freed (its address and size).
    FreeEntered,
}

/// One call followed, for -t.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TraceEvent {
    /// CLOCK_MONOTONIC, ns.
    pub(crate) timestamp_ns: u64,
    pub(crate) kind: TraceKind,
    pub(crate) size: u64,
    /// 0 for an allocation entered.
    pub(crate) address: u64,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) comm: String,
}

impl TraceEvent {
    /// Decodes one ring record (`struct trace_event`); None when short or
    /// of an unknown kind.
    fn decode(r: &[u8]) -> Option<TraceEvent> {
        let kind = match u32_at(r, 32)? {
            1 => TraceKind::AllocEntered,
            2 => TraceKind::AllocExited,
            3 => TraceKind::FreeEntered,
            _ => return None,
        };
        Some(TraceEvent {
            timestamp_ns: u64_at(r, 0)?,
            kind,
            size: u64_at(r, 8)?,
            address: u64_at(r, 16)?,
            pid: u32_at(r, 24)?,
            tid: u32_at(r, 28)?,
            comm: c_string_at(r, 40, 16),
        })
    }
}

/// Where the user-mode probes go: the allocator's file and, for each
/// function of [`USER_FUNCTIONS`] it has, its file offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UserProbes<'a> {
    pub(crate) pid: u32,
    pub(crate) path: &'a Path,
    pub(crate) sites: Vec<(&'static str, u64)>,
}

/// One allocation not freed (yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Outstanding {
    pub(crate) address: u64,
    pub(crate) size: u64,
    /// When it was made (CLOCK_MONOTONIC, ns).
    pub(crate) timestamp_ns: u64,
    /// Its stack in the stack map; negative: none taken.
    pub(crate) stack_id: i32,
}

#[derive(Debug)]
pub(crate) struct MemleakBpf {
    loaded: Loaded<MemleakSkel<'static>>,
}

fn configure(
    settings: MemleakSettings,
) -> impl FnMut(&mut skel::OpenMemleakSkel<'static>) -> io::Result<()> {
    move |open| {
        bpf_engine::size_stack_map(&mut open.maps.stacks, settings.stack_storage)?;
        let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
        rodata.min_size = settings.min_size;
        rodata.max_size = settings.max_size;
        rodata.sample_rate = settings.sample_rate;
        rodata.trace_all = settings.trace_all;
        Ok(())
    }
}

impl MemleakBpf {
    /// User mode: every probe of `probes` attached to its process.
    pub(crate) fn load_user(
        settings: MemleakSettings,
        probes: &UserProbes<'_>,
    ) -> io::Result<MemleakBpf> {
        let mut loaded = bpf_engine::load(
            MemleakSkelBuilder::default,
            configure(settings),
            GroupRules::skipping(&[KERNEL_GROUPS.as_slice(), &PERCPU_GROUPS].concat()),
            Attach::Later,
        )?;
        let pid = i32::try_from(probes.pid)
            .map_err(|_| io::Error::other(format!("pid {} out of range", probes.pid)))?;
        for &(function, offset) in &probes.sites {
            let prog = format!("scry_ml_{function}");
            loaded.attach_uprobe(&prog, false, pid, (probes.path, offset), 0)?;
            if !RELEASES.contains(&function) {
                let ret = format!("{prog}_ret");
                loaded.attach_uprobe(&ret, true, pid, (probes.path, offset), 0)?;
            }
        }
        Ok(MemleakBpf { loaded })
    }

    /// Kernel mode: the kmem tracepoints, or with `percpu` the per-CPU
    /// allocator's.
    pub(crate) fn load_kernel(settings: MemleakSettings, percpu: bool) -> io::Result<MemleakBpf> {
        let user: Vec<String> = USER_FUNCTIONS
            .iter()
            .flat_map(|f| [format!("scry_ml_{f}"), format!("scry_ml_{f}_ret")])
            .collect();
        let mut user: Vec<&str> = user.iter().map(String::as_str).collect();
        user.extend_from_slice(match percpu {
            true => &KERNEL_GROUPS,
            false => &PERCPU_GROUPS,
        });
        let loaded = bpf_engine::load(
            MemleakSkelBuilder::default,
            configure(settings),
            GroupRules::skipping(&user),
            Attach::Now,
        )?;
        Ok(MemleakBpf { loaded })
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// Every allocation outstanding now.
    pub(crate) fn outstanding(&self) -> io::Result<Vec<Outstanding>> {
        let entries = bpf_engine::hash_entries(
            &self.loaded.skel.maps.allocs,
            "reading the BPF allocation map",
        )?;
        Ok(entries
            .iter()
            .filter_map(|(key, value)| {
                Some(Outstanding {
                    address: u64_at(key, 0)?,
                    size: u64_at(value, 0)?,
                    timestamp_ns: u64_at(value, 8)?,
                    stack_id: i32_at(value, 16)?,
                })
            })
            .collect())
    }

    /// The addresses of stack `id`, innermost first.
    pub(crate) fn stack(&self, id: i32) -> io::Result<Option<Vec<u64>>> {
        bpf_engine::stack_ips(
            &self.loaded.skel.maps.stacks,
            id,
            "reading the BPF stack map",
        )
    }

    /// Allocations not followed because the allocation map was full.
    pub(crate) fn dropped(&self) -> io::Result<u64> {
        bpf_engine::dropped(&self.loaded.skel.maps.drops)
    }

    /// The reader of -t's calls, calling `on_event` with each.
    pub(crate) fn trace_reader<'a>(
        &'a self,
        mut on_event: impl FnMut(TraceEvent) + 'a,
    ) -> io::Result<RingReader<'a>> {
        bpf_engine::ring_reader(&self.loaded.skel.maps.trace_events, move |raw| {
            if let Some(event) = TraceEvent::decode(raw) {
                on_event(event);
            }
        })
    }

    /// Calls of -t the trace ring had no room for.
    pub(crate) fn trace_dropped(&self) -> io::Result<u64> {
        bpf_engine::dropped(&self.loaded.skel.maps.trace_drops)
    }
}
