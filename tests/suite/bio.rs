//! The block I/O tools (biolatency, biosnoop, bitesize, biotop) on the real kernel: N
//! direct writes of a known size (`workloads/dwrites`, O_DIRECT, one at a
//! time) to a loop device the test makes on a temporary file (a real
//! block device no one else writes to, so the counts are exact), traced at
//! once by scry and by libbpf-tools' biolatency and bitesize (the
//! oracles; its biosnoop and biotop need a kprobe and cannot load here).
//! Also: an unknown disk, and SIGKILL leaving nothing attached.

use crate::common;

use std::process::Command;

use common::hist_total;
use common::loop_device::LoopDevice;
use common::tracer::{Tracer, assert_each_bad_input, peer, require_root_and, scry_tool};

/// Root, libbpf-tools' biolatency and losetup, or skip.
fn require_loop_and_oracle() -> bool {
    require_root_and("biolatency")
        && common::require_tool(
            "losetup",
            "util-linux's losetup is not installed (scripts/deps)",
        )
}

/// `dwrites DEV N SIZE` on `disk`, run to its successful end: its pid.
fn dwrites(disk: &LoopDevice, n: u64, size: u64) -> u32 {
    let mut writes = Command::new(common::workload("dwrites"))
        .arg(&disk.dev)
        .args([n.to_string(), size.to_string()])
        .spawn()
        .expect("dwrites runs");
    let pid = writes.id();
    assert!(writes.wait().expect("dwrites ends").success());
    pid
}

#[test]
fn biolatency_and_biosnoop_count_n_direct_writes_as_libbpf_tools() {
    if !require_loop_and_oracle() {
        return;
    }
    let (n, size) = (40u64, 65536u64);
    let disk = LoopDevice::new();
    let name = disk.name();
    // Programs: issue and complete (biolatency); and block_io_start (biosnoop).
    let latency = Tracer::start(scry_tool(&["biolatency", "-d", &name]), 2);
    let per_disk = Tracer::start(scry_tool(&["biolatency", "-D", "--json"]), 2);
    let snoop = Tracer::start(scry_tool(&["biosnoop", "-d", &name, "--json"]), 3);
    let oracle = Tracer::start(peer(&["biolatency", "-d", &name]), 0);
    let pid = dwrites(&disk, n, size);
    let ours = |l: &[String]| {
        l.iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["pid"] == pid)
            .collect::<Vec<_>>()
    };
    snoop.wait_until(|l| ours(l).len() >= n as usize);
    let (snooped, _) = snoop.stop();
    let (text, _) = latency.stop();
    let (peer_text, _) = oracle.stop();
    let (json, _) = per_disk.stop();

    // The loop device sees only the test's writes (and, at most, a probe
    // of udev's when it appeared): both count the same requests.
    let (scry_total, peer_total) = (
        hist_total(&text.join("\n")),
        hist_total(&peer_text.join("\n")),
    );
    eprintln!("biolatency on {name}: scry {scry_total}, libbpf-tools {peer_total}");
    assert!(scry_total >= n, "{text:?}");
    assert_eq!(
        scry_total, peer_total,
        "scry:\n{text:?}\nlibbpf-tools:\n{peer_text:?}"
    );
    assert!(
        text.iter()
            .any(|l| l == "     usecs               : count    distribution")
    );

    let writes = ours(&snooped);
    assert_eq!(writes.len(), n as usize, "{snooped:?}");
    for (i, w) in writes.iter().enumerate() {
        assert_eq!(
            (
                w["comm"].as_str(),
                w["disk"].as_str(),
                w["bytes"].as_u64(),
                w["sector"].as_u64()
            ),
            (
                Some("dwrites"),
                Some(name.as_str()),
                Some(size),
                Some(i as u64 * size / 512)
            ),
            "{w}"
        );
        assert!(
            w["rwbs"].as_str().is_some_and(|r| r.starts_with('W')),
            "{w}"
        );
    }

    // -D: the loop device's histogram has them too.
    let doc: serde_json::Value = serde_json::from_str(&json.join("\n")).expect("one JSON document");
    let label = format!("disk = {name}\t");
    let mine = doc
        .as_array()
        .and_then(|a| a.iter().find(|h| h["label"] == label.as_str()))
        .expect("a histogram for the loop device");
    assert!(mine["total"].as_u64().is_some_and(|t| t >= n), "{mine}");
}

