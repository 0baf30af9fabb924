//! `-g` keeps the caller of a frameless function: frame pointers plus the
//! top of the user stack, joined at report time (`symbol::stack_join`).
//!
//! Oracles on the same workloads: perf's `--call-graph fp` loses the caller
//! (the function set up no frame, so %rbp still points at its caller's
//! frame and the chain skips that caller), perf's `--call-graph dwarf` has
//! it. scry's default must give DWARF's chains for the frameless functions
//! in script, report, flamegraph, offcpu and profile, and perf must still
//! read scry's files.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A workload whose hot code has no frame pointer, and the named callers
/// a frame-pointer chain loses.
struct Frameless {
    name: &'static str,
    /// Is this (leaf) frame one of the frameless hot functions?
    leaf: fn(&str) -> bool,
    callers: &'static [&'static str],
}

const NOFP: Frameless = Frameless {
    name: "nofp",
    leaf: |f| f == "leaf_a" || f == "leaf_b",
    callers: &["caller_a", "caller_b"],
};

/// memcpy and strlen (their names depend on the CPU: `__memmove_avx_...`).
const LIBCLOOP: Frameless = Frameless {
    name: "libcloop",
    leaf: |f| f.starts_with("__mem") || f.starts_with("__strlen"),
    callers: &["copy_block", "measure_text"],
};

fn perf_record(dir: &Path, name: &str, mode: &str, cmd: &[&str]) -> PathBuf {
    let data = dir.join(format!("{name}.data"));
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-e", "cpu-clock", "-F", "999", "-N"])
            .args(["--call-graph", mode, "-o"])
            .arg(&data)
            .arg("--")
            .args(cmd),
    );
    data
}

fn scry_record(dir: &Path, name: &str, args: &[&str], cmd: &[&str]) -> PathBuf {
    let data = dir.join(format!("{name}.data"));
    common::run_ok(
        common::scry()
            .args(["record", "-q", "-F", "999"])
            .args(args)
            .arg("-o")
            .arg(&data)
            .arg("--")
            .args(cmd),
    );
    data
}

/// `script -F ip,sym` text: each sample's user frames from the leaf down
/// to `main`, `;`-joined (samples that do not reach `main` are left out;
/// perf's `(inlined)` marks dropped).
fn chains_to_main(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let mut frames = Vec::new();
        for line in block.lines() {
            let mut words = line.split_whitespace();
            let (Some(addr), Some(sym)) = (words.next(), words.next()) else {
                continue;
            };
            if addr.len() == 16 && addr.starts_with("ffff") {
                continue;
            }
            frames.push(sym.to_string());
            if sym == "main" {
                out.push(frames.join(";"));
                break;
            }
        }
    }
    out
}

/// The chains whose leaf is one of the workload's frameless functions,
/// counted.
fn frameless_chains(w: &Frameless, chains: &[String]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for c in chains {
        if c.split(';').next().is_some_and(w.leaf) {
            *out.entry(c.clone()).or_insert(0) += 1;
        }
    }
    out
}

/// Percent of the counted chains in which a named caller sits under the leaf.
fn with_caller(w: &Frameless, chains: &BTreeMap<String, usize>) -> usize {
    let total: usize = chains.values().sum();
    let kept: usize = chains
        .iter()
        .filter(|(c, _)| c.split(';').nth(1).is_some_and(|f| w.callers.contains(&f)))
        .map(|(_, n)| n)
        .sum();
    kept * 100 / total.max(1)
}

/// The chains holding at least a tenth of the samples.
fn main_chains(chains: &BTreeMap<String, usize>) -> Vec<&str> {
    let total: usize = chains.values().sum();
    chains
        .iter()
        .filter(|&(_, &n)| n * 10 >= total)
        .map(|(c, _)| c.as_str())
        .collect()
}

/// `script -F ip,sym` text, glibc's memcpy/memmove aliases as one name:
/// at one address glibc has `__memmove_avx512_unaligned_erms` and
/// `__memcpy_avx512_unaligned_erms`; perf's symbol table (and `perf report`,
/// and scry, by perf's alias rule) names it the first, perf's DWARF-mode
/// script the second. The chains are what these tests compare.
fn script(program: std::process::Command, data: &Path) -> String {
    let mut c = program;
    c.args(["script", "-F", "ip,sym", "-i"]).arg(data);
    common::run_ok(&mut c)
        .replace(" (inlined)", "")
        .replace("__memcpy_", "__memmove_")
}

