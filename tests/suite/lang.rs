//! `scry run`: bpftrace's one-liners run by scry and by Debian's bpftrace
//! on the same deterministic workloads, with the same counts and the same
//! histograms; and bad programs, each with its message and exit 2.
//!
//! Each run waits for its `BEGIN` (which both tools run once every probe
//! is attached) before starting the workload, and ends with the
//! workload's own exit (`sched_process_exit` of its unique name): no
//! timing is guessed.

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A copy of `program` named `name` (a comm no other process has).
pub(crate) fn unique_copy(dir: &Path, program: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(program, &to).expect("copy the workload");
    to
}

/// Runs `tool` (scry run or bpftrace -e) on a program whose BEGIN prints
/// `ready`; then `workload` runs the workload; returns the tool's whole
/// stdout once it exits.
pub(crate) fn run_with(mut tool: Command, workload: impl FnOnce()) -> String {
    let mut child: Child = tool
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the tracer");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let mut lines = BufReader::new(stdout);
        let mut line = String::new();
        while lines.read_line(&mut line).unwrap_or(0) > 0 {
            if line == "ready\n" {
                let _ = tx.send(());
            }
            text.push_str(&line);
            line.clear();
        }
        text
    });
    if rx.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = child.kill();
        let mut err = String::new();
        let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
        panic!("{tool:?} never became ready: {err}");
    }
    workload();
    let done = common::wait_timeout(&mut child, Duration::from_secs(60));
    let mut err = String::new();
    let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
    assert!(
        done.is_some_and(|s| s.success()),
        "{tool:?}: {done:?} {err}"
    );
    reader.join().expect("reader")
}

pub(crate) fn run_status(cmd: &mut Command) {
    let status = cmd.status().expect("run the workload");
    assert!(status.success(), "{cmd:?}: {status}");
}

pub(crate) fn scry_run(prog: &str) -> Command {
    let mut cmd = common::scry();
    cmd.args(["run", prog]);
    cmd
}

pub(crate) fn bpftrace(prog: &str) -> Command {
    let mut cmd = Command::new("bpftrace");
    cmd.args(["-e", prog]);
    cmd
}

/// Both tracers are usable here.
pub(crate) fn gates() -> bool {
    common::require_tracefs()
        && common::require_tool("bpftrace", "bpftrace is not installed (scripts/deps)")
}

/// The C library uprobes attach to, if this machine has it where Debian
/// puts it.
pub(crate) fn libc() -> Option<&'static Path> {
    let libc = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
    common::gate(if libc.exists() {
        Ok(())
    } else {
        Err(format!("no {}", libc.display()))
    })
    .then_some(libc)
}

/// For a test of uprobes on libc: the gates passed (else None, a skip), a
/// temporary folder holding a copy of `workload` named `prefix` and this
/// test process's id (a comm no other process has), its path and name.
pub(crate) fn libc_workload(
    prefix: &str,
    workload: &str,
) -> Option<(tempfile::TempDir, PathBuf, String)> {
    if !gates() || libc().is_none() {
        return None;
    }
    let dir = common::tempdir();
    let name = format!("{prefix}{}", std::process::id() % 100000);
    let path = unique_copy(dir.path(), &common::workload(workload), &name);
    Some((dir, path, name))
}

/// The lines of `text` that start with `prefix`, sorted (bpftrace leaves
/// the order of equal values to its hash map).
pub(crate) fn lines_with(text: &str, prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// The program both tools run: counts keyed by comm, exact getppid
/// counts, the end at the workload's exit.
fn counting_program(name: &str) -> String {
    format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         tracepoint:raw_syscalls:sys_enter /comm == \"{name}\"/ {{ @[comm] = count(); }}
         tracepoint:syscalls:sys_enter_getppid /comm == \"{name}\"/ {{ @calls = count(); @sum = sum(2); @st = stats(args->__syscall_nr); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}"
    )
}

#[test]
fn syscalls_counted_by_process_match_bpftrace() {
    if !gates() {
        return;
    }
    let dir = common::tempdir();
    let name = format!("lcnt{}", std::process::id() % 100000);
    let calls = unique_copy(dir.path(), &common::workload("calls"), &name);
    let prog = counting_program(&name);
    let ours = run_with(scry_run(&prog), || {
        run_status(Command::new(&calls).arg("3000"))
    });
    let theirs = run_with(bpftrace(&prog), || {
        run_status(Command::new(&calls).arg("3000"))
    });
    assert!(ours.contains("@calls: 3000\n"), "{ours}");
    assert!(ours.contains("@sum: 6000\n"), "{ours}");
    assert!(
        ours.contains("@st: count 3000, average 110, total 330000\n"),
        "{ours}"
    );
    for prefix in ["@calls", "@sum", "@st", &format!("@[{name}]")] {
        assert_eq!(
            lines_with(&ours, prefix),
            lines_with(&theirs, prefix),
            "{prefix}\nscry:\n{ours}\nbpftrace:\n{theirs}"
        );
    }
}

#[test]
fn read_sizes_histogram_matches_bpftrace() {
    if !gates() {
        return;
    }
    let dir = common::tempdir();
    let name = format!("lrd{}", std::process::id() % 100000);
    let dd = unique_copy(dir.path(), Path::new("/bin/dd"), &name);
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         tracepoint:syscalls:sys_enter_read /comm == \"{name}\"/ {{ @bytes = hist(args->count); @lin = lhist(args->count, 0, 2048, 256); @mx = max(args->count); @mn = min(args->count); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}"
    );
    let workload = || {
        run_status(
            Command::new(&dd)
                .args(["if=/dev/zero", "of=/dev/null", "bs=1000", "count=700"])
                .stderr(Stdio::null()),
        )
    };
    let ours = run_with(scry_run(&prog), workload);
    let theirs = run_with(bpftrace(&prog), workload);
    let maps = |t: &str| {
        t.split_once("\n\n\n")
            .map(|(_, m)| m.to_string())
            .unwrap_or_default()
    };
    // 700 blocks and the loader's 832-byte read of the ELF header.
    assert!(ours.contains("[512, 1K)            701 |"), "{ours}");
    assert_eq!(
        maps(&ours),
        maps(&theirs),
        "scry:\n{ours}\nbpftrace:\n{theirs}"
    );
}