/// libbpf-tools' `-c CG` of biolatency and biosnoop: 30 direct writes by
/// a `dwrites` moved (stopped) into a cgroup of its own, 20 by another
/// outside it, on the test's loop device: scry's `-c` counts and lists the
/// 30, none of the 20. libbpf-tools' own `-c` is not the oracle: here it
/// stops at "Failed adding target cgroup to map" (and it checks the cgroup
/// at the completion too, which runs in the loop device's worker); the
/// workload's own numbers are.
#[test]
fn biolatency_and_biosnoop_c_count_one_cgroups_writes() {
    if !require_loop_and_oracle() {
        return;
    }
    let Some(cg) = crate::bpf_tools::TestCgroup::new("cg-bio") else {
        return;
    };
    let (inside_n, outside_n, size) = (30u64, 20u64, 65536u64);
    let disk = LoopDevice::new();
    let name = disk.name();
    let dev = disk.dev.to_str().expect("utf-8 path").to_string();
    let (n_in, n_out, bytes) = (
        inside_n.to_string(),
        outside_n.to_string(),
        size.to_string(),
    );
    let dwrites = common::workload("dwrites");
    let inside = common::tracer::stopped_to(
        &dwrites,
        &[&dev, &n_in, &bytes],
        std::process::Stdio::piped(),
    );
    std::fs::write(cg.0.join("cgroup.procs"), inside.id().to_string())
        .expect("moved into the cgroup");
    let pid = inside.id();
    // Programs: insert (the submitter's context), issue, complete; and
    // block_io_start (biosnoop).
    let latency = Tracer::start(scry_tool(&["biolatency", "-d", &name, "-c", &cg.arg()]), 3);
    let snoop = Tracer::start(
        scry_tool(&["biosnoop", "-d", &name, "-c", &cg.arg(), "--json"]),
        4,
    );
    common::tracer::run_stopped(inside);
    let outside = Command::new(&dwrites)
        .args([&dev, &n_out, &bytes])
        .status()
        .expect("dwrites runs");
    assert!(outside.success());
    let rows = |l: &[String]| {
        l.iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .collect::<Vec<_>>()
    };
    snoop.wait_until(|l| rows(l).len() >= inside_n as usize);
    // The outside writes are done: any of theirs would be in by now, but
    // give the last completions a moment.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (snooped, _) = snoop.stop();
    let (text, _) = latency.stop();
    let total = hist_total(&text.join("\n"));
    eprintln!("biolatency -c on {name}: {total} of {inside_n} inside, {outside_n} outside");
    assert_eq!(total, inside_n, "{text:?}");
    let rows = rows(&snooped);
    assert_eq!(rows.len(), inside_n as usize, "{snooped:?}");
    assert!(
        rows.iter()
            .all(|r| r["pid"] == pid && r["bytes"].as_u64() == Some(size)),
        "{snooped:?}"
    );
}

