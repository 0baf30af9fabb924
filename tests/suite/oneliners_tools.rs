//! The trace-cmd profile, bcc `profile` and bpftrace one-liners of
//! `shared/ONELINERS.md`, each run as its user types it with `scry` in the
//! tool's place (`bpftrace` is `scry run`; `-c` gives the program its
//! workload), on a workload with a known answer, and the answer checked:
//! a task's `sys_getppid` count, a hook's pairs, the workload's folded
//! stack, a command's map key and count. Durations are shortened (`1`, not
//! `10`) and `hackbench 10` is a workload of `workloads/`.
//!
//! `{S}` is scry, `{L}` a loop device of the test (`{LN}` its name), `{U:name}` a copy of workload `name` named `ol-name` in
//! the row's directory (the row's working directory: a command name no
//! other process has, for rows that watch the whole system), `{D}` that
//! directory. Every row runs and every failure is printed before the test
//! fails. `bcc_one_liners_count_their_workloads` runs bcc lines that
//! stream or print at Ctrl-C, each started, attached (its BPF links
//! counted), given its workload and stopped with SIGINT; the other bcc
//! lines are run against libbpf-tools in the tools' own modules.

use crate::common;
use crate::common::loop_device::LoopDevice;
use crate::common::tracer::Tracer;

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// What a row's output must hold: given stdout, stderr and the row's context.
type Check = fn(&str, &str, &Ctx) -> Result<(), String>;

/// What a row runs with.
struct Ctx<'a> {
    /// The row's directory (and working directory).
    dir: &'a Path,
    /// The loop device's `MAJ,MIN`, as block and ext4 events print it.
    dev: String,
}

struct Row {
    line: &'static str,
    check: Check,
}

/// The events the report's `CPU N: R records, B bytes, L lost` lines
/// count as lost.
fn lost(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.starts_with("CPU ") && l.ends_with(" lost"))
        .filter_map(|l| l.rsplit(' ').nth(1)?.parse::<u64>().ok())
        .sum()
}

