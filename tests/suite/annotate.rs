//! `scry annotate`: the hottest instruction of a known hot loop, and the
//! same answer as `perf annotate --stdio` on the same file.
//!
//! `divloop`'s `div_hot` is a chain of dependent 64-bit divisions: the
//! `div` is the costly instruction, so it, or the instruction after it
//! where timer sampling skids, is the hottest line; perf annotate, given
//! the same file, must name the same address.

use crate::common;

use std::path::{Path, PathBuf};

/// `(percent, address, instruction)` of each instruction line
/// (`   88.28 :   1367:   add    $0x1,%rcx`) of one function's listing.
fn instructions(listing: &str) -> Vec<(f64, u64, String)> {
    listing
        .lines()
        .filter_map(|line| {
            let (pct, rest) = line.split_once(':')?;
            let pct: f64 = pct.trim().parse().ok()?;
            let (addr, text) = rest.trim().split_once(':')?;
            let addr = u64::from_str_radix(addr.trim(), 16).ok()?;
            Some((pct, addr, text.trim().to_string()))
        })
        .collect()
}

fn hottest(rows: &[(f64, u64, String)]) -> &(f64, u64, String) {
    rows.iter()
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .expect("instruction lines")
}

/// The addresses of a listing's instruction rows.
fn addresses(rows: &[(f64, u64, String)]) -> Vec<u64> {
    rows.iter().map(|r| r.1).collect()
}

/// `scry annotate --stdio` and `perf annotate --stdio` of `symbol` in
/// `data`: (scry's listing, perf's).
fn annotate_both(data: &Path, symbol: &str) -> (String, String) {
    let listing = |mut cmd: std::process::Command| {
        common::run_ok(
            cmd.args(["annotate", "--stdio", "-i"])
                .arg(data)
                .arg(symbol),
        )
    };
    (listing(common::scry()), listing(common::perf()))
}

fn record_divloop(dir: &Path) -> PathBuf {
    record_div(dir, &common::workload("divloop"), "0.6s")
}

/// `scry record -F 999 -o dir/div.data -- BINARY TIME` of divloop (or a
/// copy of it).
fn record_div(dir: &Path, binary: &Path, time: &str) -> PathBuf {
    let data = dir.join("div.data");
    common::run_ok(
        common::scry()
            .args(["record", "-q", "-F", "999", "-o"])
            .arg(&data)
            .arg("--")
            .arg(binary)
            .arg(time),
    );
    data
}

#[test]
fn the_division_is_the_hottest_line_as_perf_annotate_says() {
    require_kernel!();
    require_perf!();
    let dir = common::tempdir();
    let data = record_divloop(dir.path());
    let (ours, perf) = annotate_both(&data, "div_hot");
    assert!(
        ours.contains("Source code & Disassembly of divloop for cpu-clock"),
        "{ours}"
    );
    let rows = instructions(&ours);
    let div = rows
        .iter()
        .position(|(_, _, text)| text.starts_with("div "))
        .unwrap_or_else(|| panic!("no div in\n{ours}"));
    let hot = hottest(&rows);
    assert!(
        hot.1 == rows[div].1 || rows.get(div + 1).is_some_and(|r| r.1 == hot.1),
        "hottest {hot:?}, the div at {:x}\n{ours}",
        rows[div].1
    );
    // The percentages are of the function's samples.
    let sum: f64 = rows.iter().map(|r| r.0).sum();
    assert!((sum - 100.0).abs() < 0.5, "{sum}\n{ours}");
    // The source line of the division, from DWARF and the source file.
    assert!(ours.contains(") / d;"), "{ours}");

    let theirs = instructions(&perf);
    assert_eq!(hottest(&theirs).1, hot.1, "perf:\n{perf}\nscry:\n{ours}");
    // Every instruction perf lists, at the same address.
    assert_eq!(
        addresses(&theirs),
        addresses(&rows),
        "perf:\n{perf}\nscry:\n{ours}"
    );
}