#[test]
fn pid_predicate_and_printf_lines_match_bpftrace() {
    if !gates() {
        return;
    }
    let calls = common::workload("calls");
    let mut outs = Vec::new();
    for tool in ["scry", "bpftrace"] {
        // A shell that waits for a line, then becomes the workload: its
        // pid is known before the program is written.
        let mut sh = Command::new("sh")
            .args(["-c", "read x; exec \"$0\" 40"])
            .arg(&calls)
            .stdin(Stdio::piped())
            .spawn()
            .expect("sh");
        let pid = sh.id();
        let prog = format!(
            "BEGIN {{ printf(\"ready\\n\"); }}
             tracepoint:syscalls:sys_enter_getppid /pid == {pid}/ {{ @n[pid == {pid} ? 1 : 0] = count(); $x = 2 * 3 + 1; if ($x > 6 && tid == {pid}) {{ printf(\"%s %d %-4d|\\n\", comm, args->__syscall_nr, $x); }} else {{ printf(\"no\\n\"); }} }}
             tracepoint:sched:sched_process_exit /pid == {pid}/ {{ exit(); }}"
        );
        let cmd = if tool == "scry" {
            scry_run(&prog)
        } else {
            bpftrace(&prog)
        };
        let mut stdin = sh.stdin.take().expect("stdin");
        let out = run_with(cmd, || {
            use std::io::Write;
            stdin.write_all(b"go\n").expect("start the workload");
            drop(stdin);
            let status = sh.wait().expect("wait for the workload");
            assert!(status.success(), "{status}");
        });
        outs.push(out);
    }
    let (ours, theirs) = (&outs[0], &outs[1]);
    assert_eq!(lines_with(ours, "calls 110 7   |").len(), 40, "{ours}");
    assert!(ours.contains("@n[1]: 40\n"), "{ours}");
    assert_eq!(
        lines_with(ours, "calls"),
        lines_with(theirs, "calls"),
        "{theirs}"
    );
    assert_eq!(lines_with(ours, "@n"), lines_with(theirs, "@n"));
}

/// An interval probe ticks until SIGINT, which runs END and prints the
/// maps. The signal is sent once the probe has ticked (a fixed wait could
/// end before a loaded machine had scry's programs loaded and its signals
/// caught: SIGINT then killed it).
#[test]
fn interval_and_sigint_print_maps() {
    if !common::require_tracefs() {
        return;
    }
    let out = run_until_interrupted(
        scry_run("interval:ms:50 { @ticks++; printf(\"tick\\n\"); } END { printf(\"bye\\n\"); }"),
        "Attaching 2 probes...\n",
        "tick\n",
        || {},
    );
    assert!(out.starts_with("Attaching 2 probes...\n"), "{out}");
    assert!(out.contains("bye\n\n\n@ticks: "), "{out}");
}

#[test]
fn begin_output_matches_bpftrace_byte_for_byte() {
    if !gates() {
        return;
    }
    let prog = "BEGIN { @a[1] = count(); @a[5] = count(); @a[5] = count(); @h = hist(3); @h = hist(100); @h = hist(-1); @h = hist(0); \
                @l = lhist(5, 0, 100, 10); @l = lhist(105, 0, 100, 10); @l = lhist(-1, 0, 100, 10); @s = stats(10); @v = avg(10); \
                @m = min(3); @m = min(-2); @M = max(7); @x = 5; @z = count(); @k[\"ab\", 3] = sum(4); @e = 1; delete(@e); \
                printf(\"%d|%5d|%-5d|%s|%x|%u|%c|%05d\\n\", -3, 42, 42, \"ab\", 255, 7, 65, 12); exit(); } END { printf(\"end\\n\"); }";
    let ours = common::run_ok(&mut scry_run(prog));
    let theirs = common::run_ok(&mut bpftrace(prog));
    assert_eq!(ours, theirs);
}

/// printf's conversions read their C type as bpftrace's (whose values
/// reach C's printf as 64 bits): `%d`, `%u`, `%x` of -1 and of 2^32+5
/// are 32-bit, `%hu`/`%hhd` 16 and 8, `%ld`/`%lu`/`%llu`/`%zx`/`%p` 64;
/// widths, precisions and `-`/`0` flags as C lays them out.
#[test]
fn printf_conversions_match_bpftrace_byte_for_byte() {
    if !gates() {
        return;
    }
    let prog = "BEGIN { $m = -1; $b = 4294967296 + 5; \
                printf(\"%d|%u|%x|%X|%o|%hu|%hhd|%lu|%llu|%ld|%lld|%lx|%p|%zu|%jd\\n\", $m, $m, $m, $m, $m, $m, $m, $m, $m, $m, $m, $m, $m, $m, $m); \
                printf(\"%d|%u|%x|%ld|%lu|%zx|%5d|%-5d|%08x|%.3d|%08.3d|%-08d|\\n\", $b, $b, $b, $b, $b, $b, $b, $b, $b, $b, $b, $b); \
                printf(\"%10s|%-10s|%.2s|%5.1s|%-6.2s|%-3s|\\n\", \"abcdef\", \"abc\", \"abcdef\", \"xyz\", \"abcdef\", \"abcd\"); \
                printf(\"%u %d %lu\\n\", 0xffffffff + 1, nsecs > 0, 0xffffffff + 1); exit(); }";
    let ours = common::run_ok(&mut scry_run(prog));
    assert!(
        ours.contains(
            "\n-1|4294967295|ffffffff|FFFFFFFF|37777777777|65535|-1|18446744073709551615|"
        ),
        "{ours}"
    );
    assert!(
        ours.contains(
            "\n5|5|5|4294967301|4294967301|100000005|    5|5    |00000005|005|     005|5       |\n"
        ),
        "{ours}"
    );
    assert!(ours.contains("\n0 1 4294967296\n"), "{ours}");
    assert_eq!(ours, common::run_ok(&mut bpftrace(prog)));
}

/// `strncmp()`, `kptr()`/`uptr()`, `numaid` and `rand`, as bpftrace
/// prints them.
#[test]
fn strncmp_kptr_numaid_and_rand_match_bpftrace() {
    if !gates() {
        return;
    }
    let prog = "BEGIN { printf(\"%d %d %d %d %d %d %d\\n\", strncmp(\"abc\", \"abd\", 2), strncmp(\"abc\", \"abd\", 3), \
                strncmp(comm, comm, 16), strncmp(\"ab\", \"abc\", 8), kptr(5), uptr(6) + 1, numaid); \
                @r[rand >= 0] = count(); exit(); }";
    let ours = common::run_ok(&mut scry_run(prog));
    assert!(ours.contains("\n0 1 0 1 5 7 0\n"), "{ours}");
    assert!(ours.contains("\n@r[1]: 1\n"), "{ours}");
    assert_eq!(ours, common::run_ok(&mut bpftrace(prog)));
}

/// Bad programs: one message each with the place, exit 2.
#[test]
fn bad_programs_say_what_and_where() {
    let cases: &[(&str, &[&str])] = &[
        (
            "BEGIN { @x = 1 +; }",
            &[
                "stdin:1:17-18: ERROR: syntax error, unexpected ;",
                "BEGIN { @x = 1 +; }",
                "                ~",
            ],
        ),
        (
            "BEGIN { @x = \"a\" + 1; }",
            &["stdin:1:14-21: ERROR: Type mismatch for '+': comparing 'string[8]' with 'int64'"],
        ),
        (
            "BEGIN {\n  @y = $z; }",
            &["stdin:2:8-10: ERROR: Undefined or undeclared variable: $z"],
        ),
        ("BEGIN { foo(); }", &["Unknown function: foo"]),
        ("BEGIN { @x = count(); @x = 1; }", &["Type mismatch for @x"]),
        (
            "BEGIN { printf(\"%d %d\\n\", 1); }",
            &["printf: Not enough arguments"],
        ),
        (
            "foo:bar { }",
            &["stdin:1:1-8: ERROR: Invalid probe type: foo"],
        ),
    ];
    for (prog, needles) in cases {
        let out = common::output(&mut scry_run(prog));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{prog}: {err}");
        for needle in *needles {
            assert!(err.contains(needle), "{prog}: wanted {needle:?} in\n{err}");
        }
    }
}

#[test]
fn unknown_probe_and_field_name_the_place() {
    if !common::require_tracefs() {
        return;
    }
    let cases: &[(&str, &str)] = &[
        (
            "tracepoint:sched:nosuch { @x = 1; }",
            "stdin:1:1-24: ERROR: tracepoint not found: sched:nosuch",
        ),
        (
            "tracepoint:raw_syscalls:sys_enter { @x = args->nosuch; }",
            "stdin:1:42-54: ERROR: Struct/union of type 'struct _tracepoint_raw_syscalls_sys_enter' does not contain a field named 'nosuch'",
        ),
        ("tracepoint:nosuch:x* { }", "No probes matched the wildcard"),
    ];
    for (prog, needle) in cases {
        let out = common::output(&mut scry_run(prog));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{prog}: {err}");
        assert!(err.contains(needle), "{prog}: wanted {needle:?} in\n{err}");
    }
}

#[test]
fn uprobe_and_uretprobe_match_bpftrace() {
    if !gates() {
        return;
    }
    let Some(libc) = libc() else {
        return;
    };
    let dir = common::tempdir();
    let name = format!("lmal{}", std::process::id() % 100000);
    let mallocs = unique_copy(dir.path(), &common::workload("mallocs"), &name);
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         uprobe:{lib}:malloc /comm == \"{name}\"/ {{ @[probe] = count(); @size = hist(arg0); }}
         uretprobe:{lib}:malloc /comm == \"{name}\"/ {{ @ret = count(); @nonzero = sum(retval != 0); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}",
        lib = libc.display()
    );
    let ours = run_with(scry_run(&prog), || {
        run_status(Command::new(&mallocs).arg("2000"))
    });
    let theirs = run_with(bpftrace(&prog), || {
        run_status(Command::new(&mallocs).arg("2000"))
    });
    let maps = |t: &str| {
        t.split_once("\n\n\n")
            .map(|(_, m)| m.to_string())
            .unwrap_or_default()
    };
    assert_eq!(
        maps(&ours),
        maps(&theirs),
        "scry:\n{ours}\nbpftrace:\n{theirs}"
    );
    assert!(
        ours.contains(&format!("@[uprobe:{}:malloc]: ", libc.display())),
        "{ours}"
    );
}

#[test]
fn exec_filenames_from_a_data_loc_field_match_bpftrace() {
    if !gates() {
        return;
    }
    let dir = common::tempdir();
    let name = format!("lexe{}", std::process::id() % 100000);
    let quick = unique_copy(dir.path(), &common::workload("quick"), &name);
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         tracepoint:sched:sched_process_exec /comm == \"{name}\"/ {{ printf(\"%s %s\\n\", comm, str(args->filename)); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}"
    );
    let ours = run_with(scry_run(&prog), || run_status(&mut Command::new(&quick)));
    let theirs = run_with(bpftrace(&prog), || run_status(&mut Command::new(&quick)));
    let line = format!("{name} {}", quick.display());
    assert_eq!(
        lines_with(&ours, &name),
        std::slice::from_ref(&line),
        "{ours}"
    );
    assert_eq!(lines_with(&theirs, &name), [line], "{theirs}");
}

#[test]
fn profile_kstack_counts() {
    if !common::require_tracefs() {
        return;
    }
    // dd's copies are in the kernel: a loaded machine's samples can all be
    // in user code, and an empty kstack prints no frame.
    let mut dd = Command::new("dd")
        .args(["if=/dev/zero", "of=/dev/null", "bs=1M", "count=100000000"])
        .stderr(Stdio::null())
        .spawn()
        .expect("dd");
    let out = common::run_ok(&mut scry_run(&format!(
        "profile:hz:199 /pid == {}/ {{ @[kstack(2)] = count(); @n = count(); }} interval:ms:300 {{ exit(); }}",
        dd.id()
    )));
    let _ = dd.kill();
    let _ = dd.wait();
    // Stacks as bpftrace prints them: one frame a line, four spaces in.
    assert!(out.contains("\n@[\n    "), "{out}");
    let n: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("@n: "))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(n > 0, "{out}");
}

#[test]
fn program_from_a_file_and_bad_file() {
    let dir = common::tempdir();
    let file = dir.path().join("hello.bt");
    std::fs::write(&file, "BEGIN {\n  printf(\"hello\\n\");\n  exit();\n}\n").expect("write");
    if common::require_tracefs() {
        let out = common::run_ok(common::scry().args(["run"]).arg(&file));
        assert_eq!(out, "Attaching 1 probe...\nhello\n\n\n");
    }
    std::fs::write(&file, "BEGIN {\n  printf(\"hello\\n\")\n  exit();\n}\n").expect("write");
    let out = common::output(common::scry().args(["run"]).arg(&file));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}:3:3-7: ERROR: syntax error, unexpected exit",
            file.display()
        )),
        "{err}"
    );
}

