//! `scry probe` and the run-only probes of `scry trace`, `record` and `stat`
//! (`uprobe:BINARY:FUNC`) on the real kernel, with perf as the oracle: a
//! uprobe on libc's malloc counts what `perf probe` + `perf record` (and
//! `perf stat`) count; a function called N times counts N; `%return` gives
//! `$retval`; a DWARF-named argument has its value; no probe outlives its
//! run, even after SIGKILL, and run-only probes never touch uprobe_events.
//!
//! Each test names its probes uniquely (`NAME=FUNC`): tests run in
//! parallel and share tracefs.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const PROG: &str = r#"
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) int probed_fn(int count, const char *buf)
{
    int sum = 0;
    for (int i = 0; i < count; i++)
        sum += buf[i % 4];
    return sum + count;
}
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3;
    int total = 0;
    if (argc > 2)
        getchar();
    for (int i = 0; i < n; i++)
        total += probed_fn(40 + i, "abcd");
    printf("%d\n", total);
    return 0;
}
"#;

/// Builds the probed program (with DWARF) into `dir`.
fn build_prog(dir: &Path) -> PathBuf {
    let src = dir.join("prog.c");
    std::fs::write(&src, PROG).unwrap();
    let bin = dir.join("prog");
    common::run_ok(
        Command::new("cc")
            .args(["-O1", "-g", "-o"])
            .arg(&bin)
            .arg(&src),
    );
    bin
}

fn uprobe_events() -> String {
    let root = scry::sys::tracefs::root().unwrap();
    std::fs::read_to_string(root.join("uprobe_events")).unwrap()
}

fn scry_probe(args: &[&str]) -> String {
    common::run_ok(common::scry().arg("probe").args(args))
}

/// Samples of `event` in `perf script`'s view of `file`.
fn perf_script_lines(file: &Path, event: &str) -> Vec<String> {
    let out = common::run_ok(common::perf().arg("script").arg("-i").arg(file));
    out.lines()
        .filter(|l| l.contains(event))
        .map(str::to_string)
        .collect()
}

#[test]
fn malloc_count_matches_perf_probe() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let dir = common::tempdir();
    let libc = scry::symbol::probe_target::find_binary("libc").unwrap();
    let cmd = ["cat", "/etc/hostname"];
    // scry probe + scry record.
    let added = scry_probe(&["-x", "libc", "scrymalloc1=malloc"]);
    assert!(added.contains("probe_libc:scrymalloc1"), "{added}");
    assert!(scry_probe(&["-l"]).contains("probe_libc:scrymalloc1"));
    let ours = dir.path().join("scry.data");
    common::run_ok(
        common::scry()
            .args(["record", "-q", "-e", "probe_libc:scrymalloc1", "-o"])
            .arg(&ours)
            .arg("--")
            .args(cmd)
            .env_clear(),
    );
    scry_probe(&["-d", "probe_libc:scrymalloc1"]);
    assert!(!uprobe_events().contains("scrymalloc1"));
    // perf probe + perf record.
    common::run_ok(
        common::perf()
            .args(["probe", "-q", "-x"])
            .arg(&libc)
            .arg("perfmalloc1=malloc"),
    );
    let theirs = dir.path().join("perf.data");
    let rec = common::output(
        common::perf()
            .args(["record", "-q", "-e", "probe_libc:perfmalloc1", "-o"])
            .arg(&theirs)
            .arg("--")
            .args(cmd)
            .env_clear(),
    );
    common::run_ok(common::perf().args(["probe", "-q", "-d", "probe_libc:perfmalloc1"]));
    assert!(
        rec.status.success(),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    let ours = perf_script_lines(&ours, "scrymalloc1").len();
    let theirs = perf_script_lines(&theirs, "perfmalloc1").len();
    assert!(
        ours > 0 && ours == theirs,
        "scry counted {ours} mallocs, perf {theirs}"
    );
}

