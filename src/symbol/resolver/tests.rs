//! The resolver without a kernel: records built by hand (maps, samples,
//! callchains) fed in, the frames and reasons that come out checked. User
//! code is this test binary itself, mapped at a made-up address; kernel code
//! comes from a kallsyms text written by the test.

use std::io::Write;

use byteorder::LittleEndian;
use linux_perf_event_reader::{
    CpuMode, EventRecord, MmapRecord, RawData, RawDataU64, SampleRecord,
};
use object::{Object, ObjectSegment, ObjectSymbol};

use super::{Resolver, classify, loc_key};
use crate::model::sample::{FrameTable, ResolvedSample, StackQuality};
use crate::symbol::process::{AddressSpace, DsoKind, DsoTable, Mapping};
use crate::symbol::{ResolveOptions, UnresolvedReason};

const PID: i32 = 4242;

#[inline(never)]
fn resolver_test_target(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(31).rotate_left(7))
}

fn sample<'a>(ip: u64, cpu_mode: CpuMode, chain: Option<&'a [u8]>) -> SampleRecord<'a> {
    SampleRecord {
        id: None,
        addr: None,
        stream_id: None,
        raw: None,
        ip: Some(ip),
        timestamp: Some(1),
        pid: Some(PID),
        tid: Some(PID),
        cpu: Some(0),
        period: Some(1),
        user_regs: None,
        user_stack: None,
        callchain: chain
            .map(|bytes| RawDataU64::from_raw_data::<LittleEndian>(RawData::Single(bytes))),
        phys_addr: None,
        data_page_size: None,
        code_page_size: None,
        intr_regs: None,
        cpu_mode,
    }
}

fn mmap(path: &str, start: u64, len: u64, pgoff: u64) -> EventRecord<'_> {
    EventRecord::Mmap(MmapRecord {
        pid: PID,
        tid: PID,
        address: start,
        length: len,
        page_offset: pgoff,
        is_executable: true,
        cpu_mode: CpuMode::User,
        path: RawData::Single(path.as_bytes()),
    })
}

fn chain_bytes(addrs: &[u64]) -> Vec<u8> {
    addrs.iter().flat_map(|a| a.to_le_bytes()).collect()
}

fn names(sample: &ResolvedSample, frames: &FrameTable) -> Vec<String> {
    sample
        .stack
        .iter()
        .map(|&id| {
            let f = frames.get(id);
            f.sym.as_deref().unwrap_or("[unknown]").to_string()
        })
        .collect()
}

#[test]
fn mapped_paths_are_classified() {
    let table = [
        ("[vdso]", DsoKind::Vdso, "[vdso]"),
        ("", DsoKind::PerfMap(7), "/tmp/perf-7.map"),
        ("//anon", DsoKind::PerfMap(7), "/tmp/perf-7.map"),
        (
            "/anon_hugepage (deleted)",
            DsoKind::PerfMap(7),
            "/tmp/perf-7.map",
        ),
        ("/usr/lib/libc.so.6", DsoKind::File, "/usr/lib/libc.so.6"),
        ("[heap]", DsoKind::Unknown, "[heap]"),
    ];
    for (path, kind, name) in table {
        assert_eq!(classify(7, path), (kind, name.to_string()), "{path:?}");
    }
}

