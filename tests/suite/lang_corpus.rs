//! The classic bpftrace one-liners `scry run` must answer as Debian's
//! bpftrace does, each on a deterministic workload traced by both in
//! turn: files opened by process, on-CPU kernel stacks at 99 Hz, block
//! I/O latency (O_DIRECT writes to a loop device of the test's own),
//! a user function's latency through uprobe/uretprobe, and off-CPU time
//! from the scheduler's tracepoints. Exact events give the same counts;
//! latencies, whose buckets are the machine's, the same histogram totals.
//! (Syscalls by process, read sizes and new processes with their
//! arguments are in `lang`.)

use crate::common;
use crate::common::loop_device::LoopDevice;
use crate::lang::{bpftrace, gates, lines_with, run_status, run_with, scry_run, unique_copy};

use std::process::{Command, Stdio};

/// The value of the scalar map line `@NAME: V`, if printed.
fn scalar(text: &str, name: &str) -> Option<u64> {
    let prefix = format!("{name}: ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// The total of the histogram printed as `@NAME: ` (its bucket counts).
fn hist_total(text: &str, name: &str) -> u64 {
    let head = format!("\n{name}: \n");
    let Some(at) = text.find(&head) else {
        return 0;
    };
    text[at + head.len()..]
        .lines()
        .take_while(|l| l.starts_with('['))
        .filter_map(|l| {
            l.split(')')
                .nth(1)?
                .split('|')
                .next()?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// The same program traced by scry, then by bpftrace, on `workload`.
fn both(prog: &str, workload: impl Fn()) -> (String, String) {
    let ours = run_with(scry_run(prog), &workload);
    let theirs = run_with(bpftrace(prog), &workload);
    (ours, theirs)
}

#[test]
fn files_opened_by_process_match_bpftrace() {
    if !gates() {
        return;
    }
    let dir = common::tempdir();
    let name = format!("lopn{}", std::process::id() % 100000);
    let opens = unique_copy(dir.path(), &common::workload("opens"), &name);
    std::fs::write(dir.path().join("present"), "").expect("the file to open");
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         tracepoint:syscalls:sys_enter_openat /comm == \"{name}\"/ {{ @[comm, str(args->filename)] = count(); }}
         tracepoint:syscalls:sys_exit_openat /comm == \"{name}\"/ {{ @failed[args->ret < 0] = count(); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}"
    );
    let (ours, theirs) = both(&prog, || {
        // Without cargo's library path the loader opens only its cache
        // and libc.
        run_status(
            Command::new(&opens)
                .args(["50", "20"])
                .arg(dir.path())
                .env_remove("LD_LIBRARY_PATH"),
        )
    });
    let d = dir.path().display();
    assert!(
        ours.contains(&format!("@[{name}, {d}/missing]: 20\n")),
        "{ours}"
    );
    assert!(
        ours.contains(&format!("@[{name}, {d}/present]: 30\n")),
        "{ours}"
    );
    assert!(ours.contains("@failed[1]: 20\n"), "{ours}");
    for prefix in ["@[", "@failed"] {
        assert_eq!(
            lines_with(&ours, prefix),
            lines_with(&theirs, prefix),
            "scry:\n{ours}\nbpftrace:\n{theirs}"
        );
    }
}

/// The stacks printed as `@[\n frames \n]: N` or `@[]: N`: (frames, N).
fn stacks(text: &str) -> Vec<(Vec<String>, u64)> {
    let mut out = Vec::new();
    let mut frames: Option<Vec<String>> = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("@[]: ") {
            // A kernel stack sampled in user mode: no frames.
            out.extend(n.parse().ok().map(|n| (Vec::new(), n)));
        } else if line == "@[" {
            frames = Some(Vec::new());
        } else if let Some(n) = line.strip_prefix("]: ") {
            if let (Some(f), Ok(n)) = (frames.take(), n.parse()) {
                out.push((f, n));
            }
        } else if let Some(f) = frames.as_mut() {
            f.push(line.trim().to_string());
        }
    }
    out
}

/// On-CPU kernel stacks at 99 Hz of `dd` reading /dev/zero: in both
/// tools the stacks sum to the samples counted, and the most sampled
/// stack is the same path (read_zero under vfs_read), frames below the
/// sampled instruction identical, as bpftrace symbolizes them; and a
/// kernel stack sampled in user mode is printed empty as bpftrace does.
#[test]
fn on_cpu_kernel_stacks_at_99_hz_match_bpftrace() {
    if !gates() {
        return;
    }
    let dir = common::tempdir();
    let name = format!("lcpu{}", std::process::id() % 100000);
    let dd = unique_copy(dir.path(), std::path::Path::new("/bin/dd"), &name);
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         profile:hz:99 /comm == \"{name}\"/ {{ @[kstack] = count(); @n = count(); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}"
    );
    let (ours, theirs) = both(&prog, || {
        run_status(
            Command::new(&dd)
                .args(["if=/dev/zero", "of=/dev/null", "bs=1M", "count=20000"])
                .stderr(Stdio::null()),
        )
    });
    let heaviest = |text: &str| -> Vec<String> {
        let all = stacks(text);
        let n = scalar(text, "@n").unwrap_or(0);
        assert!(n > 0, "{text}");
        assert_eq!(all.iter().map(|s| s.1).sum::<u64>(), n, "{text}");
        let top = all.into_iter().max_by_key(|s| s.1).unwrap_or_default().0;
        // The sampled function, then the callers with their offsets.
        let mut frames = top;
        if let Some(leaf) = frames.first_mut() {
            *leaf = leaf.split('+').next().unwrap_or_default().to_string();
        }
        frames
    };
    let top = heaviest(&ours);
    assert_eq!(top.first().map(String::as_str), Some("read_zero"), "{ours}");
    assert!(top.iter().any(|f| f.starts_with("vfs_read+")), "{ours}");
    assert_eq!(top, heaviest(&theirs), "scry:\n{ours}\nbpftrace:\n{theirs}");
    // A process spinning in user mode: its kernel stacks are empty,
    // printed `@[]: N` by both.
    let name = format!("lusr{}", std::process::id() % 100000);
    let spin = unique_copy(dir.path(), &common::workload("cpu7525"), &name);
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         profile:hz:99 /comm == \"{name}\"/ {{ @[kstack] = count(); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}"
    );
    let (ours, theirs) = both(&prog, || run_status(Command::new(&spin).arg("30")));
    for text in [&ours, &theirs] {
        assert!(text.contains("\n@[]: "), "{text}");
        assert!(!text.contains("\n@[\n]"), "{text}");
    }
}

/// Block I/O latency from block_rq_issue to block_rq_complete, keyed by
/// sector, for 64 direct 4 KiB writes to a loop device only the test
/// writes: 64 requests of 4 KiB and 64 latencies in both tools.
#[test]
fn block_io_latency_matches_bpftrace() {
    if !gates()
        || !common::require_tool(
            "losetup",
            "util-linux's losetup is not installed (scripts/deps)",
        )
    {
        return;
    }
    let disk = LoopDevice::new();
    let dir = common::tempdir();
    let name = format!("lbio{}", std::process::id() % 100000);
    let dwrites = unique_copy(dir.path(), &common::workload("dwrites"), &name);
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         tracepoint:block:block_rq_issue /args->dev == {dev}/ {{ @start[args->sector] = nsecs; @bytes = hist(args->bytes); @by[comm] = count(); }}
         tracepoint:block:block_rq_complete /@start[args->sector]/ {{ @usecs = hist((nsecs - @start[args->sector]) / 1000); @n = count(); delete(@start[args->sector]); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}",
        dev = disk.kernel_dev()
    );
    let (ours, theirs) = both(&prog, || {
        run_status(Command::new(&dwrites).arg(&disk.dev).args(["64", "4096"]))
    });
    let bytes = "\n@bytes: \n[4K, 8K)              64 |";
    assert!(ours.contains(bytes), "{ours}");
    assert!(theirs.contains(bytes), "{theirs}");
    assert_eq!(scalar(&ours, &format!("@by[{name}]")), Some(64), "{ours}");
    assert_eq!(scalar(&ours, "@n"), Some(64), "{ours}");
    assert_eq!(hist_total(&ours, "@usecs"), 64, "{ours}");
    for (what, n) in [
        ("@n", scalar(&theirs, "@n")),
        ("@by", scalar(&theirs, &format!("@by[{name}]"))),
    ] {
        assert_eq!(n, Some(64), "{what}: bpftrace:\n{theirs}");
    }
    assert_eq!(hist_total(&theirs, "@usecs"), 64, "{theirs}");
}

/// A user function's latency through uprobe/uretprobe (`fn_nap`, 5
/// naps, start kept by thread): 5 latencies, and the 100 calls of
/// `fn_alpha` counted, in both tools.
#[test]
fn user_function_latency_through_uretprobe_matches_bpftrace() {
    if !gates() {
        return;
    }
    let dir = common::tempdir();
    let name = format!("lfun{}", std::process::id() % 100000);
    let funcs = unique_copy(dir.path(), &common::workload("funcs"), &name);
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         uprobe:{bin}:fn_nap {{ @start[tid] = nsecs; }}
         uretprobe:{bin}:fn_nap /@start[tid]/ {{ @ns = hist(nsecs - @start[tid]); @n = count(); delete(@start[tid]); }}
         uprobe:{bin}:fn_alpha {{ @alpha = count(); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}",
        bin = funcs.display()
    );
    let (ours, theirs) = both(&prog, || {
        run_status(
            Command::new(&funcs)
                .args(["100", "5", "2"])
                .stderr(Stdio::null()),
        )
    });
    for text in [&ours, &theirs] {
        assert_eq!(scalar(text, "@n"), Some(5), "{text}");
        assert_eq!(scalar(text, "@alpha"), Some(100), "{text}");
        assert_eq!(hist_total(text, "@ns"), 5, "{text}");
    }
}

/// Off-CPU time from sched_switch: the time from each blocking switch-out
/// (state S) of the workload to its next switch-in. `sleeper 20 10`
/// makes exactly 20 nanosleep calls, counted by both; each blocks once,
/// unless a preemption under load lasts past its timer (then it never
/// switches out asleep). An interval needs the switch-in too, and on this
/// VM an idle-to-task switch is sometimes delivered to no program (20
/// switch-outs, 19 intervals once, at load 10): so in each tool the
/// intervals are at most the switch-outs counted, at most one fewer, 1 to
/// 20, and the histogram holds them all.
#[test]
fn off_cpu_time_from_scheduler_tracepoints_matches_bpftrace() {
    if !gates() {
        return;
    }
    let dir = common::tempdir();
    let name = format!("loff{}", std::process::id() % 100000);
    let sleeper = unique_copy(dir.path(), &common::workload("sleeper"), &name);
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         tracepoint:syscalls:sys_enter_clock_nanosleep /comm == \"{name}\"/ {{ @sleeps = count(); }}
         tracepoint:sched:sched_switch /args->prev_comm == \"{name}\" && args->prev_state == 1/ {{ @off[args->prev_pid] = nsecs; @outs = count(); }}
         tracepoint:sched:sched_switch /@off[args->next_pid]/ {{ @us = hist((nsecs - @off[args->next_pid]) / 1000); @n = count(); @by[args->next_comm] = sum(1); delete(@off[args->next_pid]); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}"
    );
    let (ours, theirs) = both(&prog, || {
        run_status(
            Command::new(&sleeper)
                .args(["20", "10"])
                .stderr(Stdio::null()),
        )
    });
    for text in [&ours, &theirs] {
        assert_eq!(scalar(text, "@sleeps"), Some(20), "{text}");
        let n = scalar(text, "@n").unwrap_or(0);
        assert!((1..=20).contains(&n), "{text}");
        let outs = scalar(text, "@outs").unwrap_or(0);
        assert!(n <= outs && outs <= n + 1, "{text}");
        assert_eq!(scalar(text, &format!("@by[{name}]")), Some(n), "{text}");
        assert_eq!(hist_total(text, "@us"), n, "{text}");
    }
}
