//! funccount and funclatency on the real kernel, on `workloads/funcs`
//! (fn_alpha called N times, fn_beta 2N, fn_nap K naps of MS ms each
//! timed by the caller): exact counts per function of a glob, against
//! bpftrace's uprobe count; the naps' histogram against the workload's
//! own times and against libbpf-tools' funclatency on the same run;
//! funclatency -l on a recursion (`workloads/nested`); bad input; SIGKILL
//! leaving no uprobe program or link.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::common::tracer::{
    Tracer, assert_each_bad_input, peer, require_root_and, said_numbers, scry_tool,
    sigkill_frees_everything,
};

fn workload() -> PathBuf {
    common::workload("funcs")
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// `FUNC COUNT` rows of funccount's table.
fn counts(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .skip_while(|l| !l.starts_with("FUNC "))
        .skip(1)
        .filter_map(|l| {
            let (name, count) = l.split_once(' ')?;
            Some((name.to_string(), count.trim().parse().ok()?))
        })
        .collect()
}

/// The workload started with `wait`: ready once it printed "ready".
fn waiting(args: &[&str]) -> Child {
    let mut child = Command::new(workload())
        .args(args)
        .arg("wait")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("funcs starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().expect("piped"))
        .read_line(&mut line)
        .expect("ready");
    assert_eq!(line.trim(), "ready");
    child
}

/// Lets it run and waits for its end: what it said on stderr.
fn go(mut child: Child) -> String {
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(b"go\n")
        .expect("go");
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("piped"), &mut said)
        .expect("stderr");
    assert!(child.wait().expect("ends").success(), "{said}");
    said
}

#[test]
fn funccount_counts_each_function_of_a_glob_exactly_as_bpftrace() {
    if !require_root_and("bpftrace") {
        return;
    }
    let wl = workload();
    let n = 3000u64;
    let text = common::run_ok(
        scry_tool(&["funccount", "-x", path_str(&wl), "fn_*", "--"])
            .arg(&wl)
            .args([n.to_string().as_str(), "1", "1"]),
    );
    assert!(
        text.starts_with("Tracing 3 functions for \"fn_*\"... Hit Ctrl-C to end.\n"),
        "{text}"
    );
    assert!(text.ends_with("Detaching...\n"), "{text}");
    let got = counts(&text);
    let want = BTreeMap::from([
        ("fn_alpha".to_string(), n),
        ("fn_beta".to_string(), 2 * n),
        ("fn_nap".to_string(), 1),
    ]);
    assert_eq!(got, want, "{text}");
    // bpftrace's count of the same uprobe, the same run.
    let program = format!("uprobe:{}:fn_beta {{ @ = count(); }}", path_str(&wl));
    let command = format!("{} {n} 1 1", path_str(&wl));
    let theirs = common::run_ok(Command::new("bpftrace").args(["-e", &program, "-c", &command]));
    assert!(
        theirs.contains(&format!("@: {}", 2 * n)),
        "bpftrace:\n{theirs}\nscry:\n{text}"
    );
}

/// A static function of a stripped library, named only by its debug file
/// (Debian's libc with libc6-dbg): `c:malloc_consol*` finds it there and
/// counts each call of the workload's N, as bpftrace's uprobe on it counts
/// them (bcc's funccount is not installed here to compare).
#[test]
fn funccount_finds_a_librarys_static_function_in_its_debug_file() {
    if !require_root_and("bpftrace") {
        return;
    }
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    let debug = scry::symbol::read_build_id(libc).map(|id| {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..])
    });
    let found = debug.as_ref().is_some_and(|d| Path::new(d).is_file());
    if !common::gate(
        found.then_some(()).ok_or_else(|| {
            format!("libc's debug file {debug:?} is missing (libc6-dbg: scripts/deps)")
        }),
    ) {
        return;
    }
    let wl = common::workload("consolidates");
    let n = 500u64;
    let text = common::run_ok(
        scry_tool(&["funccount", "c:malloc_consol*", "--"])
            .arg(&wl)
            .arg(n.to_string()),
    );
    assert!(
        text.starts_with("Tracing 1 functions for \"c:malloc_consol*\"... Hit Ctrl-C to end.\n"),
        "{text}"
    );
    assert_eq!(
        counts(&text),
        BTreeMap::from([("malloc_consolidate".to_string(), n)]),
        "{text}"
    );
    let program = format!(
        "uprobe:{}:malloc_consolidate {{ @ = count(); }}",
        libc.display()
    );
    let command = format!("{} {n}", path_str(&wl));
    let theirs = common::run_ok(Command::new("bpftrace").args(["-e", &program, "-c", &command]));
    assert!(
        theirs.contains(&format!("@: {n}\n")),
        "bpftrace:\n{theirs}\nscry:\n{text}"
    );
}