/// The count of `event` in the sections of tasks named `comm`, summed.
fn task_count(text: &str, comm: &str, event: &str) -> u64 {
    let mut in_task = false;
    let mut total = 0;
    for line in text.lines() {
        if let Some(task) = line.strip_prefix("task: ") {
            in_task = task.rsplit_once('-').is_some_and(|(c, _)| c == comm);
        } else if line.starts_with("Global: ") {
            in_task = false;
        } else if in_task
            && let Some(rest) = line.trim_start().strip_prefix(&format!("Event: {event} ("))
        {
            total += rest
                .split(')')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    total
}

/// The counts of `event` in the report's `Global:` sections, summed.
fn global_count(text: &str, event: &str) -> u64 {
    let mut global = false;
    let mut total = 0;
    for line in text.lines() {
        if line.starts_with("Global: ") {
            global = true;
        } else if line.starts_with("task: ") {
            global = false;
        } else if global
            && let Some(rest) = line.trim_start().strip_prefix(&format!("Event: {event} ("))
        {
            total += rest
                .split(')')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    total
}

/// ol-calls' 3000 getppid calls are one task's `sys_getppid (3000)`
/// (fewer by at most what the rings lost, when they lost any).
fn getppid_3000(text: &str) -> Result<(), String> {
    let n = task_count(text, "ol-calls", "sys_getppid");
    let lost = lost(text);
    if n == 3000 || (n <= 3000 && n + lost >= 3000) {
        Ok(())
    } else {
        Err(format!("ol-calls' sys_getppid: {n} of 3000 ({lost} lost)"))
    }
}

/// The timer pairs (`Global:` sections of hrtimer_expire_entry and _exit,
/// keyed by the timer) are those the file holds: each entry followed by an
/// exit of the same timer on its CPU, counted from perf script's reading of
/// the same perf.data; and the sleeper's 20 timers, less what was lost,
/// when the kernel delivered their records. On this 6.18 host a quiet CPU's
/// interrupt-time records now and then reach no ring (0 of 20 in one run,
/// 31 in the next; perf's own recordings lost switches the same way), so
/// the count the file holds is the measure, not the 20 sleeps.
fn hrtimer_pairs(out: &str, _: &str, ctx: &Ctx) -> Result<(), String> {
    let n = global_count(out, "hrtimer_expire_entry-hrtimer_expire_exit");
    let script = Command::new("perf")
        .args(["script", "-F", "cpu,event,trace", "-i"])
        .arg(ctx.dir.join("perf.data"))
        .output()
        .map_err(|e| format!("perf script: {e}"))?;
    let mut open: std::collections::HashSet<(String, String)> = Default::default();
    let mut in_file = 0;
    for line in String::from_utf8_lossy(&script.stdout).lines() {
        let cpu = line.split_whitespace().next().unwrap_or("").to_string();
        let Some(timer) = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("hrtimer="))
            .map(str::to_string)
        else {
            continue;
        };
        if line.contains("hrtimer_expire_entry:") {
            open.insert((cpu, timer));
        } else if line.contains("hrtimer_expire_exit:") && open.remove(&(cpu, timer)) {
            in_file += 1;
        }
    }
    // A loss drops the pairs it may reach (none stretched across it).
    let lost = lost(out);
    if n == in_file || (n <= in_file && n + lost >= in_file) {
        Ok(())
    } else {
        Err(format!(
            "{n} global hrtimer pairs in the report, {in_file} in the file (perf script; {lost} lost)"
        ))
    }
}

/// The spinner's folded stack (`comm;frames count`) names `spin_forever`.
fn spinner_folded(out: &str, _: &str, _: &Ctx) -> Result<(), String> {
    let spins = out
        .lines()
        .filter(|l| l.starts_with("ol-spinner;") && l.contains(";spin_forever"))
        .count();
    let malformed = out
        .lines()
        .filter(|l| {
            l.rsplit_once(' ')
                .is_none_or(|(_, n)| n.parse::<u64>().is_err())
        })
        .count();
    if spins > 0 && malformed == 0 {
        Ok(())
    } else {
        Err(format!(
            "{spins} folded lines of ol-spinner with spin_forever, {malformed} lines not 'stack count'"
        ))
    }
}

/// `perf script` lines of the loop device's writes (`EVENT: MAJ,MIN W...`):
/// exactly `n` of each `(event, n)`. No one else writes to the loop device.
fn block_lines(out: &str, dev: &str, want: &[(&str, usize)]) -> Result<(), String> {
    let mut wrong = Vec::new();
    for &(event, n) in want {
        let got = out
            .lines()
            .filter(|l| {
                l.split_once(&format!("{event}: "))
                    .is_some_and(|(_, rest)| rest.starts_with(&format!("{dev} W")))
            })
            .count();
        if got != n {
            wrong.push(format!("{got} {event} writes on {dev}, {n} expected"));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("; "))
    }
}

/// bpftrace's `@[KEY]: N` lines: the keys and their counts.
fn map_lines(out: &str) -> Vec<(String, u64)> {
    out.lines()
        .filter_map(|l| {
            let (key, n) = l.strip_prefix("@[")?.rsplit_once("]: ")?;
            Some((key.to_string(), n.trim().parse().ok()?))
        })
        .collect()
}

/// The size of `spin_forever` in the spinner (nm -S).
fn spin_forever_size(dir: &Path) -> Option<u64> {
    let out = Command::new("nm")
        .arg("-S")
        .arg(dir.join("ol-spinner"))
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        (w.len() == 4 && w[3] == "spin_forever")
            .then(|| u64::from_str_radix(w[1], 16).ok())
            .flatten()
    })
}

const ROWS: &[Row] = &[
    // trace-cmd profile hackbench 10
    Row {
        line: "{S} profile {U:calls} 3000",
        check: |out, _, _| getppid_3000(out),
    },
    // trace-cmd profile --stderr hackbench 10
    Row {
        line: "{S} profile --stderr {U:calls} 3000",
        check: |out, err, _| {
            if out.contains("Event: ") {
                return Err("--stderr: the profile is on stdout".into());
            }
            getppid_3000(err)
        },
    },
    // trace-cmd record --profile hackbench 10; trace-cmd report --profile
    Row {
        line: "{S} record -q --profile {U:calls} 3000 && {S} report --profile",
        check: |out, _, _| getppid_3000(out),
    },
    // trace-cmd record --profile -l 'SyS*' hackbench 10
    Row {
        line: "{S} record -q --profile -l 'SyS*' {U:calls} 3000 && {S} report --profile",
        check: |out, _, _| getppid_3000(out),
    },
    // trace-cmd record -H hrtimer_expire_entry,hrtimer/hrtimer_expire_exit,hrtimer,g hackbench 10
    Row {
        line: "{S} record -q -H hrtimer_expire_entry,hrtimer/hrtimer_expire_exit,hrtimer,g {U:sleeper} 20 5 && {S} report --profile",
        check: hrtimer_pairs,
    },
    // ... ,gp
    Row {
        line: "{S} record -q -H hrtimer_expire_entry,hrtimer/hrtimer_expire_exit,hrtimer,gp {U:sleeper} 20 5 && {S} report --profile",
        check: hrtimer_pairs,
    },
    // bcc: profile -F 99 -af 10 > out.folded
    Row {
        line: "{U:spinner} >/dev/null & p=$!; {S} profile -F 99 -af 1 > out.folded; s=$?; kill $p; cat out.folded; exit $s",
        check: spinner_folded,
    },
    // perf record -e block:block_rq_insert -ag (on a loop device with a scheduler, which inserts)
    Row {
        line: "echo mq-deadline > /sys/block/{LN}/queue/scheduler && {S} record -q -e block:block_rq_insert -ag -- {U:dwrites} {L} 10 4096 && {S} script; s=$?; echo none > /sys/block/{LN}/queue/scheduler; exit $s",
        check: |out, _, ctx| block_lines(out, &ctx.dev, &[("block:block_rq_insert", 10)]),
    },
    // perf record -e block:block_rq_issue -e block:block_rq_complete -a
    Row {
        line: "{S} record -q -e block:block_rq_issue -e block:block_rq_complete -a -- {U:dwrites} {L} 10 4096 && {S} script",
        check: |out, _, ctx| {
            block_lines(
                out,
                &ctx.dev,
                &[
                    ("block:block_rq_issue", 10),
                    ("block:block_rq_complete", 10),
                ],
            )
        },
    },
    // perf record -e 'ext4:*' -o /tmp/perf.data -a (an ext4 of the loop device)
    Row {
        line: "mkfs.ext4 -q -F {L} && mkdir {D}/mnt && mount {L} {D}/mnt && {S} record -q -e 'ext4:*' -o {D}/ext4.data -a -- {D}/ol-dd if=/dev/zero of={D}/mnt/f bs=4k count=10 status=none; s=$?; umount {D}/mnt; [ $s = 0 ] && {S} script -i {D}/ext4.data",
        check: |out, _, ctx| {
            // dd's ten 4 KiB writes are ten delayed-allocation write_begins on the loop's ext4.
            let dev = &ctx.dev;
            let n = out
                .lines()
                .filter(|l| {
                    l.contains("ext4:ext4_da_write_begin:")
                        && l.trim_start().starts_with("ol-dd ")
                        && l.contains(&format!("dev {dev} "))
                })
                .count();
            if n == 10 {
                Ok(())
            } else {
                Err(format!(
                    "{n} ext4_da_write_begin of ol-dd on dev {dev}, 10 expected"
                ))
            }
        },
    },
    // flamegraph.pl --color=java --title="Flame Graph: malloc()" folded.txt > graph.svg
    Row {
        line: "{S} flamegraph --color=java --title=\"Flame Graph: malloc()\" folded.txt > graph.svg && test ! -e flamegraph.svg && cat graph.svg",
        check: |out, _, _| {
            let want = [
                "Flame Graph: malloc()",
                "<title>malloc (3 samples",
                "<title>java/lang/Thread.run (5 samples",
            ];
            match want.iter().find(|w| !out.contains(*w)) {
                None if out.starts_with("<?xml") => Ok(()),
                missing => Err(format!("graph.svg lacks {missing:?}")),
            }
        },
    },
    // perf probe -V tcp_sendmsg --externs (the kernel's BTF; no kprobes needed)
    Row {
        line: "{S} probe -V tcp_sendmsg --externs",
        check: |out, err, _| {
            let want = ["Available variables at tcp_sendmsg", "\tsk", "\tsize"];
            match want.iter().find(|w| !out.contains(*w)) {
                None if err.contains("--externs") => Ok(()),
                None => Err("--externs: nothing said of the external variables".into()),
                Some(w) => Err(format!("no {w:?} in {out:?}")),
            }
        },
    },
    // perf probe -nv 'tcp_sendmsg size sk->__sk_common.skc_state' (a dry run: the line)
    Row {
        line: "{S} probe -nv 'tcp_sendmsg size sk->__sk_common.skc_state'",
        check: |out, _, _| {
            let line = out.trim();
            if line.starts_with("p:probe/tcp_sendmsg tcp_sendmsg size=%dx")
                && line.contains(" skc_state=+")
                && line.ends_with("(%di):u8")
            {
                Ok(())
            } else {
                Err(format!("kprobe line {line:?}"))
            }
        },
    },
    // bpftrace -e 'tracepoint:syscalls:sys_enter_openat { printf("%s %s\n", comm, str(args->filename)); }'
    Row {
        line: "{S} run -e 'tracepoint:syscalls:sys_enter_openat { printf(\"%s %s\\n\", comm, str(args->filename)); }' -c '{D}/ol-cat {D}/known.txt'",
        check: |out, _, ctx| {
            let want = format!("ol-cat {}/known.txt", ctx.dir.display());
            let n = out.lines().filter(|l| *l == want).count();
            if n == 1 {
                Ok(())
            } else {
                Err(format!("{n} lines '{want}', 1 expected"))
            }
        },
    },
    // bpftrace -e 'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }'
    Row {
        line: "{S} run -e 'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }' -c '{D}/ol-calls 3000'",
        check: |out, _, _| {
            // 3000 getppid, and libc's start-up (a few dozen).
            match map_lines(out).iter().find(|(k, _)| k == "ol-calls") {
                Some((_, n)) if (3000..3200).contains(n) => Ok(()),
                other => Err(format!(
                    "@[ol-calls]: {other:?}, 3000 and start-up expected"
                )),
            }
        },
    },
    // bpftrace -e 'tracepoint:syscalls:sys_exit_read /args->ret > 0/ { @bytes = hist(args->ret); }'
    Row {
        line: "{S} run -e 'tracepoint:syscalls:sys_exit_read /args->ret > 0/ { @bytes = hist(args->ret); }' -c '{D}/ol-cat {D}/known.txt'",
        check: |out, _, _| {
            // cat's one read of the 5000-byte file is in [4K, 8K).
            let slot = out
                .lines()
                .find(|l| l.starts_with("[4K, 8K)"))
                .and_then(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok());
            match slot {
                Some(n) if out.starts_with("Attaching") && out.contains("@bytes:") && n >= 1 => {
                    Ok(())
                }
                _ => Err("no @bytes slot [4K, 8K) with the file's read".into()),
            }
        },
    },
    // bpftrace -e 'profile:hz:99 { @[kstack, ustack, comm] = count(); }'
    Row {
        line: "{U:spinner} >/dev/null & p=$!; {S} run -e 'profile:hz:99 { @[kstack, ustack, comm] = count(); }' -c 'sleep 1'; s=$?; kill $p; exit $s",
        check: |out, _, ctx| {
            let size = spin_forever_size(ctx.dir).ok_or("nm -S: no spin_forever")?;
            // Each user frame of the spinner is `spin_forever+OFF` within
            // the function, as bpftrace prints it.
            let offsets: Vec<u64> = out
                .lines()
                .filter_map(|l| l.trim().strip_prefix("spin_forever+")?.parse().ok())
                .collect();
            if !out.contains(", ol-spinner]: ") || offsets.is_empty() {
                return Err("no key of ol-spinner with spin_forever+OFF".into());
            }
            match offsets.iter().find(|&&o| o >= size) {
                Some(o) => Err(format!("spin_forever+{o}, past its {size} bytes")),
                None => Ok(()),
            }
        },
    },
    // bpftrace -e 'uprobe:/bin/bash:readline { @n = count(); } interval:s:1 { print(@n); clear(@n); }'
    Row {
        line: "printf 'true\\ntrue\\nexit\\n' | {S} run -e 'uprobe:/bin/bash:readline { @n = count(); } interval:s:1 { print(@n); clear(@n); }' -c '/bin/bash --norc -i'",
        check: |out, _, _| {
            // One readline call per line bash reads: 3, over the prints.
            let n: u64 = out
                .lines()
                .filter_map(|l| l.strip_prefix("@n: ")?.trim().parse::<u64>().ok())
                .sum();
            if n == 3 {
                Ok(())
            } else {
                Err(format!(
                    "@n summed to {n} over the prints, 3 readline calls expected"
                ))
            }
        },
    },
    // bpftrace -e 'tracepoint:block:block_rq_issue { @[args->rwbs] = count(); }'
    Row {
        line: "{S} run -e 'tracepoint:block:block_rq_issue { @[args->rwbs] = count(); }' -c 'dd if=/dev/zero of={D}/direct bs=4k count=10 oflag=direct,sync status=none'",
        check: |out, _, _| {
            // The ten direct, synchronous writes are ten W issues at least.
            let writes: u64 = map_lines(out)
                .iter()
                .filter(|(k, _)| k.contains('W'))
                .map(|(_, n)| n)
                .sum();
            if writes >= 10 {
                Ok(())
            } else {
                Err(format!(
                    "{writes} write issues (rwbs with W), 10 expected at least"
                ))
            }
        },
    },
    // bpftrace -e 'tracepoint:sched:sched_process_exec { printf("%d %s\n", pid, comm); }'
    Row {
        line: "{S} run -e 'tracepoint:sched:sched_process_exec { printf(\"%d %s\\n\", pid, comm); }' -c 'sh {D}/twice'",
        check: |out, _, _| {
            let n = out
                .lines()
                .filter(|l| {
                    l.split_once(' ')
                        .is_some_and(|(p, c)| p.parse::<u32>().is_ok() && c == "ol-quick")
                })
                .count();
            if n == 2 {
                Ok(())
            } else {
                Err(format!("{n} lines 'PID ol-quick', 2 expected"))
            }
        },
    },
];

/// `line` with its placeholders replaced; the copies it names made in `dir`.
fn expand(line: &str, dir: &Path, disk: &LoopDevice) -> String {
    let mut out = line
        .replace("{S}", env!("CARGO_BIN_EXE_scry"))
        .replace("{D}", &dir.display().to_string())
        .replace("{LN}", &disk.name())
        .replace("{L}", &disk.dev.display().to_string());
    while let Some(start) = out.find("{U:") {
        let end = start + out[start..].find('}').expect("a closed {U:name}");
        let name = &out[start + 3..end];
        let copy = dir.join(format!("ol-{name}"));
        std::fs::copy(common::workload(name), &copy).expect("copy the workload");
        out.replace_range(start..=end, &copy.display().to_string());
    }
    out
}

#[test]
fn tool_one_liners_give_their_known_answers() {
    run_rows(ROWS);
}

fn run_rows(rows: &[Row]) {
    require_kernel!();
    let disk = LoopDevice::new();
    let dev = std::fs::read_to_string(format!("/sys/block/{}/dev", disk.name()))
        .expect("the loop device's numbers")
        .trim()
        .replace(':', ",");
    let mut failures = Vec::new();
    for row in rows {
        let dir = common::tempdir();
        for name in ["calls", "quick", "spinner"] {
            std::fs::copy(
                common::workload(name),
                dir.path().join(format!("ol-{name}")),
            )
            .expect("copy the workload");
        }
        for name in ["cat", "dd"] {
            std::fs::copy(
                format!("/bin/{name}"),
                dir.path().join(format!("ol-{name}")),
            )
            .expect("copy the program");
        }
        std::fs::write(dir.path().join("known.txt"), "x".repeat(5000)).expect("write the file");
        std::fs::write(
            dir.path().join("folded.txt"),
            "main;java/lang/Thread.run;Interpreter 5\nmain;foo;malloc 3\n",
        )
        .expect("write the folded stacks");
        let quick = dir.path().join("ol-quick").display().to_string();
        std::fs::write(dir.path().join("twice"), format!("{quick}\n{quick}\n"))
            .expect("write the script");
        let line = expand(row.line, dir.path(), &disk);
        let out: Output = Command::new("sh")
            .arg("-c")
            .arg(&line)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("run sh");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let result = if out.status.success() {
            let ctx = Ctx {
                dir: dir.path(),
                dev: dev.clone(),
            };
            (row.check)(&stdout, &stderr, &ctx)
        } else {
            Err(format!("{}: {}", out.status, stderr.trim()))
        };
        if let Err(why) = result {
            failures.push(format!("{}\n  {}", row.line, why.replace('\n', "\n  ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} one-liners failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// A bcc line: the tool as typed, the BPF links it holds once attached,
/// the workload run then (`sh -c`, in the row's directory) and what the
/// tool's lines must say of it (given the loop device's name and the
/// workload's pid: the program's, when the line `exec`s it).
struct ToolRow {
    args: &'static [&'static str],
    links: usize,
    workload: &'static str,
    check: fn(&[String], &str, u32) -> Result<(), String>,
}

/// The lines of each section a line `Function = malloc [PID]` or `disk =
/// NAME` opens, for the sections whose opening line contains `key`.
fn sections<'a>(lines: &'a [String], opens: &str, key: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in lines {
        if line.trim_start().starts_with(opens) {
            inside = line.contains(key);
        } else if inside {
            out.push(line.as_str());
        }
    }
    out
}

const TOOL_ROWS: &[ToolRow] = &[
    // execsnoop
    ToolRow {
        args: &["execsnoop"],
        links: 2,
        workload: "sh twice",
        check: |lines, _, _| {
            let n = lines.iter().filter(|l| l.starts_with("ol-quick ")).count();
            if n == 2 {
                Ok(())
            } else {
                Err(format!("{n} ol-quick lines, 2 expected"))
            }
        },
    },
    // opensnoop -x
    ToolRow {
        args: &["opensnoop", "-x"],
        links: 4,
        workload: "./ol-opens 10 4 \"$PWD\"",
        check: |lines, _, _| {
            let failed = lines
                .iter()
                .filter(|l| l.contains(" ol-opens ") && l.ends_with("/missing"))
                .count();
            let present = lines.iter().filter(|l| l.ends_with("/present")).count();
            if failed == 4 && present == 0 {
                Ok(())
            } else {
                Err(format!(
                    "{failed} failed opens of missing (4), {present} of present (0)"
                ))
            }
        },
    },
    // syscount -P
    ToolRow {
        args: &["syscount", "-P"],
        links: 1,
        workload: "./ol-calls 300000",
        check: |lines, _, _| {
            let n = lines.iter().find_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                (w.len() == 3 && w[1] == "ol-calls").then(|| w[2].parse::<u64>().ok())?
            });
            match n {
                // 300000 getppid (the top process by far) and libc's start-up.
                Some(n) if (300_000..300_200).contains(&n) => Ok(()),
                other => Err(format!(
                    "ol-calls' calls: {other:?}, 300000 and start-up expected"
                )),
            }
        },
    },
    // funclatency c:malloc
    ToolRow {
        args: &["funclatency", "c:malloc"],
        links: 2,
        workload: "exec ./ol-mallocs 1000",
        check: |lines, _, pid| {
            // Its process's section: the 1000 and the loader's few.
            let body = sections(lines, "Function = malloc", &format!("[{pid}]")).join("\n");
            match common::hist_total(&body) {
                n if (1000..1100).contains(&n) => Ok(()),
                n => Err(format!(
                    "{n} mallocs of ol-mallocs ({pid}), 1000 and the loader's expected"
                )),
            }
        },
    },
    // biolatency -D 1 10 (60 intervals: the run ends at SIGINT)
    ToolRow {
        args: &["biolatency", "-D", "1", "60"],
        links: 2,
        workload: "./ol-dwrites {L} 10 4096",
        check: |lines, disk, _| {
            let body = sections(lines, "disk = ", &format!("disk = {disk}")).join("\n");
            match common::hist_total(&body) {
                10 => Ok(()),
                n => Err(format!(
                    "{n} I/Os of {disk} over the intervals, 10 expected"
                )),
            }
        },
    },
];

#[test]
fn bcc_one_liners_count_their_workloads() {
    if !common::tracer::require_root_and("execsnoop") {
        return;
    }
    let disk = LoopDevice::new();
    let mut failures = Vec::new();
    for row in TOOL_ROWS {
        let dir = common::tempdir();
        for name in ["calls", "quick", "opens", "mallocs", "dwrites"] {
            std::fs::copy(
                common::workload(name),
                dir.path().join(format!("ol-{name}")),
            )
            .expect("copy the workload");
        }
        std::fs::write(dir.path().join("present"), "x").expect("write the file");
        let quick = dir.path().join("ol-quick").display().to_string();
        std::fs::write(dir.path().join("twice"), format!("{quick}\n{quick}\n"))
            .expect("write the script");
        let tracer = Tracer::start(common::tracer::scry_tool(row.args), row.links);
        let workload = row.workload.replace("{L}", &disk.dev.display().to_string());
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&workload)
            .current_dir(dir.path())
            .spawn()
            .expect("run the workload");
        let pid = child.id();
        let ran = child.wait().expect("the workload ends");
        let (lines, err) = tracer.stop();
        let result = if ran.success() {
            (row.check)(&lines, &disk.name(), pid)
        } else {
            Err(format!("the workload failed: {ran}"))
        };
        if let Err(why) = result {
            failures.push(format!(
                "scry {}\n  {}\n  stderr: {}",
                row.args.join(" "),
                why,
                err.trim()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} bcc one-liners failed:\n{}",
        failures.len(),
        TOOL_ROWS.len(),
        failures.join("\n")
    );
}
