//! The layouts of the commands that read a recording, from one committed
//! fixture (`tests/fixtures/sched.data`), compared byte for byte with
//! golden files: `sched timehist` and `sched runqlat` (text and JSON),
//! `report --profile`, `script` and a `report` sorted by task. They prove
//! that a change to the record pipeline (reading, ordering, dispatching,
//! naming threads) leaves what these commands print as it was.
//!
//! Refresh after an intended change: `SCRY_BLESS=1 cargo test --test
//! file_goldens`, then review the diff. On a mismatch the actual output is
//! written next to the golden file as `NAME.actual` (not committed).
//! Kernel frames (`[k] name`) are named from this machine's kallsyms, so
//! they are compared as `[k]` alone.

use crate::common;

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs scry with `args` on the fixture and returns its standard output.
fn scry_on_fixture(args: &[&str]) -> String {
    let fixture = repo().join("tests/fixtures/sched.data");
    let out = common::output(common::scry().args(args).arg("-i").arg(&fixture));
    assert!(
        out.status.success(),
        "scry {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("scry prints UTF-8")
}

/// `[k] NAME` lines as `[k]`: kernel names depend on the running kernel.
fn without_kernel_names(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("[k] ") {
            Some(at) => format!("{}[k]\n", &line[..at]),
            None => format!("{line}\n"),
        })
        .collect()
}

fn check(name: &str, actual: &str) {
    let golden = repo().join("tests/golden").join(name);
    if std::env::var_os("SCRY_BLESS").is_some() {
        std::fs::write(&golden, actual).expect("golden file is writable");
        return;
    }
    let expected = std::fs::read_to_string(&golden)
        .unwrap_or_else(|e| panic!("{}: {e} (bless with SCRY_BLESS=1)", golden.display()));
    if expected != actual {
        let path: &Path = golden.as_ref();
        let actual_path = path.with_file_name(format!("{name}.actual"));
        std::fs::write(&actual_path, actual).expect("actual output is writable");
        panic!(
            "{name} differs from its golden file: diff {} {}",
            golden.display(),
            actual_path.display()
        );
    }
}

#[test]
fn sched_timehist_layouts() {
    check(
        "sched_timehist.txt",
        &scry_on_fixture(&["sched", "timehist"]),
    );
    check(
        "sched_timehist.json",
        &scry_on_fixture(&["sched", "timehist", "--format", "json"]),
    );
}

#[test]
fn sched_runqlat_layouts() {
    check("sched_runqlat.txt", &scry_on_fixture(&["sched", "runqlat"]));
    check(
        "sched_runqlat.json",
        &scry_on_fixture(&["sched", "runqlat", "--format", "json"]),
    );
}

#[test]
fn profile_report_layout() {
    let text = scry_on_fixture(&["report", "--profile"]);
    check("profile_report.txt", &without_kernel_names(&text));
}

#[test]
fn script_layout() {
    check("script_sched.txt", &scry_on_fixture(&["script"]));
}

#[test]
fn report_by_task_layout() {
    check(
        "report_pid_comm_file.txt",
        &scry_on_fixture(&["report", "--stdio", "--sort", "pid,comm", "-n"]),
    );
}