#[test]
fn addresses_become_file_offsets_of_their_mapping() {
    let mut dsos = DsoTable::new();
    let libc = dsos.intern("/usr/lib/libc.so.6", DsoKind::File, None);
    let jit = dsos.intern("/tmp/perf-1.map", DsoKind::PerfMap(1), None);
    let mut space = AddressSpace::default();
    space.insert(Mapping {
        start: 0x7f00_0000_0000,
        end: 0x7f00_0010_0000,
        pgoff: 0x2_8000,
        dso: libc,
    });
    space.insert(Mapping {
        start: 0x1000_0000,
        end: 0x1000_1000,
        pgoff: 0,
        dso: jit,
    });
    // (address, kernel, expected dso, expected address in it)
    let table = [
        (0x7f00_0000_1234, false, libc, 0x2_9234),
        (0x1000_0010, false, jit, 0x1000_0010),
        (0x5000, false, DsoTable::UNKNOWN, 0),
        (
            0xffff_ffff_8100_0000,
            true,
            DsoTable::KERNEL,
            0xffff_ffff_8100_0000,
        ),
    ];
    for (addr, kernel, dso, at) in table {
        let key = loc_key(&dsos, Some(&space), addr, kernel);
        assert_eq!((key.dso, key.addr), (dso, at), "{addr:#x}");
    }
    assert_eq!(
        loc_key(&dsos, None, 0x7f00_0000_1234, false).dso,
        DsoTable::UNKNOWN
    );
}

/// The file offset of `resolver_test_target` in this test binary.
fn target_file_offset() -> (std::path::PathBuf, u64) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let data = std::fs::read(&exe).expect("read the test binary");
    let file = object::File::parse(&*data).expect("parse the test binary");
    let svma = file
        .symbols()
        .find(|s| s.name().is_ok_and(|n| n.contains("resolver_test_target")))
        .map(|s| s.address())
        .expect("the test binary has a symbol table with the target");
    let offset = file
        .segments()
        .find_map(|seg| {
            let (off, size) = seg.file_range();
            (svma >= seg.address() && svma < seg.address() + size)
                .then(|| svma - seg.address() + off)
        })
        .expect("a segment holds the target");
    (exe, offset)
}

#[test]
fn user_and_kernel_frames_are_named_from_the_binary_and_kallsyms() {
    assert_eq!(
        resolver_test_target(1),
        1u64.wrapping_mul(31).rotate_left(7)
    );
    let (exe, offset) = target_file_offset();
    let mut kallsyms = tempfile::NamedTempFile::new().expect("a temporary file");
    writeln!(
        kallsyms,
        "ffffffff81000000 T _stext\nffffffff81000100 T do_test_work\nffffffff81000200 T do_other\nffffffff81001000 T _etext"
    )
    .expect("write kallsyms");
    let options = ResolveOptions {
        kallsyms: Some(kallsyms.path().to_path_buf()),
        ..ResolveOptions::default()
    };
    let mut r = Resolver::new(&options);
    let pgoff = offset & !0xfff;
    let start = 0x5555_0000_0000;
    let path = exe.to_string_lossy().into_owned();
    r.handle_record(0, &mmap(&path, start, 0x100_0000, pgoff));
    let ip = start + (offset - pgoff);
    // A user sample in the target, called from an address no map covers.
    let user_chain = chain_bytes(&[
        linux_perf_event_reader::constants::PERF_CONTEXT_USER,
        ip,
        0x10,
    ]);
    r.handle_record(
        0,
        &EventRecord::Sample(sample(ip, CpuMode::User, Some(&user_chain))),
    );
    // A kernel sample, on top of the same user stack.
    let kernel_chain = chain_bytes(&[
        linux_perf_event_reader::constants::PERF_CONTEXT_KERNEL,
        0xffff_ffff_8100_0110,
        0xffff_ffff_8100_0208,
        linux_perf_event_reader::constants::PERF_CONTEXT_USER,
        ip,
    ]);
    r.handle_record(
        0,
        &EventRecord::Sample(sample(
            0xffff_ffff_8100_0110,
            CpuMode::Kernel,
            Some(&kernel_chain),
        )),
    );
    let done = r.finish();
    assert_eq!(done.samples.len(), 2);
    let user = names(&done.samples[0], &done.frames);
    assert!(user[0].contains("resolver_test_target"), "{user:?}");
    assert_eq!(user[1], "[unknown]", "{user:?}");
    // The outermost frame has no name: the stack counts as cut.
    assert_eq!(done.samples[0].quality, StackQuality::Truncated);
    let kernel = names(&done.samples[1], &done.frames);
    assert_eq!(kernel[..2], ["do_test_work", "do_other"], "{kernel:?}");
    assert!(kernel[2].contains("resolver_test_target"), "{kernel:?}");
    assert_eq!(done.samples[1].quality, StackQuality::Complete);
    assert_eq!(
        done.stats.reasons.get(&UnresolvedReason::UnknownMapping),
        Some(&1)
    );
}

