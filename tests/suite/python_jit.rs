//! CPython's perf trampolines (`-X perf`, 3.12 and 3.13 from pyenv):
//! `--call-graph dwarf` stacks go through each `py::` trampoline (no
//! unwind tables, no frame pointer) to the Python callers and on to
//! `main`. perf on the same file is the oracle for the `py::` frames; it
//! stops at the first trampoline, scry must not. `-X perf_jit` (3.13)
//! names them in a jitdump file only: perf after `perf inject --jit` is
//! the oracle there, scry reads the file as recorded.

use crate::common;

use std::path::{Path, PathBuf};

use scry::symbol::{ResolveOptions, resolve_file};

const SCRIPT: &str = "\
def hot_python_function(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s

def main():
    for _ in range(REPEAT):
        hot_python_function(100000)

main()
";

/// pyenv's Python `version` (`$PYENV_ROOT`, else `~/.pyenv`, else
/// `/root/.pyenv`).
fn pyenv_python(version: &str) -> Option<PathBuf> {
    let roots = [
        std::env::var_os("PYENV_ROOT").map(PathBuf::from),
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")),
        Some(PathBuf::from("/root/.pyenv")),
    ];
    let versions: Vec<PathBuf> = roots
        .into_iter()
        .flatten()
        .map(|r| r.join("versions"))
        .collect();
    versions.iter().find_map(|dir| {
        let entries = std::fs::read_dir(dir).ok()?;
        entries.flatten().find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let bin = e.path().join("bin").join(format!("python{version}"));
            (name.starts_with(&format!("{version}.")) && bin.is_file()).then_some(bin)
        })
    })
}

/// Samples (perf script blocks) holding `frame`, and of those, how many
/// also hold each of `callers`.
fn perf_counts(data: &Path, frame: &str, callers: &[&str]) -> (usize, usize, usize) {
    let text = common::run_ok(
        common::perf()
            .args(["script", "-F", "ip,sym", "-i"])
            .arg(data),
    );
    let blocks: Vec<&str> = text
        .split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .collect();
    let with: Vec<&&str> = blocks.iter().filter(|b| b.contains(frame)).collect();
    let through = with
        .iter()
        .filter(|b| callers.iter().all(|c| b.contains(c)))
        .count();
    (blocks.len(), with.len(), through)
}

/// `python -X <x_option>` recorded by perf with DWARF stacks; with
/// `inject`, perf's oracle reads the file after `perf inject --jit`.
fn check(version: &str, x_option: &str, inject: bool) {
    let Some(python) = pyenv_python(version) else {
        // A runtime, not a kernel facility: its absence is no failure.
        eprintln!("skipped: no pyenv Python {version}");
        return;
    };
    let dir = common::tempdir();
    let script = dir.path().join("pyhot.py");
    std::fs::write(&script, SCRIPT.replace("REPEAT", "20")).unwrap();
    let data = dir.path().join("py.data");
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-e", "cpu-clock", "-F", "999", "-k", "1"])
            .args(["--call-graph", "dwarf", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&python)
            .args(["-X", x_option])
            .arg(&script),
    );
    let oracle = if inject {
        let injected = dir.path().join("injected.data");
        common::run_ok(
            common::perf()
                .args(["inject", "--jit", "-i"])
                .arg(&data)
                .arg("-o")
                .arg(&injected),
        );
        injected
    } else {
        data.clone()
    };
    let hot = "py::hot_python_function:";
    let callers = ["py::main:", "py::<module>:"];
    let (perf_total, perf_hot, perf_through) = perf_counts(&oracle, hot, &callers);
    let r = resolve_file(&data, &ResolveOptions::default()).expect("resolve");
    let names = |s: &scry::analysis::sample::ResolvedSample| -> Vec<String> {
        s.stack
            .iter()
            .map(|&id| r.frames.get(id).sym.as_deref().unwrap_or("").to_string())
            .collect()
    };
    let (mut ours_hot, mut ours_through, mut reach_main) = (0usize, 0usize, 0usize);
    for s in &r.samples {
        let stack = names(s);
        let pos = |p: &str| stack.iter().position(|f| f.starts_with(p));
        let Some(at) = pos(hot) else { continue };
        ours_hot += 1;
        // The callers, outward, in order.
        if let (Some(m), Some(module)) = (pos(callers[0]), pos(callers[1]))
            && at < m
            && m < module
        {
            ours_through += 1;
        }
        if stack
            .iter()
            .any(|f| f == "main" || f == "__libc_start_call_main")
        {
            reach_main += 1;
        }
    }
    eprintln!(
        "python {version} -X {x_option}: perf {perf_hot}/{perf_total} samples with {hot}, {perf_through} of them through its callers; \
         scry {ours_hot}/{} with it, {ours_through} through, {reach_main} to main; {}",
        r.samples.len(),
        r.stats.summary()
    );
    assert!(perf_hot > 0, "perf saw no {hot}");
    // The py:: frames are where perf has them.
    assert!(
        ours_hot + perf_total / 50 >= perf_hot,
        "{ours_hot} against perf's {perf_hot}"
    );
    // And the stacks go on through the trampolines, which perf's do not.
    assert!(
        ours_through * 10 >= ours_hot * 9,
        "{ours_through} of {ours_hot} reach py::main and py::<module>"
    );
    assert!(ours_through >= perf_through);
    assert!(
        reach_main * 10 >= ours_hot * 9,
        "{reach_main} of {ours_hot} reach main"
    );
}

#[test]
fn python_3_12_trampolines_are_unwound_through() {
    if !common::require_perf_events() || !common::require_perf() {
        return;
    }
    check("3.12", "perf", false);
}

#[test]
fn python_3_13_trampolines_are_unwound_through() {
    if !common::require_perf_events() || !common::require_perf() {
        return;
    }
    check("3.13", "perf", false);
}

/// 3.13's `-X perf_jit` writes a jitdump (and no perf-PID.map): scry
/// names its code from the file as perf does after `perf inject --jit`.
#[test]
fn python_3_13_jitdump_names_jit_code() {
    if !common::require_perf_events() || !common::require_perf() {
        return;
    }
    check("3.13", "perf_jit", true);
}
