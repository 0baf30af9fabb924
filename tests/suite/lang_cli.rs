//! `scry run`'s command line as bpftrace's: `-c CMD` and `-p PID` (the
//! run ends with the process; uprobes fire in it alone), positional
//! parameters (`$1`, `$#`, `str($1)`), `-o FILE` and `-q`, each against
//! Debian's bpftrace on the same program and workload.
//!
//! Debian's bpftrace (0.17) attaches uprobes to every process even under
//! `-c` or `-p`; the programs compared filter on `cpid` or the pid, and
//! scry's scoping is checked apart, beside a busy process of the same
//! code.

use crate::common;
use crate::lang::{bpftrace, gates, libc_workload, lines_with, run_with, scry_run, unique_copy};

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Runs `cmd` to its own end (at most 60 s); its stdout.
fn run_to_end(mut cmd: Command) -> String {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the tracer");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("{cmd:?} did not end with its process");
        }
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd:?}: {err}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `-c CMD`: attached before CMD runs (every call counted), `cpid` is its
/// pid, the run ends when it exits; the counts are bpftrace's. scry's
/// uprobes fire in CMD alone: a busy copy of the same program beside it
/// adds nothing.
#[test]
fn dash_c_counts_the_command_as_bpftrace_and_ends_with_it() {
    let Some((dir, calls, _)) = libc_workload("lcc", "calls") else {
        return;
    };
    let noise = unique_copy(dir.path(), &common::workload("calls"), "lccnoise");
    let prog = "uprobe:libc:syscall /pid == cpid/ { @calls = count(); }
                tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @tp = count(); }";
    let cmd = format!("{} 300", calls.display());
    let mut ours = scry_run(prog);
    ours.args(["-c", &cmd]);
    let mut theirs = bpftrace(prog);
    theirs.args(["-c", &cmd]);
    let (ours, theirs) = (run_to_end(ours), run_to_end(theirs));
    assert_eq!(
        lines_with(&ours, "@"),
        ["@calls: 300", "@tp: 300"],
        "{ours}"
    );
    assert_eq!(lines_with(&ours, "@"), lines_with(&theirs, "@"));
    let mut busy = Command::new(&noise)
        .arg("1000000000")
        .spawn()
        .expect("start the busy copy");
    let mut scoped = common::scry();
    scoped.args(["run", "-c", &cmd, "uprobe:libc:syscall { @ = count(); }"]);
    let out = run_to_end(scoped);
    let _ = busy.kill();
    let _ = busy.wait();
    assert_eq!(lines_with(&out, "@"), ["@: 300"], "{out}");
}

/// A `mallocs N wait` started apart (it says `ready`, then waits for a
/// line before its N mallocs), its pid and stdin.
fn waiting_mallocs(path: &std::path::Path) -> (std::process::Child, u32) {
    let mut child = Command::new(path)
        .args(["2000", "wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start mallocs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read ready");
    assert_eq!(line, "ready\n");
    let pid = child.id();
    (child, pid)
}

/// Lets a `waiting_mallocs` run its mallocs and exit.
fn release(mut child: std::process::Child) {
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"go\n")
        .expect("release mallocs");
    assert!(child.wait().expect("wait").success());
}

/// `-p PID`: the uprobe counts the process's mallocs as bpftrace's (which
/// filters on the pid), and both runs end when it exits.
#[test]
fn dash_p_counts_the_process_as_bpftrace_and_ends_with_it() {
    let Some((_dir, mallocs, _)) = libc_workload("lcp", "mallocs") else {
        return;
    };
    let (child, pid) = waiting_mallocs(&mallocs);
    let mut ours = scry_run("BEGIN { printf(\"ready\\n\"); } uprobe:libc:malloc { @ = count(); }");
    ours.args(["-p", &pid.to_string()]);
    let ours = run_with(ours, || release(child));
    let (child, pid) = waiting_mallocs(&mallocs);
    let mut theirs = bpftrace(&format!(
        "BEGIN {{ printf(\"ready\\n\"); }} uprobe:libc:malloc /pid == {pid}/ {{ @ = count(); }}"
    ));
    theirs.args(["-p", &pid.to_string()]);
    let theirs = run_with(theirs, || release(child));
    let counts = lines_with(&ours, "@: ");
    assert_eq!(counts, lines_with(&theirs, "@: "), "{ours}\n{theirs}");
    let count: u64 = counts[0]["@: ".len()..].parse().expect("a count");
    assert!(count >= 2000, "{ours}");
}

