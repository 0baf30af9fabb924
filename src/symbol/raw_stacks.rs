//! Stacks a BPF program took (raw addresses, kernel and user, per thread)
//! named by the same resolver as perf's records: each stack goes in as a
//! sample whose callchain holds the addresses, each process's executable
//! mappings as MMAP records read from /proc/PID/maps.
//!
//! The decision: a BPF tool only learns which processes it saw when it
//! reads its maps, and a short-lived process is gone by the end. So
//! `see` reads the maps of each process the first time the caller names
//! it (the caller polls while the tool runs), and at naming time each
//! process gets its maps as they are then if it still lives (an exec
//! since may have replaced them), else as first seen (a zombie, whose
//! maps read empty, counts as gone). A process seen only
//! after it exited has no maps: its user frames are `[unknown]`, and it
//! is listed in `Named::gone`.

use std::collections::{BTreeSet, HashMap, HashSet};

use byteorder::NativeEndian;
use linux_perf_event_reader::constants::{PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER};
use linux_perf_event_reader::{
    CommOrExecRecord, CpuMode, EventRecord, MmapRecord, RawData, RawDataU64, Regs, SampleRecord,
};

use super::{ResolveOptions, Resolver};
use crate::model::sample::{FrameTable, ResolvedSample};
use crate::sys::proc::{self, MapEntry};

/// One stack to name: the thread, its name, its addresses innermost first
/// (kernel, then user) and its weight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawStack<'a> {
    pub(crate) pid: i32,
    pub(crate) tid: i32,
    pub(crate) comm: &'a str,
    pub(crate) kernel: &'a [u64],
    pub(crate) user: &'a [u64],
    pub(crate) weight: u64,
    /// The user registers and stack top taken with it: its first user
    /// frames are then unwound and joined to the chain (`stack_join`), so
    /// a frameless libc function's caller is not skipped.
    pub(crate) top: Option<RawTop<'a>>,
}

/// The user %ip, %sp, %bp and the stack from %sp up, when a stack was
/// taken.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawTop<'a> {
    pub(crate) ip: u64,
    pub(crate) sp: u64,
    pub(crate) bp: u64,
    pub(crate) stack: &'a [u8],
}

/// perf's x86 register bits of %bp, %sp, %ip (PERF_REG_X86_*): a sample's
/// registers come in that order.
const TOP_REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);

/// The stacks named, in the order they were added.
#[derive(Debug)]
pub(crate) struct Named {
    pub(crate) samples: Vec<ResolvedSample>,
    pub(crate) frames: FrameTable,
    /// Processes whose maps were never read (gone before first seen).
    pub(crate) gone: Vec<i32>,
}

/// Names raw stacks; see the module doc.
#[derive(Debug)]
pub(crate) struct RawStackResolver {
    options: ResolveOptions,
    resolver: Resolver,
    /// The maps each process had when first seen.
    first_seen: HashMap<i32, Vec<MapEntry>>,
    /// Processes whose maps were fed to the resolver.
    fed: HashSet<i32>,
    gone: BTreeSet<i32>,
    chain: Vec<u8>,
}

impl RawStackResolver {
    pub(crate) fn new(options: &ResolveOptions) -> RawStackResolver {
        RawStackResolver {
            options: options.clone(),
            resolver: Resolver::new(options),
            first_seen: HashMap::new(),
            fed: HashSet::new(),
            gone: BTreeSet::new(),
            chain: Vec::new(),
        }
    }

    /// Reads the maps of each process not seen before (one that already
    /// exited is skipped: `add` tells).
    pub(crate) fn see(&mut self, pids: impl IntoIterator<Item = i32>) {
        for pid in pids {
            if pid > 0
                && !self.first_seen.contains_key(&pid)
                && let Some(maps) = live_maps(pid)
            {
                self.first_seen.insert(pid, maps);
            }
        }
    }

    /// Reads the maps of `pid` again if it lives (a process followed from
    /// before its exec, or that maps libraries later): these are the maps
    /// its stacks get once it is gone.
    pub(crate) fn refresh(&mut self, pid: i32) {
        if let Some(maps) = live_maps(pid) {
            self.first_seen.insert(pid, maps);
        }
    }

    /// Names every stack added so far and starts again, keeping the maps
    /// seen (a tool that prints every interval).
    pub(crate) fn take_named(&mut self) -> Named {
        let resolver = std::mem::replace(&mut self.resolver, Resolver::new(&self.options));
        self.fed.clear();
        let done = resolver.finish();
        Named {
            samples: done.samples,
            frames: done.frames,
            gone: std::mem::take(&mut self.gone).into_iter().collect(),
        }
    }

    /// The stacks added since the last call, named, in the order added;
    /// their frames stay in [`RawStackResolver::frames`] with every frame
    /// named before (a live view that keeps earlier intervals' samples).
    pub(crate) fn take_samples(&mut self) -> Vec<ResolvedSample> {
        self.resolver.take_samples()
    }

    /// Every frame named so far.
    pub(crate) fn frames(&self) -> &FrameTable {
        self.resolver.frames()
    }

