//! perf's command line for the command to run: `--` before it is optional
//! (`perf stat ./app`, `perf stat -a sleep 2`, `perf trace ls`), and what
//! follows the command's name is the command's, flags included
//! (`scry record -g ./app -g` passes `-g` to the app). Every command that
//! runs one takes both spellings.

use crate::common;

use std::process::Stdio;

/// Each command that runs a workload, with the flags to keep its output
/// out of the way (`FILE` is replaced by a path in a temporary directory).
const COMMANDS: &[&[&str]] = &[
    &["record", "-q", "-o", "FILE"],
    &["stat", "-e", "task-clock", "-o", "/dev/null"],
    &["trace", "-o", "/dev/null"],
    &["offcpu", "--folded"],
    &["profile", "-o", "/dev/null"],
    &["sched", "runqlat", "-o", "/dev/null"],
    &["sched", "timehist", "-o", "/dev/null"],
    &["flamegraph", "--folded", "-o", "/dev/null"],
];

#[test]
fn the_command_comes_with_or_without_dashes_and_keeps_its_flags() {
    require_kernel!();
    require_tracefs!();
    let dir = common::tempdir();
    let file = dir.path().join("perf.data");
    let file = file.to_str().expect("UTF-8 temp path");
    // The workload prints its arguments, one per line, to stderr.
    let workload = [
        "sh",
        "-c",
        "printf '<%s>\\n' \"$@\" >&2",
        "sh",
        "-g",
        "-x",
        "--",
        "y",
    ];
    let mut failures = Vec::new();
    for head in COMMANDS {
        let head: Vec<&str> = head
            .iter()
            .map(|a| if *a == "FILE" { file } else { a })
            .collect();
        for dashes in [true, false] {
            let mut cmd = common::scry();
            cmd.args(&head);
            if dashes {
                cmd.arg("--");
            }
            let out = common::output(cmd.args(workload).stdout(Stdio::null()));
            let stderr = String::from_utf8_lossy(&out.stderr);
            let args: Vec<&str> = stderr
                .lines()
                .filter(|l| l.starts_with('<') && l.ends_with('>'))
                .collect();
            if !out.status.success() || args != ["<-g>", "<-x>", "<-->", "<y>"] {
                failures.push(format!(
                    "scry {}{} {}: {:?}\n{stderr}",
                    head.join(" "),
                    if dashes { " --" } else { "" },
                    workload.join(" "),
                    out.status
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_unknown_flag_before_the_command_is_a_usage_error() {
    for head in COMMANDS {
        let out = common::output(
            common::scry()
                .args(&head[..1])
                .args(["--no-such-flag", "true"]),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "scry {} --no-such-flag: {stderr}",
            head[0]
        );
        assert!(
            stderr.contains("unexpected argument '--no-such-flag'"),
            "scry {} --no-such-flag: {stderr}",
            head[0]
        );
    }
}
