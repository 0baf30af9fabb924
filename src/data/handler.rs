//! The one dispatcher of parsed records: [`dispatch`] calls the
//! `handle_<record>` method of a [`RecordHandler`] for each record, and every
//! consumer of records (the resolver, the thread names, the analysis feeds,
//! `top`, `script`) implements only the methods it needs; the others do
//! nothing. File input (`PerfReader::feed`) and live input
//! (`capture::live::LiveSink`) both come through here, so a consumer cannot
//! tell them apart.
//!
//! Decisions made once here rather than in each consumer: MMAP and MMAP2
//! arrive as one [`Mmap`] (executable or not: the consumer decides); the
//! thread a context switch brings in is named by [`switched_in`]; and both
//! kinds of loss report (PERF_RECORD_LOST from a full ring, LOST_SAMPLES
//! from perf's end-of-record counts or the hardware) arrive as one [`Lost`]
//! with its count read the same way, its kind kept apart because perf's
//! reports count only one of them. PERF_RECORD_KSYMBOL, which the parser
//! crate leaves raw, is read here into a [`Ksymbol`].

use linux_perf_event_reader::{
    CommonData, ContextSwitchRecord, CpuMode, EventRecord, ForkOrExitRecord, Mmap2FileId,
    RecordType, SampleRecord,
};

use crate::sys::perf_event::PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER;

/// `PROT_EXEC` in an MMAP2 record's protection.
const PROT_EXEC: u32 = 4;

/// An MMAP or MMAP2 record: the fields consumers read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mmap<'a> {
    pub(crate) pid: i32,
    pub(crate) tid: i32,
    pub(crate) cpu_mode: CpuMode,
    pub(crate) start: u64,
    pub(crate) len: u64,
    pub(crate) pgoff: u64,
    pub(crate) path: &'a [u8],
    /// MMAP: the kernel's executable flag; MMAP2: `PROT_EXEC`.
    pub(crate) executable: bool,
    /// The build-id an MMAP2 record carried (`perf record --buildid-mmap`).
    pub(crate) build_id: Option<&'a [u8]>,
}

/// A COMM record: thread `tid` of process `pid` is called `name` (from an
/// exec when `exec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comm<'a> {
    pub(crate) pid: i32,
    pub(crate) tid: i32,
    pub(crate) name: &'a [u8],
    pub(crate) exec: bool,
}

/// A PERF_RECORD_KSYMBOL: kernel code with no map (a JIT'd BPF function)
/// registered at `addr` for `len` bytes, or unregistered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ksymbol<'a> {
    pub(crate) addr: u64,
    pub(crate) len: u32,
    /// `PERF_RECORD_KSYMBOL_TYPE_*` (1: BPF).
    pub(crate) ksym_type: u16,
    pub(crate) unregister: bool,
    /// Without its NUL.
    pub(crate) name: &'a [u8],
}

impl<'a> Ksymbol<'a> {
    /// The record's body (without its header); `None` when it is too short.
    pub(crate) fn parse(body: &'a [u8]) -> Option<Self> {
        let addr = u64::from_ne_bytes(body.get(..8)?.try_into().ok()?);
        let len = u32::from_ne_bytes(body.get(8..12)?.try_into().ok()?);
        let ksym_type = u16::from_ne_bytes(body.get(12..14)?.try_into().ok()?);
        let flags = u16::from_ne_bytes(body.get(14..16)?.try_into().ok()?);
        let rest = body.get(16..)?;
        let name = &rest[..rest.iter().position(|&b| b == 0)?];
        Some(Ksymbol {
            addr,
            len,
            ksym_type,
            unregister: flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER != 0,
            name,
        })
    }
}

/// Which report a loss came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LostKind {
    /// PERF_RECORD_LOST: the ring was full.
    Records,
    /// PERF_RECORD_LOST_SAMPLES.
    Samples,
}

