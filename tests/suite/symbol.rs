//! The symbol stage against the oracle: workloads are recorded with `perf
//! record`, then the same perf.data is resolved by scry's library and printed
//! by `perf script`; the named frames of every sample must agree.
//!
//! Samples are matched by (tid, time in ns), so ordering ties cannot skew
//! the comparison. Kernel-facility gating follows `tests/suite/common`.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use scry::analysis::sample::{FrameKind, ResolvedSample, StackQuality};
use scry::symbol::{ResolveOptions, Resolved, UnresolvedReason, resolve_file};

/// One sample as `perf script -F tid,time,ip,sym,dso --ns` prints it.
#[derive(Debug)]
struct PerfSample {
    syms: Vec<String>,
    dsos: Vec<String>,
}

fn perf_record(dir: &Path, name: &str, extra: &[&str], cmd: &[&str]) -> PathBuf {
    let data = dir.join(format!("{name}.data"));
    let mut c = common::perf();
    c.args(["record", "-q", "-e", "cpu-clock", "-F", "1999", "-N", "-o"])
        .arg(&data)
        .args(extra)
        .arg("--")
        .args(cmd);
    common::run_ok(&mut c);
    data
}

fn perf_script(data: &Path) -> HashMap<(i32, u64), PerfSample> {
    let mut c = common::perf();
    c.args(["script", "--ns", "-F", "tid,time,ip,sym,dso", "-i"])
        .arg(data);
    let text = common::run_ok(&mut c);
    let mut out = HashMap::new();
    for block in text.split("\n\n") {
        let mut lines = block.lines().filter(|l| !l.trim().is_empty());
        let Some(head) = lines.next() else { continue };
        let mut parts = head.split_whitespace();
        let tid: i32 = parts.next().and_then(|t| t.parse().ok()).unwrap_or(-1);
        let time = parts
            .next()
            .map(|t| t.trim_end_matches(':').replace('.', ""))
            .and_then(|t| t.parse::<u64>().ok())
            .unwrap_or(0);
        let mut sample = PerfSample {
            syms: Vec::new(),
            dsos: Vec::new(),
        };
        for line in lines {
            let line = line.trim();
            let Some((_ip, rest)) = line.split_once(' ') else {
                continue;
            };
            let (sym, dso) = match rest.rfind(" (") {
                Some(i) => (&rest[..i], rest[i + 2..].trim_end_matches(')')),
                None => (rest, ""),
            };
            sample.syms.push(sym.trim().to_string());
            sample.dsos.push(dso.to_string());
        }
        out.insert((tid, time), sample);
    }
    out
}

fn sym_names(r: &Resolved, s: &ResolvedSample) -> Vec<String> {
    s.stack
        .iter()
        .map(|&id| {
            let f = r.frames.get(id);
            f.sym.as_deref().unwrap_or("[unknown]").to_string()
        })
        .collect()
}

fn resolve(data: &Path) -> Resolved {
    let options = ResolveOptions {
        use_build_id_cache: false,
        ..ResolveOptions::default()
    };
    resolve_file(data, &options).unwrap_or_else(|e| panic!("resolve {}: {e:#}", data.display()))
}

/// Fraction of samples whose whole stack, and whose leaf, perf names alike.
fn agreement(r: &Resolved, perf: &HashMap<(i32, u64), PerfSample>) -> (f64, f64, usize) {
    let (mut same_stack, mut same_leaf, mut n) = (0, 0, 0);
    let mut shown = 0;
    for s in &r.samples {
        let Some(p) = perf.get(&(s.tid, s.time)) else {
            continue;
        };
        n += 1;
        let ours = sym_names(r, s);
        if ours == p.syms {
            same_stack += 1;
        } else if shown < 5
            && (ours.first() != p.syms.first()) == std::env::var_os("SCRY_SHOW_LEAF").is_some()
        {
            shown += 1;
            eprintln!("differs: scry {ours:?}\n         perf {:?}", p.syms);
        }
        if ours.first() == p.syms.first() {
            same_leaf += 1;
        }
    }
    let d = n.max(1) as f64;
    (same_stack as f64 / d, same_leaf as f64 / d, n)
}