/// A zlib-compressed `.debug_info` that does not inflate is said, once,
/// naming the file and the section, before the miss it causes; the same
/// section whole is read (`-V` names the parameters).
#[test]
fn a_compressed_debug_section_that_does_not_inflate_is_said() {
    if !common::require_tool("readelf", "readelf is not installed (scripts/deps)") {
        return;
    }
    let dir = common::tempdir();
    let prog = build_prog(dir.path());
    let zprog = dir.path().join("zprog");
    common::run_ok(
        Command::new("objcopy")
            .arg("--compress-debug-sections=zlib")
            .arg(&prog)
            .arg(&zprog),
    );
    let vars = scry_probe(&["-x", zprog.to_str().unwrap(), "-V", "probed_fn"]);
    assert!(vars.contains("int\tcount"), "{vars}");
    // The section's offset, from `[Nr] Name Type Address Off Size ...`.
    let sections = common::run_ok(Command::new("readelf").args(["-S", "-W"]).arg(&zprog));
    let offset = sections
        .lines()
        .find_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words.iter().position(|w| *w == ".debug_info")?;
            u64::from_str_radix(words.get(at + 3)?, 16).ok()
        })
        .unwrap_or_else(|| panic!("no .debug_info in {sections}"));
    // Past the compression header (24 bytes) and zlib's (2): a deflate
    // block of the reserved type, which no inflater takes.
    let mut bytes = std::fs::read(&zprog).unwrap();
    let at = offset as usize + 26;
    bytes[at..at + 16].fill(0xff);
    let bad = dir.path().join("bad");
    std::fs::write(&bad, &bytes).unwrap();
    let out = common::output(
        common::scry()
            .args(["probe", "-x"])
            .arg(&bad)
            .args(["-V", "probed_fn"]),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = format!(
        "scry: {}: .debug_info is zlib-compressed and does not inflate (",
        bad.display()
    );
    assert_eq!(stderr.matches(&said).count(), 1, "{stderr}");
    assert!(
        stderr.contains("no DWARF debug info for 'probed_fn'"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(2), "{stderr}");
}

/// Deletes the probes matching its pattern when dropped, so that a failed
/// run leaves none behind to refuse the next run's (`already exists`).
struct ProbeCleanup(&'static str);

impl Drop for ProbeCleanup {
    fn drop(&mut self) {
        let _ = common::scry().args(["probe", "-d", self.0]).output();
    }
}

#[test]
fn retval_and_dwarf_arguments() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    // Stale ones first (a run killed before its guard ran), then ours.
    drop(ProbeCleanup("probe_prog:*2"));
    let _cleanup = ProbeCleanup("probe_prog:*2");
    let dir = common::tempdir();
    let prog = build_prog(dir.path());
    let x = prog.to_str().unwrap();
    // -V names the parameters with their types.
    let vars = scry_probe(&["-x", x, "-V", "probed_fn"]);
    assert!(
        vars.contains("int\tcount") && vars.contains("const char *\tbuf"),
        "{vars}"
    );
    let lines = scry_probe(&["-x", x, "-L", "probed_fn"]);
    assert!(
        lines.contains("<probed_fn@") && lines.contains("return sum + count;"),
        "{lines}"
    );
    scry_probe(&["-x", x, "entry2=probed_fn count buf:string"]);
    scry_probe(&["-x", x, "exit2=probed_fn%return $retval"]);
    let data = dir.path().join("p.data");
    common::run_ok(
        common::scry()
            .args([
                "record",
                "-q",
                "-e",
                "probe_prog:entry2,probe_prog:exit2",
                "-o",
            ])
            .arg(&data)
            .arg("--")
            .args([x, "2"]),
    );
    scry_probe(&["-d", "probe_prog:*2"]);
    assert!(!uprobe_events().contains("probe_prog/entry2"));
    let entries = perf_script_lines(&data, "probe_prog:entry2");
    let exits = perf_script_lines(&data, "probe_prog:exit2");
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert!(entries[0].contains("count=40 buf=\"abcd\""), "{entries:?}");
    assert!(entries[1].contains("count=41 buf=\"abcd\""), "{entries:?}");
    // 10 * (97+98+99+100) + 40 = 3980; + 97 + 41 = 4078.
    assert_eq!(exits.len(), 2, "{exits:?}");
    assert!(
        exits[0].contains("arg1=0xf8c") && exits[1].contains("arg1=0xfee"),
        "{exits:?}"
    );
}

/// The byte at `file_offset` of `path` as mapped in process `pid`.
fn mapped_byte(pid: u32, path: &Path, file_offset: u64) -> Option<u8> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let path = path.to_str()?;
    for line in maps.lines().filter(|l| l.ends_with(path)) {
        let w: Vec<&str> = line.split_whitespace().collect();
        let (start, end) = w[0].split_once('-')?;
        let (start, end) = (
            u64::from_str_radix(start, 16).ok()?,
            u64::from_str_radix(end, 16).ok()?,
        );
        let offset = u64::from_str_radix(w[2], 16).ok()?;
        if file_offset >= offset && file_offset < offset + (end - start) {
            use std::io::{Read, Seek, SeekFrom};
            let mut mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
            mem.seek(SeekFrom::Start(start + file_offset - offset))
                .ok()?;
            let mut b = [0u8; 1];
            mem.read_exact(&mut b).ok()?;
            return Some(b[0]);
        }
    }
    None
}