fn check_workload(w: &Frameless) {
    let dir = common::tempdir();
    let bin = common::workload(w.name);
    let cmd = [bin.to_str().unwrap_or_default(), "0.4s"];
    let fp = perf_record(dir.path(), "perf-fp", "fp", &cmd);
    let dwarf = perf_record(dir.path(), "perf-dwarf", "dwarf", &cmd);
    let g = scry_record(dir.path(), "scry-g", &["-g"], &cmd);
    let scry_fp = scry_record(dir.path(), "scry-fp", &["--call-graph", "fp"], &cmd);

    let fp_chains = frameless_chains(w, &chains_to_main(&script(common::perf(), &fp)));
    let dwarf_chains = frameless_chains(w, &chains_to_main(&script(common::perf(), &dwarf)));
    let scry_chains = frameless_chains(w, &chains_to_main(&script(common::scry(), &g)));
    for (who, c) in [
        ("perf fp", &fp_chains),
        ("perf dwarf", &dwarf_chains),
        ("scry -g", &scry_chains),
    ] {
        assert!(
            c.values().sum::<usize>() >= 100,
            "{}: {who} chains {c:?}",
            w.name
        );
    }
    // perf's frame pointers lose the callers, its DWARF unwinding has them...
    assert!(
        with_caller(w, &fp_chains) <= 5,
        "{}: perf fp {fp_chains:?}",
        w.name
    );
    assert!(
        with_caller(w, &dwarf_chains) >= 95,
        "{}: perf dwarf {dwarf_chains:?}",
        w.name
    );
    // ...and so does scry's default: the same chains as DWARF's.
    assert!(
        with_caller(w, &scry_chains) >= 95,
        "{}: scry -g {scry_chains:?}",
        w.name
    );
    // `--call-graph fp` is today's mode: the kernel's chain, as perf's.
    let scry_fp_chains = frameless_chains(w, &chains_to_main(&script(common::scry(), &scry_fp)));
    assert!(
        with_caller(w, &scry_fp_chains) <= 5,
        "{}: scry fp {scry_fp_chains:?}",
        w.name
    );
    assert_eq!(
        main_chains(&scry_chains),
        main_chains(&dwarf_chains),
        "{}: scry -g {scry_chains:?}\nperf dwarf {dwarf_chains:?}",
        w.name
    );

    // report (callee order) and the folded flame graph show the callers.
    let report = common::run_ok(
        common::scry()
            .args(["report", "--stdio", "--no-children", "-i"])
            .arg(&g),
    );
    assert!(report.contains("fully unwound"), "{report}");
    for caller in w.callers {
        assert!(
            report.contains(&format!("{caller}\n")),
            "{}: report\n{report}",
            w.name
        );
    }
    let folded = common::run_ok(
        common::scry()
            .args(["flamegraph", "--folded", "-i"])
            .arg(&g),
    );
    for caller in w.callers {
        let line = folded
            .lines()
            .find(|l| l.contains(&format!(";main;{caller};")))
            .unwrap_or_else(|| panic!("{}: no main;{caller} in\n{folded}", w.name));
        let leaf = line.rsplit(';').next().and_then(|l| l.split(' ').next());
        assert!(leaf.is_some_and(w.leaf), "{line}");
    }

    // perf reads scry's file: every sample, the frame-pointer part of each
    // chain as the kernel gave it.
    let perf_report = common::run_ok(
        common::perf()
            .args(["report", "--stdio", "--no-children", "-i"])
            .arg(&g),
    );
    let scry_samples = script(common::scry(), &g).matches("\n\n").count();
    let perf_samples = script(common::perf(), &g).matches("\n\n").count();
    assert_eq!(
        perf_samples, scry_samples,
        "{}: perf script samples",
        w.name
    );
    assert!(
        perf_report
            .lines()
            .any(|l| l.contains("[.]") && l.split_whitespace().last().is_some_and(w.leaf)),
        "{}: perf report\n{perf_report}",
        w.name
    );
}

#[test]
fn a_frameless_leaf_keeps_its_caller() {
    require_kernel!();
    require_perf!();
    check_workload(&NOFP);
}

#[test]
fn a_hot_libc_loop_keeps_its_caller() {
    require_kernel!();
    require_perf!();
    check_workload(&LIBCLOOP);
}