/// An unnamed kernel address is in `[kernel.kallsyms]` when the
/// recording's kernel map covers it, else in no binary (`[unknown]`, a BPF
/// program the file has no KSYMBOL for): what perf prints for the file.
#[test]
fn unnamed_kernel_code_outside_the_kernel_map_is_in_no_binary() {
    let mut kallsyms = tempfile::NamedTempFile::new().expect("a temporary file");
    writeln!(
        kallsyms,
        "ffffffff81000000 T _stext\nffffffff81000100 T do_test_work\nffffffff81001000 T _etext\nffffffff82000000 D some_data"
    )
    .expect("write kallsyms");
    let options = ResolveOptions {
        kallsyms: Some(kallsyms.path().to_path_buf()),
        ..ResolveOptions::default()
    };
    let bpf_code = 0xffff_ffff_a000_0010;
    // (the recording's kernel map, the dso the unnamed address gets)
    let table = [
        (None, "[kernel.kallsyms]"),
        (Some((0xffff_ffff_8100_0000, 0x1000)), "[unknown]"),
        (
            Some((0xffff_ffff_8100_0000, u64::MAX >> 1)),
            "[kernel.kallsyms]",
        ),
    ];
    for (map, dso) in table {
        let mut r = Resolver::new(&options);
        if let Some((start, len)) = map {
            r.handle_record(
                0,
                &EventRecord::Mmap(MmapRecord {
                    pid: -1,
                    tid: 0,
                    address: start,
                    length: len,
                    page_offset: start,
                    is_executable: true,
                    cpu_mode: CpuMode::Kernel,
                    path: RawData::Single(b"[kernel.kallsyms]_text"),
                }),
            );
        }
        r.handle_record(
            0,
            &EventRecord::Sample(sample(bpf_code, CpuMode::Kernel, None)),
        );
        let done = r.finish();
        let frame = done.frames.get(done.samples[0].stack[0]);
        assert_eq!((frame.sym.as_deref(), &*frame.dso), (None, dso), "{map:x?}");
    }
}

#[test]
fn a_missing_binary_and_a_missing_jit_map_are_reasons() {
    let mut r = Resolver::new(&ResolveOptions::default());
    r.handle_record(
        0,
        &mmap("/nonexistent/scry-test/libgone.so", 0x7000_0000, 0x1000, 0),
    );
    r.handle_record(0, &mmap("//anon", 0x9000_0000, 0x1000, 0));
    r.handle_record(
        0,
        &EventRecord::Sample(sample(0x7000_0010, CpuMode::User, None)),
    );
    r.handle_record(
        0,
        &EventRecord::Sample(sample(0x9000_0010, CpuMode::User, None)),
    );
    let done = r.finish();
    let reasons = &done.stats.reasons;
    assert_eq!(
        reasons.get(&UnresolvedReason::MissingBinary),
        Some(&1),
        "{reasons:?}"
    );
    assert_eq!(
        reasons.get(&UnresolvedReason::MissingPerfMap),
        Some(&1),
        "{reasons:?}"
    );
    for s in &done.samples {
        assert_eq!(s.quality, StackQuality::NoCallchain);
        let frame = done.frames.get(s.stack[0]);
        assert!(frame.sym.is_none());
    }
}