/// bcc's `biosnoop -P`: two runs of 10 sequential direct writes from
/// sector 0 on the test's loop device. Each write after a run's first
/// starts where the last ended (S); the second run's first goes back to 0
/// (R); the first run's first is the disk's first (?), or R after a probe
/// of udev's. The table's P column and the JSON's `pattern` agree.
#[test]
fn biosnoop_p_marks_sequential_and_random_writes_as_bcc() {
    if !require_loop_and_oracle() {
        return;
    }
    let (n, size) = (10usize, 65536u64);
    let disk = LoopDevice::new();
    let name = disk.name();
    let text = Tracer::start(scry_tool(&["biosnoop", "-P", "-d", &name]), 3);
    let json = Tracer::start(scry_tool(&["biosnoop", "-P", "-d", &name, "--json"]), 3);
    let mut pids = Vec::new();
    for _ in 0..2 {
        pids.push(dwrites(&disk, n as u64, size));
    }
    let ours = |l: &[String]| {
        l.iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| pids.iter().any(|p| v["pid"] == *p))
            .collect::<Vec<_>>()
    };
    json.wait_until(|l| ours(l).len() >= 2 * n);
    let (json, _) = json.stop();
    let (text, _) = text.stop();
    let expected = |first: &str| {
        let mut p = vec![first.to_string()];
        p.extend(std::iter::repeat_n("S".to_string(), n - 1));
        p.push("R".into());
        p.extend(std::iter::repeat_n("S".to_string(), n - 1));
        p
    };
    assert_eq!(text[0].split_whitespace().nth(7), Some("P"), "{text:?}");
    let letters: Vec<String> = text
        .iter()
        .filter(|l| {
            let pid = l.split_whitespace().nth(2);
            pids.iter().any(|p| pid == Some(p.to_string().as_str()))
        })
        .filter_map(|l| l.split_whitespace().nth(7).map(str::to_string))
        .collect();
    assert!(
        letters == expected("?") || letters == expected("R"),
        "{text:?}"
    );
    let names: Vec<String> = ours(&json)
        .iter()
        .map(|v| match v["pattern"].as_str() {
            Some("sequential") => "S".to_string(),
            Some("random") => "R".to_string(),
            _ => "?".to_string(),
        })
        .collect();
    assert_eq!(names, letters, "{json:?}");
}

/// bcc's spellings of the disk and file tools' flags (biolatency
/// `--disks --flags -j`, biosnoop `--queue`, biotop and filetop
/// `--maxrows`, filetop `--all-files`) run as scry's own.
#[test]
fn bccs_spellings_of_the_block_and_file_tools_run() {
    if !require_root_and("biolatency") {
        return;
    }
    let out = common::run_ok(&mut scry_tool(&[
        "biolatency",
        "--disks",
        "--flags",
        "-j",
        "1",
        "1",
    ]));
    let doc: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert!(doc.is_array(), "{out}");
    for args in [
        &["biosnoop", "--queue", "1"][..],
        &["biotop", "--maxrows", "2", "1", "1"],
        &["filetop", "--maxrows", "2", "--all-files", "1", "1"],
    ] {
        common::run_ok(&mut scry_tool(args));
    }
}

/// bcc's `biolatency -e`: 25 direct writes on the test's loop device;
/// the line after the histogram says `count: 25` (the histogram's total,
/// and libbpf-tools' count of the same writes), `avg` is `total / count`
/// and lies in the range of the histogram's non-empty slots.
#[test]
fn biolatency_e_prints_bccs_average_line() {
    if !require_loop_and_oracle() {
        return;
    }
    let (n, size) = (25u64, 65536u64);
    let disk = LoopDevice::new();
    let name = disk.name();
    let scry = Tracer::start(scry_tool(&["biolatency", "-e", "-d", &name]), 2);
    let oracle = Tracer::start(peer(&["biolatency", "-d", &name]), 0);
    dwrites(&disk, n, size);
    let (text, _) = scry.stop();
    let (peer_text, _) = oracle.stop();
    let text = text.join("\n");
    let (line, [avg, total, count]) = common::average_line(&text);
    assert!(line.contains(" usecs, total: "), "{line}");
    let peer_total = hist_total(&peer_text.join("\n"));
    eprintln!("biolatency -e on {name}: {line}; libbpf-tools counted {peer_total}");
    assert_eq!((count, hist_total(&text)), (n, n), "{text}");
    assert_eq!(peer_total, n, "{peer_text:?}");
    assert_eq!(avg, total / count, "{line}");
    let slots = common::hist_slots(&text);
    let (lo, hi) = (slots[0].0, slots[slots.len() - 1].1);
    assert!(lo <= avg && avg <= hi, "{avg} outside {lo}..{hi}:\n{text}");
}

