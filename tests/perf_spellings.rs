//! perf's spellings in `report`, `top`, `script` and `flamegraph` (issue 10,
//! "perf's command line, so one-liners work unchanged"): each test runs the
//! same perf.data file through `perf` and `scry` and compares, or runs the
//! one-liner as perf's users type it.

mod common;

use std::path::{Path, PathBuf};

/// `perf record ARGS -o DIR/NAME -- CMD`; panics unless perf records.
fn perf_record(dir: &Path, name: &str, args: &[&str], cmd: &[&str]) -> PathBuf {
    let out = dir.join(name);
    common::run_ok(
        common::perf()
            .args(["record", "-q"])
            .args(args)
            .arg("-o")
            .arg(&out)
            .arg("--")
            .args(cmd),
    );
    out
}

fn perf(args: &[&str], file: &Path) -> String {
    common::run_ok(common::perf().args(args).arg("-i").arg(file))
}

fn scry(args: &[&str], file: &Path) -> String {
    common::run_ok(common::scry().args(args).arg("-i").arg(file))
}

/// A symbol name without its version tail, as perf's newer versions and
/// scry print it (perf 6.1 prints glibc's `.symtab` names as they are).
fn unversioned(name: &str) -> &str {
    name.split('@').next().unwrap_or(name)
}

/// The frame names of `perf script`-style text (`\taddr name+0xoff (dso)`).
fn frame_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix('\t'))
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|n| n.split("+0x").next().unwrap_or(n).to_string())
        .collect()
}

#[test]
fn symbol_names_have_no_version_tail() {
    require_perf!();
    require_tracefs!();
    let dir = common::tempdir();
    // `sleep` blocks in glibc's clock_nanosleep, which glibc's symbol table
    // lists twice: clock_nanosleep@GLIBC_2.2.5 and clock_nanosleep@@GLIBC_2.17.
    let file = perf_record(
        dir.path(),
        "sw.data",
        &["-e", "sched:sched_switch", "-g"],
        &["sleep", "0.05"],
    );
    let perf_names: Vec<String> = frame_names(&perf(&["script"], &file))
        .iter()
        .map(|n| unversioned(n).to_string())
        .collect();
    assert!(
        perf_names.iter().any(|n| n == "clock_nanosleep"),
        "perf shows no clock_nanosleep frame: {perf_names:?}"
    );
    let report = scry(&["report", "--stdio", "--no-children"], &file);
    assert!(
        report
            .lines()
            .any(|l| l.trim_start_matches([' ', '|', '-']) == "clock_nanosleep"),
        "{report}"
    );
    let folded = scry(&["flamegraph", "--folded"], &file);
    assert!(folded.contains(";clock_nanosleep;"), "{folded}");
    for text in [&report, &folded] {
        assert!(!text.contains("@GLIBC"), "a versioned name:\n{text}");
    }
}