fn share(r: &Resolved, leaf: &str) -> f64 {
    let hits = r
        .samples
        .iter()
        .filter(|s| {
            s.stack
                .first()
                .is_some_and(|&id| r.frames.get(id).sym.as_deref() == Some(leaf))
        })
        .count();
    hits as f64 / r.samples.len().max(1) as f64
}

/// Callers (leaf first) of the samples whose leaf is `leaf`.
fn stacks_with_leaf(r: &Resolved, leaf: &str) -> Vec<Vec<String>> {
    r.samples
        .iter()
        .map(|s| sym_names(r, s))
        .filter(|names| names.first().map(String::as_str) == Some(leaf))
        .collect()
}

fn setup() -> Option<tempfile::TempDir> {
    if !common::require_perf_events() || !common::require_perf() {
        return None;
    }
    Some(common::tempdir())
}

#[test]
fn frame_pointer_stacks_match_perf_script() {
    let Some(dir) = setup() else { return };
    let bin = common::workload("cpu7525");
    let data = perf_record(
        dir.path(),
        "fp",
        &["-g"],
        &[bin.to_str().unwrap_or(""), "0.4s"],
    );
    let r = resolve(&data);
    let perf = perf_script(&data);
    assert!(r.samples.len() > 200, "only {} samples", r.samples.len());
    let (stack, leaf, n) = agreement(&r, &perf);
    assert!(
        n * 100 >= r.samples.len() * 99,
        "matched {n} of {}",
        r.samples.len()
    );
    assert!(leaf >= 0.99, "leaf agreement {leaf}");
    assert!(stack >= 0.99, "stack agreement {stack}");
    let (a, b) = (share(&r, "hot_a"), share(&r, "hot_b"));
    assert!(
        (0.65..0.85).contains(&a) && (0.15..0.35).contains(&b),
        "{a} {b}"
    );
    let chain = stacks_with_leaf(&r, "hot_b");
    assert!(chain.iter().any(|c| c.starts_with(&[
        "hot_b".to_string(),
        "middle_b".into(),
        "outer_b".into(),
        "main".into()
    ])));
    // Dso naming: the full path, as perf script prints it.
    let s = r.samples.iter().find(|s| {
        s.stack
            .first()
            .is_some_and(|&id| r.frames.get(id).sym.as_deref() == Some("hot_a"))
    });
    let f = s.map(|s| r.frames.get(s.stack[0]));
    assert_eq!(f.map(|f| &*f.dso), bin.to_str());
    assert_eq!(
        scry::symbol::dso_short_name(&f.map(|f| f.dso.clone()).unwrap_or_default()),
        "cpu7525"
    );
    assert!(r.stats.complete_pct() > 95.0, "{}", r.stats.summary());
    eprintln!("{}", r.stats.summary());
}

#[test]
fn kernel_frames_are_named_like_perf() {
    let Some(dir) = setup() else { return };
    let bin = common::workload("calls");
    let data = perf_record(
        dir.path(),
        "k",
        &["-g"],
        &[bin.to_str().unwrap_or(""), "400000"],
    );
    let r = resolve(&data);
    let perf = perf_script(&data);
    let kernel: Vec<&ResolvedSample> = r
        .samples
        .iter()
        .filter(|s| {
            s.stack
                .first()
                .is_some_and(|&id| r.frames.get(id).kind == FrameKind::Kernel)
        })
        .collect();
    assert!(kernel.len() > 20, "only {} kernel samples", kernel.len());
    for s in &kernel {
        let f = r.frames.get(s.stack[0]);
        assert_eq!(&*f.dso, "[kernel.kallsyms]");
    }
    let named = kernel
        .iter()
        .filter(|s| r.frames.get(s.stack[0]).sym.is_some())
        .count();
    assert!(
        named * 100 >= kernel.len() * 99,
        "{named} of {}",
        kernel.len()
    );
    let (stack, leaf, _) = agreement(&r, &perf);
    assert!(leaf >= 0.99 && stack >= 0.98, "leaf {leaf} stack {stack}");
    // A kernel sample carries the user part below the kernel part (libc's
    // `syscall` has no frame pointer, so its caller is skipped, as in perf).
    assert!(kernel.iter().any(|s| {
        s.stack.iter().any(|&id| {
            let f = r.frames.get(id);
            f.kind == FrameKind::User && f.sym.as_deref() == Some("syscall")
        })
    }));
}

