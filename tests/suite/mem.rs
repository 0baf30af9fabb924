//! The memory tools on the real kernel (memleak, oomkill, drsnoop,
//! capable): workloads with known answers (`workloads/leaker`: K
//! allocations of S bytes kept from one call site among many freed
//! through every allocator function; `workloads/hog` in a memory cgroup
//! limited below what it touches: reclaimed, then OOM-killed;
//! `workloads/caps`: N checks of one capability), bad input (a static
//! binary without malloc, an unknown pid), SIGKILL leaving no uprobe,
//! program or link. libbpf-tools' memleak is not installed here, and its
//! oomkill and capable probe kernel functions (refused here): the
//! workloads' own answers are asserted; its drsnoop loads and sees the
//! same direct reclaims as scry's (none, in a cgroup's reclaim).

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

/// The uprobe links memleak attaches in libc: 11 functions at 10
/// addresses (glibc's aligned_alloc is memalign: one probe per address),
/// 8 with a return probe.
const USER_LINKS: usize = 18;

/// A text report's stacks: (bytes, allocations, frames).
type Stacks = Vec<(u64, u64, Vec<String>)>;

/// The [`Stacks`] of a text report's lines (the last report's).
fn text_stacks(lines: &[String]) -> Stacks {
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

/// bcc's `-c "COMMAND ARGS"`, `--sort count` and `--combined-only`:
/// leak_sites keeps 8 x 8192 bytes from leak_big and 100 x 8 from
/// leak_small. `-T 1` shows leak_big's stack (by size, the default);
/// `--sort count -T 1` leak_small's, with its exact sums; `-c` runs the
/// command as `--` does; `--combined-only` leaves out -a's lines.
#[test]
fn memleak_c_sort_count_and_combined_only_as_bcc() {
    if !require_root() {
        return;
    }
    let sites = common::workload("leak_sites");
    let command = format!("{} 8 8192 100 8", sites.to_str().expect("utf-8 path"));
    let top = |extra: &[&str]| {
        let mut args = vec!["memleak", "-o", "0", "-T", "1"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-c", &command]);
        let out = common::run_ok(&mut scry_tool(&args));
        let lines: Vec<String> = out.lines().map(str::to_string).collect();
        (text_stacks(&lines), out)
    };
    // The one stack shown: its bytes, allocations and innermost frame.
    let check = |(stacks, out): &(Stacks, String), want: (u64, u64, &str)| {
        assert_eq!(stacks.len(), 1, "{out}");
        let first = stacks[0].2.first().map(String::as_str);
        assert_eq!(
            (stacks[0].0, stacks[0].1, first),
            (want.0, want.1, Some(want.2)),
            "{out}"
        );
    };
    check(&top(&[]), (8 * 8192, 8, "leak_big"));
    let by_count = top(&["--sort", "count", "-a", "--combined-only"]);
    check(&by_count, (100 * 8, 100, "leak_small"));
    let out = by_count.1;
    assert!(!out.contains("addr = "), "{out}");
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

/// bcc's `-t`: each call followed, as bcc's trace messages. The leaker
/// keeps K = 7 x 100 bytes at leak_here and, N = 50 times, allocates and
/// frees through each of its six freed sites: 7 allocations and 7 frees
/// each time (freed_realloc's malloc and realloc, realloc freeing the
/// first block), so exactly 7 x N frees and 7 x N + K returned
/// allocations; aligned_alloc's 256 bytes and mmap's 4096 N times each,
/// calloc(2, 8)'s 16 bytes N times and freed_malloc's first (16 + 0)
/// once. Every address -a shows at leak_here came back from an `alloc
/// exited, size = 100` line and is never freed; each `free entered` names
/// an address and size an earlier `alloc exited` returned.
#[test]
fn memleak_t_traces_each_call_followed() {
    if !require_root() {
        return;
    }
    let leaker = common::workload("leaker");
    let (k, n) = (7usize, 50usize);
    let out = common::run_ok(
        scry_tool(&["memleak", "-t", "-a", "-o", "0", "--"])
            .arg(&leaker)
            .args([k.to_string(), "100".to_string(), n.to_string()]),
    );
    let lines: Vec<String> = out.lines().map(str::to_string).collect();
    let message = |l: &str| {
        l.split_once(' ')
            .and_then(|(_, r)| r.split_once(' '))
            .map(|(_, m)| m.to_string())
    };
    let hex = |s: &str| u64::from_str_radix(s.trim(), 16).expect("hex address");
    let mut returned: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    let mut returned_sizes: std::collections::HashMap<u64, usize> =
        std::collections::HashMap::new();
    let mut exited = 0;
    let mut freed = Vec::new();
    let mut entered = 0;
    for line in &lines {
        let Some(m) = message(line) else { continue };
        if let Some(size) = m.strip_prefix("alloc entered, size = ") {
            size.parse::<u64>().expect("size");
            entered += 1;
        } else if let Some(rest) = m.strip_prefix("alloc exited, size = ") {
            let (size, result) = rest.split_once(", result = ").expect("result");
            let size: u64 = size.parse().expect("size");
            returned.insert(hex(result), size);
            *returned_sizes.entry(size).or_default() += 1;
            exited += 1;
        } else if let Some(rest) = m.strip_prefix("free entered, address = ") {
            let (address, size) = rest.split_once(", size = ").expect("size");
            let address = hex(address);
            let size: u64 = size.parse().expect("size");
            assert_eq!(returned.get(&address), Some(&size), "{line}\n{out}");
            freed.push(address);
        }
    }
    // One line per call entered: aligned_alloc and memalign, one function
    // in glibc, are probed once.
    assert_eq!(entered, exited, "{out}");
    assert_eq!(freed.len(), 7 * n, "frees traced:\n{out}");
    assert_eq!(exited, 7 * n + k, "allocations returned:\n{out}");
    let sized = |size: u64| returned_sizes.get(&size).copied().unwrap_or(0);
    assert_eq!(
        (sized(256), sized(4096), sized(16)),
        (n, n, n + 1),
        "aligned_alloc, mmap, calloc + malloc(16):\n{out}"
    );
    let kept: Vec<u64> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("\taddr = "))
        .filter(|l| l.contains(" size = 100 "))
        .map(|l| hex(l.split_whitespace().next().expect("address")))
        .collect();
    assert_eq!(kept.len(), k, "{out}");
    for a in &kept {
        assert_eq!(returned.get(a), Some(&100), "{a:x}: {out}");
        assert!(!freed.contains(a), "{a:x} kept, yet traced as freed");
    }
    assert_leak(&text_stacks(&lines), 7, 100, &out);
}

/// The stack whose innermost frame is `frame`: (bytes, allocations).
fn at_frame(stacks: &Stacks, frame: &str) -> Option<(u64, u64)> {
    stacks
        .iter()
        .find(|s| s.2.first().is_some_and(|f| f == frame))
        .map(|s| (s.0, s.1))
}

/// bcc's `-s N`: every N-th allocation followed. leak_sites makes 8
/// allocations from leak_big, then 100 from leak_small, with no other
/// allocation between them: with -s 4, whatever the count before, 2 of
/// leak_big's (16384 bytes) and 25 of leak_small's (200 bytes).
#[test]
fn memleak_s_follows_every_nth_allocation() {
    if !require_root() {
        return;
    }
    let sites = common::workload("leak_sites");
    let out = common::run_ok(
        scry_tool(&["memleak", "-o", "0", "-s", "4", "--"])
            .arg(&sites)
            .args(["8", "8192", "100", "8"]),
    );
    let lines: Vec<String> = out.lines().map(str::to_string).collect();
    let stacks = text_stacks(&lines);
    assert_eq!(at_frame(&stacks, "leak_big"), Some((2 * 8192, 2)), "{out}");
    assert_eq!(at_frame(&stacks, "leak_small"), Some((25 * 8, 25)), "{out}");
}

/// bcc's `-O OBJ`: the allocator in another object. workloads/bump_alloc
/// is a malloc of its own, preloaded into leak_sites: libc's malloc is
/// never called, so without -O nothing of leak_big's is seen, and with
/// `-O bump_alloc` its 8 x 8192 bytes and leak_small's 100 x 8.
#[test]
fn memleak_o_probes_the_allocator_in_another_object() {
    if !require_root() {
        return;
    }
    let sites = common::workload("leak_sites");
    let bump = common::workload("bump_alloc");
    let bump = bump.to_str().expect("utf-8 path");
    let preload = format!("LD_PRELOAD={bump}");
    let run = |extra: &[&str]| {
        let mut args = vec!["memleak", "-o", "0", "-T", "20"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "env", &preload]);
        let out = common::run_ok(scry_tool(&args).arg(&sites).args(["8", "8192", "100", "8"]));
        let lines: Vec<String> = out.lines().map(str::to_string).collect();
        (text_stacks(&lines), out)
    };
    let (stacks, out) = run(&["-O", bump]);
    assert!(out.starts_with("Attaching to pid "), "{out}");
    assert!(
        out.lines().next().is_some_and(|l| l.contains(bump)),
        "{out}"
    );
    assert_eq!(at_frame(&stacks, "leak_big"), Some((8 * 8192, 8)), "{out}");
    assert_eq!(
        at_frame(&stacks, "leak_small"),
        Some((100 * 8, 100)),
        "{out}"
    );
    let (stacks, out) = run(&[]);
    assert_eq!(at_frame(&stacks, "leak_big"), None, "libc's malloc: {out}");
}

/// bcc's `--percpu`: the kernel's per-CPU allocations. workloads/percpu_maps
/// creates a BPF per-CPU array of 37 elements of 424 bytes: 37 per-CPU
/// allocations of 424 bytes (one per element), held for 3 s; -z/-Z keep
/// that size only (other processes' per-CPU allocations may come at any
/// time). `--wa-missing-free` is accepted (scry always replaces an
/// allocation at an address still outstanding).
#[test]
fn memleak_percpu_sees_a_per_cpu_arrays_allocations() {
    if !require_root() {
        return;
    }
    let tracer = Tracer::start(
        scry_tool(&[
            "memleak",
            "--percpu",
            "--wa-missing-free",
            "-o",
            "0",
            "-z",
            "424",
            "-Z",
            "424",
            "1",
        ]),
        0,
    );
    let maps = common::workload("percpu_maps");
    let mut workload = Command::new(&maps)
        .args(["37", "424", "3000"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("percpu_maps starts");
    let (bytes, count) = (37 * 424u64, 37u64);
    tracer.wait_until(|lines| {
        text_stacks(lines)
            .iter()
            .map(|s| (s.0, s.1))
            .fold((0, 0), |(b, c), (x, y)| (b + x, c + y))
            >= (bytes, count)
    });
    let (lines, err) = tracer.stop();
    assert!(workload.wait().expect("percpu_maps ends").success());
    assert_eq!(
        lines.first().map(String::as_str),
        Some("Attaching to kernel per-CPU allocator, Ctrl+C to quit."),
        "{err}"
    );
    // The report that first held them all: the array's allocations, by
    // the kernel stacks through the BPF map's allocation.
    let mut reports: Vec<Vec<String>> = Vec::new();
    for line in &lines {
        if line.starts_with('[') {
            reports.push(Vec::new());
        }
        if let Some(r) = reports.last_mut() {
            r.push(line.clone());
        }
    }
    let full = reports
        .iter()
        .map(|r| text_stacks(r))
        .find(|st| st.iter().map(|s| s.1).sum::<u64>() >= count)
        .expect("a report with the array's allocations");
    let array: Vec<_> = full
        .iter()
        .filter(|s| s.2.iter().any(|f| f.contains("array_map_alloc")))
        .collect();
    let sums = array.iter().fold((0, 0), |(b, c), s| (b + s.0, c + s.1));
    assert_eq!(sums, (bytes, count), "{lines:#?}\n{err}");
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
        (
            &["memleak", "--percpu", "-p", "1"][..],
            None,
            "--percpu follows the kernel's per-CPU allocator",
        ),
        (
            &["memleak", "-O", "c"][..],
            None,
            "-O names a process's allocator",
        ),
        (
            &["memleak", "-O", "/nonexistent/libnope.so", "-p", "1"][..],
            None,
            "/nonexistent/libnope.so",
        ),
    ]);
}

/// capable --unique (libbpf-tools' `-u pid|cgroup`): `caps N` checks
/// CAP_SYS_RESOURCE N times; once per process, once per cgroup.
#[test]
fn capable_unique_shows_each_capability_once() {
    if !require_root() {
        return;
    }
    let caps = Waiting::start("caps", &["20"]);
    let pid = caps.pid();
    let by_pid = Tracer::start(scry_tool(&["capable", "-p", &pid, "--unique", "--json"]), 1);
    let by_cgroup = Tracer::start(scry_tool(&["capable", "-p", &pid, "-u", "cgroup"]), 1);
    let all = Tracer::start(scry_tool(&["capable", "-p", &pid, "--json"]), 1);
    let (status, rest) = caps.go();
    assert!(status.success(), "{rest}");
    let (all, _) = all.finish();
    assert_eq!(all.len(), 20, "{all:?}");
    let (once, _) = by_pid.finish();
    assert_eq!(once.len(), 1, "{once:?}");
    assert!(once[0].contains("\"cap\":24"), "{once:?}");
    let (lines, _) = by_cgroup.finish();
    let checks: Vec<&String> = lines.iter().skip(1).collect();
    assert_eq!(checks.len(), 1, "{lines:?}");
    assert!(checks[0].contains(" CAP_SYS_RESOURCE "), "{lines:?}");
}

/// oomkill, drsnoop and capable on bad input: an unknown pid or thread,
/// a missing cgroup, a kernel without their hook (SCRY_BPF_HOOKS leaves
/// none): one line each, exit 2.
#[test]
fn oomkill_drsnoop_and_capable_refuse_bad_input() {
    if !require_root() {
        return;
    }
    assert_each_bad_input(&[
        (&["drsnoop", "-p", "4194304"][..], None, "no such process"),
        (
            &["drsnoop", "-t", "4194304"][..],
            None,
            "-t 4194304: no such process",
        ),
        (&["capable", "-p", "4194304"][..], None, "no such process"),
        (
            &["capable", "-c", "/sys/fs/cgroup/scry-no-such-group"][..],
            None,
            "--cgroup /sys/fs/cgroup/scry-no-such-group",
        ),
        (&["oomkill"][..], Some("kprobe"), "scry_oom_victim"),
        (&["drsnoop"][..], Some("kprobe"), "scry_dr_begin"),
        (&["capable"][..], Some("kprobe"), "scry_cap_check"),
    ]);
}

/// swapin counts calls of swap_read_folio (or swap_readpage) by fentry or
/// kprobe, and no tracepoint sees a swap-in: where neither attaches (this
/// machine: fentry refused, no kprobes) `scry swapin` is one line naming
/// the function and what is missing, exit 2; where one does, it prints
/// bcc's banner, one table and `Detaching...`. An unknown pid, and a
/// kernel with no hook kind left (SCRY_BPF_HOOKS=tp), are one line too.
/// The counts themselves are checked in the guest (kernel_matrix, the
/// swapin check).
#[test]
fn swapin_without_its_hooks_is_one_line_and_exit_2() {
    if !require_root() {
        return;
    }
    assert_each_bad_input(&[
        (&["swapin", "-p", "4194304"][..], None, "no such process"),
        (
            &["swapin", "1", "1"][..],
            Some("tp"),
            "cannot be hooked here, and no tracepoint sees a swap-in",
        ),
    ]);
    let out = common::output(&mut scry_tool(&["swapin", "-v", "1", "1"]));
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.first(),
            Some(&"Counting swap ins. Ctrl-C to end."),
            "{text}"
        );
        assert_eq!(
            lines.get(2),
            Some(&"COMM             PID    COUNT"),
            "{text}"
        );
        assert_eq!(lines.last(), Some(&"Detaching..."), "{text}");
        assert!(
            err.contains(": fentry/swap_read") || err.contains(": kprobe/swap_read"),
            "{err}"
        );
        return;
    }
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").expect("read /proc/kallsyms");
    let function = if kallsyms.lines().any(|l| l.ends_with(" swap_read_folio")) {
        "swap_read_folio"
    } else {
        "swap_readpage"
    };
    let needle = if std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists() {
        format!("{function} cannot be hooked here")
    } else {
        format!(
            "{function} cannot be hooked here, and no tracepoint sees a swap-in: this kernel has no kprobes"
        )
    };
    common::assert_bad_input(&out, &needle, &"swapin -v 1 1");
    assert!(text.is_empty(), "printed before failing: {text}");
}