#[test]
fn listing_probes_as_bpftrace_does() {
    if !common::require_tracefs() {
        return;
    }
    let out = common::run_ok(common::scry().args(["run", "-l", "tracepoint:sched:sched_switch*"]));
    assert_eq!(out, "tracepoint:sched:sched_switch\n");
    let out = common::run_ok(common::scry().args(["run", "-l", "t:syscalls:sys_enter_getppid"]));
    assert_eq!(out, "tracepoint:syscalls:sys_enter_getppid\n");
}

/// bpftrace's own tools run unchanged: syscount.bt, stopped by Ctrl-C,
/// prints its END tables (`print(@m, 10)` keeps the top ten).
#[test]
fn bpftrace_syscount_tool_runs_unchanged() {
    if !common::require_tracefs() {
        return;
    }
    let tool = Path::new("/usr/sbin/syscount.bt");
    if !common::gate(if tool.exists() {
        Ok(())
    } else {
        Err("no /usr/sbin/syscount.bt (bpftrace)".into())
    }) {
        return;
    }
    let mut child = common::scry()
        .arg("run")
        .arg(tool)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("scry run");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout);
    let mut text = String::new();
    while !text.contains("Counting syscalls") {
        let mut line = String::new();
        if lines.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        text.push_str(&line);
    }
    // Something to count, then Ctrl-C.
    run_status(Command::new(common::workload("calls")).arg("100"));
    common::signal(child.id(), "INT");
    let status = common::wait_timeout(&mut child, Duration::from_secs(30));
    let _ = lines.read_to_string(&mut text);
    assert!(status.is_some_and(|s| s.success()), "{status:?} {text}");
    let tables = text
        .split_once("Top 10 syscalls IDs:\n")
        .map(|t| t.1)
        .unwrap_or("");
    let ids = tables
        .lines()
        .take_while(|l| l.starts_with("@syscall["))
        .count();
    assert!((1..=10).contains(&ids), "{text}");
    assert!(text.contains("Top 10 processes:\n@process["), "{text}");
}