#[test]
fn funccount_follows_a_running_process_by_its_own_binary_with_intervals() {
    if !require_root_and("bpftrace") {
        return;
    }
    let n = 500u64;
    let child = waiting(&[&n.to_string(), "0", "1"]);
    let pid = child.id().to_string();
    let tracer = Tracer::start(
        scry_tool(&["funccount", "-p", &pid, "-T", "-i", "1", ":fn_a*"]),
        1,
    );
    go(child);
    let (lines, err) = tracer.finish();
    let text = lines.join("\n");
    let total: u64 = lines
        .iter()
        .filter_map(|l| l.strip_prefix("fn_alpha"))
        .map(|c| c.trim().parse::<u64>().expect("count"))
        .sum();
    assert_eq!(total, n, "{text}\n{err}");
    assert!(!text.contains("fn_beta"), "{text}");
    // -T: each interval's time, HH:MM:SS, before its table.
    let before_table = lines
        .iter()
        .position(|l| l.starts_with("FUNC "))
        .and_then(|i| i.checked_sub(1))
        .map(|i| lines[i].trim().to_string())
        .expect("a table");
    assert_eq!(before_table.len(), 8, "{text}");
    assert_eq!(before_table.matches(':').count(), 2, "{text}");
}

/// The log2 slot of `v`, as the histograms count.
fn slot(v: u64) -> u32 {
    if v <= 1 { 0 } else { 63 - v.leading_zeros() }
}

/// Each histogram of a text (the unnamed one as ""), as (low bound,
/// count) rows with a count.
fn hists(text: &str) -> BTreeMap<String, Vec<(u64, u64)>> {
    let mut out: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("Function = ") {
            current = name.split(' ').next().unwrap_or("").to_string();
        } else if line.contains(" -> ") {
            let low = line.split_whitespace().next().and_then(|v| v.parse().ok());
            let count = line
                .split(':')
                .nth(1)
                .and_then(|c| c.split_whitespace().next())
                .and_then(|c| c.parse().ok());
            if let (Some(low), Some(count)) = (low, count)
                && count > 0
            {
                out.entry(current.clone()).or_default().push((low, count));
            }
        }
    }
    out
}

#[test]
fn funclatency_times_each_function_and_the_naps_as_libbpf_tools() {
    if !require_root_and("funclatency") {
        return;
    }
    let wl = workload();
    let (n, k, ms) = (200u64, 6u64, 20u64);
    let child = waiting(&[&n.to_string(), &k.to_string(), &ms.to_string()]);
    let pid = child.id().to_string();
    let ours = Tracer::start(
        scry_tool(&[
            "funclatency",
            "-u",
            "-F",
            "-p",
            &pid,
            "-x",
            path_str(&wl),
            "fn_*",
        ]),
        6,
    );
    let site = format!("{}:fn_nap", path_str(&wl));
    // Its -p looks the program up among the process's libraries and does
    // not find it: the binary's every process, this one alone.
    let theirs = Tracer::start(peer(&["funclatency", "-u", &site]), 0);
    let said = go(child);
    let (lines, err) = ours.finish();
    let (peer_lines, _) = theirs.stop();
    let text = lines.join("\n");
    let peer_text = peer_lines.join("\n");
    let got = hists(&text);
    let total = |name: &str| {
        got.get(name)
            .map_or(0, |rows| rows.iter().map(|r| r.1).sum())
    };
    assert_eq!(
        (total("fn_alpha"), total("fn_beta"), total("fn_nap")),
        (n, 2 * n, k),
        "{text}\n{err}"
    );
    assert!(
        text.contains(&format!("Function = fn_nap [{pid}]")),
        "{text}"
    );
    assert!(text.contains(&format!("count: {}", 3 * n + k)), "{text}");
    // Each nap lasted at least MS ms and at most what the caller measured.
    let naps = said_numbers(&said, "nap_ns=");
    assert_eq!(naps.len() as u64, k, "{said}");
    let lowest = slot(ms * 1000);
    let highest = slot(naps.iter().max().copied().unwrap_or(0) / 1000);
    for &(low, _) in &got["fn_nap"] {
        assert!(
            (lowest..=highest).contains(&slot(low.max(1))),
            "a nap in the bucket from {low} us, not in slots {lowest}..={highest}: {text}\n{said}"
        );
    }
    let peer_rows = hists(&peer_text);
    assert_eq!(
        peer_rows.get(""),
        got.get("fn_nap"),
        "scry:\n{text}\nlibbpf-tools:\n{peer_text}"
    );
}

