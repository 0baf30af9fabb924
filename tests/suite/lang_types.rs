//! `scry run`'s integer types against bpftrace's: comparisons are
//! unsigned when either side is unsigned (`pid`, `nsecs`, `retval`,
//! unsigned fields of a tracepoint's format, unsigned casts), signed when
//! both are; variables and maps keep their first value's type, and an
//! unsigned map value prints unsigned (an unsigned key prints signed, as
//! bpftrace 0.17 prints it).

use crate::common;
use crate::lang::{gates, libc, run_status, run_with, scry_run, unique_copy};

use std::process::Command;

fn bpftrace(prog: &str) -> Command {
    crate::lang::bpftrace(prog)
}

/// Builtins, literals, casts, operators, variables and maps: the whole
/// output, byte for byte.
#[test]
fn signedness_of_builtins_and_operators_matches_bpftrace() {
    if !gates() {
        return;
    }
    let prog = "BEGIN { $u = (uint64)-1; $s = -1; $i = (int64)5; \
        printf(\"%d %d %d %d %d %d %d\\n\", $u > 5, $u > $i, $s > 5, $s < 0, $u < 0, (uint32)-1 > 5, $s < (uint64)1); \
        printf(\"%d %d %d %d %d %d %d %d %d %d\\n\", nsecs > -1, pid > -1, tid > -1, uid > -1, gid > -1, cpu > -1, elapsed > -1, cgroup > -1, rand > -1, numaid > -1); \
        $a = pid + 0; $b = -pid; $c = pid * -1; $d = 1 - 2; $e = 1 ? pid : 2; $f = 1 ? 2 : pid; \
        printf(\"%d %d %d %d %d %d\\n\", $a > -1, $b > -1, $c > -1, $d < 0, $e > -1, $f > -1); \
        $g = !1; $h = (1 > 0); $k = (pid && 1); $l = (1 && 1); $m = pid; $m = -5; $n = 5; $n += pid; $o = (uint8)300; $p = (int32)pid; \
        printf(\"%d %d %d %d %d %d %d %d\\n\", $g > -1, $h > -1, $k > -1, $l > -1, $m > -1, $n > -1, $o > -1, $p > -1); \
        printf(\"%d %d %d %d\\n\", $u / 2, $s / 2, $u >> 1, $s >> 1); \
        @u = $u; @s = $s; @k[(uint64)-2] = 1; @k[(uint64)3] = 2; exit(); }";
    let ours = common::run_ok(&mut scry_run(prog));
    assert!(
        ours.contains("\n1 1 0 1 0 1 0\n0 0 0 0 0 0 0 0 0 0\n0 0 0 1 0 1\n"),
        "{ours}"
    );
    assert!(ours.contains("\n@u: 18446744073709551615\n"), "{ours}");
    assert_eq!(ours, common::run_ok(&mut bpftrace(prog)));
}

/// A tracepoint's fields are signed or unsigned as its format says
/// (`dfd` and `mode` unsigned, `long ret` signed), and uretprobe's `retval` is
/// unsigned: the same counts as bpftrace's on `opens` and `mallocs`.
#[test]
fn field_and_retval_comparisons_match_bpftrace() {
    if !gates() {
        return;
    }
    let Some(libc) = libc() else {
        return;
    };
    let dir = common::tempdir();
    std::fs::write(dir.path().join("present"), "x").expect("present file");
    let name = format!("lsgn{}", std::process::id() % 100000);
    let opens = unique_copy(dir.path(), &common::workload("opens"), &name);
    let mname = format!("msgn{}", std::process::id() % 100000);
    let mallocs = unique_copy(dir.path(), &common::workload("mallocs"), &mname);
    let prog = format!(
        "BEGIN {{ printf(\"ready\\n\"); }}
         tracepoint:syscalls:sys_enter_openat /comm == \"{name}\"/ {{ @dfd[args->dfd < 0, args->mode > -1, (uint32)args->dfd > 5] = count(); }}
         tracepoint:syscalls:sys_exit_openat /comm == \"{name}\"/ {{ @ret[args->ret < 0, args->ret > -3, args->ret > (uint64)3] = count(); }}
         uretprobe:{lib}:malloc /comm == \"{mname}\"/ {{ @r[retval > -1, retval > 0] = count(); }}
         tracepoint:sched:sched_process_exit /comm == \"{mname}\"/ {{ exit(); }}",
        lib = libc.display()
    );
    let workload = || {
        run_status(Command::new(&opens).args(["10", "4"]).arg(dir.path()));
        run_status(Command::new(&mallocs).arg("50"));
    };
    let ours = run_with(scry_run(&prog), workload);
    let theirs = run_with(bpftrace(&prog), workload);
    let maps = |t: &str| {
        t.split_once("\n\n\n")
            .map(|(_, m)| m.to_string())
            .unwrap_or_default()
    };
    // The misses (ENOENT) are negative, not below -3, and above 3 as
    // unsigned; `dfd` is unsigned in the format (as every syscall
    // argument is).
    assert!(ours.contains("@ret[1, 1, 1]: "), "{ours}");
    assert!(ours.contains("@dfd[0, 0, 1]: "), "{ours}");
    assert!(ours.contains("@r[0, 1]: "), "{ours}");
    assert_eq!(
        maps(&ours),
        maps(&theirs),
        "scry:\n{ours}\nbpftrace:\n{theirs}"
    );
}