#[test]
fn jit_symbols_come_from_the_perf_map() {
    let Some(dir) = setup() else { return };
    let bin = common::workload("jit");
    let data = perf_record(
        dir.path(),
        "jit",
        &["-g"],
        &[bin.to_str().unwrap_or(""), "0.6s"],
    );
    let perf = perf_script(&data);
    // Find the JIT's map file through the samples' pid.
    let first = resolve(&data);
    let pid = first
        .samples
        .iter()
        .map(|s| s.pid)
        .find(|&p| p > 0)
        .unwrap_or(0);
    let map = PathBuf::from(format!("/tmp/perf-{pid}.map"));
    assert!(map.exists(), "{} missing", map.display());
    let (stack, leaf, _) = agreement(&first, &perf);
    assert!(
        share(&first, "jit_hot_loop") > 0.9,
        "{}",
        first.stats.summary()
    );
    assert!(leaf >= 0.99 && stack >= 0.99, "leaf {leaf} stack {stack}");
    let chain = stacks_with_leaf(&first, "jit_hot_loop");
    assert!(
        chain
            .iter()
            .any(|c| c.get(1).map(String::as_str) == Some("run_jit"))
    );
    let jit_frame = first.samples.iter().find_map(|s| {
        let f = first.frames.get(*s.stack.first()?);
        (f.sym.as_deref() == Some("jit_hot_loop")).then(|| f.dso.clone())
    });
    assert_eq!(jit_frame.as_deref(), map.to_str());
    // Torn and garbage lines are skipped and counted.
    let mut text = std::fs::read_to_string(&map).unwrap_or_default();
    text.push_str("garbage\n7fff zz bad\n");
    std::fs::write(&map, text).unwrap_or_else(|e| panic!("{e}"));
    let again = resolve(&data);
    let _ = std::fs::remove_file(&map);
    assert_eq!(again.stats.malformed_perf_map_lines, 2);
    assert!(share(&again, "jit_hot_loop") > 0.9);
    assert!(
        again
            .stats
            .summary()
            .contains("malformed perf-map lines: 2")
    );
}