#[test]
fn funclatency_with_a_command_is_one_histogram_in_nanoseconds() {
    if !require_root_and("funclatency") {
        return;
    }
    let wl = workload();
    let text = common::run_ok(
        scry_tool(&["funclatency", &format!("{}:fn_a*", path_str(&wl)), "--"])
            .arg(&wl)
            .args(["700", "0", "1"]),
    );
    assert!(text.contains("     nsecs "), "{text}");
    assert!(!text.contains("Function = "), "{text}");
    assert_eq!(common::hist_total(&text), 700, "{text}");
    assert!(text.contains("count: 700\n"), "{text}");
}

/// bcc's `-r`: the pattern is a regular expression matched at the start
/// of each name (`re.match`), so `fn_(alpha|beta)` counts those two
/// exactly, and `alpha` (no `fn_` before it) matches nothing; funclatency
/// times what `fn_n.p` matches. A pattern that does not compile is said
/// in one line.
#[test]
fn funccount_and_funclatency_take_a_regex_with_r() {
    if !require_root_and("funclatency") {
        return;
    }
    let wl = workload();
    let n = 2000u64;
    let text = common::run_ok(
        scry_tool(&[
            "funccount",
            "-r",
            "-x",
            path_str(&wl),
            "fn_(alpha|beta)",
            "--",
        ])
        .arg(&wl)
        .args([n.to_string().as_str(), "1", "1"]),
    );
    let want = BTreeMap::from([("fn_alpha".to_string(), n), ("fn_beta".to_string(), 2 * n)]);
    assert_eq!(counts(&text), want, "{text}");
    let text = common::run_ok(
        scry_tool(&[
            "funclatency",
            "-r",
            &format!("{}:fn_n.p", path_str(&wl)),
            "--",
        ])
        .arg(&wl)
        .args(["10", "3", "1"]),
    );
    assert_eq!(common::hist_total(&text), 3, "{text}");
    let wl = path_str(&wl);
    assert_each_bad_input(&[
        (
            &["funccount", "-r", "-x", wl, "alpha"][..],
            None,
            "no function matches 'alpha'",
        ),
        (
            &["funclatency", "-r", "-x", wl, "fn_(alpha"][..],
            None,
            "-r 'fn_(alpha': not a regular expression",
        ),
    ]);
}

/// libbpf-tools' funclatency `-c CG`: two runs of the workload on the
/// same binary, one moved into a cgroup of its own (3 naps), the other
/// not (5 naps); scry's funclatency of every process with `-c` times the
/// cgroup's 3 naps only.
#[test]
fn funclatency_with_c_times_one_cgroups_calls() {
    if !require_root_and("funclatency") {
        return;
    }
    let Some(cg) = crate::bpf_tools::TestCgroup::new("funclatency") else {
        return;
    };
    let wl = workload();
    let inside = waiting(&["0", "3", "1"]);
    std::fs::write(cg.0.join("cgroup.procs"), inside.id().to_string())
        .expect("moved into the cgroup");
    let outside = waiting(&["0", "5", "1"]);
    let ours = Tracer::start(
        scry_tool(&[
            "funclatency",
            "-c",
            &cg.arg(),
            "-x",
            path_str(&wl),
            "fn_nap",
        ]),
        2,
    );
    go(inside);
    go(outside);
    let (lines, err) = ours.stop();
    let text = lines.join("\n");
    assert_eq!(common::hist_total(&text), 3, "{text}\n{err}");
}

