//! A big recording resolved on two threads: one reads and parses the
//! records and finds each sample's addresses (walking its callchain,
//! unwinding its stack copy and joining the two: the costly part of a
//! `-g` sample), the other (the caller's) turns them into interned stacks,
//! names the locations and merges the samples, as `Resolver::handle_sample`
//! does on one thread.
//!
//! The decision: the finding thread keeps a process model of its own (a
//! second `Resolver`, used only for its maps, binaries and unwinder), fed
//! the same MMAP, COMM and FORK records in the same order, instead of
//! sharing one: nothing is locked per sample, and the resolver stays on
//! one thread (blazesym's symbolizer is not `Send`). The records go over in
//! order, in chunks (a bounded channel: memory stays a few chunks, not the
//! file), so each sample meets the maps as they were when it was taken and
//! the result is the one-thread result, byte for byte. The cost: the
//! binaries the unwinder needs are opened on both threads, worth it only
//! for files past `resolve_file`'s size threshold.
//!
//! A sample's addresses cross only the first time their key is seen since
//! the finding thread last said `ForgetStacks` (on a change of maps, or
//! when what it sent would take the resolving thread's memory past a
//! bound); the others go by key alone. The resolving thread keeps each
//! key's location ids, so its folds (which start the stack table over)
//! do not lose them. On the bench's deep file a third of the samples carry
//! their addresses over.
//!
//! Before a sample is unwound, the finding thread looks for it whole
//! (`user_stack::sample_key`: callchain, registers and stack copy, as the
//! record holds them) among the samples it found under the same maps: a
//! busy loop's samples repeat byte for byte (95% of the bench's shallow
//! file, about 60% of its deep one), and a repeat whose key was sent needs
//! neither unwinding nor its addresses hashed. Only the two keys are kept
//! (32k of them), not the samples: hashing the record costs a third of
//! unwinding it on shallow stacks, under half on deep ones.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use linux_perf_event_reader::{CommonData, CpuMode, ForkOrExitRecord, SampleRecord};

use super::stack::{CHAIN_CACHE, SampleMeta, addresses_key};
use super::user_stack::sample_key;
use super::{Reach, Resolution, Resolver};
use crate::data::handler::{Comm, InPlace, Ksymbol, Lost, Mmap, RecordHandler};
use crate::data::reader::{PerfReader, ReadError};
use crate::symbol::ResolveOptions;
use crate::symbol::process::{FxMap, FxSet};

/// Records per chunk at most: big enough that the channel (a futex wake
/// of the resolving thread per chunk: 5% of a shallow file's CPU at 256)
/// costs nothing per record.
const CHUNK_RECORDS: usize = 1024;
/// Addresses per chunk at most (16 bytes each): a chunk of deep stacks
/// (~1 KB of addresses a sample) stays near 256 KB, and the chunks in
/// flight and kept for reuse near 3 MB.
const CHUNK_ADDRS: usize = 1 << 14;
/// Addresses sent at most between two `ForgetStacks`: the resolving
/// thread keeps a location id (4 bytes) of each, 512 KB at most. Measured
/// on the bench's deep file: 2^19 cost 4 MB more peak memory than 2^17
/// and no less CPU.
const PREPARED_WORDS: usize = 1 << 17;
/// Chunks in flight between the threads.
const CHUNKS_QUEUED: usize = 4;
/// Whole samples the finding thread remembers (`Finder::memo`, 48 bytes
/// each with the table's own).
const MEMO_SAMPLES: usize = 1 << 15;

/// A record the resolver needs, owned, as the finding thread saw it: one
/// kind per `RecordHandler` method `Resolver` implements (a method added
/// there needs its step here, or big files lose those records).
enum Step {
    Sample {
        attr_index: usize,
        meta: SampleMeta,
        reach: Reach,
        /// `addresses_key` of its addresses: hashed here, not on the
        /// resolving thread, the busier one.
        key: u128,
        /// End of its addresses in `Chunk::addrs` (they start where the
        /// previous sample's end).
        end: usize,
        /// Its addresses are there: the first sample with this key since
        /// the last `ForgetStacks` (the others' stack is known by the key).
        fresh: bool,
    },
    /// The keys sent so far are forgotten (the maps changed, or the set of
    /// them is full): the next sample of each comes with its addresses.
    ForgetStacks,
    Mmap {
        attr_index: usize,
        pid: i32,
        tid: i32,
        cpu_mode: CpuMode,
        start: u64,
        len: u64,
        pgoff: u64,
        path: Vec<u8>,
        build_id: Option<Vec<u8>>,
    },
    Comm {
        attr_index: usize,
        pid: i32,
        tid: i32,
        name: Vec<u8>,
        exec: bool,
    },
    Fork(usize, ForkOrExitRecord),
    Lost(Lost),
    Ksymbol {
        addr: u64,
        len: u32,
        ksym_type: u16,
        unregister: bool,
        name: Vec<u8>,
    },
}