/// A thread sending each line `stdout` prints, as it comes; it ends with
/// the stream.
pub(crate) fn line_reader(
    stdout: std::process::ChildStdout,
) -> (mpsc::Receiver<String>, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout);
        let mut line = String::new();
        while lines.read_line(&mut line).unwrap_or(0) > 0 {
            let _ = tx.send(std::mem::take(&mut line));
        }
    });
    (rx, reader)
}

/// Starts `tool` on a program or tool file, waits for a line holding
/// `ready`, runs `workload`, waits (up to 30 s) for a line holding
/// `last` (a tracer may drop what it has not printed at SIGINT), then
/// stops the tool with SIGINT and returns all it printed.
fn run_until_interrupted(
    mut tool: Command,
    ready: &str,
    last: &str,
    workload: impl FnOnce(),
) -> String {
    let mut child = tool
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the tracer");
    let (rx, reader) = line_reader(child.stdout.take().expect("stdout"));
    let mut text = String::new();
    let wait_for = |needle: &str, text: &mut String| {
        while !text.contains(needle) {
            match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(line) => text.push_str(&line),
                Err(_) => return false,
            }
        }
        true
    };
    assert!(
        wait_for(ready, &mut text),
        "{tool:?} never printed {ready:?}: {text}"
    );
    workload();
    let seen = wait_for(last, &mut text);
    common::signal(child.id(), "INT");
    let status = common::wait_timeout(&mut child, Duration::from_secs(30));
    reader.join().expect("reader");
    text.extend(rx.try_iter());
    assert!(seen, "{tool:?} never printed {last:?}: {text}");
    assert!(status.is_some_and(|s| s.success()), "{status:?} {text}");
    text
}