#[test]
fn funccount_and_funclatency_refuse_bad_input_in_one_line() {
    if !require_root_and("funclatency") {
        return;
    }
    let wl = workload();
    let wl = path_str(&wl);
    let kprobes = Path::new("/sys/bus/event_source/devices/kprobe").exists();
    let kernel_needle = if kprobes {
        "kernel functions"
    } else {
        "kprobes"
    };
    assert_each_bad_input(&[
        (
            &["funccount", "/no/such/binary:fn_*"][..],
            None,
            "'/no/such/binary' not found",
        ),
        (
            &["funccount", "-x", wl, "no_such_fn*"][..],
            None,
            "no function matches 'no_such_fn*'",
        ),
        (
            &["funclatency", "nosuchlib:foo"][..],
            None,
            "'nosuchlib' not found",
        ),
        (&["funccount", "vfs_*"][..], None, kernel_needle),
        (
            &["funclatency", "-u", "do_nanosleep"][..],
            None,
            kernel_needle,
        ),
        (
            &["funccount", "t:sched:sched_fork"][..],
            None,
            "tracepoints",
        ),
        (&["funccount", "x:a:b"][..], None, "unknown probe type"),
        (&["funccount", ":fn_*"][..], None, "no process is"),
        (
            &["funccount", "-p", "999999999", "c:malloc"][..],
            None,
            "no such process",
        ),
        (
            &["funclatency", "-p", "1", "c:malloc", "--", "true"][..],
            None,
            "exclude each other",
        ),
    ]);
}

#[test]
fn sigkill_leaves_no_uprobe_program_or_link() {
    if !require_root_and("funclatency") {
        return;
    }
    let wl = workload();
    sigkill_frees_everything(&["funccount", "-x", path_str(&wl), "fn_*"], 3);
    sigkill_frees_everything(&["funclatency", "-x", path_str(&wl), "fn_*"], 6);
}

/// bcc's `-l LEVEL` on a recursive function (`workloads/nested`: R calls
/// of rec_nap(D), each level sleeping so that it lasts about twice the
/// level below it, every call timed by its caller): without -l only the
/// innermost call of each recursion is timed (R calls), with -l L the
/// outermost L levels (R·min(L, D) calls); the nanoseconds timed lie
/// between the sleeps those levels asked for and what their callers
/// measured, which the innermost levels' could not reach.
#[test]
fn funclatency_l_times_the_outermost_levels_of_a_recursion() {
    if !require_root_and("funclatency") {
        return;
    }
    let wl = common::workload("nested");
    let (r, d, ms) = (3u64, 4u64, 2u64);
    for level in [None, Some(1u64), Some(2), Some(9)] {
        let mut args = vec!["funclatency".to_string()];
        if let Some(l) = level {
            args.extend(["-l".to_string(), l.to_string()]);
        }
        args.push(format!("{}:rec_*", path_str(&wl)));
        args.push("--".to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = common::output(scry_tool(&args).arg(&wl).args([
            r.to_string(),
            d.to_string(),
            ms.to_string(),
        ]));
        let text = String::from_utf8_lossy(&out.stdout);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {text}\n{said}");
        // The depths timed: the outermost L, or the innermost alone.
        let depths = match level {
            Some(l) => 1..=l.min(d),
            None => d..=d,
        };
        let calls = r * (depths.end() - depths.start() + 1);
        assert_eq!(common::hist_total(&text), calls, "{args:?}: {text}");
        assert!(text.contains(&format!("count: {calls}\n")), "{text}");
        let asked: u64 = depths
            .clone()
            .map(|k| r * ms * ((1 << (d - k + 1)) - 1) * 1_000_000)
            .sum();
        let measured: u64 = said
            .lines()
            .filter_map(|l| {
                let (depth, ns) = l.strip_prefix("depth=")?.split_once(" ns=")?;
                depths
                    .contains(&depth.parse().ok()?)
                    .then(|| ns.parse::<u64>().ok())?
            })
            .sum();
        let timed: u64 = text
            .split("total: ")
            .nth(1)
            .and_then(|t| t.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no total: {text}"));
        assert!(
            (asked..=measured).contains(&timed),
            "{args:?}: {timed} ns timed, not within the {asked} ns asked and the \
             {measured} ns measured of depths {depths:?}\n{text}\n{said}"
        );
    }
}