/// `uprobe:`/`uretprobe:` events of trace, record and stat: the `uprobe`
/// PMU's probe, which lives as long as scry's file descriptors. Starts
/// scry with `args` (and the probe event) on a process that waits on its
/// stdin, sees the breakpoint appear in that process, SIGKILLs scry and
/// sees the kernel take the breakpoint out; uprobe_events never changes.
fn probe_dies_with_scry_after_sigkill(command: &[&str]) {
    let dir = common::tempdir();
    let prog = build_prog(dir.path());
    let data = std::fs::read(&prog).unwrap();
    let site = scry::symbol::probe_target::find_function(&data, "prog", "probed_fn").unwrap();
    let before = uprobe_events();
    // A process that maps prog and waits on its stdin.
    let mut victim = Command::new(&prog)
        .args(["1", "wait"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let vpid = victim.id();
    let wait_for = |want: &dyn Fn(u8) -> bool| {
        for _ in 0..150 {
            if mapped_byte(vpid, &prog, site.file_offset).is_some_and(want) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    };
    assert!(
        wait_for(&|b| b != 0xcc),
        "probed_fn not mapped in the victim"
    );
    let original = mapped_byte(vpid, &prog, site.file_offset).unwrap();
    let mut scry = common::scry()
        .args(command)
        .args(["-p", &vpid.to_string(), "-e"])
        .arg(format!("uprobe:{}:probed_fn", prog.display()))
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // While scry runs, the uprobe's breakpoint (int3) is in the victim.
    assert!(
        wait_for(&|b| b == 0xcc),
        "{command:?}: no breakpoint at probed_fn while scry runs"
    );
    // The PMU probe is not a tracefs probe: nothing in uprobe_events.
    assert_eq!(uprobe_events(), before, "{command:?}");
    common::signal(scry.id(), "KILL");
    let _ = scry.wait();
    // The kernel removed the probe with scry's descriptors.
    assert!(
        wait_for(&|b| b == original),
        "{command:?}: breakpoint left behind after SIGKILL"
    );
    assert_eq!(uprobe_events(), before, "{command:?}");
    {
        use std::io::Write;
        let _ = victim.stdin.take().unwrap().write_all(b"\n");
    }
    assert!(victim.wait().unwrap().success());
}

#[test]
fn trace_probes_die_with_scry_even_after_sigkill() {
    require_kernel!();
    require_tracefs!();
    probe_dies_with_scry_after_sigkill(&["trace", "-o", "/dev/null"]);
}

#[test]
fn record_and_stat_probes_die_with_scry_even_after_sigkill() {
    require_kernel!();
    require_tracefs!();
    probe_dies_with_scry_after_sigkill(&["record", "-q", "-o", "killed.data"]);
    probe_dies_with_scry_after_sigkill(&["stat"]);
}

/// The count `scry stat -x,` (or `perf stat -x,`) printed for `event`.
fn csv_count(stderr: &[u8], event: &str) -> Option<u64> {
    String::from_utf8_lossy(stderr).lines().find_map(|l| {
        let fields: Vec<&str> = l.split(',').collect();
        (fields.get(2) == Some(&event)).then(|| fields[0].parse().ok())?
    })
}

/// Samples per event name in `scry script`'s or `perf script`'s text.
fn count_lines(text: &str, event: &str) -> usize {
    text.lines()
        .filter(|l| l.contains(&format!(" {event}: ")))
        .count()
}

#[test]
fn record_and_stat_count_every_call_of_a_run_only_uprobe() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let dir = common::tempdir();
    let prog = build_prog(dir.path());
    let before = uprobe_events();
    let entry = format!("uprobe:{}:probed_fn", prog.display());
    let exit = format!("uretprobe:{}:probed_fn", prog.display());
    const N: usize = 37;
    let n = N.to_string();

    let out = common::output(
        common::scry()
            .args(["stat", "-x,", "-e", &format!("{entry},{exit}"), "--"])
            .arg(&prog)
            .arg(&n),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        csv_count(&out.stderr, "probe_prog:probed_fn"),
        Some(N as u64)
    );
    assert_eq!(
        csv_count(&out.stderr, "probe_prog:probed_fn__return"),
        Some(N as u64)
    );
    assert_eq!(uprobe_events(), before);

    let data = dir.path().join("u.data");
    common::run_ok(
        common::scry()
            .args(["record", "-q", "-e", &entry, "-e", &exit, "-o"])
            .arg(&data)
            .arg("--")
            .arg(&prog)
            .arg(&n),
    );
    assert_eq!(uprobe_events(), before);
    // perf reads the file: events named in its header, every hit a sample.
    let perf = common::output(common::perf().arg("script").arg("-i").arg(&data));
    assert!(
        common::perf_warnings(&perf.stderr).is_empty(),
        "{}",
        String::from_utf8_lossy(&perf.stderr)
    );
    let perf = String::from_utf8_lossy(&perf.stdout);
    assert_eq!(count_lines(&perf, "probe_prog:probed_fn"), N, "{perf}");
    assert_eq!(count_lines(&perf, "probe_prog:probed_fn__return"), N);
    assert!(
        perf.lines()
            .filter(|l| l.contains(" probe_prog:probed_fn: "))
            .all(|l| l.contains("probed_fn+0x0 (")),
        "{perf}"
    );
    let ours = common::run_ok(common::scry().arg("script").arg("-i").arg(&data));
    assert_eq!(count_lines(&ours, "probe_prog:probed_fn"), N);
    assert_eq!(count_lines(&ours, "probe_prog:probed_fn__return"), N);
    let evlist = common::run_ok(common::perf().args(["evlist", "-i"]).arg(&data));
    assert!(evlist.contains("probe_prog:probed_fn__return"), "{evlist}");
}

/// libc's malloc under `cat`: `scry stat` and `scry record` with a probe for
/// the run count what `perf probe` + `perf stat` count.
#[test]
fn run_only_malloc_probe_counts_as_perf_probe_and_perf_stat() {
    require_kernel!();
    require_tracefs!();
    require_perf!();
    let dir = common::tempdir();
    let libc = scry::symbol::probe_target::find_binary("libc").unwrap();
    let cmd = ["cat", "/etc/hostname"];
    common::run_ok(
        common::perf()
            .args(["probe", "-q", "-x"])
            .arg(&libc)
            .arg("perfmalloc3=malloc"),
    );
    let theirs = common::output(
        common::perf()
            .args(["stat", "-x,", "-e", "probe_libc:perfmalloc3", "--"])
            .args(cmd)
            .env_clear(),
    );
    common::run_ok(common::perf().args(["probe", "-q", "-d", "probe_libc:perfmalloc3"]));
    let theirs = csv_count(&theirs.stderr, "probe_libc:perfmalloc3").expect("perf stat count");
    let before = uprobe_events();

    let ours = common::output(
        common::scry()
            .args(["stat", "-x,", "-e", "uprobe:libc:malloc", "--"])
            .args(cmd)
            .env_clear(),
    );
    let stat = csv_count(&ours.stderr, "probe_libc:malloc").expect("scry stat count");
    let data = dir.path().join("m.data");
    common::run_ok(
        common::scry()
            .args(["record", "-q", "-e", "uprobe:libc:malloc", "-o"])
            .arg(&data)
            .arg("--")
            .args(cmd)
            .env_clear(),
    );
    let perf = common::run_ok(common::perf().arg("script").arg("-i").arg(&data));
    let recorded = count_lines(&perf, "probe_libc:malloc");
    assert!(
        theirs > 0 && stat == theirs && recorded as u64 == theirs,
        "perf probe + perf stat: {theirs}; scry stat: {stat}; scry record: {recorded}"
    );
    assert_eq!(uprobe_events(), before);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    require_tracefs!();
    let dir = common::tempdir();
    let prog = build_prog(dir.path());
    let stripped = dir.path().join("stripped");
    common::run_ok(Command::new("strip").arg("-o").arg(&stripped).arg(&prog));
    let x = prog.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["-x", "libc", "no_such_function_x"],
            "'no_such_function_x' is not among its dynamic symbols",
        ),
        (
            vec!["-x", x, "no_such_function_x"],
            "no function 'no_such_function_x'",
        ),
        (vec!["-x", "libc", "environ"], "'environ' is not a function"),
        (
            vec!["-x", stripped.to_str().unwrap(), "probed_fn"],
            "no symbol table (stripped)",
        ),
        (vec!["-x", x, "probed_fn nosuchparam"], "no such parameter"),
        (vec!["-x", x, "probed_fn count:q9"], "unknown type 'q9'"),
        (vec!["-x", x, "probed_fn $retval"], "needs a return probe"),
        (vec!["-x", "libc", "-V", "malloc"], "no DWARF debug info"),
        (vec!["-x", "/no/such/binary", "f"], "not found"),
        (vec!["-d", "probe_nosuch:nothing"], "no probe matches"),
        (vec!["do_sys_openat2"], "kprobe"),
    ];
    for (args, needle) in cases {
        let out = common::output(common::scry().arg("probe").args(&args));
        if needle == "kprobe" && out.status.success() {
            // A kernel with kprobes: the probe was made; remove it.
            let _ = common::output(common::scry().args(["probe", "-d", "probe:do_sys_openat2"]));
            continue;
        }
        common::assert_bad_input(&out, needle, &args);
    }
}