/// bpftrace's execsnoop.bt (`join(args->argv)`, `elapsed`, `1e6`) runs
/// unchanged and prints the same arguments for the same exec.
#[test]
fn execsnoop_tool_joins_argv_as_bpftrace() {
    let tool = Path::new("/usr/sbin/execsnoop.bt");
    if !gates()
        || !common::gate(if tool.exists() {
            Ok(())
        } else {
            Err("no /usr/sbin/execsnoop.bt (bpftrace)".into())
        })
    {
        return;
    }
    let dir = common::tempdir();
    let name = format!("ljoin{}", std::process::id() % 100000);
    let quick = unique_copy(dir.path(), &common::workload("quick"), &name);
    let long = "x".repeat(200);
    let mut outs = Vec::new();
    for scry in [true, false] {
        let mut cmd = if scry {
            let mut c = common::scry();
            c.arg("run");
            c
        } else {
            Command::new("bpftrace")
        };
        cmd.arg(tool);
        let path = quick.to_string_lossy();
        outs.push(run_until_interrupted(cmd, "TIME(ms)", &path, || {
            run_status(Command::new(&quick).args(["a", "bb", &long, "ccc", "", "ddd"]))
        }));
    }
    // TIME(ms) and PID differ; the arguments from the path on do not.
    let args = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                l.find(&*quick.to_string_lossy())
                    .map(|i| l[i..].to_string())
            })
            .collect()
    };
    // bpftrace stops at the first empty argument.
    let want = format!("{} a bb {long} ccc", quick.display());
    assert_eq!(
        args(&outs[0]),
        std::slice::from_ref(&want),
        "scry:\n{}",
        outs[0]
    );
    assert_eq!(args(&outs[1]), [want], "bpftrace:\n{}", outs[1]);
}

