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
use super::report::{ReportInput, ReportMeta, ReportOptions, write_stdio};
use super::report_json::write_json;

/// What `write` wrote, as a string (the renderers' unit tests).
pub(crate) fn text(write: impl Fn(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    write(&mut out).expect("writing to a Vec");
    String::from_utf8(out).expect("UTF-8 output")
}

pub(crate) fn check_golden(name: &str, actual: &str) {
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
    let input = ReportInput {
        profile: &profile,
        trees: trees.as_deref(),
        frames: &b.frames,
        meta: &meta(&b),
        options: &report_options,
    };
    if json {
        write_json(&mut out, &input).unwrap();
    } else {
        write_stdio(&mut out, &input).unwrap();
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

/// `scry trace`'s lines and its `-s` summary, from hand-built items in time
/// order through the tracer: names from /proc and from COMM and FORK, a
/// copied path, a truncated buffer, an error return, an unfinished call
/// ended by its thread's exit, and another event.
#[test]
fn trace_layout() {
    use std::rc::Rc;

    use crate::analysis::syscalls::{
        ArgCopies, ArgText, SyscallEnter, TraceItem, Tracer, TracerOptions,
    };
    use crate::event::syscall::{ArgDesc, ArgKind, SyscallDesc};
    use crate::render::trace::{TextOutput, write_summary};

    let desc = |nr: u64, name: &str, args: &[(&str, ArgKind)]| {
        Rc::new(SyscallDesc {
            nr,
            name: name.into(),
            args: args
                .iter()
                .map(|(name, kind)| ArgDesc {
                    name: (*name).into(),
                    kind: *kind,
                })
                .collect(),
        })
    };
    let openat = desc(
        257,
        "openat",
        &[
            ("dfd", ArgKind::DirFd),
            ("filename", ArgKind::Str),
            ("flags", ArgKind::Hex),
            ("mode", ArgKind::Unsigned(2)),
        ],
    );
    let write = desc(
        1,
        "write",
        &[
            ("fd", ArgKind::Unsigned(4)),
            ("buf", ArgKind::Str),
            ("count", ArgKind::Unsigned(8)),
        ],
    );
    let getppid = desc(110, "getppid", &[]);
    let enter = |tid: i32, time: u64, desc: &Rc<SyscallDesc>, args: [u64; 6], copied: &[usize]| {
        TraceItem::Enter(SyscallEnter {
            pid: 100,
            tid,
            time,
            desc: Rc::clone(desc),
            args,
            strings: copied.iter().map(|&i| (i, ArgText::NOT_COPIED)).collect(),
        })
    };
    let exit = |tid: i32, time: u64, desc: &Rc<SyscallDesc>, ret: i64| TraceItem::Exit {
        pid: 100,
        tid,
        time,
        desc: Rc::clone(desc),
        ret,
    };
    let at_fdcwd = (-100i64) as u64;
    let items = vec![
        TraceItem::NameGuess {
            tid: 100,
            comm: "guessed".into(),
            time: 1_000_000_000,
        },
        TraceItem::Comm {
            tid: 100,
            comm: "cat".into(),
            time: 1_000_000_000,
        },
        enter(
            100,
            1_000_010_000,
            &openat,
            [at_fdcwd, 0x1000, 0, 0, 0, 0],
            &[1],
        ),
        TraceItem::ArgCopies(ArgCopies {
            tid: 100,
            time: 1_000_010_000,
            nr: 257,
            args: [at_fdcwd, 0x1000, 0, 0, 0, 0],
            texts: vec![(
                1,
                ArgText::Copied {
                    bytes: b"/etc/hostname".to_vec(),
                    truncated: false,
                },
            )],
        }),
        exit(100, 1_000_020_000, &openat, 3),
        enter(
            100,
            1_000_030_000,
            &openat,
            [at_fdcwd, 0x2000, 0, 0, 0, 0],
            &[1],
        ),
        exit(100, 1_000_040_000, &openat, -2),
        TraceItem::Fork {
            tid: 101,
            ptid: 100,
            time: 1_000_050_000,
        },
        enter(101, 1_000_060_000, &write, [1, 0x3000, 5000, 0, 0, 0], &[1]),
        TraceItem::ArgCopies(ArgCopies {
            tid: 101,
            time: 1_000_060_000,
            nr: 1,
            args: [1, 0x3000, 5000, 0, 0, 0],
            texts: vec![(
                1,
                ArgText::Copied {
                    bytes: b"hello".to_vec(),
                    truncated: true,
                },
            )],
        }),
        TraceItem::Event {
            pid: 100,
            tid: 100,
            time: 1_000_065_000,
            name: Rc::from("sched:sched_wakeup"),
            text: "comm=cat pid=101 prio=120 target_cpu=001".into(),
        },
        exit(101, 1_000_070_000, &write, 5000),
        enter(100, 1_000_080_000, &getppid, [0; 6], &[]),
        exit(100, 1_000_081_500, &getppid, 1),
        enter(101, 1_000_090_000, &getppid, [0; 6], &[]),
        TraceItem::ThreadExit {
            pid: 100,
            tid: 101,
            time: 1_000_095_000,
        },
    ];
    let mut tracer = Tracer::new(TracerOptions {
        min_duration_ns: None,
        show_events: true,
    });
    let mut out = TextOutput::new(Vec::new());
    for item in items {
        tracer.item(item, &mut out).unwrap();
    }
    tracer.finish(&mut out).unwrap();
    let mut text = std::mem::take(out.get_mut());
    write_summary(&tracer.summary, &mut text).unwrap();
    check_golden("trace.txt", &String::from_utf8(text).unwrap());
}

/// `scry offcpu`'s report: the summary line with its states, the dropped
/// and lost lines, the stack-quality line and the heaviest stacks leaf
/// first, from the hand-built profile with off-CPU times as periods.
#[test]
fn offcpu_layout() {
    use super::offcpu::{OffCpuSummary, write_report};

    let mut b = sample_profile();
    for (i, s) in b.samples.iter_mut().enumerate() {
        s.period = 1_000_000 + i as u64 * 12_345;
    }
    let folded = FoldedStacks::build(&b.samples, &FoldOptions::default());
    let total_ns = folded.total_period();
    let summary = OffCpuSummary {
        total_ns,
        switches: b.samples.len() as u64,
        by_state: vec![('S', total_ns - 2_500_000), ('D', 2_500_000)],
        unmatched: 2,
        lost_dropped: 1,
        lost: 4,
        quality_line: QualitySummary::from_samples(&b.samples, &b.frames).line(),
    };
    let text = text(|out| write_report(out, &summary, &folded, &b.frames, 3));
    check_golden("offcpu.txt", &text);
}