#[test]
fn merged_samples_weigh_what_their_samples_weigh() {
    let (exe, offset) = target_file_offset();
    let path = exe.to_string_lossy().into_owned();
    for merge in [false, true] {
        let options = ResolveOptions {
            merge_samples: merge,
            merge_batch: 2,
            ..ResolveOptions::default()
        };
        let mut r = Resolver::new(&options);
        let pgoff = offset & !0xfff;
        r.handle_record(0, &mmap(&path, 0x4000_0000, 0x100_0000, pgoff));
        let ip = 0x4000_0000 + (offset - pgoff);
        for i in 0..5 {
            // Two addresses inside the same function: one frame stack.
            r.handle_record(
                0,
                &EventRecord::Sample(sample(ip + (i % 2), CpuMode::User, None)),
            );
        }
        let done = r.finish();
        let total: u64 = done.samples.iter().map(|s| s.count).sum();
        assert_eq!(total, 5, "merge {merge}");
        assert_eq!(
            done.samples.len(),
            if merge { 1 } else { 5 },
            "merge {merge}"
        );
        assert_eq!(done.stats.samples, 5);
    }
}

/// A BPF function the recording's KSYMBOL names is named from it, its dso
/// the function's name (as perf has it), whatever kallsyms says at that
/// address when the file is read.
#[test]
fn a_ksymbol_names_bpf_code_before_kallsyms() {
    use crate::data::handler::{Ksymbol, RecordHandler};
    let mut kallsyms = tempfile::NamedTempFile::new().expect("a temporary file");
    writeln!(
        kallsyms,
        "ffffffff81000000 T _stext\nffffffff81001000 T _etext\nffffffffa0000000 t bpf_prog_00_other\t[bpf]"
    )
    .expect("write kallsyms");
    let options = ResolveOptions {
        kallsyms: Some(kallsyms.path().to_path_buf()),
        ..ResolveOptions::default()
    };
    let mut r = Resolver::new(&options);
    let name = b"bpf_prog_ee1db1a1f4f27ca8_sys_enter";
    let ksymbol = Ksymbol {
        addr: 0xffff_ffff_a000_0000,
        len: 0x100,
        ksym_type: 1,
        unregister: false,
        name,
    };
    r.handle_ksymbol(&ksymbol, &Default::default());
    for ip in [0xffff_ffff_a000_0010, 0xffff_ffff_a000_0100] {
        r.handle_record(0, &EventRecord::Sample(sample(ip, CpuMode::Kernel, None)));
    }
    let done = r.finish();
    let name = std::str::from_utf8(name).unwrap();
    let inside = done.frames.get(done.samples[0].stack[0]);
    assert_eq!((inside.sym.as_deref(), &*inside.dso), (Some(name), name));
    // Past its length: not the function's.
    let past = done.frames.get(done.samples[1].stack[0]);
    assert_ne!(past.sym.as_deref(), Some(name));
}

/// A stack the finding thread of `pipeline` sent once and then only by its
/// key keeps its frames across the folds that start the stack table over,
/// and a key sent again after `forget_prepared` is the same stack.
#[test]
fn prepared_stacks_outlive_folds_and_are_sent_again_after_forgetting() {
    use super::Reach;
    use super::stack::SampleMeta;
    let (exe, offset) = target_file_offset();
    let path = exe.to_string_lossy().into_owned();
    let options = ResolveOptions {
        merge_samples: true,
        merge_batch: 2,
        ..ResolveOptions::default()
    };
    let mut r = Resolver::new(&options);
    let pgoff = offset & !0xfff;
    r.handle_record(0, &mmap(&path, 0x4000_0000, 0x100_0000, pgoff));
    let ip = 0x4000_0000 + (offset - pgoff);
    let meta = |tid: i32| SampleMeta {
        pid: PID,
        tid,
        cpu: 0,
        time: 1,
        period: 1,
    };
    let target = [(ip, false)];
    r.add_prepared(0, meta(PID), Some(&target), 1, Reach::Whole);
    // Other stacks on other threads: each a pending sample of its own,
    // folded two by two.
    for i in 0..6u64 {
        let other = [(0x4000_0000 + i * 0x10, false)];
        r.add_prepared(
            0,
            meta(PID + 1 + i as i32),
            Some(&other),
            100 + u128::from(i),
            Reach::Whole,
        );
        r.add_prepared(0, meta(PID), None, 1, Reach::Whole);
    }
    r.forget_prepared();
    r.add_prepared(0, meta(PID), Some(&target), 1, Reach::Whole);
    r.add_prepared(0, meta(PID), None, 1, Reach::Whole);
    let done = r.finish();
    let on_target: u64 = done
        .samples
        .iter()
        .filter(|s| s.tid == PID)
        .inspect(|s| {
            assert_eq!(
                names(s, &done.frames),
                ["scry::symbol::resolver::tests::resolver_test_target"]
            );
        })
        .map(|s| s.count)
        .sum();
    assert_eq!(on_target, 9);
    assert_eq!(done.stats.samples, 15);
}