/// `str(p, n)` (literal and computed `n`), `ksym`, `kaddr`, `usym`,
/// `func`, `cgroup` and `time` with a format, printed as bpftrace prints
/// them for the same events.
#[test]
fn symbols_strings_and_time_match_bpftrace() {
    if !gates() {
        return;
    }
    let Some(libc) = libc() else {
        return;
    };
    let dir = common::tempdir();
    let name = format!("lsym{}", std::process::id() % 100000);
    let threads = unique_copy(dir.path(), &common::workload("threads"), &name);
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         tracepoint:syscalls:sys_enter_execve /str(args->filename) == \"{path}\"/ {{
           $n = 4; printf(\"[%s] [%s] [%s] [%s]\\n\", str(args->filename, 5), str(args->filename, $n),
             ksym(kaddr(\"vfs_read\")), ksym(kaddr(\"vfs_read\") + 3));
           time(\"%Y-%m-%d %a\\n\"); @cg[cgroup == cgroup] = count(); }}
         uprobe:{lib}:pthread_create /comm == \"{name}\"/ {{ printf(\"%s %s\\n\", usym(arg2), func); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}",
        path = threads.display(),
        lib = libc.display()
    );
    let workload = || {
        run_status(
            Command::new(&threads)
                .args(["2", "30"])
                .stdout(Stdio::null()),
        )
    };
    let ours = run_with(scry_run(&prog), workload);
    let theirs = run_with(bpftrace(&prog), workload);
    let strip = |t: &str| t.replace("Attaching 4 probes...\n", "");
    let path = threads.to_string_lossy();
    let want = format!("[{}] [{}] [vfs_read] [vfs_read]\n", &path[..5], &path[..4]);
    assert!(ours.contains(&want), "{ours}");
    assert_eq!(
        lines_with(&ours, "thread_main pthread_create").len(),
        2,
        "{ours}"
    );
    assert_eq!(
        strip(&ours),
        strip(&theirs),
        "scry:\n{ours}\nbpftrace:\n{theirs}"
    );
}

/// Kernel structs through BTF: a cast of `curtask`, `->` through
/// pointers and embedded structs, a struct pointer argument of a
/// tracepoint (`args->rqtp->tv_sec`), a header constant
/// (`TASK_RUNNING`) and integer casts, printed as bpftrace prints them.
#[test]
fn kernel_structs_through_btf_match_bpftrace() {
    if !gates() {
        return;
    }
    let dir = common::tempdir();
    let name = format!("lbtf{}", std::process::id() % 100000);
    let sleeper = unique_copy(dir.path(), &common::workload("sleeper"), &name);
    // bpftrace takes TASK_RUNNING from linux/sched.h (which its clang
    // cannot read here: `__aligned_u64`); scry knows it, bpftrace gets 0.
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         tracepoint:syscalls:sys_enter_clock_nanosleep /comm == \"{name}\"/ {{
           $task = (struct task_struct *)curtask;
           printf(\"%d %d %s %d %d %d %d %d %s\\n\", $task->pid == tid, $task->tgid == pid,
             $task->real_parent->comm, args->rqtp->tv_sec, args->rqtp->tv_nsec / 1000000,
             $task->__state == TASK_RUNNING, (uint8)257, (int8)255, $task->comm);
           @state[curtask->__state] = count(); @onrq = sum($task->se.on_rq); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}"
    );
    let workload = || {
        run_status(
            Command::new(&sleeper)
                .args(["3", "10"])
                .stderr(Stdio::null()),
        )
    };
    let ours = run_with(scry_run(&prog), workload);
    let theirs = run_with(bpftrace(&prog.replace("TASK_RUNNING", "0")), workload);
    let line = |t: &str| lines_with(t, "1 1 ");
    assert_eq!(line(&ours).len(), 3, "{ours}");
    assert!(
        line(&ours)[0].ends_with(&format!(" 0 10 1 1 -1 {name}")),
        "{ours}"
    );
    assert_eq!(
        line(&ours),
        line(&theirs),
        "scry:\n{ours}\nbpftrace:\n{theirs}"
    );
    for prefix in ["@state", "@onrq"] {
        assert_eq!(
            lines_with(&ours, prefix),
            lines_with(&theirs, prefix),
            "{ours}\n{theirs}"
        );
    }
}

/// bpftrace's runqlat.bt (`TASK_RUNNING`, a map read into a variable,
/// `delete`, `clear`) runs unchanged and prints its histogram.
#[test]
fn runqlat_tool_runs_unchanged() {
    let tool = Path::new("/usr/sbin/runqlat.bt");
    if !common::require_tracefs()
        || !common::gate(if tool.exists() {
            Ok(())
        } else {
            Err("no /usr/sbin/runqlat.bt (bpftrace)".into())
        })
    {
        return;
    }
    let mut cmd = common::scry();
    cmd.arg("run").arg(tool);
    let out = run_until_interrupted(cmd, "Tracing CPU scheduler", "Tracing", || {
        run_status(
            Command::new(common::workload("sleeper"))
                .args(["20", "2"])
                .stderr(Stdio::null()),
        )
    });
    assert!(out.contains("\n@usecs: \n["), "{out}");
    assert!(!out.contains("@qtime"), "{out}");
}

/// `while` with `break` and `continue`, and `unroll`: the same output as
/// bpftrace's, byte for byte.
#[test]
fn loops_match_bpftrace() {
    if !gates() {
        return;
    }
    let prog = "BEGIN { $i = 0; $s = 0; while ($i < 10) { $i++; if ($i == 3) { continue; } \
                if ($i == 8) { break; } $s += $i; } unroll(3) { @u++; } \
                if ($s > 0) { printf(\"%d %d\\n\", $i, $s); exit(); } }";
    let ours = common::run_ok(&mut scry_run(prog));
    assert!(ours.contains("\n8 25\n"), "{ours}");
    assert_eq!(ours, common::run_ok(&mut bpftrace(prog)));
}

/// A program the verifier refuses: its message names the line the
/// refused instruction came from, with the verifier's reason; exit 2.
/// `--dry-run` refuses it the same way, and loads a good one without
/// attaching or running it.
#[test]
fn verifier_refusal_names_the_source_line() {
    if !common::require_tracefs() {
        return;
    }
    let out = common::output(&mut scry_run(
        "BEGIN { $x = 0;\n  while (1) {\n    $x = 1; } }",
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("stdin:2:10-11: ERROR: the BPF verifier refused the program of BEGIN"),
        "{err}"
    );
    assert!(err.contains("infinite loop detected"), "{err}");
    assert!(err.contains("\n  while (1) {\n         ~"), "{err}");
    // --dry-run loads as a run does (the same refusal), and attaches and
    // runs nothing: BEGIN's printf is not printed.
    let out = common::output(
        scry_run("BEGIN { $x = 0;\n  while (1) {\n    $x = 1; } }").arg("--dry-run"),
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr), err);
    let out = common::run_ok(
        scry_run("BEGIN { printf(\"begun\\n\"); } tracepoint:sched:sched_switch { @ = count(); }")
            .arg("--dry-run"),
    );
    assert_eq!(
        out,
        "Dry run: 2 of 2 probe programs compiled and loaded, none attached\n"
    );
}

/// Records the ring buffer has no room for are counted and reported as
/// bpftrace reports its lost events: 300 joins of 16 KiB from BEGIN
/// overflow the 4 MiB ring before anything reads it.
#[test]
fn lost_records_are_reported() {
    if !common::require_tracefs() {
        return;
    }
    let out = common::run_ok(&mut scry_run(
        "BEGIN { $i = 0; while ($i < 300) { join(0); $i++; } } interval:ms:100 { exit(); }",
    ));
    let lost: u64 = out
        .lines()
        .find_map(|l| {
            l.strip_prefix("Lost ")?
                .strip_suffix(" events")?
                .parse()
                .ok()
        })
        .unwrap_or(0);
    assert!((1..300).contains(&lost), "{out}");
}

/// `kprobe:`/`kretprobe:` probes: an offset is refused with
/// the place, and on a kernel without the kprobe PMU (this host's) the
/// probe's line says what is missing; exit 2 and nothing attached. The
/// probes themselves are proven in the qemu guest
/// (`kernel_matrix::guest_run_kprobe_and_kretprobe`).
#[test]
fn kernel_function_probes_say_what_they_need() {
    let out = common::output(&mut scry_run("kprobe:vfs_read+4 { @ = count(); }"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("stdin:1:1-18: ERROR: kprobe probe must be kprobe:FUNCTION"),
        "{err}"
    );
    if std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists() {
        eprintln!("this kernel has kprobes: the missing-kprobes message is not checked here");
        return;
    }
    let out = common::output(&mut scry_run(
        "kretprobe:do_sys_openat2 { @[retval] = count(); }",
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("stdin:1:1-25: ERROR: kretprobe:do_sys_openat2: this kernel has no kprobes"),
        "{err}"
    );
}

/// `fentry:`/`fexit:` (and bpftrace's `kfunc:`/`kretfunc:`): a function
/// BTF lacks and a parameter the function lacks are errors at their place
/// (the parameters named); on a kernel that refuses fentry programs (this
/// host's: EPERM while other programs load) the probe's line says so with
/// the kernel's reason, exit 2. The probes themselves are proven in the
/// qemu guest (`kernel_matrix::guest_run_fentry_fexit_and_wildcards`).
#[test]
fn fentry_probes_say_what_the_kernel_refused() {
    if !common::require_tracefs() {
        return;
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        common::gate(Err("no /sys/kernel/btf/vmlinux".into()));
        return;
    }
    let out = common::output(&mut scry_run(
        "kfunc:no_such_function_here { @ = count(); }",
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("stdin:1:1-28: ERROR: fentry:no_such_function_here: no kernel function no_such_function_here in BTF"),
        "{err}"
    );
    let out = common::output(&mut scry_run(
        "fexit:vfs_read { @[args.nosuch, retval] = count(); }",
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("stdin:1:20-31: ERROR: Can't find function parameter nosuch of vfs_read (it has: file, buf, count, pos)"),
        "{err}"
    );
    let out = common::output(&mut scry_run(
        "fentry:vfs_read { @[args.count] = count(); } interval:ms:100 { exit(); }",
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        eprintln!("this kernel runs fentry programs: the refusal message is not checked here");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("stdin:1:1-16: ERROR: fentry:vfs_read: the kernel refused fentry/fexit ("),
        "{err}"
    );
    assert_eq!(
        err.lines().count(),
        3,
        "one message, the line and its caret: {err}"
    );
    // A list whose one existing function is refused does not run without
    // it: the refusal is the error.
    let out = common::output(&mut scry_run(
        "kfunc:no_such_function_here, fentry:vfs_read { @ = count(); } interval:ms:100 { exit(); }",
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("WARNING: fentry:no_such_function_here: no kernel function"),
        "{err}"
    );
    assert!(
        err.contains("\nstdin:1:30-45: ERROR: fentry:vfs_read: the kernel refused fentry/fexit ("),
        "{err}"
    );
}

/// `ntop()` (an integer, a tracepoint's `__u8` arrays of 4 and 16 bytes,
/// BTF's `in6_u.u6_addr8`, the two-argument form) and `bswap()` (16, 32
/// and 64 bits, a variable first set from a BTF `__be16`): the same lines
/// and counts as bpftrace's for IPv4 and IPv6 loopback connections.
#[test]
fn ntop_and_bswap_match_bpftrace() {
    if !gates() {
        return;
    }
    let dir = common::tempdir();
    let id = std::process::id() % 100000;
    let (v4, v6) = (format!("lnt4{id}"), format!("lnt6{id}"));
    let conns4 = unique_copy(dir.path(), &common::workload("conns"), &v4);
    let conns6 = unique_copy(dir.path(), &common::workload("conns"), &v6);
    let prog = format!(
        "BEGIN {{ printf(\"%x %x %lx %s %s\\nready\\n\", bswap((uint16)0x1234), bswap((uint32)0x12345678),
             bswap(0x1122334455667788), ntop(0x0100007f), ntop(2, 0x0200a8c0)); }}
         tracepoint:sock:inet_sock_set_state /comm == \"{v4}\" || comm == \"{v6}\"/ {{
           $sk = (struct sock *)args->skaddr;
           $dport = $sk->__sk_common.skc_dport;
           @a[ntop(args->saddr), ntop(args->daddr), ntop(args->saddr_v6), ntop(args->family, args->daddr_v6)] = count();
           @b[ntop($sk->__sk_common.skc_daddr), ntop($sk->__sk_common.skc_v6_daddr.in6_u.u6_addr8)] = count();
           @p[bswap($dport) == args->dport, bswap((uint16)bswap(args->sport)) == args->sport] = count();
         }}
         tracepoint:sched:sched_process_exit /comm == \"{v6}\" && pid == tid/ {{ exit(); }}"
    );
    let workload = || {
        run_status(
            Command::new(&conns4)
                .args(["3", "10", "10", "4"])
                .stderr(Stdio::null()),
        );
        run_status(
            Command::new(&conns6)
                .args(["2", "10", "10", "6"])
                .stderr(Stdio::null()),
        );
    };
    let ours = run_with(scry_run(&prog), workload);
    let theirs = run_with(bpftrace(&prog), workload);
    assert!(
        ours.contains("3412 78563412 8877665544332211 127.0.0.1 192.168.0.2\n"),
        "{ours}"
    );
    assert!(ours.contains("@p[1, 1]: "), "{ours}");
    assert!(ours.contains(", ::1, ::1]: "), "{ours}");
    for prefix in ["3412 ", "@a[", "@b[", "@p["] {
        assert_eq!(
            lines_with(&ours, prefix),
            lines_with(&theirs, prefix),
            "{ours}\n{theirs}"
        );
    }
}

/// `cat()` prints a file's bytes as bpftrace's does, its path formatted as printf's; and in a list of attach points
/// one the kernel lacks is skipped with a warning (bpftrace's tools name
/// a kernel function by its old and its new name), the others counting
/// what bpftrace counts, and "Attaching N probes" counting it as
/// bpftrace's does.
#[test]
fn cat_and_a_missing_probe_in_a_list_as_bpftrace() {
    if !gates() {
        return;
    }
    let dir = common::tempdir();
    std::fs::write(dir.path().join("f1"), "one\ntwo").expect("write the file");
    let prog = format!(
        "BEGIN {{ cat(\"{}/f%d\", 1); exit(); }}",
        dir.path().display()
    );
    let ours = common::run_ok(&mut scry_run(&prog));
    assert!(ours.contains("\none\ntwo\n\n"), "{ours}");
    assert_eq!(ours, common::run_ok(&mut bpftrace(&prog)));
    let name = format!("lmiss{}", std::process::id() % 100000);
    let calls = unique_copy(dir.path(), &common::workload("calls"), &name);
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         tracepoint:sched:no_such_event, tracepoint:syscalls:sys_enter_getppid /comm == \"{name}\"/ {{ @ = count(); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}"
    );
    let ours = run_with(scry_run(&prog), || {
        run_status(Command::new(&calls).arg("200"))
    });
    let theirs = run_with(bpftrace(&prog), || {
        run_status(Command::new(&calls).arg("200"))
    });
    assert!(ours.contains("\n@: 200\n"), "{ours}");
    assert_eq!(lines_with(&ours, "@"), lines_with(&theirs, "@"));
    // bpftrace counts the missing tracepoint among the probes it attaches.
    assert!(ours.starts_with("Attaching 4 probes...\n"), "{ours}");
    assert_eq!(ours.lines().next(), theirs.lines().next());
}

/// A uprobe wildcard expands to the library's functions it matches, and
/// in a list an attach point whose function the library lacks is left
/// out before counting (as bpftrace leaves it out: bpftrace's ssl tools
/// name functions only some OpenSSL builds have); a tracepoint of a list
/// the kernel lacks gets bpftrace's warning, with its place.
#[test]
fn uprobe_wildcards_and_missing_attach_points_as_bpftrace() {
    if !gates() {
        return;
    }
    let Some(libc) = libc() else {
        return;
    };
    let dir = common::tempdir();
    let name = format!("luwc{}", std::process::id() % 100000);
    let calls = unique_copy(dir.path(), &common::workload("calls"), &name);
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         uprobe:{lib}:syscal*, uprobe:{lib}:no_such_function_here /comm == \"{name}\"/ {{ @[probe] = count(); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}",
        lib = libc.display()
    );
    let ours = run_with(scry_run(&prog), || {
        run_status(Command::new(&calls).arg("200"))
    });
    let theirs = run_with(bpftrace(&prog), || {
        run_status(Command::new(&calls).arg("200"))
    });
    assert!(ours.starts_with("Attaching 3 probes...\n"), "{ours}");
    assert!(
        ours.contains(&format!("\n@[uprobe:{}:syscall]: 200\n", libc.display())),
        "{ours}"
    );
    assert_eq!(ours.lines().next(), theirs.lines().next());
    assert_eq!(lines_with(&ours, "@"), lines_with(&theirs, "@"));
    let prog = "tracepoint:sched:no_such_event, tracepoint:syscalls:sys_enter_getppid { @ = count(); } BEGIN { exit(); }";
    let warning = "stdin:1:1-31: WARNING: tracepoint not found: sched:no_such_event\n\
                   tracepoint:sched:no_such_event, tracepoint:syscalls:sys_enter_getppid { @ = count(); } BEGIN { exit(); }\n\
                   ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n";
    for mut cmd in [scry_run(prog), bpftrace(prog)] {
        let out = common::output(&mut cmd);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{cmd:?}: {err}");
        assert!(err.contains(warning), "{cmd:?}: {err}");
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("Attaching 3 probes...\n"),
            "{cmd:?}"
        );
    }
}

