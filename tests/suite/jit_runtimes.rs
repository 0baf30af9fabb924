//! JIT code of the runtimes on these machines besides CPython (issue 15):
//! Node with `--perf-basic-prof` and Java with `-XX:+DumpPerfMapAtExit`
//! (no agent needed: the JVM writes its own perf map at exit) name their
//! JIT functions in `/tmp/perf-PID.map`. `scry record -g` must name the
//! same samples' hot JIT function as perf does on the same file, and keep
//! the chain from it through the runtime's frames to its `main`.
//!
//! A runtime that is not installed is a skip with its reason, not a
//! failure: it is no kernel facility (scripts/deps installs both).

use crate::common;

use std::path::Path;
use std::process::Command;

/// Per sample (a `script -F ip,sym` block), its frames' names.
fn samples(text: &str) -> Vec<Vec<String>> {
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            block
                .lines()
                .filter_map(|l| l.trim().split_once(' ').map(|(_, sym)| sym.to_string()))
                .collect()
        })
        .collect()
}

/// (samples, samples holding `hot`, of those the ones that also hold
/// `root`) in `script -F ip,sym` output.
fn counts(text: &str, hot: &str, root: &str) -> (usize, usize, usize) {
    let all = samples(text);
    let with: Vec<&Vec<String>> = all
        .iter()
        .filter(|s| s.iter().any(|f| f.starts_with(hot)))
        .collect();
    let through = with
        .iter()
        .filter(|s| s.iter().any(|f| f.starts_with(root)))
        .count();
    (all.len(), with.len(), through)
}

/// Whether `program` runs (`-version`/`--version` answer), else a skip.
fn have(program: &str, arg: &str) -> bool {
    let ok = Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: {program} is not installed (scripts/deps installs it)");
    }
    ok
}

/// Records `command` with `scry record -g` and checks its samples against
/// perf's reading of the same file.
fn check(dir: &Path, command: &mut Command, hot: &str, root: &str) {
    let data = dir.join("jit.data");
    let mut record = common::scry();
    record
        .args(["record", "-q", "-g", "-F", "999", "-o"])
        .arg(&data);
    record.arg("--").arg(command.get_program());
    record.args(command.get_args());
    record.current_dir(dir);
    common::run_ok(&mut record);
    let perf = common::run_ok(
        common::perf()
            .args(["script", "-F", "ip,sym", "-i"])
            .arg(&data),
    );
    let ours = common::run_ok(
        common::scry()
            .args(["script", "-F", "ip,sym", "-i"])
            .arg(&data),
    );
    let (perf_total, perf_hot, perf_through) = counts(&perf, hot, root);
    let (total, ours_hot, ours_through) = counts(&ours, hot, root);
    eprintln!(
        "{hot}: perf {perf_hot} of {perf_total} samples, {perf_through} reach {root}; \
         scry {ours_hot} of {total}, {ours_through} reach {root}"
    );
    assert_eq!(total, perf_total, "both read every sample of the file");
    // The hot loop is the run: most samples are in it, whatever the speed.
    assert!(
        perf_hot * 2 > perf_total,
        "perf: {perf_hot} of {perf_total}"
    );
    // The samples taken in JIT code named by the perf map as perf names
    // them, at the same offsets (perf's `sym+0xOFF`): each sample's first
    // frame. Callers may differ: scry's `-g` repairs the frames a frame
    // pointer chain loses or repeats (a JIT prologue), so it may hold the
    // hot function in a sample or two more than perf.
    assert!(
        ours_hot >= perf_hot,
        "samples in {hot}: scry {ours_hot}, perf {perf_hot}"
    );
    let offsets = |cmd: &mut Command| -> Vec<String> {
        let text = common::run_ok(cmd.args(["script", "-F", "ip,sym,symoff", "-i"]).arg(&data));
        let mut leaves: Vec<String> = text
            .split("\n\n")
            .filter_map(|block| block.lines().find(|l| !l.trim().is_empty()))
            .filter(|l| l.contains(hot))
            .map(|l| l.trim().to_string())
            .collect();
        leaves.sort();
        leaves
    };
    let (perf_offsets, our_offsets) = (offsets(&mut common::perf()), offsets(&mut common::scry()));
    assert!(
        perf_offsets == our_offsets,
        "{hot} frames with their offsets differ: perf {:?}, scry {:?}",
        &perf_offsets[..perf_offsets.len().min(3)],
        &our_offsets[..our_offsets.len().min(3)]
    );
    // Frame pointers through the JIT frames to the runtime's main: at least
    // as many whole chains as perf, and nearly all.
    assert!(
        ours_through >= perf_through && ours_through * 10 >= ours_hot * 9,
        "{ours_through} of {ours_hot} of scry's chains reach {root} (perf: {perf_through})"
    );
}

#[test]
fn node_perf_basic_prof_names_js_functions() {
    require_kernel!();
    require_perf!();
    if !have("node", "--version") {
        return;
    }
    let dir = common::tempdir();
    let script = dir.path().join("hot.js");
    std::fs::write(
        &script,
        "function hotJsFunction(n) { let s = 0; for (let i = 0; i < n; i++) { s += (i * i) % 7; } return s; }\n\
         let t = 0; const end = Date.now() + 1500;\n\
         while (Date.now() < end) { t += hotJsFunction(100000); }\n\
         console.log(t);\n",
    )
    .unwrap();
    let mut node = Command::new("node");
    node.arg("--perf-basic-prof").arg(&script);
    check(dir.path(), &mut node, "JS:*hotJsFunction", "node::Start");
}

#[test]
fn java_perf_map_names_jit_methods() {
    require_kernel!();
    require_perf!();
    if !have("java", "-version") || !have("javac", "-version") {
        return;
    }
    let dir = common::tempdir();
    std::fs::write(
        dir.path().join("Hot.java"),
        "public class Hot {\n\
         static long hotJavaFunction(int n) { long s = 0; for (int i = 0; i < n; i++) { s += (long) i * i % 7; } return s; }\n\
         public static void main(String[] a) { long t = 0; long end = System.currentTimeMillis() + 2000;\n\
         while (System.currentTimeMillis() < end) { t += hotJavaFunction(100000); } System.out.println(t); }\n\
         }\n",
    )
    .unwrap();
    common::run_ok(
        Command::new("javac")
            .arg("Hot.java")
            .current_dir(dir.path()),
    );
    let mut java = Command::new("java");
    java.args([
        "-XX:+PreserveFramePointer",
        "-XX:+UnlockDiagnosticVMOptions",
        "-XX:+DumpPerfMapAtExit",
        "-cp",
    ])
    .arg(dir.path())
    .arg("Hot");
    check(
        dir.path(),
        &mut java,
        "long Hot.hotJavaFunction(int)",
        "JavaMain",
    );
}