/// A loss report: `count` records or samples lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lost {
    pub(crate) kind: LostKind,
    pub(crate) count: u64,
}

/// The losses a run or a file reported, counted as perf report counts them
/// ("Total Lost Samples"): the LOST_SAMPLES records. perf (and scry's
/// writer) write one for the same losses a PERF_RECORD_LOST reports, so
/// adding both counts them twice; input with only PERF_RECORD_LOST (older
/// recorders, live rings) counts those.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LostTally {
    records: u64,
    samples: u64,
}

impl LostTally {
    /// One loss report.
    pub(crate) fn add(&mut self, lost: &Lost) {
        match lost.kind {
            LostKind::Records => self.records += lost.count,
            LostKind::Samples => self.samples += lost.count,
        }
    }

    /// The records or samples lost, each loss once.
    pub(crate) fn count(&self) -> u64 {
        if self.samples > 0 {
            self.samples
        } else {
            self.records
        }
    }
}

/// A sample's callchain as its record holds it, read in place (host byte
/// order): linux-perf-event-reader's accessor walks to each word with a
/// bounds check of its own, a tenth of a deep file's parsing.
#[derive(Clone, Copy, Debug)]
pub struct ChainWords<'a>(&'a [u8]);

impl<'a> ChainWords<'a> {
    /// The words of `bytes`; None unless whole words.
    pub(crate) fn new(bytes: &'a [u8]) -> Option<Self> {
        bytes.len().is_multiple_of(8).then_some(ChainWords(bytes))
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len() / 8
    }

    /// The words' bytes, as the record holds them.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.0
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + 'a {
        self.0
            .chunks_exact(8)
            .map(|w| w.try_into().map_or(0, u64::from_ne_bytes))
    }

    /// Word `index`, if there is one.
    pub(crate) fn get(&self, index: usize) -> Option<u64> {
        let at = index.checked_mul(8)?;
        let word = self.0.get(at..at.checked_add(8)?)?;
        Some(u64::from_ne_bytes(word.try_into().ok()?))
    }
}

/// A sample's registers as its record holds them (host byte order): a word
/// per bit of the event's mask, a register found by counting the bits below
/// its own (the crate's `Regs::get` walks them one at a time, three times a
/// sample: a tenth of a shallow file's unwinding thread).
#[derive(Clone, Copy, Debug)]
pub struct RegWords<'a> {
    mask: u64,
    words: ChainWords<'a>,
}

impl<'a> RegWords<'a> {
    /// The registers `mask` names, one word each in `bytes`; None unless
    /// there are as many words as bits.
    pub(crate) fn new(mask: u64, bytes: &'a [u8]) -> Option<Self> {
        let words = ChainWords::new(bytes)?;
        (words.len() == mask.count_ones() as usize).then_some(RegWords { mask, words })
    }

    /// The registers' bytes, as the record holds them.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.words.bytes()
    }

    /// Register `reg` (its perf number), if the mask has it.
    pub(crate) fn get(&self, reg: u64) -> Option<u64> {
        let bit = 1u64.checked_shl(u32::try_from(reg).ok()?)?;
        if self.mask & bit == 0 {
            return None;
        }
        self.words
            .get((self.mask & (bit - 1)).count_ones() as usize)
    }
}

/// What the reader read of a sample in place, beside its `SampleRecord`:
/// the same values, for handlers that read many samples. Each is `None`
/// when the reader did not have it (the handler then reads the record's).
#[derive(Clone, Copy, Debug, Default)]
pub struct InPlace<'a> {
    /// The callchain (`sample.callchain`).
    pub(crate) chain: Option<ChainWords<'a>>,
    /// The user registers (`sample.user_regs`).
    pub(crate) user_regs: Option<RegWords<'a>>,
}

