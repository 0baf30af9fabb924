//! The memory tools on the real kernel (memleak): workloads with known
//! answers (`workloads/leaker`: K allocations of S bytes kept from one
//! call site among many freed through every allocator function), bad
//! input (a static binary without malloc, an unknown pid), SIGKILL leaving
//! no uprobe, program or link. libbpf-tools' memleak is not installed
//! here; bcc's answer for the workload is the one asserted.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::tracer::{Tracer, assert_each_bad_input, scry_tool, sigkill_frees_everything};

/// Root, or skip (fail under SCRY_KERNEL_TESTS=required).
fn require_root() -> bool {
    let root =
        std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0);
    common::gate(if root {
        Ok(())
    } else {
        Err("BPF tool tests need root (CAP_BPF and CAP_PERFMON)".to_string())
    })
}

/// The uprobe links memleak attaches in libc: 11 functions, 9 with a
/// return probe.
const USER_LINKS: usize = 20;

/// A text report's stacks: (bytes, allocations, frames).
fn text_stacks(lines: &[String]) -> Vec<(u64, u64, Vec<String>)> {
    let mut stacks: Vec<(u64, u64, Vec<String>)> = Vec::new();
    for line in lines {
        if line.starts_with('[') {
            stacks.clear();
        } else if let Some(frame) = line.strip_prefix("\t\t") {
            if let Some(last) = stacks.last_mut() {
                last.2.push(frame.to_string());
            }
        } else if let Some(rest) = line.strip_prefix('\t')
            && rest.ends_with("allocations from stack")
        {
            let f: Vec<&str> = rest.split_whitespace().collect();
            stacks.push((
                f[0].parse().expect("bytes"),
                f[3].parse().expect("count"),
                Vec::new(),
            ));
        }
    }
    stacks
}

/// The leaker's answer: one stack at leak_here with K x S bytes in K
/// allocations, and no stack through a freed site.
fn assert_leak(stacks: &[(u64, u64, Vec<String>)], k: u64, s: u64, what: &str) {
    let leaks: Vec<_> = stacks
        .iter()
        .filter(|st| st.2.first().is_some_and(|f| f == "leak_here"))
        .collect();
    assert_eq!(leaks.len(), 1, "{what}: {stacks:?}");
    assert_eq!((leaks[0].0, leaks[0].1), (k * s, k), "{what}: {stacks:?}");
    assert!(leaks[0].2.iter().any(|f| f == "main"), "{what}: {stacks:?}");
    let freed: Vec<_> = stacks
        .iter()
        .filter(|st| st.2.iter().any(|f| f.starts_with("freed_")))
        .collect();
    assert!(
        freed.is_empty(),
        "{what}: freed sites outstanding: {freed:?}"
    );
}

#[test]
fn memleak_shows_the_leaked_stack_of_a_command_and_nothing_freed() {
    if !require_root() {
        return;
    }
    let leaker = common::workload("leaker");
    let (k, s) = (7u64, 100u64);
    let out = common::run_ok(scry_tool(&["memleak", "-o", "0", "--"]).arg(&leaker).args([
        k.to_string(),
        s.to_string(),
        "300".to_string(),
    ]));
    let lines: Vec<String> = out.lines().map(str::to_string).collect();
    assert!(lines[0].starts_with("Attaching to pid "), "{out}");
    assert_leak(&text_stacks(&lines), k, s, &out);
}