/// A uprobe on a library named without a path: `probe` is the file as
/// bpftrace finds it (`uprobe:/lib/x86_64-linux-gnu/libc.so.6:syscall`).
#[test]
fn uprobe_on_a_library_name_is_named_as_bpftrace() {
    let Some((_dir, calls, name)) = libc_workload("lulib", "calls") else {
        return;
    };
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         uprobe:libc:syscall /comm == \"{name}\"/ {{ @[probe] = count(); }}
         tracepoint:sched:sched_process_exit /comm == \"{name}\"/ {{ exit(); }}"
    );
    let ours = run_with(scry_run(&prog), || {
        run_status(Command::new(&calls).arg("50"))
    });
    let theirs = run_with(bpftrace(&prog), || {
        run_status(Command::new(&calls).arg("50"))
    });
    assert_eq!(lines_with(&ours, "@"), lines_with(&theirs, "@"), "{ours}");
    assert!(ours.contains("/libc.so.6:syscall]: 50"), "{ours}");
}

/// `uprobe:libc:mallo*` takes in libc's static functions
/// (`malloc_consolidate`, `malloc_printerr`), which only its debug file
/// (libc6-dbg, by build-id) names, as bpftrace does: the same probes
/// attached, the same counts for a command's mallocs.
#[test]
fn uprobe_wildcards_find_static_functions_through_the_debug_file_as_bpftrace() {
    if !gates() || libc().is_none() {
        return;
    }
    let dbg = Command::new("dpkg").args(["-s", "libc6-dbg"]).output();
    if !common::gate(match dbg {
        Ok(out) if out.status.success() => Ok(()),
        _ => Err("libc6-dbg is not installed (scripts/deps)".to_string()),
    }) {
        return;
    }
    let prog = "uprobe:libc:mallo* /pid == cpid/ { @[probe] = count(); }";
    let cmd = "/bin/ls -lR /usr/include/linux";
    let ours = common::run_ok(scry_run(prog).args(["-c", cmd]));
    let theirs = common::run_ok(bpftrace(prog).args(["-c", cmd]));
    assert_eq!(ours.lines().next(), Some("Attaching 8 probes..."), "{ours}");
    assert_eq!(ours.lines().next(), theirs.lines().next());
    let counts = lines_with(&ours, "@[");
    assert_eq!(counts, lines_with(&theirs, "@["));
    assert!(
        counts.iter().any(|l| l.contains(":malloc_consolidate]: ")),
        "{counts:?}"
    );
}