/// A consumer of parsed records, in time order. `id` holds a non-sample
/// record's sample_id fields (time, tid, cpu; empty when the event has no
/// `sample_id_all`); samples carry their own.
#[allow(unused_variables)]
pub trait RecordHandler {
    /// A PERF_RECORD_SAMPLE of event `attr_index` (index into the file's
    /// attributes).
    fn handle_sample(&mut self, attr_index: usize, sample: &SampleRecord<'_>) {}
    /// As `handle_sample`, with what the reader read of the sample in
    /// place when it had the record whole (`place`: its callchain and user
    /// registers, the same values as `sample`'s); for handlers that walk
    /// many chains.
    fn handle_sample_in_place(
        &mut self,
        attr_index: usize,
        sample: &SampleRecord<'_>,
        place: InPlace<'_>,
    ) {
        let _ = place;
        self.handle_sample(attr_index, sample);
    }
    /// A PERF_RECORD_MMAP or MMAP2: a file or anonymous range mapped.
    fn handle_mmap(&mut self, attr_index: usize, mmap: &Mmap<'_>, id: &CommonData) {}
    /// A PERF_RECORD_COMM: a thread's name set (or changed by exec).
    fn handle_comm(&mut self, attr_index: usize, comm: &Comm<'_>, id: &CommonData) {}
    /// A PERF_RECORD_FORK: a process or thread created.
    fn handle_fork(&mut self, attr_index: usize, fork: &ForkOrExitRecord, id: &CommonData) {}
    /// A PERF_RECORD_EXIT: a process or thread gone.
    fn handle_exit(&mut self, attr_index: usize, exit: &ForkOrExitRecord, id: &CommonData) {}
    /// A PERF_RECORD_LOST: the kernel dropped records (ring buffer full).
    fn handle_lost(&mut self, lost: &Lost, id: &CommonData) {}
    /// A PERF_RECORD_SWITCH or SWITCH_CPU_WIDE: a context switch in or out.
    fn handle_switch(&mut self, switch: &ContextSwitchRecord, id: &CommonData) {}
    /// A PERF_RECORD_KSYMBOL: kernel code without a map (a BPF program's
    /// function) registered or unregistered.
    fn handle_ksymbol(&mut self, ksymbol: &Ksymbol<'_>, id: &CommonData) {}
    /// Any other kernel record (throttling, records this crate leaves raw).
    fn handle_other(&mut self, attr_index: usize, record: &EventRecord<'_>, id: &CommonData) {}
}

/// The thread a context switch brings onto its CPU: the switching-in thread
/// itself (`In`, from the sample_id fields), or the next one (`Out` of a
/// CPU-wide switch record).
pub(crate) fn switched_in(switch: &ContextSwitchRecord, id: &CommonData) -> Option<i32> {
    match switch {
        ContextSwitchRecord::In { .. } => id.tid,
        ContextSwitchRecord::Out { next_tid, .. } => *next_tid,
    }
}

/// An [`Mmap`] of an MMAP or MMAP2 record (the fields both have).
macro_rules! mmap {
    ($m:expr, $path:expr, $executable:expr, $build_id:expr) => {
        Mmap {
            pid: $m.pid,
            tid: $m.tid,
            cpu_mode: $m.cpu_mode,
            start: $m.address,
            len: $m.length,
            pgoff: $m.page_offset,
            path: $path,
            executable: $executable,
            build_id: $build_id,
        }
    };
}

/// Calls `handler`'s method for `record`, of event `attr_index`.
pub fn dispatch<H: RecordHandler + ?Sized>(
    handler: &mut H,
    attr_index: usize,
    record: &EventRecord<'_>,
    id: &CommonData,
) {
    match record {
        EventRecord::Sample(s) => handler.handle_sample(attr_index, s),
        EventRecord::Comm(c) => {
            let name = c.name.as_slice();
            let comm = Comm {
                pid: c.pid,
                tid: c.tid,
                name: &name,
                exec: c.is_execve,
            };
            handler.handle_comm(attr_index, &comm, id);
        }
        EventRecord::Fork(f) => handler.handle_fork(attr_index, f, id),
        EventRecord::Exit(e) => handler.handle_exit(attr_index, e, id),
        EventRecord::Mmap(m) => {
            let path = m.path.as_slice();
            let mmap = mmap!(m, &path, m.is_executable, None);
            handler.handle_mmap(attr_index, &mmap, id);
        }
        EventRecord::Mmap2(m) => {
            let path = m.path.as_slice();
            let build_id = match &m.file_id {
                Mmap2FileId::BuildId(id) => Some(id.as_slice()),
                Mmap2FileId::InodeAndVersion(_) => None,
            };
            let mmap = mmap!(m, &path, m.protection & PROT_EXEC != 0, build_id);
            handler.handle_mmap(attr_index, &mmap, id);
        }
        EventRecord::Lost(l) => handler.handle_lost(
            &Lost {
                kind: LostKind::Records,
                count: l.count,
            },
            id,
        ),
        EventRecord::ContextSwitch(s) => handler.handle_switch(s, id),
        EventRecord::Raw(raw) if raw.record_type == RecordType::LOST_SAMPLES => {
            // The body: the count, then the sample_id fields.
            let body = raw.data.as_slice();
            let count = body
                .get(..8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_ne_bytes);
            let lost = Lost {
                kind: LostKind::Samples,
                count,
            };
            handler.handle_lost(&lost, id);
        }
        EventRecord::Raw(raw) if raw.record_type == RecordType::KSYMBOL => {
            let body = raw.data.as_slice();
            match Ksymbol::parse(&body) {
                Some(ksymbol) => handler.handle_ksymbol(&ksymbol, id),
                None => handler.handle_other(attr_index, record, id),
            }
        }
        other => handler.handle_other(attr_index, other, id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linux_perf_event_reader::{
        Endianness, LostRecord, PerfEventAttr, RawData, RawEventRecord, RecordParseInfo,
        TaskWasPreempted,
    };

    /// Writes down what it is called with.
    #[derive(Default)]
    struct Log(Vec<String>);

    impl RecordHandler for Log {
        fn handle_comm(&mut self, _: usize, c: &Comm<'_>, _: &CommonData) {
            self.0.push(format!(
                "comm {} {}",
                c.tid,
                String::from_utf8_lossy(c.name)
            ));
        }
        fn handle_lost(&mut self, lost: &Lost, _: &CommonData) {
            self.0.push(format!("lost {:?} {}", lost.kind, lost.count));
        }
        fn handle_switch(&mut self, s: &ContextSwitchRecord, id: &CommonData) {
            self.0.push(format!("in {:?}", switched_in(s, id)));
        }
    }

    #[test]
    fn both_loss_reports_come_as_one_kind_of_call() {
        let mut log = Log::default();
        let id = CommonData::default();
        let lost = EventRecord::Lost(LostRecord { id: 1, count: 7 });
        dispatch(&mut log, 0, &lost, &id);
        let body = [5u64.to_ne_bytes(), 0u64.to_ne_bytes()].concat();
        let attr_bytes = crate::sys::perf_event::attr_bytes(&crate::sys::perf_event::new_attr());
        let (attr, _) =
            PerfEventAttr::parse::<_, byteorder::NativeEndian>(attr_bytes.as_slice()).unwrap();
        // Only the record type and the body matter to the dispatcher.
        let info = RecordParseInfo::new(&attr, Endianness::NATIVE);
        let raw = RawEventRecord::new(RecordType::LOST_SAMPLES, 0, RawData::Single(&body), info);
        dispatch(&mut log, 0, &EventRecord::Raw(raw), &id);
        let switch = EventRecord::ContextSwitch(ContextSwitchRecord::Out {
            next_pid: Some(3),
            next_tid: Some(4),
            preempted: TaskWasPreempted::No,
        });
        dispatch(&mut log, 0, &switch, &id);
        assert_eq!(log.0, ["lost Records 7", "lost Samples 5", "in Some(4)"]);
    }
}
