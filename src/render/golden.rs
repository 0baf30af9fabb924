//! Golden files for the report and flame graph layouts, on a deterministic
//! hand-built profile (no kernel, no perf.data: the layouts alone).
//!
//! The files live in `tests/golden/`; `SCRY_BLESS=1 cargo test --lib
//! render::golden` rewrites them. On a mismatch the actual output is written
//! next to the golden file as `NAME.actual` and the test fails. Also
//! `text`, what a writer wrote as a string, for the renderers' own tests.

use std::path::PathBuf;

use crate::analysis::calltree::{CallTree, GraphOrder, build_trees};
use crate::analysis::folded::{FoldOptions, FoldedStacks};
use crate::analysis::profile::{Profile, ProfileOptions, SortKey};
use crate::analysis::quality::QualitySummary;
use crate::analysis::testing::Builder;

use super::flamegraph::{FlameOptions, write_svg};
use super::folded::{FoldedOptions, folded_lines};
use super::report::{ReportMeta, ReportOptions, write_stdio};
use super::report_json::write_json;

/// What `write` wrote, as a string (the renderers' unit tests).
pub fn text(write: impl Fn(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    write(&mut out).expect("writing to a Vec");
    String::from_utf8(out).expect("UTF-8 output")
}

pub fn check_golden(name: &str, actual: &str) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let path = dir.join(name);
    let actual_path = dir.join(format!("{name}.actual"));
    if std::env::var_os("SCRY_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&path, actual).unwrap();
        let _ = std::fs::remove_file(&actual_path);
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        std::fs::write(&actual_path, actual).unwrap();
        panic!(
            "golden file {} unreadable ({e}); actual output in {}; run with SCRY_BLESS=1 to create it",
            path.display(),
            actual_path.display()
        )
    });
    if expected != actual {
        std::fs::write(&actual_path, actual).unwrap();
        panic!(
            "output differs from {}; actual output in {} (SCRY_BLESS=1 to accept)",
            path.display(),
            actual_path.display()
        );
    }
    let _ = std::fs::remove_file(&actual_path);
}

/// Two processes, recursion, a kernel path, an unresolved frame, a library.
fn sample_profile() -> Builder {
    let mut b = Builder::default();
    b.sample(
        "app",
        100,
        &["hot", "compute", "main", "lib:__libc_start_main"],
        60,
    );
    b.sample(
        "app",
        100,
        &["cold", "compute", "main", "lib:__libc_start_main"],
        20,
    );
    b.sample(
        "app",
        100,
        &["hot", "rec", "rec", "rec", "main", "lib:__libc_start_main"],
        10,
    );
    b.sample("app", 100, &["?", "main", "lib:__libc_start_main"], 4);
    b.sample(
        "app",
        100,
        &[
            "k:copy_user",
            "k:ksys_write",
            "k:do_syscall_64",
            "k:entry_SYSCALL_64",
            "lib:write",
            "main",
            "lib:__libc_start_main",
        ],
        6,
    );
    b.sample("worker", 200, &["work", "lib:start_thread"], 25);
    b
}

fn meta(b: &Builder) -> ReportMeta {
    ReportMeta {
        event_names: vec!["cpu-clock".to_string()],
        lost_samples: 3,
        quality: QualitySummary::from_samples(&b.samples, &b.frames),
        quality_line: None,
    }
}

fn report(children: bool, sort: Vec<SortKey>, graph: Option<GraphOrder>, json: bool) -> String {
    let b = sample_profile();
    let options = ProfileOptions {
        sort: sort.clone(),
        children,
        ..ProfileOptions::default()
    };
    let profile = Profile::build(&b.samples, &b.frames, &options);
    let trees: Option<Vec<Vec<CallTree>>> = graph.map(|order| {
        (0..profile.events.len())
            .map(|s| {
                let all: Vec<usize> = (0..profile.events[s].entries.len()).collect();
                build_trees(&profile, s, &all, order)
            })
            .collect()
    });
    let report_options = ReportOptions {
        sort,
        show_samples: true,
        graph_threshold: 0.5,
        fields: None,
    };
    let mut out = Vec::new();
    if json {
        write_json(
            &mut out,
            &profile,
            trees.as_deref(),
            &b.frames,
            &meta(&b),
            &report_options,
        )
        .unwrap();
    } else {
        write_stdio(
            &mut out,
            &profile,
            trees.as_deref(),
            &b.frames,
            &meta(&b),
            &report_options,
        )
        .unwrap();
    }
    String::from_utf8(out).unwrap()
}

const DEFAULT_SORT: [SortKey; 3] = [SortKey::Comm, SortKey::Dso, SortKey::Sym];

#[test]
fn golden_report_children() {
    check_golden(
        "report_children.txt",
        &report(true, DEFAULT_SORT.to_vec(), None, false),
    );
}

#[test]
fn golden_report_no_children_sort_sym() {
    check_golden(
        "report_self_sym.txt",
        &report(false, vec![SortKey::Sym], None, false),
    );
}

#[test]
fn golden_report_pid_tid() {
    let sort = vec![SortKey::Pid, SortKey::Tid, SortKey::Comm];
    check_golden("report_pid_tid.txt", &report(false, sort, None, false));
}

#[test]
fn golden_tree_caller_children() {
    let text = report(true, DEFAULT_SORT.to_vec(), Some(GraphOrder::Caller), false);
    check_golden("report_tree_caller.txt", &text);
}

#[test]
fn golden_tree_callee_no_children() {
    let text = report(
        false,
        DEFAULT_SORT.to_vec(),
        Some(GraphOrder::Callee),
        false,
    );
    check_golden("report_tree_callee.txt", &text);
}

#[test]
fn golden_json() {
    let text = report(true, DEFAULT_SORT.to_vec(), Some(GraphOrder::Caller), true);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["version"], 1);
    check_golden("report.json", &text);
}

#[test]
fn golden_folded_and_svg() {
    let b = sample_profile();
    let folded = FoldedStacks::build(&b.samples, &FoldOptions::default());
    let plain = folded_lines(&folded, &b.frames, FoldedOptions::default());
    check_golden("folded.txt", &(plain.join("\n") + "\n"));
    let annotated = folded_lines(
        &folded,
        &b.frames,
        FoldedOptions {
            annotate_kernel: true,
        },
    );
    let mut svg = Vec::new();
    write_svg(&annotated, &FlameOptions::default(), &mut svg).unwrap();
    check_golden("flamegraph.svg", &String::from_utf8(svg).unwrap());
}