    /// Adds a stack (its process's maps go in first, once, if it has user
    /// frames).
    pub(crate) fn add(&mut self, stack: &RawStack<'_>) {
        if !stack.user.is_empty() && self.fed.insert(stack.pid) {
            self.feed_maps(stack.pid);
        }
        self.resolver.handle_record(
            0,
            &EventRecord::Comm(CommOrExecRecord {
                pid: stack.pid,
                tid: stack.tid,
                name: RawData::Single(stack.comm.as_bytes()),
                is_execve: false,
            }),
        );
        let mut chain = std::mem::take(&mut self.chain);
        chain.clear();
        for (context, ips) in [
            (PERF_CONTEXT_KERNEL, stack.kernel),
            (PERF_CONTEXT_USER, stack.user),
        ] {
            if !ips.is_empty() {
                chain.extend_from_slice(&context.to_ne_bytes());
                chain.extend(ips.iter().flat_map(|ip| ip.to_ne_bytes()));
            }
        }
        let regs: Vec<u8> = stack
            .top
            .iter()
            .flat_map(|t| [t.bp, t.sp, t.ip])
            .flat_map(u64::to_ne_bytes)
            .collect();
        let sample = SampleRecord {
            id: None,
            addr: None,
            stream_id: None,
            raw: None,
            ip: stack.kernel.first().or(stack.user.first()).copied(),
            timestamp: None,
            pid: Some(stack.pid),
            tid: Some(stack.tid),
            cpu: None,
            period: Some(stack.weight),
            user_regs: stack.top.map(|_| {
                Regs::new(
                    TOP_REGS_MASK,
                    RawDataU64::from_raw_data::<NativeEndian>(RawData::Single(&regs)),
                )
            }),
            user_stack: stack
                .top
                .map(|t| (RawData::Single(t.stack), t.stack.len() as u64)),
            callchain: Some(RawDataU64::from_raw_data::<NativeEndian>(RawData::Single(
                &chain,
            ))),
            phys_addr: None,
            data_page_size: None,
            code_page_size: None,
            intr_regs: None,
            cpu_mode: if stack.kernel.is_empty() {
                CpuMode::User
            } else {
                CpuMode::Kernel
            },
        };
        self.resolver.handle_record(0, &EventRecord::Sample(sample));
        self.chain = chain;
    }

    /// The maps of `pid` as they are now, or as first seen, to the resolver.
    fn feed_maps(&mut self, pid: i32) {
        let maps = match live_maps(pid) {
            Some(maps) => maps,
            None => match self.first_seen.get(&pid) {
                Some(maps) => maps.clone(),
                None => {
                    self.gone.insert(pid);
                    return;
                }
            },
        };
        for m in &maps {
            self.resolver.handle_record(
                0,
                &EventRecord::Mmap(MmapRecord {
                    pid,
                    tid: pid,
                    address: m.start,
                    length: m.end.saturating_sub(m.start),
                    page_offset: m.offset,
                    is_executable: true,
                    cpu_mode: CpuMode::User,
                    path: RawData::Single(m.path.as_bytes()),
                }),
            );
        }
    }

    /// Names every stack added.
    pub(crate) fn finish(self) -> Named {
        let done = self.resolver.finish();
        Named {
            samples: done.samples,
            frames: done.frames,
            gone: self.gone.into_iter().collect(),
        }
    }
}

/// The executable maps of a living process; `None` for one that is gone
/// (a zombie's maps read empty).
fn live_maps(pid: i32) -> Option<Vec<MapEntry>> {
    let maps: Vec<MapEntry> = proc::maps(pid)
        .ok()?
        .into_iter()
        .filter(MapEntry::is_executable)
        .collect();
    (!maps.is_empty()).then_some(maps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn raw_stacks_test_target() -> u64 {
        std::hint::black_box(7)
    }

    /// This test's own function, named from this process's maps; a
    /// process that does not exist is gone.
    #[test]
    fn names_user_addresses_from_proc_maps() {
        let me = std::process::id() as i32;
        let mut raw = RawStackResolver::new(&ResolveOptions::default());
        raw.see([me]);
        let ip = raw_stacks_test_target as *const () as u64 + 1;
        raw.add(&RawStack {
            pid: me,
            tid: me,
            comm: "tester",
            kernel: &[],
            user: &[ip],
            weight: 5,
            top: None,
        });
        raw.add(&RawStack {
            pid: i32::MAX,
            tid: i32::MAX,
            comm: "ghost",
            kernel: &[],
            user: &[0x1000],
            weight: 1,
            top: None,
        });
        let named = raw.finish();
        assert_eq!(named.samples.len(), 2);
        let frame = named.frames.get(named.samples[0].stack[0]);
        let sym = frame.sym.as_deref().unwrap_or("");
        assert!(sym.contains("raw_stacks_test_target"), "{sym}");
        assert_eq!(named.samples[0].period, 5);
        assert_eq!(&*named.samples[0].comm, "tester");
        assert_eq!(named.gone, vec![i32::MAX]);
    }
}
