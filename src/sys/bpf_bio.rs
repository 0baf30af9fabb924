//! The block I/O tools' kernel side (biolatency, bitesize, biosnoop,
//! biotop): loads `src/bpf/bio.bpf.c` through the engine in one of its
//! modes, and reads its histograms (biolatency, bitesize: log2 slots per
//! key, read and deleted, so each interval starts from zero) or decodes
//! the events its ring streams (biosnoop, biotop). The rules are in the
//! program's header comment; the disks' names come from `sys::block`.

use std::io;

use super::bpf_engine::{GroupRules, Loaded, u32_at, u64_at};
use super::bpf_events::{EventStream, c_string_at};
use super::bpf_execsnoop::load_in_cgroup;
use super::bpf_hists::HistBpf;

super::bpf::bpf_skeleton!("bio.skel.rs");

use skel::{BioSkel, BioSkelBuilder};

/// The program's settings (its `const volatile`s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BioSettings {
    /// A histogram per disk (-D).
    pub(crate) per_disk: bool,
    /// A histogram per set of flags (-F).
    pub(crate) per_flag: bool,
    /// Time from the insert into the queue where there is one (-Q).
    pub(crate) queued: bool,
    pub(crate) milliseconds: bool,
    /// Only this disk (the kernel's dev_t: major << 20 | minor).
    pub(crate) dev: Option<u32>,
}

/// Only the requests started by tasks under this cgroup directory (-c),
/// opened; not for bitesize.
pub(crate) type BioCgroup<'a> = Option<&'a std::fs::File>;

/// One completed request (biosnoop).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BioEvent {
    pub(crate) ts_ns: u64,
    /// From issue to completion.
    pub(crate) latency_ns: u64,
    /// From insert to issue; None when it did not pass a scheduler.
    pub(crate) queued_ns: Option<u64>,
    pub(crate) sector: u64,
    pub(crate) bytes: u32,
    pub(crate) dev: u32,
    /// Canonical flags: the operation in bits 0-7, then Sync, Metadata,
    /// FUA, PreFlush, ReadAhead, Background, NoWait, Priority, NoMerge,
    /// Idle, Integrity (bits 8-18).
    pub(crate) flags: u32,
    /// The process that started it (0 and "?" when unknown).
    pub(crate) pid: u32,
    pub(crate) comm: String,
}

impl BioEvent {
    /// Decodes one ring record (`struct bio_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<BioEvent> {
        let queued = u64_at(r, 16)?;
        Some(BioEvent {
            ts_ns: u64_at(r, 0)?,
            latency_ns: u64_at(r, 8)?,
            queued_ns: (queued != u64::MAX).then_some(queued),
            sector: u64_at(r, 24)?,
            bytes: u32_at(r, 32)?,
            dev: u32_at(r, 36)?,
            flags: u32_at(r, 40)?,
            pid: u32_at(r, 44)?,
            comm: c_string_at(r, 48, 16),
        })
    }
}

/// block_io_start exists since 6.5; without it biosnoop's process is "?".
const IO_START: &str = "scry_bio_io_start";
const INSERT: &str = "scry_bio_insert";
const COMPLETE: &str = "scry_bio_complete";

/// The program's modes.
const LATENCY: u8 = 1;
const SNOOP: u8 = 2;
const SIZE: u8 = 3;

fn open(
    settings: BioSettings,
    mode: u8,
    cgroup: BioCgroup<'_>,
) -> io::Result<Loaded<BioSkel<'static>>> {
    let mut skip = Vec::new();
    if mode != SNOOP {
        skip.push(IO_START);
    }
    // The insert starts a request's stage in its submitter's context, so
    // the cgroup filter needs it even without -Q.
    if (!settings.queued && cgroup.is_none()) || mode == SIZE {
        skip.push(INSERT);
    }
    if mode == SIZE {
        skip.push(COMPLETE);
    }
    load_in_cgroup(
        BioSkelBuilder::default,
        |open: &mut skel::OpenBioSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.mode = mode;
            rodata.per_disk = settings.per_disk;
            rodata.per_flag = settings.per_flag;
            rodata.queued = settings.queued;
            rodata.milliseconds = settings.milliseconds;
            rodata.filter_by_dev = settings.dev.is_some();
            rodata.filter_dev = settings.dev.unwrap_or(0);
            rodata.filter_cgroup = cgroup.is_some();
            Ok(())
        },
        GroupRules {
            optional: &[IO_START],
            skip: &skip,
            ..GroupRules::default()
        },
        cgroup,
        |s: &BioSkel<'static>| &s.maps.cgroup_map,
    )
}

/// biolatency's programs, counting: histograms by key, a disk's dev_t
/// (-D) in the high 32 bits, canonical flags (-F) in the low, or
/// u32::MAX; bitesize's: by tgid.
pub(crate) type BiolatencyBpf = HistBpf<BioSkel<'static>>;

/// The disk and the flags of a biolatency key (each 0 unless asked for).
pub(crate) fn split_key(key: u64) -> (u32, u32) {
    ((key >> 32) as u32, key as u32)
}

pub(crate) fn load_latency(
    settings: BioSettings,
    cgroup: BioCgroup<'_>,
) -> io::Result<BiolatencyBpf> {
    Ok(HistBpf::new(
        open(settings, LATENCY, cgroup)?,
        |s: &BioSkel<'static>| &s.maps.hists,
    ))
}

/// bitesize's programs: a histogram of request Kbytes per tgid (the
/// process current at issue), only `settings.dev` when given.
pub(crate) fn load_size(settings: BioSettings) -> io::Result<BiolatencyBpf> {
    Ok(HistBpf::new(
        open(settings, SIZE, None)?,
        |s: &BioSkel<'static>| &s.maps.hists,
    ))
}

/// biosnoop's programs, streaming [`BioEvent`]s.
pub(crate) type BiosnoopBpf = EventStream<BioEvent>;

pub(crate) fn load_snoop(settings: BioSettings, cgroup: BioCgroup<'_>) -> io::Result<BiosnoopBpf> {
    Ok(EventStream::new(
        open(settings, SNOOP, cgroup)?,
        |s: &skel::BioSkel<'static>| (&s.maps.events, &s.maps.drops),
        BioEvent::decode,
    ))
}
