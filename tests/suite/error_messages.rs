//! Errors say their cause once, in one line (`scry: nosuch.data: No such
//! file or directory`, not the OS error twice nor its number), a closed
//! pipe is not an error, and a tracefs closed to the user is called that,
//! with what would help, not "not mounted".

use crate::common;

use std::process::Stdio;

#[test]
fn each_cause_is_said_once() {
    let dir = common::tempdir();
    let d = dir.path().to_str().expect("UTF-8 temp path");
    let missing = format!("{d}/nosuch.data");
    let unwritable = format!("{d}/no/such/dir/out");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["report", "-i", &missing], "No such file or directory"),
        (vec!["script", "-i", &missing], "No such file or directory"),
        (
            vec!["flamegraph", "-i", &missing],
            "No such file or directory",
        ),
        (
            vec!["sched", "runqlat", "-i", &missing],
            "No such file or directory",
        ),
        (
            vec!["report", "--profile", "-i", &missing],
            "No such file or directory",
        ),
        (
            vec!["record", "-q", "-o", &unwritable, "--", "true"],
            "No such file or directory",
        ),
        (vec!["stat", "-o", d, "--", "true"], "Is a directory"),
    ];
    for (args, cause) in cases {
        let out = common::output(common::scry().args(&args));
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| !l.contains("not supported here"))
            .collect();
        assert_eq!(out.status.code(), Some(2), "scry {args:?}: {err}");
        assert_eq!(lines.len(), 1, "scry {args:?}: {err}");
        assert_eq!(lines[0].matches(cause).count(), 1, "scry {args:?}: {err}");
        assert!(!lines[0].contains("os error"), "scry {args:?}: {err}");
        // The path once too.
        let path = args.iter().find(|a| a.starts_with(d)).expect("a path");
        assert_eq!(lines[0].matches(path).count(), 1, "scry {args:?}: {err}");
    }
}

#[test]
fn a_closed_pipe_ends_quietly() {
    require_tracefs!();
    for args in [&["list", "--json"][..], &["list"]] {
        let mut child = common::scry()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("scry starts");
        // The reader goes away before scry writes (`| head` that is done).
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("scry ends");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "scry {args:?}: {err}");
        assert!(err.trim().is_empty(), "scry {args:?}: {err}");
    }
}

#[test]
fn a_tracefs_closed_to_the_user_is_called_that() {
    use std::os::unix::fs::PermissionsExt;
    require_tracefs!();
    let root = scry::sys::tracefs::root().expect("tracefs");
    let mode = std::fs::metadata(root)
        .map(|m| m.permissions().mode())
        .unwrap_or(0);
    if !common::gate(if mode & 0o001 == 0 {
        Ok(())
    } else {
        Err(format!(
            "{} is open to others (mode {mode:o})",
            root.display()
        ))
    }) {
        return;
    }
    for args in [
        &["trace", "--", "true"][..],
        &["record", "-e", "sched:sched_switch", "--", "true"],
        &["sched", "runqlat", "--", "true"],
    ] {
        let Some(out) = common::scry_as_nobody(args) else {
            return;
        };
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "scry {args:?}: {err}");
        assert!(err.contains("no permission"), "scry {args:?}: {err}");
        assert!(err.contains("mode=755"), "scry {args:?}: {err}");
        assert!(!err.contains("not mounted"), "scry {args:?}: {err}");
    }
}