/// Records in file order, with the samples' addresses side by side.
#[derive(Default)]
struct Chunk {
    steps: Vec<Step>,
    addrs: Vec<(u64, bool)>,
}

/// The finding thread's record handler: its own resolver's maps, each
/// record passed on.
struct Finder {
    model: Resolver,
    chunk: Chunk,
    scratch: Vec<(u64, bool)>,
    tx: SyncSender<Chunk>,
    /// Chunks the resolving thread is done with, to fill again.
    spent: Receiver<Chunk>,
    /// The resolving thread is gone: nothing more to send.
    closed: bool,
    /// Keys whose addresses were sent since the last `ForgetStacks`: most
    /// samples repeat a stack, and theirs need not cross (a deep file's
    /// addresses are hundreds of megabytes; its distinct stacks, a few).
    sent: FxSet<u128>,
    /// `model.maps_generation` when `sent` was last emptied.
    generation: u64,
    /// Addresses sent since the last `ForgetStacks`: the resolving
    /// thread keeps each one's location id (`Resolver::prepared_locs`).
    sent_words: usize,
    /// `sample_key` → the `addresses_key` and reach of the sample that
    /// had it, under the maps of `generation` (emptied with `sent` when
    /// they change): a sample that repeats
    /// one whole (a busy loop's, stack copy and all: 95% of the bench's
    /// shallow file, 60% of its deep one) is not unwound again.
    memo: FxMap<u128, (u128, Reach)>,
}

impl Finder {
    /// A sample whose addresses (if `fresh`) end the chunk's.
    fn push_sample(
        &mut self,
        attr_index: usize,
        meta: SampleMeta,
        reach: Reach,
        key: u128,
        fresh: bool,
    ) {
        let end = self.chunk.addrs.len();
        self.push(Step::Sample {
            attr_index,
            meta,
            reach,
            key,
            end,
            fresh,
        });
    }

    fn push(&mut self, step: Step) {
        self.chunk.steps.push(step);
        if self.chunk.steps.len() >= CHUNK_RECORDS || self.chunk.addrs.len() >= CHUNK_ADDRS {
            self.send();
        }
    }

    fn send(&mut self) {
        if self.chunk.steps.is_empty() || self.closed {
            return;
        }
        let next = self.spent.try_recv().unwrap_or_default();
        let full = std::mem::replace(&mut self.chunk, next);
        self.closed = self.tx.send(full).is_err();
    }
}

impl RecordHandler for Finder {
    fn handle_sample(&mut self, attr_index: usize, sample: &SampleRecord<'_>) {
        self.handle_sample_in_place(attr_index, sample, InPlace::default());
    }

    fn handle_sample_in_place(
        &mut self,
        attr_index: usize,
        sample: &SampleRecord<'_>,
        place: InPlace<'_>,
    ) {
        let meta = SampleMeta::of(sample);
        let maps_changed = self.generation != self.model.maps_generation;
        if maps_changed || self.memo.len() >= MEMO_SAMPLES {
            self.memo.clear();
        }
        if maps_changed || self.sent.len() >= CHAIN_CACHE || self.sent_words >= PREPARED_WORDS {
            self.generation = self.model.maps_generation;
            self.sent.clear();
            self.sent_words = 0;
            self.push(Step::ForgetStacks);
        }
        let sample_key = sample_key(meta.pid, sample, place);
        let known = sample_key.and_then(|k| self.memo.get(&k).copied());
        if let Some((key, reach)) = known
            && self.sent.contains(&key)
        {
            self.push_sample(attr_index, meta, reach, key, false);
            return;
        }
        let mut addrs = std::mem::take(&mut self.scratch);
        let reach = self
            .model
            .sample_addresses_in_place(meta.pid, sample, place, &mut addrs);
        let key = addresses_key(meta.pid, &addrs);
        if let Some(k) = sample_key {
            self.memo.insert(k, (key, reach));
        }
        let fresh = self.sent.insert(key);
        if fresh {
            self.chunk.addrs.extend_from_slice(&addrs);
            self.sent_words += addrs.len();
        }
        self.scratch = addrs;
        self.push_sample(attr_index, meta, reach, key, fresh);
    }

    fn handle_mmap(&mut self, attr_index: usize, m: &Mmap<'_>, id: &CommonData) {
        if !m.executable {
            return;
        }
        self.model.handle_mmap(attr_index, m, id);
        self.push(Step::Mmap {
            attr_index,
            pid: m.pid,
            tid: m.tid,
            cpu_mode: m.cpu_mode,
            start: m.start,
            len: m.len,
            pgoff: m.pgoff,
            path: m.path.to_vec(),
            build_id: m.build_id.map(<[u8]>::to_vec),
        });
    }