#[test]
fn annotate_lists_the_hottest_function_first_and_refuses_unknown_symbols() {
    require_kernel!();
    let dir = common::tempdir();
    let data = record_divloop(dir.path());
    let all = common::run_ok(common::scry().args(["annotate", "-i"]).arg(&data));
    let first = all
        .lines()
        .find(|l| l.contains(" <") && l.ends_with(">:"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(first.ends_with("<div_hot>:"), "{first}");

    let out = common::output(
        common::scry()
            .args(["annotate", "-i"])
            .arg(&data)
            .arg("no_such_function"),
    );
    common::assert_bad_input(
        &out,
        "no samples in function 'no_such_function' (the hottest: div_hot",
        &"unknown symbol",
    );
}

#[test]
fn annotate_bad_input_is_one_line() {
    let dir = common::tempdir();
    let junk = dir.path().join("junk.data");
    std::fs::write(&junk, b"PERFILE2 this is not a perf.data file at all").expect("write");
    let out = common::output(common::scry().args(["annotate", "-i"]).arg(&junk));
    common::assert_bad_input(&out, "junk.data", &"junk");
    let out = common::output(
        common::scry()
            .args(["annotate", "-i"])
            .arg(dir.path().join("missing.data")),
    );
    common::assert_bad_input(&out, "missing.data", &"missing");
}

/// Kernel functions: disassembled from /proc/kcore when it can be read
/// (root, CONFIG_PROC_KCORE); otherwise each says, in one line, what is
/// needed, and lists no instruction.
#[test]
fn kernel_functions_are_read_from_kcore_or_say_what_is_needed() {
    require_kernel!();
    let dir = common::tempdir();
    std::fs::write(dir.path().join("present"), b"").expect("present");
    let data = dir.path().join("opens.data");
    common::run_ok(
        common::scry()
            .args(["record", "-q", "-F", "4999", "-o"])
            .arg(&data)
            .arg("--")
            .arg(common::workload("opens"))
            .args(["200000", "0"])
            .arg(dir.path()),
    );
    let text = common::run_ok(
        common::scry()
            .args(["annotate", "--stdio", "-i"])
            .arg(&data),
    );
    let kernel: Vec<&str> = text
        .split(" Percent |")
        .filter(|listing| listing.contains("Disassembly of [kernel.kallsyms]"))
        .collect();
    assert!(!kernel.is_empty(), "no kernel function sampled:\n{text}");
    match std::fs::File::open("/proc/kcore") {
        Ok(_) => {
            for listing in &kernel {
                assert!(!instructions(listing).is_empty(), "{listing}");
            }
        }
        Err(e) => {
            let needed = match e.kind() {
                std::io::ErrorKind::NotFound => {
                    "which this kernel does not have (CONFIG_PROC_KCORE)"
                }
                _ => "which needs root",
            };
            for listing in &kernel {
                let lines: Vec<&str> = listing
                    .lines()
                    .filter(|l| l.contains("/proc/kcore"))
                    .collect();
                assert_eq!(lines.len(), 1, "{listing}");
                assert!(
                    lines[0].contains(&format!("kernel code is read from /proc/kcore, {needed}")),
                    "{listing}"
                );
                assert!(instructions(listing).is_empty(), "{listing}");
            }
        }
    }
}

/// A binary rebuilt since the recording (another program copied over it):
/// its functions are named with the reason, in one line each, not
/// disassembled from the wrong code, and annotate does not fail.
#[test]
fn a_binary_rebuilt_since_the_recording_is_said_not_read() {
    require_kernel!();
    let dir = common::tempdir();
    let binary = dir.path().join("divloop");
    std::fs::copy(common::workload("divloop"), &binary).expect("copy divloop");
    let data = record_div(dir.path(), &binary, "0.4s");
    std::fs::remove_file(&binary).expect("remove divloop");
    std::fs::copy(common::workload("cpu7525"), &binary).expect("copy cpu7525 over it");
    // With samples in other named code (the kernel, ld.so) annotate shows
    // those and says why the rest is not shown; with every sample in the
    // rebuilt binary, its one error line says so.
    let out = common::output(common::scry().args(["annotate", "-i"]).arg(&data));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = format!("{} was rebuilt since the recording", binary.display());
    assert!(text.contains(&said), "no '{said}' in:\n{text}");
    match out.status.success() {
        true => assert!(text.contains("in no named function (not shown)"), "{text}"),
        false => {
            assert_eq!(out.status.code(), Some(2), "{text}");
            assert_eq!(
                out.stderr.iter().filter(|&&b| b == b'\n').count(),
                1,
                "{text}"
            );
        }
    }
}

/// The pid `jit` printed (`jit pid <pid> map ...`).
fn jit_pid(stdout: &str) -> String {
    stdout
        .split_whitespace()
        .nth(2)
        .unwrap_or_else(|| panic!("no pid in {stdout:?}"))
        .to_string()
}

/// Removes what `jit` and `perf inject --jit` leave in /tmp for `pid`.
fn remove_jit_files(pid: &str) {
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    let _ = std::fs::remove_file(format!("/tmp/jit-{pid}.dump"));
    let prefix = format!("jitted-{pid}-");
    for entry in std::fs::read_dir("/tmp").into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The sample count of a listing's header (`... for cpu-clock (299
/// samples, percent: local period)`).
fn header_samples(listing: &str) -> u64 {
    listing
        .split_once(" samples, percent")
        .and_then(|(head, _)| head.rsplit_once('(')?.1.parse().ok())
        .unwrap_or_else(|| panic!("no sample count in\n{listing}"))
}

/// `perf inject --jit -i DATA -o DIR/injected.data`, then `perf annotate
/// --stdio jit_hot_loop` of it: the injected file and the listing (panics
/// if inject fails).
fn perf_inject_jit_annotate(dir: &Path, data: &Path) -> (PathBuf, String) {
    let injected = dir.join("injected.data");
    let inject = common::output(
        common::perf()
            .args(["inject", "--jit", "-i"])
            .arg(data)
            .arg("-o")
            .arg(&injected),
    );
    assert!(inject.status.success(), "{inject:?}");
    let perf = common::output(
        common::perf()
            .args(["annotate", "--stdio", "-i"])
            .arg(&injected)
            .arg("jit_hot_loop"),
    );
    (injected, String::from_utf8_lossy(&perf.stdout).into_owned())
}

/// scry's listing of jit_hot_loop is perf's after inject: the same
/// instructions at the same offsets into the function (perf shows the
/// ELF file inject wrote), the same hottest one, shares of all the
/// function's samples, perf's sample count.
fn assert_same_listing(ours: &str, perf: &str) {
    let rows = instructions(ours);
    let theirs = instructions(perf);
    let offsets = |rows: &[(f64, u64, String)]| -> Vec<u64> {
        rows.iter().map(|r| r.1 - rows[0].1).collect()
    };
    assert!(rows.iter().any(|r| r.2.starts_with("add ")), "{ours}");
    assert_eq!(
        offsets(&rows),
        offsets(&theirs),
        "perf:\n{perf}\nscry:\n{ours}"
    );
    assert_eq!(
        hottest(&rows).1 - rows[0].1,
        hottest(&theirs).1 - theirs[0].1,
        "perf:\n{perf}\nscry:\n{ours}"
    );
    let sum: f64 = rows.iter().map(|r| r.0).sum();
    assert!((sum - 100.0).abs() < 0.5, "{sum}\n{ours}");
    assert!(header_samples(ours) > 0);
    assert_eq!(
        header_samples(ours),
        header_samples(perf),
        "perf:\n{perf}\nscry:\n{ours}"
    );
}

/// JIT code is annotated from the bytes its process's jitdump holds: on
/// perf's own `-k 1` recording, the instructions, their shares and the
/// hottest one are perf annotate's after `perf inject --jit` (offsets into
/// the function: perf shows the ELF file inject wrote). scry's recording
/// of the same workload annotates the same way; without a jitdump (a perf
/// map only) one line says the code is gone with its process.
#[test]
fn jit_code_is_annotated_from_its_jitdump_as_perf_inject_jit_says() {
    require_kernel!();
    require_perf!();
    let dir = common::tempdir();
    let jit = common::workload("jit");
    let data = dir.path().join("perf.data");
    let out = common::output(
        common::perf()
            .args(["record", "-q", "-k", "1", "-F", "999", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&jit)
            .args(["0.3s", "dump"]),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let pid = jit_pid(&stdout);
    assert!(out.status.success(), "{stdout}");
    let ours = common::run_ok(
        common::scry()
            .args(["annotate", "--stdio", "-i"])
            .arg(&data)
            .arg("jit_hot_loop"),
    );
    let (_, perf) = perf_inject_jit_annotate(dir.path(), &data);
    remove_jit_files(&pid);
    assert_same_listing(&ours, &perf);

    // scry's own recording: with the jitdump, the code; with a perf map
    // only, the reason in one line.
    for (args, listed) in [(&["0.2s", "dump"][..], true), (&["0.2s"][..], false)] {
        let data = dir.path().join("scry.data");
        let stdout = common::run_ok(
            common::scry()
                .args(["record", "-q", "-F", "999", "-o"])
                .arg(&data)
                .arg("--")
                .arg(&jit)
                .args(args),
        );
        let text = common::run_ok(
            common::scry()
                .args(["annotate", "--stdio", "-i"])
                .arg(&data)
                .arg("jit_hot_loop"),
        );
        remove_jit_files(&jit_pid(&stdout));
        let rows = instructions(&text);
        let said: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("gone with its process"))
            .collect();
        match listed {
            true => {
                assert!(said.is_empty(), "{text}");
                let sum: f64 = rows.iter().map(|r| r.0).sum();
                assert!((sum - 100.0).abs() < 0.5, "{sum}\n{text}");
            }
            false => {
                assert!(rows.is_empty(), "{text}");
                assert_eq!(said.len(), 1, "{text}");
            }
        }
    }
}

/// `scry record -k 1` stamps every event with CLOCK_MONOTONIC (the
/// jitdump's clock) and writes CLOCKID and CLOCK_DATA as perf record -k 1
/// does: `perf inject --jit`, which refuses a file recorded without it,
/// turns scry's file into one where perf report and annotate name the
/// jitted function; perf's header shows the clock, and scry still reads
/// the file.
#[test]
fn perf_inject_jit_takes_scrys_k_1_recording() {
    require_kernel!();
    require_perf!();
    let dir = common::tempdir();
    let jit = common::workload("jit");
    let data = dir.path().join("scry.data");
    let stdout = common::run_ok(
        common::scry()
            .args(["record", "-q", "-k", "monotonic", "-F", "999", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&jit)
            .args(["0.3s", "dump"]),
    );
    let pid = jit_pid(&stdout);
    let (injected, annotate) = perf_inject_jit_annotate(dir.path(), &data);
    assert_perf_names_the_jitted_elf(&injected, &pid);
    let rows = instructions(&annotate);
    assert!(rows.iter().any(|r| r.2.starts_with("add ")), "{annotate}");

    let header = common::run_ok(
        common::perf()
            .args(["report", "--header-only", "-i"])
            .arg(&data),
    );
    assert!(header.contains("# clockid: monotonic (1)"), "{header}");
    assert!(
        header.contains("(monotonic)"),
        "no reference time in\n{header}"
    );
    let ours = common::run_ok(common::scry().args(["report", "--stdio", "-i"]).arg(&data));
    assert!(ours.contains("jit_hot_loop"), "{ours}");
    let script = common::run_ok(common::scry().args(["script", "-i"]).arg(&data));
    remove_jit_files(&pid);
    assert!(script.contains("jit_hot_loop"), "{script}");
}

/// perf report of an injected file names jit_hot_loop in the ELF file
/// perf inject wrote for `pid` (`jitted-PID-N.so`), not the perf map.
fn assert_perf_names_the_jitted_elf(injected: &Path, pid: &str) {
    let report = common::run_ok(
        common::perf()
            .args(["report", "--stdio", "--sort", "dso,sym", "-i"])
            .arg(injected),
    );
    let hot = report
        .lines()
        .find(|l| l.contains("jit_hot_loop"))
        .unwrap_or_else(|| panic!("no jit_hot_loop in\n{report}"));
    assert!(hot.contains(&format!("jitted-{pid}-")), "{report}");
}

/// A JIT_CODE_MOVE puts a loaded function at a new address: `jit move`
/// runs its loop only there (its perf map names the first address only).
/// scry names and annotates it there from the jitdump, as perf does after
/// `perf inject --jit` (which maps the load's code again at the move).
#[test]
fn a_moved_jit_function_is_named_and_annotated_at_its_new_address() {
    require_kernel!();
    require_perf!();
    let dir = common::tempdir();
    let data = dir.path().join("scry.data");
    let stdout = common::run_ok(
        common::scry()
            .args(["record", "-q", "-k", "1", "-F", "999", "-o"])
            .arg(&data)
            .arg("--")
            .arg(common::workload("jit"))
            .args(["0.3s", "move"]),
    );
    let pid = jit_pid(&stdout);
    let moved = stdout
        .lines()
        .find_map(|l| l.split_once(" moved ").map(|(_, a)| a.trim()))
        .and_then(|a| u64::from_str_radix(a, 16).ok())
        .unwrap_or_else(|| panic!("no moved address in {stdout:?}"));
    let ours = common::run_ok(
        common::scry()
            .args(["annotate", "--stdio", "-i"])
            .arg(&data)
            .arg("jit_hot_loop"),
    );
    let report = common::run_ok(
        common::scry()
            .args(["report", "--stdio", "--sort", "sym", "-i"])
            .arg(&data),
    );
    let (injected, perf) = perf_inject_jit_annotate(dir.path(), &data);
    assert_perf_names_the_jitted_elf(&injected, &pid);
    remove_jit_files(&pid);
    let rows = instructions(&ours);
    assert_eq!(rows.first().map(|r| r.1), Some(moved), "{ours}");
    assert_same_listing(&ours, &perf);
    let top = report
        .lines()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
        .unwrap_or_default();
    assert!(top.contains("jit_hot_loop"), "{report}");
}

/// A stripped library's local functions (glibc's string functions, such
/// as `__strlen_evex`, the hottest of `libcloop`) have their symbols and
/// lines in its separate debug file (libc6-dbg): annotate lists their code,
/// read from the library, as perf annotate does, with the same addresses,
/// the same hottest instruction and perf's source lines between them.
#[test]
fn a_stripped_librarys_function_is_annotated_from_its_debug_file() {
    require_kernel!();
    require_perf!();
    let libc = Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
    let id: String = scry::data::build_id::read_build_id(libc)
        .ok()
        .flatten()
        .unwrap_or_default()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let debug = format!("/usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]);
    if !common::gate(if Path::new(&debug).is_file() {
        Ok(())
    } else {
        Err(format!(
            "no {debug}: apt-get install libc6-dbg (scripts/deps)"
        ))
    }) {
        return;
    }
    let dir = common::tempdir();
    let data = dir.path().join("libc.data");
    common::run_ok(
        common::scry()
            .args(["record", "-q", "-F", "999", "-o"])
            .arg(&data)
            .arg("--")
            .arg(common::workload("libcloop"))
            .arg("0.5s"),
    );
    let report = common::run_ok(
        common::scry()
            .args([
                "report",
                "--stdio",
                "--no-children",
                "--sort",
                "dso,sym",
                "-i",
            ])
            .arg(&data),
    );
    let strlen = report
        .split_whitespace()
        .find(|w| w.starts_with("__strlen_"))
        .unwrap_or_else(|| panic!("no __strlen_* in\n{report}"));
    let (ours, perf) = annotate_both(&data, strlen);
    let rows = instructions(&ours);
    let theirs = instructions(&perf);
    assert!(!rows.is_empty(), "{ours}");
    assert_eq!(
        addresses(&rows),
        addresses(&theirs),
        "perf:\n{perf}\nscry:\n{ours}"
    );
    assert_eq!(
        hottest(&rows).1,
        hottest(&theirs).1,
        "perf:\n{perf}\nscry:\n{ours}"
    );
    // perf's `file:line` lines (no source here) are ours too.
    let source = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.split_once(':')?.1.split_whitespace().last())
            .map(str::to_string)
            .filter(|s| s.contains(".S:") || s.contains(".c:"))
            .collect()
    };
    let ours_src = source(&ours);
    assert!(!ours_src.is_empty(), "no source lines in\n{ours}");
    assert!(
        ours_src.iter().all(|s| source(&perf).contains(s)),
        "perf:\n{perf}\nscry:\n{ours}"
    );
}