#[test]
fn an_unknown_disk_is_one_line_and_exit_2() {
    if !require_root_and("biolatency") {
        return;
    }
    assert_each_bad_input(&[
        (
            &["biolatency", "-d", "scry-no-disk"],
            None,
            "-d scry-no-disk: no such disk",
        ),
        (&["biosnoop", "-d", "scry-no-disk"], None, "no such disk"),
        (
            &["biolatency", "-c", "/nonexistent-cg"],
            None,
            "--cgroup /nonexistent-cg",
        ),
        (
            &["biosnoop", "-c", "/nonexistent-cg"],
            None,
            "--cgroup /nonexistent-cg",
        ),
        (
            &["bitesize", "-c", "a-name-of-16-chr"],
            None,
            "1 to 15 bytes",
        ),
        (&["bitesize", "-d", "scry-no-disk"], None, "no such disk"),
        (&["biotop", "-p", "4194304"], None, "no such process"),
        (&["biosnoop"], Some("kprobe"), "no hook"),
    ]);
}

#[test]
fn sigkill_leaves_no_program_or_link() {
    if !require_root_and("biolatency") {
        return;
    }
    common::tracer::sigkill_frees_everything(&["biolatency", "-Q"], 3);
    common::tracer::sigkill_frees_everything(&["biosnoop"], 3);
    common::tracer::sigkill_frees_everything(&["bitesize"], 1);
    common::tracer::sigkill_frees_everything(&["biotop"], 3);
}

/// The histograms of a bcc-style text: per label line (the line before
/// each histogram's header), the total.
fn totals_by_label(lines: &[String]) -> std::collections::BTreeMap<String, u64> {
    let mut totals = std::collections::BTreeMap::new();
    let mut label = String::new();
    for (i, line) in lines.iter().enumerate() {
        if line.contains(": count    distribution") {
            label = lines[..i]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .cloned()
                .unwrap_or_default();
            totals.insert(label.clone(), 0);
        } else if line.contains(" -> ") {
            *totals.entry(label.clone()).or_default() += common::hist_total(line);
        }
    }
    totals
}