/// A process that does not exist, a command that cannot run: one line
/// each, exit 2, before anything is loaded.
#[test]
fn a_missing_process_or_command_is_refused_in_one_line() {
    if !gates() {
        return;
    }
    let cases: [(&[&str], &str); 3] = [
        (
            &["-p", "2147483646"],
            "scry: run: -p 2147483646: no such process",
        ),
        (
            &["-c", "/no/such/program 1"],
            "scry: run: -c /no/such/program 1: no program '/no/such/program' to run",
        ),
        (
            &["-c", "no-such-program-here"],
            "no program 'no-such-program-here' to run",
        ),
    ];
    for (flags, says) in cases {
        let out = common::output(
            common::scry()
                .arg("run")
                .args(flags)
                .arg("uprobe:libc:malloc { @ = count(); }"),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{flags:?}: {err}");
        assert!(err.contains(says), "{flags:?}: {err}");
        assert!(out.stdout.is_empty(), "{flags:?}");
    }
}

/// bpftrace's stderr without its complaint about RLIMIT_MEMLOCK (which
/// scry has no reason to make).
fn without_rlimit(err: &[u8]) -> String {
    String::from_utf8_lossy(err)
        .lines()
        .filter(|l| !l.contains("RLIMIT_MEMLOCK"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `$1`.. as numbers, `str($N)` as text (and from an offset), `$#`, the
/// ones not given as 0 and "": the bytes bpftrace prints; a word used as
/// a number is bpftrace's (first) error, at the same place.
#[test]
fn positional_parameters_as_bpftrace() {
    if !gates() {
        return;
    }
    let prog = r#"BEGIN { printf("%d %s %d|%s| %d %d\n", $1, str($2), $#, str($3), $1 + 1, $4); @[$1] = count(); exit(); }"#;
    for params in [&["42", "hello"][..], &[], &["0x10", "x", "y", "7"]] {
        let ours = common::run_ok(scry_run(prog).args(params));
        let theirs = common::run_ok(bpftrace(prog).args(params));
        assert_eq!(ours, theirs, "{params:?}");
    }
    let offset = r#"BEGIN { printf("%s|\n", str($1 + 2)); exit(); }"#;
    for params in [["hello"], ["ab"]] {
        let ours = common::run_ok(scry_run(offset).args(params));
        assert_eq!(ours, common::run_ok(bpftrace(offset).args(params)));
    }
    let ours = common::output(scry_run(offset).arg("a"));
    let theirs = common::output(bpftrace(offset).arg("a"));
    assert_eq!(ours.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&ours.stderr),
        without_rlimit(&theirs.stderr)
    );
    let ours = common::output(scry_run(prog).args(["abc"]));
    let theirs = common::output(bpftrace(prog).args(["abc"]));
    assert_eq!(ours.status.code(), Some(2));
    assert!(!theirs.status.success());
    let err = String::from_utf8_lossy(&ours.stderr);
    assert!(
        err.contains("ERROR: $1 used numerically but given \"abc\". Try using str($1)."),
        "{err}"
    );
    // bpftrace goes on to name every use; scry stops at the first.
    assert!(without_rlimit(&theirs.stderr).starts_with(&*err), "{err}");
}

/// `-o FILE` takes what bpftrace's takes (the two newlines before the
/// maps stay on stdout, as bpftrace leaves them), in a file only its owner
/// reads; `-q` drops the "Attaching" line.
#[test]
fn output_file_and_quiet_as_bpftrace() {
    if !gates() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = common::tempdir();
    let prog = r#"BEGIN { printf("hi\n"); @a = 1; @b[2] = 3; @h = hist(3); exit(); }"#;
    let (ours_file, theirs_file) = (dir.path().join("scry.txt"), dir.path().join("bpftrace.txt"));
    let ours = common::run_ok(scry_run(prog).arg("-o").arg(&ours_file));
    let theirs = common::run_ok(bpftrace(prog).arg("-o").arg(&theirs_file));
    assert_eq!(ours, theirs);
    let text = std::fs::read_to_string(&ours_file).expect("scry's -o file");
    assert_eq!(
        text,
        std::fs::read_to_string(&theirs_file).expect("bpftrace's")
    );
    assert!(
        text.starts_with("Attaching 1 probe...\nhi\n@a: 1\n"),
        "{text}"
    );
    let mode = std::fs::metadata(&ours_file)
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let ours = common::run_ok(scry_run(prog).arg("-q"));
    let theirs = common::run_ok(bpftrace(prog).arg("-q"));
    assert_eq!(ours, theirs);
    assert!(ours.starts_with("hi\n"), "{ours}");
}

/// `-l` of a uprobe pattern lists the binary's functions it matches, its
/// debug file's static ones too, named as bpftrace names them.
#[test]
fn listing_uprobes_as_bpftrace() {
    if !gates() {
        return;
    }
    for pattern in [
        "uprobe:libc:mallo*",
        "uretprobe:/lib/x86_64-linux-gnu/libc.so.6:mallo*",
    ] {
        let ours = common::run_ok(common::scry().args(["run", "-l", pattern]));
        let theirs = common::run_ok(Command::new("bpftrace").args(["-l", pattern]));
        assert!(ours.contains(":malloc\n"), "{pattern}: {ours}");
        assert_eq!(ours, theirs, "{pattern}");
    }
}