#[test]
fn run_only_probe_bad_input_is_one_line_and_exit_2() {
    require_tracefs!();
    let dir = common::tempdir();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["stat", "-e", "uprobe:libc:no_such_function_x", "--", "true"],
            "'no_such_function_x' is not among its dynamic symbols",
        ),
        (
            vec![
                "record",
                "-q",
                "-e",
                "uretprobe:/no/such/binary:f",
                "--",
                "true",
            ],
            "not found",
        ),
        (
            vec!["record", "-q", "-e", "uprobe:libc", "--", "true"],
            "expected uprobe:BINARY:FUNCTION",
        ),
        (
            vec!["trace", "-e", "uprobe:libc:environ", "--", "true"],
            "'environ' is not a function",
        ),
    ];
    for (args, needle) in cases {
        let out = common::output(common::scry().args(&args).current_dir(dir.path()));
        common::assert_bad_input(&out, needle, &args);
    }
    assert!(!dir.path().join("perf.data").exists());
}

/// Kernel probes' arguments by name from this kernel's BTF (issue 14): the
/// `kprobe_events` text of `-n` (a dry run needs no kprobes, which this
/// machine lacks; the guest of tests/kernel_matrix.rs adds them for real),
/// `-V` from BTF, and refusals naming the word at fault.
#[test]
fn kernel_probe_arguments_from_btf() {
    let btf = Path::new("/sys/kernel/btf/vmlinux");
    if !common::gate(if btf.exists() {
        Ok(())
    } else {
        Err("no /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF)".into())
    }) {
        return;
    }
    let dry = |def: &str| scry_probe(&["-n", def]);
    assert_eq!(
        dry("tcp_sendmsg size").trim(),
        "p:probe/tcp_sendmsg tcp_sendmsg size=%dx:u64"
    );
    // struct sock_common: skc_family at 16, skc_state the byte after.
    assert_eq!(
        dry("tcp_sendmsg sk->__sk_common.skc_state").trim(),
        "p:probe/tcp_sendmsg tcp_sendmsg skc_state=+18(%di):u8"
    );
    assert_eq!(
        dry("do_sys_openat2 filename:string bytes=%cx +16(%si):u8").trim(),
        "p:probe/do_sys_openat2 do_sys_openat2 filename=+0(%si):string bytes=%cx:x64 arg3=+16(%si):u8"
    );
    let ret = dry("do_sys_openat2%return $retval");
    assert!(
        ret.starts_with("r:probe/do_sys_openat2__return do_sys_openat2 arg1=$retval:s"),
        "{ret}"
    );
    // A chain of members through pointers, anonymous unions and a string.
    let name = dry("vfs_write name=file->f_path.dentry->d_name.name:string");
    assert!(
        name.starts_with("p:probe/vfs_write vfs_write name=+0(+")
            && name.trim().ends_with("(%di))):string"),
        "{name}"
    );
    let vars = scry_probe(&["-V", "tcp_sendmsg"]);
    assert!(
        vars.contains("Available variables at tcp_sendmsg")
            && vars.contains("size_t\tsize")
            && vars.contains("struct sock *\tsk"),
        "{vars}"
    );
    for (args, needle) in [
        (vec!["-n", "tcp_sendmsg nope"], "has no such parameter"),
        (vec!["-n", "tcp_sendmsg sk->nope"], "has no member 'nope'"),
        (vec!["-n", "tcp_sendmsg size->x"], "not a pointer"),
        (vec!["-n", "no_such_kernel_fn_x size"], "knows no function"),
        (vec!["-n", "tcp_sendmsg%return size"], "use $retval"),
        (vec!["-V", "no_such_kernel_fn_x"], "knows no function"),
    ] {
        let out = common::output(common::scry().arg("probe").args(&args));
        common::assert_bad_input(&out, needle, &args);
    }
    let out = common::output(common::scry().args(["stat", "-e", "kprobe:", "--", "true"]));
    common::assert_bad_input(&out, "expected kprobe:FUNCTION", &"kprobe:");
}