#[test]
fn memleak_follows_a_running_process_in_json_each_allocation_oldest_first() {
    if !require_root() {
        return;
    }
    let (k, s) = (5u64, 64u64);
    let mut leaker = Command::new(common::workload("leaker"))
        .args([
            k.to_string(),
            s.to_string(),
            "2000".to_string(),
            "wait".to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("leaker starts");
    let mut out = std::io::BufReader::new(leaker.stdout.take().expect("piped"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).expect("ready");
    assert_eq!(line.trim(), "ready");
    let pid = leaker.id().to_string();
    let tracer = Tracer::start(
        scry_tool(&["memleak", "-p", &pid, "-a", "-o", "0", "--json", "1"]),
        USER_LINKS,
    );
    let mut stdin = leaker.stdin.take().expect("piped");
    stdin.write_all(b"go\n").expect("go");
    let leaked = |lines: &[String]| {
        lines.iter().any(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_default();
            v["stacks"].as_array().is_some_and(|st| {
                st.iter()
                    .any(|x| x["frames"][0] == "leak_here" && x["bytes"] == k * s)
            })
        })
    };
    tracer.wait_until(leaked);
    drop(stdin);
    let (lines, err) = tracer.finish();
    let _ = leaker.wait();
    let last: serde_json::Value =
        serde_json::from_str(lines.last().expect("a report")).expect("JSON");
    let stacks = last["stacks"].as_array().expect("stacks");
    let as_text: Vec<(u64, u64, Vec<String>)> = stacks
        .iter()
        .map(|x| {
            let frames = x["frames"].as_array().expect("frames");
            (
                x["bytes"].as_u64().expect("bytes"),
                x["allocations_count"].as_u64().expect("count"),
                frames
                    .iter()
                    .map(|f| f.as_str().unwrap_or("").to_string())
                    .collect(),
            )
        })
        .collect();
    assert_leak(&as_text, k, s, &format!("{lines:?}\n{err}"));
    let leak = stacks
        .iter()
        .find(|x| x["frames"][0] == "leak_here")
        .expect("leak stack");
    let allocs = leak["allocations"].as_array().expect("-a allocations");
    assert_eq!(allocs.len() as u64, k);
    assert!(allocs.iter().all(|a| a["size"] == s));
    let ages: Vec<u64> = allocs
        .iter()
        .map(|a| a["age_ms"].as_u64().expect("age"))
        .collect();
    assert!(
        ages.windows(2).all(|w| w[0] >= w[1]),
        "oldest first: {ages:?}"
    );
}

#[test]
fn memleak_refuses_a_binary_without_malloc_and_an_unknown_pid() {
    if !require_root() {
        return;
    }
    let nomalloc = common::workload("nomalloc");
    let nomalloc = nomalloc.to_str().expect("utf-8 path");
    assert_each_bad_input(&[
        (&["memleak", "--", nomalloc][..], None, "no malloc to probe"),
        (&["memleak", "-p", "999999999"][..], None, "no such process"),
        (
            &["memleak", "-p", "1", "--", "true"][..],
            None,
            "exclude each other",
        ),
    ]);
}

#[test]
fn memleak_kernel_mode_names_kernel_stacks() {
    if !require_root() {
        return;
    }
    let out = common::run_ok(&mut scry_tool(&["memleak", "-o", "0", "-T", "3", "1", "1"]));
    let lines: Vec<String> = out.lines().map(str::to_string).collect();
    assert_eq!(lines[0], "Attaching to kernel allocators, Ctrl+C to quit.");
    let stacks = text_stacks(&lines);
    assert!(!stacks.is_empty() && stacks.len() <= 3, "{out}");
    assert!(
        stacks.iter().all(|st| st
            .2
            .first()
            .is_some_and(|f| f.starts_with("kmem_cache_alloc")
                || f.starts_with("__kmalloc")
                || f.starts_with("kmalloc")
                || f.contains("alloc"))),
        "{out}"
    );
}

#[test]
fn sigkill_leaves_no_uprobe_program_or_link() {
    if !require_root() {
        return;
    }
    sigkill_frees_everything(&["memleak"], 4);
    let mut leaker = Command::new(common::workload("leaker"))
        .args(["1", "8", "1", "wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("leaker starts");
    let pid = leaker.id().to_string();
    sigkill_frees_everything(&["memleak", "-p", &pid], USER_LINKS);
    let _ = leaker.kill();
    let _ = leaker.wait();
}