/// Off-CPU stacks are taken at the system-call entry: `fsync` (a libc
/// wrapper without a frame) called from `write_and_sync`. perf's frame
/// pointers on sched_switch lose `write_and_sync`; DWARF and scry keep it.
#[test]
fn blocked_in_a_libc_wrapper_keeps_its_caller() {
    require_kernel!();
    require_perf!();
    let dir = common::tempdir();
    let bin = common::workload("fsyncer");
    let bin = bin.to_str().unwrap_or_default();
    let perf_offcpu = |mode: &str| {
        let data = dir.path().join(format!("{mode}.data"));
        common::run_ok(
            common::perf()
                .args([
                    "record",
                    "-q",
                    "-e",
                    "sched:sched_switch",
                    "--call-graph",
                    mode,
                ])
                .arg("-o")
                .arg(&data)
                .args(["--", bin, "30"]),
        );
        let text = script(common::perf(), &data);
        // The callers of fsync (perf's DWARF mode names it `__GI_fsync`),
        // down to main.
        let mut n = BTreeMap::new();
        for c in chains_to_main(&text) {
            if let Some((leaf, callers)) = c.split_once(';')
                && leaf.ends_with("fsync")
            {
                *n.entry(callers.to_string()).or_insert(0usize) += 1;
            }
        }
        n
    };
    let fp = perf_offcpu("fp");
    let dwarf = perf_offcpu("dwarf");
    assert_eq!(fp.keys().collect::<Vec<_>>(), ["main"], "perf fp");
    assert_eq!(
        dwarf.keys().collect::<Vec<_>>(),
        ["write_and_sync;main"],
        "perf dwarf"
    );
    assert!(dwarf.values().sum::<usize>() >= 30, "perf dwarf: {dwarf:?}");

    // scry offcpu: every stack through fsync has write_and_sync under it.
    let folded = common::run_ok(common::scry().args(["offcpu", "--folded", "--", bin, "30"]));
    let through_fsync: Vec<&str> = folded.lines().filter(|l| l.contains(";fsync;")).collect();
    assert!(!through_fsync.is_empty(), "{folded}");
    for line in &through_fsync {
        assert!(line.contains(";main;write_and_sync;fsync;"), "{line}");
    }

    // scry profile (trace-cmd profile's stacks on sched_switch): the same.
    let profile = common::run_ok(common::scry().args(["profile", "--", bin, "30"]));
    let lines: Vec<&str> = profile.lines().map(str::trim).collect();
    let after_fsync: Vec<&str> = lines
        .windows(2)
        .filter(|w| w[0] == "[.] fsync")
        .map(|w| w[1])
        .collect();
    assert!(!after_fsync.is_empty(), "{profile}");
    assert!(
        after_fsync.iter().all(|l| *l == "[.] write_and_sync"),
        "{profile}"
    );
}

/// Where no repair can be checked the kernel's chain is kept and counted in
/// the stack-quality line: here code without unwind tables (the jit
/// workload's loop lives in an anonymous page). A copy too small for one
/// step is the other case (`symbol::stack_join`'s unit tests): the
/// frameless functions of these workloads touch no stack, so even 8 bytes
/// reach their caller.
#[test]
fn unrepaired_chains_are_kept_and_counted() {
    require_kernel!();
    let dir = common::tempdir();
    let jit = common::workload("jit");
    let data = dir.path().join("jit.data");
    let out = common::run_ok(
        common::scry()
            .args(["record", "-q", "-F", "999", "-g", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&jit)
            .arg("0.3s"),
    );
    // `jit pid PID map PATH`: the map stays for report to read.
    let map = out
        .split_whitespace()
        .skip_while(|w| *w != "map")
        .nth(1)
        .map(PathBuf::from);
    let report = common::run_ok(
        common::scry()
            .args(["report", "--stdio", "--no-children", "-i"])
            .arg(&data),
    );
    let quality = report.lines().nth(1).unwrap_or_default();
    assert!(quality.contains("% frame pointers only"), "{report}");
    // The chain through the JIT code is the kernel's, as with fp.
    assert!(report.contains("jit_hot_loop"), "{report}");
    assert!(report.contains("run_jit\n"), "{report}");
    if let Some(map) = map {
        let _ = std::fs::remove_file(map);
    }
}