/// N writes of one size then M of another: bitesize's Kbytes histogram
/// of `dwrites` is libbpf-tools' (exactly: both count at block_rq_issue,
/// by size); biolatency -D -F gives the loop device's writes under one
/// disk-and-flags label, as libbpf-tools; biotop's rows of the two
/// writers hold N and M requests of their sizes.
#[test]
fn bitesize_biotop_and_biolatency_per_disk_and_flags_as_libbpf_tools() {
    if !require_loop_and_oracle()
        || !common::require_tool("bitesize", "libbpf-tools (scripts/deps)")
    {
        return;
    }
    let ((n, big), (m, small)) = ((24u64, 131072u64), (10u64, 8192u64));
    let disk = LoopDevice::new();
    let name = disk.name();
    let sizes = Tracer::start(scry_tool(&["bitesize", "-d", &name]), 1);
    let sizes_json = Tracer::start(scry_tool(&["bitesize", "-d", &name, "--json"]), 1);
    let sizes_peer = Tracer::start(peer(&["bitesize", "-d", &name]), 0);
    let both = Tracer::start(scry_tool(&["biolatency", "-D", "-F", "-d", &name]), 2);
    let both_peer = Tracer::start(peer(&["biolatency", "-D", "-F", "-d", &name]), 0);
    let top = Tracer::start(scry_tool(&["biotop", "--json", "1"]), 3);
    let mut pids = Vec::new();
    for (count, size) in [(n, big), (m, small)] {
        pids.push(dwrites(&disk, count, size));
    }
    let (ours, _) = sizes.stop();
    let (ours_json, _) = sizes_json.stop();
    let (theirs, _) = sizes_peer.stop();
    let (both_ours, _) = both.stop();
    let (both_theirs, _) = both_peer.stop();
    let (top_lines, _) = top.stop();

    let histogram = |lines: &[String]| -> Vec<String> {
        let from = lines.iter().position(|l| l == "Process Name = dwrites");
        from.map(|i| {
            lines[i..]
                .iter()
                .skip(1)
                .take_while(|l| !l.trim().is_empty())
                .map(|l| l.trim_end().to_string())
                .collect()
        })
        .unwrap_or_default()
    };
    let mine = histogram(&ours);
    assert_eq!(
        mine,
        histogram(&theirs),
        "scry:\n{ours:?}\nlibbpf-tools:\n{theirs:?}"
    );
    let row = |low: u64, high: u64, count: u64| {
        mine.iter().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() >= 5
                && f[0] == low.to_string()
                && f[2] == high.to_string()
                && f[4] == count.to_string()
        })
    };
    assert!(row(128, 255, n) && row(8, 15, m), "{mine:?}");
    assert_eq!(common::hist_total(&mine.join("\n")), n + m);
    // --json: dwrites' histogram, the table's rows as buckets.
    let doc: serde_json::Value =
        serde_json::from_str(&ours_json.join("\n")).expect("one JSON document");
    let of_dwrites: Vec<&serde_json::Value> = doc
        .as_array()
        .expect("an array of histograms")
        .iter()
        .filter(|h| h["key"] == "dwrites" || h["label"] == "Process Name = dwrites")
        .collect();
    assert_eq!(of_dwrites.len(), 1, "{doc}");
    let buckets: Vec<[u64; 3]> = of_dwrites[0]["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .map(|b| ["low", "high", "count"].map(|k| b[k].as_u64().unwrap_or(u64::MAX)))
        .collect();
    let table_rows: Vec<[u64; 3]> = mine
        .iter()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let number = |i: usize| f.get(i)?.parse::<u64>().ok();
            Some([number(0)?, number(2)?, number(4)?])
        })
        .filter(|r| r[2] > 0)
        .collect();
    assert_eq!(buckets, table_rows, "bitesize --json: {doc}\n{mine:?}");

    let (totals, peer_totals) = (totals_by_label(&both_ours), totals_by_label(&both_theirs));
    assert_eq!(
        totals, peer_totals,
        "scry:\n{both_ours:?}\nlibbpf-tools:\n{both_theirs:?}"
    );
    let writes: u64 = totals
        .iter()
        .filter(|(label, _)| {
            label.starts_with(&format!("disk = {name}\tflags = ")) && label.ends_with("Write")
        })
        .map(|(_, n)| n)
        .sum();
    assert!(writes >= n + m, "{totals:?}");

    let mut per_pid: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
    for line in &top_lines {
        let rows: Vec<serde_json::Value> =
            serde_json::from_str(line).expect("a JSON array per interval");
        for r in rows.iter().filter(|r| r["disk"] == name.as_str()) {
            assert_eq!(
                (r["comm"].as_str(), r["write"].as_bool()),
                (Some("dwrites"), Some(true)),
                "{r}"
            );
            let e = per_pid
                .entry(r["pid"].as_u64().unwrap_or_default())
                .or_default();
            e.0 += r["ios"].as_u64().unwrap_or_default();
            e.1 += r["bytes"].as_u64().unwrap_or_default();
        }
    }
    let expected: std::collections::BTreeMap<u64, (u64, u64)> = [
        (u64::from(pids[0]), (n, n * big)),
        (u64::from(pids[1]), (m, m * small)),
    ]
    .into();
    assert_eq!(per_pid, expected, "{top_lines:?}");
}