    fn handle_comm(&mut self, attr_index: usize, c: &Comm<'_>, id: &CommonData) {
        self.model.handle_comm(attr_index, c, id);
        self.push(Step::Comm {
            attr_index,
            pid: c.pid,
            tid: c.tid,
            name: c.name.to_vec(),
            exec: c.exec,
        });
    }

    fn handle_fork(&mut self, attr_index: usize, f: &ForkOrExitRecord, id: &CommonData) {
        self.model.handle_fork(attr_index, f, id);
        self.push(Step::Fork(attr_index, f.clone()));
    }

    fn handle_lost(&mut self, lost: &Lost, _id: &CommonData) {
        self.push(Step::Lost(*lost));
    }

    fn handle_ksymbol(&mut self, k: &Ksymbol<'_>, _id: &CommonData) {
        self.push(Step::Ksymbol {
            addr: k.addr,
            len: k.len,
            ksym_type: k.ksym_type,
            unregister: k.unregister,
            name: k.name.to_vec(),
        });
    }
}

impl Resolver {
    /// One chunk's records, in order.
    fn apply(&mut self, chunk: &Chunk) {
        let id = CommonData::default();
        let mut from = 0;
        for step in &chunk.steps {
            match step {
                Step::Sample {
                    attr_index,
                    meta,
                    reach,
                    key,
                    end,
                    fresh,
                } => {
                    let addrs = chunk.addrs.get(from..*end).unwrap_or(&[]);
                    from = *end;
                    let addrs = fresh.then_some(addrs);
                    self.add_prepared(*attr_index, *meta, addrs, *key, *reach);
                }
                Step::ForgetStacks => self.forget_prepared(),
                Step::Mmap {
                    attr_index,
                    pid,
                    tid,
                    cpu_mode,
                    start,
                    len,
                    pgoff,
                    path,
                    build_id,
                } => {
                    let m = Mmap {
                        pid: *pid,
                        tid: *tid,
                        cpu_mode: *cpu_mode,
                        start: *start,
                        len: *len,
                        pgoff: *pgoff,
                        path,
                        executable: true,
                        build_id: build_id.as_deref(),
                    };
                    self.handle_mmap(*attr_index, &m, &id);
                }
                Step::Comm {
                    attr_index,
                    pid,
                    tid,
                    name,
                    exec,
                } => {
                    let c = Comm {
                        pid: *pid,
                        tid: *tid,
                        name,
                        exec: *exec,
                    };
                    self.handle_comm(*attr_index, &c, &id);
                }
                Step::Fork(attr_index, f) => self.handle_fork(*attr_index, f, &id),
                Step::Lost(lost) => self.handle_lost(lost, &id),
                Step::Ksymbol {
                    addr,
                    len,
                    ksym_type,
                    unregister,
                    name,
                } => {
                    let k = Ksymbol {
                        addr: *addr,
                        len: *len,
                        ksym_type: *ksym_type,
                        unregister: *unregister,
                        name,
                    };
                    self.handle_ksymbol(&k, &id);
                }
            }
        }
    }
}

/// Resolve `reader`'s records on two threads (see the module doc); the
/// same resolution as feeding one `Resolver`, and the reader's error, if
/// any, after the records read before it.
pub(crate) fn resolve_on_two_threads(
    reader: PerfReader,
    options: &ResolveOptions,
    build_ids: &[(Vec<u8>, Vec<u8>)],
) -> Result<Resolution, ReadError> {
    let file = reader.file_name().to_string();
    let (tx, rx) = sync_channel::<Chunk>(CHUNKS_QUEUED);
    let (spent_tx, spent) = sync_channel::<Chunk>(CHUNKS_QUEUED + 2);
    std::thread::scope(|scope| {
        let finder = std::thread::Builder::new()
            .name("scry-unwind".into())
            .spawn_scoped(scope, move || {
                let mut reader = reader;
                let mut model = Resolver::new(options);
                model.set_header_build_ids(build_ids.iter().cloned());
                let mut finder = Finder {
                    model,
                    chunk: Chunk::default(),
                    scratch: Vec::new(),
                    tx,
                    spent,
                    closed: false,
                    sent: FxSet::default(),
                    generation: 0,
                    sent_words: 0,
                    memo: FxMap::default(),
                };
                let read = reader.feed(&mut finder);
                finder.send();
                read
            });
        let finder = match finder {
            Ok(handle) => handle,
            Err(e) => {
                return Err(ReadError::Io { file, source: e });
            }
        };
        let mut resolver = Resolver::new(options);
        resolver.set_header_build_ids(build_ids.iter().cloned());
        for mut chunk in rx {
            resolver.apply(&chunk);
            chunk.steps.clear();
            chunk.addrs.clear();
            // Full (the finder is behind): this one is dropped instead.
            let _ = spent_tx.try_send(chunk);
        }
        match finder.join() {
            Ok(read) => read.map(|()| resolver.finish()),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
