//! `scry run`'s bad input, each kind after a uprobe on libc's malloc
//! and a tracepoint that would attach: a syntax error, an unknown probe,
//! an unknown field, a type error, a program the verifier refuses, a
//! probe the kernel lacks, a function a binary lacks. Each is one
//! message with the place (`FILE:LINE:COLUMNS: ERROR: ...`), the source
//! line and a caret under the place; exit 2; and no program of scry's
//! (`scry_run`) or uprobe is left in the kernel once it has exited.

use crate::common;
use crate::lang::{libc, scry_run};

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// The ids of the BPF programs `scry run` loads (all named `scry_run`).
fn scry_programs() -> BTreeSet<u32> {
    libbpf_rs::query::ProgInfoIter::default()
        .filter(|p| p.name.to_str() == Some("scry_run"))
        .map(|p| p.id)
        .collect()
}

/// The kernel's dynamic probe lists, which scry must leave as it found them.
fn probe_events() -> String {
    ["uprobe_events", "kprobe_events"]
        .iter()
        .map(|f| std::fs::read_to_string(format!("/sys/kernel/tracing/{f}")).unwrap_or_default())
        .collect()
}

#[test]
fn every_bad_input_kind_is_one_message_exit_2_and_nothing_left() {
    if !common::require_tracefs() {
        return;
    }
    let Some(libc) = libc() else {
        return;
    };
    let lead = format!("uprobe:{}:malloc {{ @m = count(); }} ", libc.display());
    let at = lead.len();
    let col = |from: usize, to: usize| format!("stdin:1:{}-{}: ERROR: ", at + from, at + to);
    let mut cases: Vec<(String, Vec<String>)> = vec![
        (
            "tracepoint:syscalls:sys_enter_getppid { @ = count( }".into(),
            vec![format!("{}syntax error, unexpected }}", col(52, 53))],
        ),
        (
            "tracepoint:sched:nosuch { @x = 1; }".into(),
            vec![format!("{}tracepoint not found: sched:nosuch", col(1, 24))],
        ),
        (
            "tracepoint:raw_syscalls:sys_enter { @x = args->nosuch; }".into(),
            vec![format!(
                "{}Struct/union of type 'struct _tracepoint_raw_syscalls_sys_enter' does not contain a field named 'nosuch'",
                col(42, 54)
            )],
        ),
        (
            "tracepoint:raw_syscalls:sys_enter { @x = comm + 1; }".into(),
            vec![format!(
                "{}Type mismatch for '+': comparing 'string[16]' with 'int64'",
                col(42, 50)
            )],
        ),
        (
            format!(
                "uprobe:{}:no_such_function_x {{ @n = count(); }}",
                libc.display()
            ),
            vec![format!(
                "{}cannot attach uprobe:{}:no_such_function_x: ",
                col(1, 58),
                libc.display()
            )],
        ),
    ];
    if !std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists() {
        cases.push((
            "tracepoint:raw_syscalls:sys_enter { @ = count(); } kretprobe:do_sys_openat2 { @r = count(); }".into(),
            vec![format!(
                "{}kretprobe:do_sys_openat2: this kernel has no kprobes",
                col(52, 76)
            )],
        ));
    }
    // The verifier's refusal is on the second line of the program.
    let verifier = (
        format!("{lead}tracepoint:raw_syscalls:sys_enter {{ $x = 0;\n  while (1) {{\n    $x = 1; }} }}"),
        vec![
            "stdin:2:10-11: ERROR: the BPF verifier refused the program of tracepoint:raw_syscalls:sys_enter".to_string(),
            "infinite loop detected".into(),
            "\n  while (1) {\n         ~\n".into(),
        ],
    );
    let mut all: Vec<(String, Vec<String>)> = cases
        .into_iter()
        .map(|(tail, needles)| {
            let prog = format!("{lead}{tail}");
            let mut needles = needles;
            // The source line, and the caret under the place.
            let (from, to) = needles[0]
                .split(':')
                .nth(2)
                .and_then(|c| c.split_once('-'))
                .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)))
                .expect("columns");
            needles.push(format!(
                "\n{prog}\n{}{}\n",
                " ".repeat(from - 1),
                "~".repeat(to - from)
            ));
            (prog, needles)
        })
        .collect();
    all.push(verifier);
    for (prog, needles) in &all {
        let before = scry_programs();
        let events = probe_events();
        let out = common::output(&mut scry_run(prog));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{prog}: {err}");
        assert_eq!(
            err.lines().filter(|l| l.contains("ERROR")).count(),
            1,
            "one message: {err}"
        );
        for needle in needles {
            assert!(
                err.contains(needle.as_str()),
                "{prog}: wanted {needle:?} in\n{err}"
            );
        }
        // Programs go once their last descriptor closes, after an RCU
        // grace period: waited for, boundedly.
        let start = Instant::now();
        loop {
            let left: Vec<u32> = scry_programs().difference(&before).copied().collect();
            if left.is_empty() {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{prog}: programs left: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(probe_events(), events, "{prog}");
    }
}
