//! `scry record`, proven against the oracle: each test records a real
//! workload from `workloads/` and has Debian's `perf` read the file.

mod common;

use std::process::Command;

#[test]
fn workloads_build_and_behave() {
    let out = common::run_ok(Command::new(common::workload("threads")).args(["3", "1"]));
    assert_eq!(
        out.lines().filter(|l| l.contains(" tid ")).count(),
        3,
        "{out}"
    );
    let out = common::run_ok(Command::new(common::workload("forker")).args(["2", "1"]));
    assert_eq!(
        out.lines().filter(|l| l.contains(" pid ")).count(),
        2,
        "{out}"
    );
    common::run_ok(Command::new(common::workload("cpu7525")).arg("1"));
    common::run_ok(Command::new(common::workload("calls")).arg("10"));
    common::run_ok(&mut Command::new(common::workload("quick")));
}