/// `sample_key` (pipeline's memo of whole samples) tells apart samples that
/// differ in anything the unwinding reads, and is the same for the same
/// bytes.
#[test]
fn sample_keys_differ_in_each_part_unwinding_reads() {
    use super::user_stack::sample_key;
    use crate::data::handler::{ChainWords, InPlace, RegWords};
    use linux_perf_event_reader::Regs;

    const MASK: u64 = 0x1c0; // bp, sp, ip
    let key = |pid: i32, chain: &[u64], regs: [u64; 3], stack: &[u8], dyn_size: u64| {
        let chain = chain_bytes(chain);
        let regs = chain_bytes(&regs);
        let mut s = sample(0x1000, CpuMode::User, Some(&chain));
        s.pid = Some(pid);
        s.user_regs = Some(Regs::new(
            MASK,
            RawDataU64::from_raw_data::<LittleEndian>(RawData::Single(&regs)),
        ));
        s.user_stack = Some((RawData::Single(stack), dyn_size));
        let place = InPlace {
            chain: ChainWords::new(&chain),
            user_regs: RegWords::new(MASK, &regs),
        };
        sample_key(pid, &s, place)
    };
    let chain = [0xffff_ffff_ffff_fe00, 0x1000, 0x2000, 0x3000];
    let regs = [0x7ff0_0000, 0x7fe0_0000, 0x1000];
    let stack: Vec<u8> = (0..128).collect();
    let base = key(PID, &chain, regs, &stack, 128).expect("a key");
    assert_eq!(
        key(PID, &chain, regs, &stack, 128),
        Some(base),
        "same bytes"
    );
    let mut other_stack = stack.clone();
    other_stack[127] ^= 1;
    let mut other_chain = chain;
    other_chain[3] += 8;
    let changed = [
        key(PID + 1, &chain, regs, &stack, 128),
        key(PID, &other_chain, regs, &stack, 128),
        key(PID, &chain[..3], regs, &stack, 128),
        key(PID, &chain, [regs[0], regs[1] + 8, regs[2]], &stack, 128),
        key(PID, &chain, [regs[0] + 8, regs[1], regs[2]], &stack, 128),
        key(PID, &chain, regs, &other_stack, 128),
        // The copy the kernel filled ends before the byte that differs.
        key(PID, &chain, regs, &stack, 100),
    ];
    for (i, k) in changed.iter().enumerate() {
        assert!(k.is_some_and(|k| k != base), "change {i} kept the key");
    }
    assert_eq!(
        key(PID, &chain, regs, &other_stack, 100),
        key(PID, &chain, regs, &stack, 100),
        "a difference past the filled copy is nothing the unwinder reads"
    );
    // Without the callchain in place there is no key (the slow path).
    let chain_b = chain_bytes(&chain);
    let s = sample(0x1000, CpuMode::User, Some(&chain_b));
    assert_eq!(sample_key(PID, &s, InPlace::default()), None);
}
