//! Blocked time summed in the kernel, against what the workload measured
//! itself: offcputime's `--json` and `--state` (bcc's: 0 preempted, else
//! a bitmask), offwaketime (the blocked stack joined to the waker's), on
//! piper, whose main thread blocks in a pipe read in wait_for_reply until
//! its `answerer` thread writes the answer in send_reply, 10 ms later;
//! futexctn on mutexes, four threads fighting over one pthread mutex.
//! Each tracer is attached (holds its links) before piper runs: it starts
//! stopped and continues once all are.

use crate::common;

use std::process::Stdio;

use common::tracer::{
    Tracer, assert_each_bad_input, require_root_and, run_piper, run_stopped, said_numbers,
    scry_tool, stopped_to,
};
use serde_json::Value;

/// The frames of a JSON stack half (innermost first; none when missed or
/// absent).
fn frames(half: &Value) -> Vec<&str> {
    half.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The one JSON document a tracer printed.
fn document(lines: &[String]) -> Value {
    serde_json::from_str(&lines.join("\n"))
        .unwrap_or_else(|e| panic!("not one JSON document ({e}):\n{}", lines.join("\n")))
}

/// piper blocks 50 times in wait_for_reply, in a pipe read
/// (TASK_INTERRUPTIBLE), 10 ms each, and measures it. offcputime --json
/// (all states) sums the main thread's entries through wait_for_reply
/// within 10% of that, nearly all of it (90%) under state 1
/// (interruptible), and so does `--state 1`; `--state 2`
/// (uninterruptible) has none of it.
#[test]
fn offcputime_json_sums_piper_blocked_time_per_state() {
    if !require_root_and("offcputime") {
        return;
    }
    let piper = stopped_to(&common::workload("piper"), &["50", "10"], Stdio::piped());
    let pid = piper.id().to_string();
    let tracers: Vec<(&str, Tracer)> = [None, Some("1"), Some("2")]
        .into_iter()
        .map(|state| {
            let mut args = vec!["offcputime", "--json", "-p", &pid];
            if let Some(s) = state {
                args.extend(["--state", s]);
            }
            (state.unwrap_or("any"), Tracer::start(scry_tool(&args), 1))
        })
        .collect();
    let (tid, blocked_us, said) = run_piper(piper);
    for (state, tracer) in tracers {
        let (lines, err) = tracer.finish();
        let doc = document(&lines);
        let report = format!("--state {state}; piper: {said}\n{doc:#}\n{err}");
        let waits: Vec<&Value> = doc["entries"]
            .as_array()
            .expect(&report)
            .iter()
            .filter(|e| e["tid"] == tid && frames(&e["user"]).contains(&"wait_for_reply"))
            .collect();
        let us: u64 = waits.iter().filter_map(|e| e["us"].as_u64()).sum();
        let interruptible: u64 = waits
            .iter()
            .flat_map(|e| e["states"].as_array().into_iter().flatten())
            .filter(|s| s["state"] == 1)
            .filter_map(|s| s["us"].as_u64())
            .sum();
        eprintln!(
            "offcputime --state {state}: piper blocked {blocked_us} us, scry {us} us through \
             wait_for_reply, {interruptible} us interruptible; per state {}",
            doc["states"]
        );
        if state == "2" {
            assert_eq!(us, 0, "{report}");
            continue;
        }
        assert!(us.abs_diff(blocked_us) * 10 <= blocked_us, "{report}");
        assert!(interruptible * 10 >= us * 9, "{report}");
        let total: u64 = doc["states"]
            .as_array()
            .expect(&report)
            .iter()
            .filter_map(|s| s["us"].as_u64())
            .sum();
        assert_eq!(doc["total_us"].as_u64(), Some(total), "{report}");
    }
}

/// offwaketime on piper: the main thread's entries through
/// wait_for_reply add up to within 10% of the time piper measured blocked;
/// the largest is woken by `answerer`, whose stack holds send_reply (the
/// write), above the kernel's pipe write. The folded line of that chain
/// joins both with bcc's `--`.
#[test]
fn offwaketime_joins_piper_blocked_stack_to_the_writer() {
    if !require_root_and("offcputime") {
        return;
    }
    let piper = stopped_to(&common::workload("piper"), &["50", "10"], Stdio::piped());
    let pid = piper.id().to_string();
    // bcc's default stack map size: the wakers are any task on the
    // system, and a stack id whose bucket is taken is a missed stack.
    let args = |out: &'static str| ["offwaketime", out, "--stack-storage-size", "16384", "-p"];
    let json = Tracer::start(scry_tool(&[&args("--json")[..], &[&pid]].concat()), 2);
    let folded = Tracer::start(scry_tool(&[&args("-f")[..], &[&pid]].concat()), 2);
    let (tid, blocked_us, said) = run_piper(piper);
    let (lines, err) = json.finish();
    let doc = document(&lines);
    let (folded, _) = folded.finish();
    let report = format!(
        "piper: {said}\n{doc:#}\n{err}\nfolded:\n{}",
        folded.join("\n")
    );
    let waits: Vec<&Value> = doc["entries"]
        .as_array()
        .expect(&report)
        .iter()
        .filter(|e| {
            e["target"]["tid"] == tid && frames(&e["target"]["user"]).contains(&"wait_for_reply")
        })
        .collect();
    let us: u64 = waits.iter().filter_map(|e| e["us"].as_u64()).sum();
    let top = waits
        .iter()
        .max_by_key(|e| e["us"].as_u64())
        .expect(&report);
    eprintln!(
        "offwaketime: piper blocked {blocked_us} us, scry {us} us through wait_for_reply; \
         top {top:#}"
    );
    assert!(us.abs_diff(blocked_us) * 10 <= blocked_us, "{report}");
    assert_eq!(top["waker"]["comm"], "answerer", "{report}");
    let waker_user = frames(&top["waker"]["user"]);
    assert_eq!(waker_user.first(), Some(&"send_reply"), "{report}");
    assert!(
        frames(&top["waker"]["kernel"])
            .iter()
            .any(|f| f.contains("pipe_write")),
        "{report}"
    );
    let chain = folded
        .iter()
        .find(|l| l.starts_with("piper;") && l.contains(";wait_for_reply;"))
        .expect(&report);
    let (blocked, waker) = chain.split_once(";--;").expect(&report);
    assert!(blocked.contains("pipe_read"), "{report}");
    assert!(
        waker.contains(";send_reply;") && waker.contains(";answerer "),
        "{report}"
    );
}

/// mutexes: four threads (`locker0`..3) take one pthread mutex 200 times
/// each in take_lock and hold it 1 ms, measuring their time inside
/// pthread_mutex_lock. futexctn --json: the lock at the address mutexes
/// printed, taken by take_lock (the caller a frame-pointer walk from libc
/// skips: the stack top the program kept repairs it), waited for by the
/// four threads under their names, its waits adding up to within 10% of
/// the time the threads measured blocked, and within 5% of bpftrace's sum
/// of the same waits (FUTEX_WAIT, successful) over the same run (both
/// attached before the workload starts; neither peer of libbpf-tools'
/// futexctn nor `perf lock contention -b` is built here).
#[test]
fn futexctn_names_the_lock_taker_and_sums_the_waiters_blocked_time() {
    if !require_root_and("offcputime")
        || !common::require_tool("bpftrace", "bpftrace is not installed (scripts/deps)")
    {
        return;
    }
    let workload = stopped_to(
        &common::workload("mutexes"),
        &["4", "200", "1000"],
        Stdio::piped(),
    );
    let pid = workload.id().to_string();
    let scry = Tracer::start(scry_tool(&["futexctn", "--json", "-p", &pid]), 2);
    // BEGIN runs once every probe is attached: its line says ready.
    let program = format!(
        "BEGIN {{ printf(\"ready\\n\"); }} tracepoint:syscalls:sys_enter_futex /pid == {pid} && (args->op & 127) == 0/ \
         {{ @s[tid] = nsecs; }} tracepoint:syscalls:sys_exit_futex /@s[tid]/ \
         {{ if (args->ret >= 0) {{ @ns = sum(nsecs - @s[tid]); }} delete(@s[tid]); }}"
    );
    let mut bpftrace = std::process::Command::new("bpftrace");
    bpftrace.args(["-e", &program]);
    let oracle = Tracer::start(bpftrace, 0);
    oracle.wait_until(|lines| lines.iter().any(|l| l == "ready"));
    let said = run_stopped(workload);
    let (lines, err) = scry.finish();
    let (oracle_lines, _) = oracle.stop();
    let oracle_us = oracle_lines
        .iter()
        .find_map(|l| l.strip_prefix("@ns: ")?.trim().parse::<u64>().ok())
        .map_or(0, |ns| ns / 1000);
    let doc = document(&lines);
    let mut tids = said_numbers(&said, "tid=");
    tids.sort_unstable();
    let blocked_us: u64 = said_numbers(&said, "blocked_us=").iter().sum();
    let lock = said
        .split_whitespace()
        .find_map(|w| w.strip_prefix("lock="))
        .unwrap_or_else(|| panic!("mutexes said {said:?}"));
    let report = format!("mutexes: {said}\n{doc:#}\n{err}");
    let found = doc["locks"]
        .as_array()
        .expect(&report)
        .iter()
        .find(|l| l["lock"] == lock)
        .expect(&report);
    let total_us = found["total_ns"].as_u64().expect(&report) / 1000;
    eprintln!(
        "futexctn: the threads measured {blocked_us} us blocked, scry {total_us} us in {} waits \
         (bpftrace {oracle_us} us), callers {}",
        found["contended"], found["callers"]
    );
    assert_eq!(tids.len(), 4, "{report}");
    assert!(total_us.abs_diff(blocked_us) * 10 <= blocked_us, "{report}");
    assert!(
        total_us.abs_diff(oracle_us) * 20 <= oracle_us,
        "bpftrace {oracle_us} us\n{report}"
    );
    assert_eq!(
        found["callers"],
        serde_json::json!(["take_lock"]),
        "{report}"
    );
    let mut waiters: Vec<(u64, String)> = found["threads"]
        .as_array()
        .expect(&report)
        .iter()
        .filter_map(|t| Some((t["tid"].as_u64()?, t["comm"].as_str()?.to_string())))
        .collect();
    waiters.sort();
    let mut names: Vec<&str> = waiters.iter().map(|(_, c)| c.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        waiters.iter().map(|&(t, _)| t).collect::<Vec<_>>(),
        tids,
        "{report}"
    );
    assert_eq!(
        names,
        ["locker0", "locker1", "locker2", "locker3"],
        "{report}"
    );
}

/// filelock's four threads appending 200 x 4 KiB each to a file in
/// `dir`, stopped before its exec.
fn stopped_filelock(dir: &tempfile::TempDir) -> std::process::Child {
    let file = dir.path().join("appended");
    let file = file.to_str().expect("utf-8 path");
    stopped_to(
        &common::workload("filelock"),
        &[file, "4", "200", "4"],
        Stdio::piped(),
    )
}

/// filelock: four threads append 4 KiB with O_DIRECT to one file through
/// one descriptor, 200 times each: each write() takes the descriptor's
/// position mutex (fdget_pos) and holds it through the I/O, so the
/// others sleep on it. klockstat -p: a mutex row whose caller is
/// fdget_pos, in perf lock contention's layout, and the same row in
/// --json. (`perf lock contention -b` is not built with BPF here, and
/// `perf lock record` of a command catches next to nothing: no peer to
/// run side by side.)
#[test]
fn klockstat_names_the_mutex_the_writers_contend_for() {
    if !require_root_and("offcputime") {
        return;
    }
    let dir = common::tempdir();
    let workload = stopped_filelock(&dir);
    let pid = workload.id().to_string();
    let text = Tracer::start(scry_tool(&["klockstat", "-p", &pid]), 2);
    let json = Tracer::start(scry_tool(&["klockstat", "--json", "-p", &pid]), 2);
    run_stopped(workload);
    let (text, err) = text.finish();
    let (json, _) = json.finish();
    let doc = document(&json);
    let report = format!("{}\n{err}\n{doc:#}", text.join("\n"));
    eprintln!("klockstat:\n{}", text.join("\n"));
    assert_eq!(
        text.get(1).map(String::as_str),
        Some(" contended   total wait     max wait     avg wait         type   caller"),
        "{report}"
    );
    let row = text
        .iter()
        .find(|l| l.ends_with(" fdget_pos") && l.contains(" mutex"))
        .expect(&report);
    let contended: u64 = row
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect(&report);
    assert!(contended > 0, "{report}");
    let found = doc
        .as_array()
        .expect(&report)
        .iter()
        .find(|r| r["caller"] == "fdget_pos" && r["type"] == "mutex")
        .expect(&report);
    assert!(
        found["total_ns"].as_u64() >= found["max_ns"].as_u64(),
        "{report}"
    );
}

/// libbpf-tools' klockstat flags whose meaning carries over to
/// contention, on one filelock run traced four ways at once: `-c fdget -S
/// acq_count -n 1 -s 3` prints one row, the fdget_pos row (a mutex, or
/// a mutex that spun) the unfiltered run counted the most contentions for,
/// with that count (the same events: both attached before the workload
/// started) and 3 frames of its stack under it; `-L 0x1` (an address no lock has: this kernel lists no lock
/// variable in /proc/kallsyms, without CONFIG_KALLSYMS_ALL) has no row;
/// `-c nosuch` has no row. `-i 1 -d 3 -T -R` prints a stamped table
/// each second. `-S hld_*` (hold times need fexit) and an unknown lock
/// symbol are one line, exit 2.
#[test]
fn klockstat_caller_lock_sort_rows_and_stacks_as_libbpf_tools() {
    if !require_root_and("offcputime") {
        return;
    }
    let dir = common::tempdir();
    let workload = stopped_filelock(&dir);
    let pid = workload.id().to_string();
    let tracer = |extra: &[&str]| {
        let mut args = vec!["klockstat", "-p", &pid];
        args.extend_from_slice(extra);
        Tracer::start(scry_tool(&args), 2)
    };
    let all = tracer(&["--json"]);
    let picked = tracer(&["-c", "fdget", "-S", "acq_count", "-n", "1", "-s", "3"]);
    let locked = tracer(&["-L", "0x1"]);
    let none = tracer(&["--json", "-c", "nosuch"]);
    run_stopped(workload);
    let (all, _) = all.finish();
    let (picked, err) = picked.finish();
    let (locked, _) = locked.finish();
    let (none, _) = none.finish();
    let doc = document(&all);
    let report = format!(
        "{doc:#}\n{}\n{err}\n{}",
        picked.join("\n"),
        locked.join("\n")
    );
    let expected = doc
        .as_array()
        .expect(&report)
        .iter()
        .filter(|r| r["caller"].as_str().is_some_and(|c| c.starts_with("fdget")))
        .filter_map(|r| r["contended"].as_u64())
        .max()
        .expect(&report);
    // The banner, the head, an empty line, the row, its 3 frames.
    let rows: Vec<&String> = picked.iter().skip(3).collect();
    assert_eq!(rows.len(), 4, "{report}");
    let row: Vec<&str> = rows[0].split_whitespace().collect();
    assert_eq!(
        (row.first().copied(), row.last().copied()),
        (Some(expected.to_string().as_str()), Some("fdget_pos")),
        "{report}"
    );
    assert!(
        rows[1..].iter().all(|f| f.starts_with("                ")),
        "{report}"
    );
    // The banner, the head, an empty line: no row.
    assert_eq!(locked.len(), 3, "{report}");
    assert!(locked[1].starts_with(" contended"), "{report}");
    assert_eq!(document(&none), serde_json::json!([]), "{none:?}");
    let out = common::output(&mut scry_tool(&[
        "klockstat",
        "-i",
        "1",
        "-d",
        "3",
        "-T",
        "-R",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let stamped = lines
        .windows(2)
        .filter(|w| w[0].len() == 8 && w[0].as_bytes()[2] == b':' && w[1].starts_with(" contended"))
        .count();
    assert!(out.status.success() && stamped >= 2, "{text}");
    assert_each_bad_input(&[
        (
            &["klockstat", "-S", "hld_total"][..],
            None,
            "hold times need fexit",
        ),
        (
            &["klockstat", "-S", "acq_count,hld_max"][..],
            None,
            "-S hld_max",
        ),
        (
            &["klockstat", "-L", "scry_no_such_lock"][..],
            None,
            "no such kernel symbol",
        ),
    ]);
}

/// libbpf-tools' `-P`: one row per waiting thread. filelock's four
/// writers contend for the descriptor's position mutex: traced with -P
/// and without at once, the -P run has a row of its own for each of the
/// four writer threads (named filelock, ids after the process's), and
/// its counts add up to the other run's contentions; `-P` with `-c` (a
/// caller filter) is refused in one line, exit 2.
#[test]
fn klockstat_per_thread_rows_add_up_to_the_callers() {
    if !require_root_and("offcputime") {
        return;
    }
    let dir = common::tempdir();
    let workload = stopped_filelock(&dir);
    let pid = workload.id();
    let pid_arg = pid.to_string();
    let tracer = |extra: &[&str]| {
        let mut args = vec!["klockstat", "-p", &pid_arg, "--json"];
        args.extend_from_slice(extra);
        Tracer::start(scry_tool(&args), 2)
    };
    let callers = tracer(&[]);
    let threads = tracer(&["-P"]);
    let table = Tracer::start(scry_tool(&["klockstat", "-p", &pid_arg, "-P"]), 2);
    run_stopped(workload);
    let (callers, _) = callers.finish();
    let (threads, err) = threads.finish();
    let (table, _) = table.finish();
    let (callers, threads) = (document(&callers), document(&threads));
    let report = format!("{callers:#}\n{threads:#}\n{err}\n{}", table.join("\n"));
    let sum = |doc: &serde_json::Value| -> u64 {
        doc.as_array()
            .expect(&report)
            .iter()
            .filter_map(|r| r["contended"].as_u64())
            .sum()
    };
    assert_eq!(sum(&threads), sum(&callers), "{report}");
    let rows = threads.as_array().expect(&report);
    let mut writers: Vec<u64> = rows
        .iter()
        .filter_map(|r| r["tid"].as_u64())
        .filter(|&tid| tid != u64::from(pid))
        .collect();
    assert!(rows.iter().all(|r| r["comm"] == "filelock"), "{report}");
    writers.sort_unstable();
    writers.dedup();
    assert_eq!(writers.len(), 4, "{report}");
    // The banner, an empty line, libbpf-tools' head, a row per thread.
    assert!(
        table[2]
            .trim_start()
            .starts_with("Tid              Comm  Avg Wait"),
        "{report}"
    );
    assert_eq!(table.len(), 3 + rows.len(), "{report}");
    assert_each_bad_input(&[
        (&["klockstat", "-P", "-c", "fdget"][..], None, "-c and -s"),
        (&["klockstat", "-P", "-s", "3"][..], None, "-c and -s"),
    ]);
}