/// `-p` takes a process: a thread's id (its /proc/TID exists too) is one
/// line naming its process, exit 2, before anything attaches (memleak
/// attached and then failed on the pidfd; vfsstat printed its header
/// first). The bench's lost run was its own stale log, not this.
#[test]
fn p_refuses_a_thread_id_naming_its_process() {
    if !require_root() {
        return;
    }
    let mut threads = Command::new(common::workload("threads"))
        .args(["2", "3000"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("threads starts");
    let pid = threads.id();
    let mut out = std::io::BufReader::new(threads.stdout.take().expect("piped"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).expect("a thread's line");
    let tid = line
        .split_whitespace()
        .nth(3)
        .expect("thread N tid TID")
        .to_string();
    assert_ne!(tid, pid.to_string(), "{line}");
    let needle = format!("-p {tid}: a thread of process {pid}, not a process (give -p {pid})");
    assert_each_bad_input(&[
        (&["memleak", "-p", &tid][..], None, &needle),
        (&["vfsstat", "-p", &tid, "1", "1"][..], None, &needle),
        (&["opensnoop", "-p", &tid][..], None, &needle),
    ]);
    let _ = threads.kill();
    let _ = threads.wait();
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
    sigkill_frees_everything(&["oomkill"], 1);
    sigkill_frees_everything(&["drsnoop", "--memcg"], 4);
    sigkill_frees_everything(&["capable"], 1);
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

/// A workload started with `wait`: it printed "ready" and waits for a
/// line on stdin.
struct Waiting {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    out: std::io::BufReader<std::process::ChildStdout>,
}

impl Waiting {
    fn start(name: &str, args: &[&str]) -> Waiting {
        let mut child = Command::new(common::workload(name))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("workload starts");
        let stdin = child.stdin.take();
        let mut out = std::io::BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).expect("ready");
        assert_eq!(line.trim(), "ready", "{name}");
        Waiting { child, stdin, out }
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// Lets it go; its status and the rest of its output once it ended.
    fn go(mut self) -> (std::process::ExitStatus, String) {
        let mut stdin = self.stdin.take().expect("stdin");
        stdin.write_all(b"go\n").expect("go");
        drop(stdin);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.out, &mut rest).expect("output");
        (self.child.wait().expect("workload ends"), rest)
    }
}

#[test]
fn capable_lists_each_check_with_its_verdict() {
    if !require_root() {
        return;
    }
    let n = 25usize;
    let caps = Waiting::start("caps", &[&n.to_string()]);
    let pid = caps.pid();
    let tracer = Tracer::start(scry_tool(&["capable", "-p", &pid, "--json"]), 1);
    let (status, rest) = caps.go();
    assert!(status.success(), "{rest}");
    let raised: usize = rest
        .split_whitespace()
        .nth(1)
        .and_then(|r| r.parse().ok())
        .expect("raised R of N");
    let (lines, err) = tracer.finish();
    let checks: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(checks.len(), n, "{lines:?}\n{err}");
    assert!(
        checks
            .iter()
            .all(|c| c["cap"] == 24 && c["name"] == "CAP_SYS_RESOURCE" && c["comm"] == "caps"),
        "{lines:?}"
    );
    let allowed = checks.iter().filter(|c| c["verdict"] == "allow").count();
    assert_eq!(allowed, raised, "{lines:?}");
    assert!(
        err.contains("AUDIT"),
        "the note on what is not visible: {err}"
    );
}

/// capable -K -U (libbpf-tools' flags; its capable cannot load here):
/// `caps N`'s N checks each carry the kernel stack of the check (through
/// the kernel's capability code: cap_capable's callers, the setrlimit
/// system call) and the user one (raise_limits, the workload's function
/// making the calls), in the table under each line and in --json.
#[test]
fn capable_k_u_show_each_checks_stacks() {
    if !require_root() {
        return;
    }
    let n = 5usize;
    let caps = Waiting::start("caps", &[&n.to_string()]);
    let pid = caps.pid();
    let json = Tracer::start(scry_tool(&["capable", "-p", &pid, "-K", "-U", "--json"]), 1);
    let table = Tracer::start(scry_tool(&["capable", "-p", &pid, "-K", "-U"]), 1);
    let (status, rest) = caps.go();
    assert!(status.success(), "{rest}");
    let (lines, err) = json.finish();
    let checks: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(checks.len(), n, "{lines:?}\n{err}");
    let names = |c: &serde_json::Value, key: &str| -> Vec<String> {
        c[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} in {c}"))
            .iter()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect()
    };
    for c in &checks {
        let kernel = names(c, "kernel_stack");
        let user = names(c, "user_stack");
        assert!(
            kernel.iter().any(|f| f.contains("capable"))
                && kernel
                    .iter()
                    .any(|f| f.contains("setrlimit") || f.contains("prlimit")),
            "{kernel:?}"
        );
        assert!(user.iter().any(|f| f == "raise_limits"), "{user:?}");
        assert!(user.iter().any(|f| f == "main"), "{user:?}");
    }
    let (lines, err) = table.finish();
    let events = lines
        .iter()
        .filter(|l| l.contains(" CAP_SYS_RESOURCE "))
        .count();
    assert_eq!(events, n, "{lines:?}\n{err}");
    let frames = |f: &str| {
        lines
            .iter()
            .filter(|l| l.starts_with("        ") && l.trim() == f)
            .count()
    };
    assert_eq!(frames("raise_limits"), n, "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("        ") && l.contains("capable")),
        "{lines:?}"
    );
}

/// capable -c CG (libbpf-tools' flag; its capable cannot load here):
/// `caps N` moved into a cgroup of its own while it waits: its N checks
/// of CAP_SYS_RESOURCE and nothing else; `--cgroup` of an empty cgroup
/// sees nothing at all.
#[test]
fn capable_c_lists_one_cgroups_checks() {
    if !require_root() {
        return;
    }
    let Some(cg) = crate::bpf_tools::TestCgroup::new("cg-capable") else {
        return;
    };
    let Some(empty) = crate::bpf_tools::TestCgroup::new("cg-capable-empty") else {
        return;
    };
    let n = 15usize;
    let caps = Waiting::start("caps", &[&n.to_string()]);
    let pid = caps.pid();
    std::fs::write(cg.0.join("cgroup.procs"), &pid).expect("moved into the cgroup");
    let inside = Tracer::start(scry_tool(&["capable", "-c", &cg.arg(), "--json"]), 1);
    let outside = Tracer::start(
        scry_tool(&["capable", "--cgroup", &empty.arg(), "--json"]),
        1,
    );
    let (status, rest) = caps.go();
    assert!(status.success(), "{rest}");
    inside.wait_until(|lines| lines.len() >= n);
    let (lines, _) = inside.stop();
    let (nothing, _) = outside.stop();
    let checks: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(checks.len(), n, "{lines:?}");
    assert!(
        checks.iter().all(
            |c| c["pid"].as_u64().map(|p| p.to_string()) == Some(pid.clone()) && c["cap"] == 24
        ),
        "{lines:?}"
    );
    assert!(nothing.is_empty(), "{nothing:?}");
}

/// A memory cgroup of its own, limited to `limit` bytes (swap included
/// where the kernel counts it), removed on drop.
struct MemCgroup {
    dir: std::path::PathBuf,
}

impl MemCgroup {
    fn new(limit: u64) -> Result<MemCgroup, String> {
        let name = format!("scry-test-{}", std::process::id());
        let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"));
        let (dir, files): (std::path::PathBuf, &[&str]) = if v2 {
            (
                std::path::Path::new("/sys/fs/cgroup").join(&name),
                &["memory.max", "memory.swap.max"],
            )
        } else if std::path::Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists() {
            (
                std::path::Path::new("/sys/fs/cgroup/memory").join(&name),
                &["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"],
            )
        } else {
            return Err("no memory cgroup controller (v2 or v1) here".to_string());
        };
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let group = MemCgroup { dir };
        for (i, file) in files.iter().enumerate() {
            let value = if v2 && i == 1 { 0 } else { limit };
            let path = group.dir.join(file);
            if path.exists() {
                std::fs::write(&path, value.to_string())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        Ok(group)
    }

    fn add(&self, pid: &str) {
        std::fs::write(self.dir.join("cgroup.procs"), pid).expect("into the cgroup");
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

#[test]
fn oomkill_and_drsnoop_see_a_cgroup_kill_its_hog() {
    if !require_root() || !common::require_tool("drsnoop", "libbpf-tools is not installed") {
        return;
    }
    let group = match MemCgroup::new(32 << 20) {
        Ok(group) => group,
        Err(why) => {
            common::gate(Err(why));
            return;
        }
    };
    let hog = Waiting::start("hog", &["256", "wait"]);
    let pid = hog.pid();
    group.add(&pid);
    let oom = Tracer::start(scry_tool(&["oomkill"]), 1);
    let memcg = Tracer::start(scry_tool(&["drsnoop", "--memcg", "-e", "-p", &pid]), 4);
    let oom_json = Tracer::start(scry_tool(&["oomkill", "--json"]), 1);
    let memcg_json = Tracer::start(
        scry_tool(&["drsnoop", "--memcg", "-e", "-p", &pid, "--json"]),
        4,
    );
    let direct = Tracer::start(scry_tool(&["drsnoop", "-p", &pid]), 2);
    let peer = Tracer::start(common::tracer::peer(&["drsnoop", "-p", &pid]), 0);
    let (status, _) = hog.go();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "the hog is OOM-killed: {status}"
    );
    let victim = format!("OOM kill of PID {pid} (\"hog\")");
    oom.wait_until(|lines| lines.iter().any(|l| l.contains(&victim)));
    let (lines, _) = oom.stop();
    let kills: Vec<&String> = lines.iter().filter(|l| l.contains(&victim)).collect();
    assert_eq!(kills.len(), 1, "{lines:?}");
    assert!(
        kills[0].contains(&format!("Triggered by PID {pid} (\"hog\")")),
        "{lines:?}"
    );
    // --json: the kill's object, the line's fields.
    let victim_pid: u64 = pid.parse().expect("pid");
    oom_json.wait_until(|lines| lines.iter().any(|l| l.contains("victim_pid")));
    let (json_lines, _) = oom_json.stop();
    let kills_json: Vec<serde_json::Value> = json_lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["victim_pid"] == victim_pid)
        .collect();
    assert_eq!(kills_json.len(), 1, "{json_lines:?}");
    let k = &kills_json[0];
    let pages = k["pages"].as_u64().expect("pages");
    assert!(
        k["victim_comm"] == "hog"
            && k["trigger_pid"] == victim_pid
            && k["trigger_comm"] == "hog"
            && kills[0].contains(&format!(", {pages} pages, ")),
        "{k}\n{lines:?}"
    );
    let (memcg_lines, memcg_err) = memcg.finish();
    let reclaims: Vec<&String> = memcg_lines.iter().skip(2).collect();
    assert!(!reclaims.is_empty(), "{memcg_lines:?}");
    assert!(
        reclaims
            .iter()
            .all(|l| l.contains(" hog ") && l.ends_with(" memcg")),
        "{memcg_lines:?}"
    );
    // -e: FREE(KB), the system's free memory, is some of its memory.
    assert!(
        memcg_lines[1].contains(" PAGES FREE(KB) KIND"),
        "{memcg_lines:?}"
    );
    let total_kb: u64 = std::fs::read_to_string("/proc/meminfo")
        .expect("meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("MemTotal");
    assert!(
        reclaims.iter().all(|l| l
            .split_whitespace()
            .nth(5)
            .and_then(|f| f.parse::<u64>().ok())
            .is_some_and(|kb| kb > 0 && kb <= total_kb)),
        "{memcg_lines:?}"
    );
    assert!(memcg_err.lines().count() <= 1, "{memcg_err}");
    // --json: one object per reclaim, the line's fields (FREE(KB) is
    // read when each is printed, and each program times a reclaim on its
    // own clock reads: LAT is only checked to be there).
    let (memcg_json, _) = memcg_json.finish();
    let mut objects: Vec<Vec<String>> = memcg_json
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| {
            vec![
                v["comm"].as_str().unwrap_or("").to_string(),
                v["tid"].to_string(),
                v["lat_ms"].as_f64().is_some_and(|ms| ms >= 0.0).to_string(),
                v["pages"].to_string(),
                v["kind"].as_str().unwrap_or("").to_string(),
            ]
        })
        .collect();
    let mut rows: Vec<Vec<String>> = reclaims
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let mut row: Vec<String> = [1, 2, 4, 6]
                .iter()
                .map(|&i| f.get(i).copied().unwrap_or("").to_string())
                .collect();
            let lat = f.get(3).is_some_and(|ms| ms.parse::<f64>().is_ok());
            row.insert(2, lat.to_string());
            row
        })
        .collect();
    objects.sort();
    rows.sort();
    assert_eq!(objects, rows, "drsnoop --json: {memcg_json:?}");
    let (direct_lines, _) = direct.finish();
    let (peer_lines, _) = peer.stop();
    // Direct reclaims: the same on both sides (a cgroup at its limit
    // reclaims without one, so both count none on this idle host).
    assert_eq!(
        direct_lines[..2],
        peer_lines[..2],
        "the same banner and columns"
    );
    assert_eq!(
        direct_lines.len(),
        peer_lines.len(),
        "{direct_lines:?} {peer_lines:?}"
    );
    drop(group);
}