#[test]
fn rust_and_cpp_names_are_demangled() {
    let Some(dir) = setup() else { return };
    for (name, leaf) in [
        ("cpp_work", "work::Hot<int>::spin"),
        ("rust_work", "rust_work::hot::spin"),
    ] {
        let bin = common::workload(name);
        let data = perf_record(
            dir.path(),
            name,
            &["-g"],
            &[bin.to_str().unwrap_or(""), "0.4s"],
        );
        let r = resolve(&data);
        assert!(share(&r, leaf) > 0.9, "{name}: {}", share(&r, leaf));
        let perf = perf_script(&data);
        let (stack, leaf_ok, _) = agreement(&r, &perf);
        assert!(
            leaf_ok >= 0.99 && stack >= 0.95,
            "{name}: leaf {leaf_ok} stack {stack}"
        );
        let raw = resolve_file(
            &data,
            &ResolveOptions {
                demangle: false,
                ..ResolveOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mangled = raw
            .samples
            .iter()
            .filter_map(|s| raw.frames.get(*s.stack.first()?).sym.clone());
        let mangled: Vec<_> = mangled.take(50).collect();
        assert!(
            // Itanium (_Z) or Rust v0 (_R: rustc's default where it runs
            // as nightly, e.g. RUSTC_BOOTSTRAP=1).
            mangled
                .iter()
                .any(|m| m.starts_with("_Z") || m.starts_with("_R")),
            "{name}: {mangled:?}"
        );
    }
}

#[test]
fn dwarf_unwinding_finds_callers_frame_pointers_lose() {
    let Some(dir) = setup() else { return };
    let bin = common::workload("nofp");
    let bin = bin.to_str().unwrap_or("");
    let dwarf = perf_record(
        dir.path(),
        "dwarf",
        &["--call-graph", "dwarf,16384"],
        &[bin, "0.4s"],
    );
    let r = resolve(&dwarf);
    for (leaf, caller) in [("leaf_a", "caller_a"), ("leaf_b", "caller_b")] {
        let stacks = stacks_with_leaf(&r, leaf);
        assert!(stacks.len() > 50, "{leaf}: {} samples", stacks.len());
        let full = stacks
            .iter()
            .filter(|c| {
                c.get(1).map(String::as_str) == Some(caller) && c.iter().any(|f| f == "main")
            })
            .count();
        assert!(
            full * 100 >= stacks.len() * 99,
            "{leaf}: {full} of {}",
            stacks.len()
        );
    }
    let complete = r
        .samples
        .iter()
        .filter(|s| s.quality == StackQuality::Complete)
        .count();
    assert!(
        complete * 100 >= r.samples.len() * 95,
        "{}",
        r.stats.summary()
    );

    let fp = perf_record(dir.path(), "fp", &["-g"], &[bin, "40"]);
    let r = resolve(&fp);
    let perf = perf_script(&fp);
    let (stack, leaf, _) = agreement(&r, &perf);
    assert!(leaf >= 0.99 && stack >= 0.99, "leaf {leaf} stack {stack}");
    let stacks = stacks_with_leaf(&r, "leaf_a");
    let with_caller = stacks
        .iter()
        .filter(|c| c.iter().any(|f| f == "caller_a"))
        .count();
    assert!(
        stacks.len() > 50 && with_caller * 10 < stacks.len(),
        "{with_caller} of {}",
        stacks.len()
    );
}

#[test]
fn a_replaced_binary_is_not_used() {
    let Some(dir) = setup() else { return };
    let bin = dir.path().join("victim");
    std::fs::copy(common::workload("cpu7525"), &bin).unwrap_or_else(|e| panic!("{e}"));
    let data = perf_record(
        dir.path(),
        "victim",
        &["-g"],
        &[bin.to_str().unwrap_or(""), "0.2s"],
    );
    let before = resolve(&data);
    assert!(share(&before, "hot_a") > 0.5);
    assert_eq!(
        before.stats.reasons.get(&UnresolvedReason::BuildIdMismatch),
        None
    );
    // Replace the file with another program at the same path.
    std::fs::remove_file(&bin).unwrap_or_else(|e| panic!("{e}"));
    std::fs::copy(common::workload("spinner"), &bin).unwrap_or_else(|e| panic!("{e}"));
    let after = resolve(&data);
    let mismatched = after
        .stats
        .reasons
        .get(&UnresolvedReason::BuildIdMismatch)
        .copied()
        .unwrap_or(0);
    assert!(
        mismatched as usize >= after.samples.len() / 2,
        "{}",
        after.stats.summary()
    );
    assert_eq!(share(&after, "hot_a"), 0.0);
    assert_eq!(share(&after, "spin_forever"), 0.0);
    assert!(after.stats.summary().contains("build-id mismatch"));
    // And a deleted one is counted as missing.
    std::fs::remove_file(&bin).unwrap_or_else(|e| panic!("{e}"));
    let gone = resolve(&data);
    assert!(
        gone.stats
            .reasons
            .get(&UnresolvedReason::MissingBinary)
            .copied()
            .unwrap_or(0)
            > 0
    );
}

#[test]
fn inline_mode_adds_inlined_frames() {
    let Some(dir) = setup() else { return };
    // `inner` is always inlined into `outer`, which is not inlined.
    let src = dir.path().join("inl.c");
    std::fs::write(
        &src,
        "static volatile unsigned long sink;\n\
         static inline __attribute__((always_inline)) void inner(long n) {\n\
             unsigned long x = sink;\n\
             for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1;\n\
             sink = x;\n\
         }\n\
         __attribute__((noinline)) void outer(long n) { inner(n); sink++; }\n\
         int main(void) { for (int r = 0; r < 30; r++) outer(16000000L); return 0; }\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let bin = dir.path().join("inl");
    common::run_ok(
        std::process::Command::new("cc")
            .args(["-O2", "-g", "-fno-omit-frame-pointer", "-o"])
            .arg(&bin)
            .arg(&src),
    );
    let data = perf_record(dir.path(), "inl", &["-g"], &[bin.to_str().unwrap_or("")]);
    let plain = resolve(&data);
    assert!(share(&plain, "outer") > 0.8, "{}", share(&plain, "outer"));
    let options = ResolveOptions {
        inline: true,
        use_build_id_cache: false,
        ..ResolveOptions::default()
    };
    let r = resolve_file(&data, &options).unwrap_or_else(|e| panic!("{e}"));
    assert!(share(&r, "inner") > 0.8, "{}", share(&r, "inner"));
    let s = r
        .samples
        .iter()
        .find(|s| {
            s.stack
                .first()
                .is_some_and(|&id| r.frames.get(id).sym.as_deref() == Some("inner"))
        })
        .unwrap_or_else(|| panic!("no sample in inner"));
    let (leaf, next) = (r.frames.get(s.stack[0]), r.frames.get(s.stack[1]));
    assert!(leaf.inlined && !next.inlined);
    assert_eq!(next.sym.as_deref(), Some("outer"));
    // Same samples, one frame more each where code was inlined.
    assert_eq!(r.samples.len(), plain.samples.len());
}

/// `merge_samples` (what report and flamegraph use) keeps every sample's
/// weight: per (event, thread, named stack, quality), the merged samples'
/// counts and periods equal the one-by-one samples', and so do the totals
/// and the stack-quality counts. A forking workload (mappings change, the
/// chain cache is emptied) and deep recursive stacks (many chains repeat).
#[test]
fn merged_samples_weigh_what_the_samples_weigh() {
    let Some(dir) = setup() else { return };
    for (name, args) in [("deep", vec!["0.3s"]), ("forker", vec!["3", "0.2s"])] {
        let bin = common::workload(name);
        let mut cmd = vec![bin.to_str().unwrap_or("")];
        cmd.extend(args);
        let data = perf_record(dir.path(), name, &["-g"], &cmd);
        let one_by_one = resolve(&data);
        let merged_by = |batch: usize| {
            resolve_file(
                &data,
                &ResolveOptions {
                    use_build_id_cache: false,
                    merge_samples: true,
                    merge_batch: batch,
                    ..ResolveOptions::default()
                },
            )
            .unwrap_or_else(|e| panic!("resolve {}: {e:#}", data.display()))
        };
        type Key = (usize, String, i32, i32, Vec<String>, StackQuality);
        let weigh = |r: &Resolved| {
            let mut by: HashMap<Key, (u64, u64)> = HashMap::new();
            for s in &r.samples {
                let key = (
                    s.event,
                    s.comm.to_string(),
                    s.pid,
                    s.tid,
                    sym_names(r, s),
                    s.quality,
                );
                let w = by.entry(key).or_default();
                w.0 += s.count;
                w.1 += s.period;
            }
            by
        };
        let expected = weigh(&one_by_one);
        assert!(one_by_one.samples.iter().all(|s| s.count == 1));
        // One batch, and a batch every 7 distinct samples (the location
        // stacks start over each time).
        for batch in [1 << 14, 7] {
            let merged = merged_by(batch);
            assert!(
                merged.samples.len() < one_by_one.samples.len(),
                "{name}: nothing merged"
            );
            assert_eq!(weigh(&merged), expected, "{name} batch {batch}");
            assert_eq!(merged.stats.samples, one_by_one.stats.samples, "{name}");
            assert_eq!(merged.stats.complete, one_by_one.stats.complete, "{name}");
            assert_eq!(merged.stats.frames, one_by_one.stats.frames, "{name}");
            assert_eq!(
                merged.stats.unknown_frames, one_by_one.stats.unknown_frames,
                "{name}"
            );
        }
    }
}
