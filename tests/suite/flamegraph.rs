//! `scry flamegraph` against its peers: folded stacks equal, line for line,
//! what `perf script | inferno-collapse-perf` gives on the same perf.data;
//! the SVG is well-formed XML whose frame widths are proportional to their
//! counts, kernel frames are told apart, and it renders in headless
//! Chromium to a non-blank picture. Also the one-step `scry flamegraph --
//! CMD`, `--diff`, `--inverted`, and bad input.
//!
//! The oracle `inferno-collapse-perf` comes from `cargo install inferno
//! --locked`; Chromium from `apt-get install chromium`. Missing tools skip
//! the test with the reason, or fail it under `SCRY_KERNEL_TESTS=required`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use quick_xml::Reader;
use quick_xml::events::Event;

/// A tool from PATH or ~/.cargo/bin.
fn find_tool(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        dirs.push(PathBuf::from(home).join("bin"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo/bin"));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

fn require_tool(name: &str, install: &str) -> Option<PathBuf> {
    let found = find_tool(name);
    if found.is_none() {
        common::gate(Err(format!("{name} is not installed ({install})")));
    }
    found
}

/// `perf script -i data | inferno-collapse-perf`, sorted lines.
fn oracle_folded(data: &Path, collapse: &Path) -> Vec<String> {
    let mut script = common::perf()
        .args(["script", "-i"])
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run perf script");
    let out = Command::new(collapse)
        .stdin(script.stdout.take().expect("perf script stdout"))
        .output()
        .expect("run inferno-collapse-perf");
    let _ = script.wait();
    assert!(out.status.success(), "inferno-collapse-perf failed");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

fn scry_folded(data: &Path) -> Vec<String> {
    let text = common::run_ok(
        common::scry()
            .args(["flamegraph", "--folded", "-i"])
            .arg(data),
    );
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

/// One name for the aliases glibc gives a function at one address
/// (`write`, `__libc_write`, `__GI___libc_write`; `clone3`, `__GI___clone3`):
/// perf's choice among them depends on symbol bindings in ways the symbol
/// stage does not copy yet, and the choice is not what this test is about.
fn unalias(line: &str) -> String {
    let (stack, count) = line.rsplit_once(' ').unwrap_or((line, ""));
    let frames: Vec<&str> = stack
        .split(';')
        .map(|f| {
            let f = f.strip_prefix("__GI_").unwrap_or(f).trim_start_matches('_');
            f.strip_prefix("libc_").unwrap_or(f)
        })
        .collect();
    format!("{} {count}", frames.join(";"))
}

fn assert_same_folded(data: &Path, collapse: &Path) {
    let mut theirs: Vec<String> = oracle_folded(data, collapse)
        .iter()
        .map(|l| unalias(l))
        .collect();
    let mut ours: Vec<String> = scry_folded(data).iter().map(|l| unalias(l)).collect();
    theirs.sort();
    ours.sort();
    assert!(!theirs.is_empty(), "the oracle folded nothing");
    // A sample or two may differ in the name of a symbol with aliases the
    // unaliasing above does not cover (`strchrnul` vs `strchrnul_ifunc` in
    // the loader): tolerate up to 2% of the samples, as tests/script.rs does.
    let weight = |lines: &[String]| -> u64 {
        lines
            .iter()
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
            .sum()
    };
    let differing: Vec<String> = ours
        .iter()
        .filter(|l| !theirs.contains(l))
        .cloned()
        .collect();
    if ours != theirs && weight(&differing) * 50 > weight(&theirs) {
        let only_ours: Vec<&String> = ours.iter().filter(|l| !theirs.contains(l)).collect();
        let only_theirs: Vec<&String> = theirs.iter().filter(|l| !ours.contains(l)).collect();
        panic!(
            "folded stacks differ ({} vs {} lines)\nonly scry:\n{}\nonly perf+inferno:\n{}",
            ours.len(),
            theirs.len(),
            only_ours
                .iter()
                .take(20)
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            only_theirs
                .iter()
                .take(20)
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
}

#[test]
fn folded_equals_perf_script_through_inferno() {
    require_kernel!();
    require_perf!();
    let Some(collapse) = require_tool("inferno-collapse-perf", "cargo install inferno --locked")
    else {
        return;
    };
    let dir = common::tempdir();
    let data = common::perf_record_g(
        dir.path(),
        "cpu7525",
        &common::workload("cpu7525"),
        &["0.5s"],
    );
    assert_same_folded(&data, &collapse);
    let data = common::perf_record_g(
        dir.path(),
        "threads",
        &common::workload("threads"),
        &["3", "0.1s"],
    );
    assert_same_folded(&data, &collapse);
    let data = common::perf_record_g(
        dir.path(),
        "forker",
        &common::workload("forker"),
        &["2", "0.1s"],
    );
    assert_same_folded(&data, &collapse);
}

/// One drawn frame: its title text and width in the SVG's units.
#[derive(Debug)]
struct Rect {
    title: String,
    width: f64,
    fill: String,
}

/// Parses the SVG (fails on malformed XML) and returns every frame.
fn svg_frames(svg: &str) -> Vec<Rect> {
    let mut reader = Reader::from_str(svg);
    let mut frames = Vec::new();
    let mut in_title = false;
    let mut title = String::new();
    loop {
        match reader.read_event() {
            Ok(Event::Eof) => break,
            Ok(Event::Start(e)) if e.name().as_ref() == b"title" => {
                in_title = true;
                title.clear();
            }
            Ok(Event::End(e)) if e.name().as_ref() == b"title" => in_title = false,
            Ok(Event::Text(t)) if in_title => {
                title.push_str(&String::from_utf8_lossy(t.as_ref()));
            }
            Ok(Event::GeneralRef(r)) if in_title => {
                let text = match r.as_ref() {
                    b"lt" => "<",
                    b"gt" => ">",
                    b"amp" => "&",
                    b"quot" => "\"",
                    b"apos" => "'",
                    _ => "?",
                };
                title.push_str(text);
            }
            Ok(Event::Empty(e)) | Ok(Event::Start(e)) if e.name().as_ref() == b"rect" => {
                let attr = |name: &[u8]| {
                    e.attributes()
                        .filter_map(Result::ok)
                        .find(|a| a.key.as_ref() == name)
                        .map(|a| String::from_utf8_lossy(&a.value).into_owned())
                };
                if let Some(width) = attr(b"width")
                    && !title.is_empty()
                {
                    let width = width.trim_end_matches('%').parse::<f64>().unwrap_or(-1.0);
                    frames.push(Rect {
                        title: title.clone(),
                        width,
                        fill: attr(b"fill").unwrap_or_default(),
                    });
                }
            }
            Ok(_) => {}
            Err(e) => panic!("malformed SVG at byte {}: {e}", reader.buffer_position()),
        }
    }
    frames
}

/// `name (1,234 samples, 12.34%)` → (name, 1234).
fn title_count(title: &str) -> Option<(String, u64)> {
    let open = title.rfind(" (")?;
    let inner = &title[open + 2..];
    let count: String = inner
        .split(' ')
        .next()?
        .chars()
        .filter(|c| c.is_ascii_digit())
        .collect();
    Some((title[..open].to_string(), count.parse().ok()?))
}

#[test]
fn svg_is_well_formed_and_widths_follow_counts() {
    require_kernel!();
    require_perf!();
    let dir = common::tempdir();
    let data = common::perf_record_g(
        dir.path(),
        "cpu7525",
        &common::workload("cpu7525"),
        &["0.5s"],
    );
    let svg_path = dir.path().join("fg.svg");
    common::run_ok(
        common::scry()
            .args(["flamegraph", "-i"])
            .arg(&data)
            .arg("-o")
            .arg(&svg_path),
    );
    let svg = std::fs::read_to_string(&svg_path).expect("SVG written");
    let frames = svg_frames(&svg);
    let (_, total) = frames
        .iter()
        .filter_map(|r| title_count(&r.title))
        .find(|(name, _)| name == "all")
        .expect("the 'all' frame");
    let all_width = frames
        .iter()
        .find(|r| r.title.starts_with("all ("))
        .map(|r| r.width)
        .expect("all width");
    let mut checked = 0;
    for rect in &frames {
        let Some((name, count)) = title_count(&rect.title) else {
            continue;
        };
        let expected = all_width * count as f64 / total as f64;
        assert!(
            (rect.width - expected).abs() <= 0.01 + expected * 0.001,
            "{name}: width {} but {count}/{total} of {all_width} is {expected}",
            rect.width
        );
        checked += 1;
    }
    assert!(checked > 5, "only {checked} frames");
    // The hot leaf of the 75% branch is there with its share.
    let hot_a = frames
        .iter()
        .filter_map(|r| title_count(&r.title))
        .filter(|(n, _)| n == "hot_a")
        .map(|(_, c)| c)
        .sum::<u64>();
    let share = hot_a as f64 / total as f64;
    assert!((share - 0.75).abs() < 0.05, "hot_a share {share}");
}

/// `rgb(r,g,b)` → (r, g, b).
fn rgb(fill: &str) -> (u32, u32, u32) {
    let inner = fill.trim_start_matches("rgb(").trim_end_matches(')');
    let v: Vec<u32> = inner
        .split(',')
        .filter_map(|p| p.trim().parse().ok())
        .collect();
    assert_eq!(v.len(), 3, "fill {fill}");
    (v[0], v[1], v[2])
}

#[test]
fn kernel_frames_are_coloured_apart() {
    require_kernel!();
    require_perf!();
    let dir = common::tempdir();
    // Nothing but system calls: most samples are in the kernel.
    let data = common::perf_record_g(dir.path(), "calls", &common::workload("calls"), &["300000"]);
    let svg_path = dir.path().join("calls.svg");
    common::run_ok(
        common::scry()
            .args(["flamegraph", "-i"])
            .arg(&data)
            .arg("-o")
            .arg(&svg_path),
    );
    let frames = svg_frames(&std::fs::read_to_string(&svg_path).unwrap());
    let fill_of = |name: &str| {
        frames
            .iter()
            .find(|r| r.title.starts_with(&format!("{name} (")))
            .map(|r| rgb(&r.fill))
            .unwrap_or_else(|| panic!("no frame {name}"))
    };
    // perl palette: kernel (`_[k]`) orange, blue channel 0; user red-ish, blue == green.
    let (kr, kg, kb) = fill_of("do_syscall_64");
    assert!(
        kb < 60 && kr > kg,
        "kernel frame not orange: {kr},{kg},{kb}"
    );
    // `main` itself is often not on the stacks: libc's `syscall` has no
    // frame pointer, so the chain skips its caller (perf's too); every
    // stack goes through `__libc_start_call_main`.
    let (ur, ug, ub) = fill_of("__libc_start_call_main");
    assert!(ub == ug && ur > ug, "user frame not red: {ur},{ug},{ub}");
    // --folded stays plain, as inferno-collapse-perf prints it.
    let folded = common::run_ok(
        common::scry()
            .args(["flamegraph", "--folded", "-i"])
            .arg(&data),
    );
    assert!(folded.contains(";do_syscall_64"), "{folded}");
    assert!(!folded.contains("_[k]"));
}

#[test]
fn svg_renders_in_headless_chromium() {
    require_kernel!();
    require_perf!();
    let Some(chromium) = require_tool("chromium", "apt-get install -y chromium") else {
        return;
    };
    let Some(python) = require_tool("python3", "apt-get install -y python3") else {
        return;
    };
    let dir = common::tempdir();
    let data = common::perf_record_g(
        dir.path(),
        "cpu7525",
        &common::workload("cpu7525"),
        &["0.3s"],
    );
    let svg = dir.path().join("fg.svg");
    common::run_ok(
        common::scry()
            .args(["flamegraph", "-i"])
            .arg(&data)
            .arg("-o")
            .arg(&svg),
    );
    let png = dir.path().join("fg.png");
    let out = common::output(
        Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--window-size=900,450",
            ])
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", svg.display()))
            .env("HOME", dir.path()),
    );
    assert!(
        png.is_file(),
        "chromium wrote no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Decode the PNG (python's zlib) and count pixels that are neither white
    // nor the background gradient's near-white: a drawn graph has many.
    let script = r#"
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat, w, h = 8, b'', 0, 0
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos+8])
    body = data[pos+8:pos+8+n]
    if kind == b'IHDR':
        w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
coloured = 0
i = 0
for y in range(h):
    f = raw[i]; line = bytearray(raw[i+1:i+1+stride]); i += 1 + stride
    for x in range(stride):
        a = line[x-bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x-bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p-a), abs(p-b), abs(p-c)
            pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            line[x] = (line[x] + pr) & 255
    for x in range(0, stride, bpp):
        r, g, bl = line[x], line[x+1], line[x+2]
        if max(r, g, bl) - min(r, g, bl) > 60:
            coloured += 1
    prev = line
print(w, h, coloured)
"#;
    let out = common::run_ok(Command::new(python).arg("-c").arg(script).arg(&png));
    let numbers: Vec<u64> = out
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(numbers.len(), 3, "{out}");
    let (w, h, coloured) = (numbers[0], numbers[1], numbers[2]);
    assert!(w >= 800 && h >= 300, "screenshot {w}x{h}");
    assert!(
        coloured > (w * h) / 50,
        "only {coloured} coloured pixels of {w}x{h}: the graph did not render"
    );
}

#[test]
fn one_step_from_a_command_and_diff_and_inverted() {
    require_kernel!();
    let dir = common::tempdir();
    let svg = dir.path().join("cmd.svg");
    common::run_ok(
        common::scry()
            .args(["flamegraph", "-o"])
            .arg(&svg)
            .arg("--")
            .arg(common::workload("cpu7525"))
            .arg("0.3s")
            .current_dir(dir.path()),
    );
    let text = std::fs::read_to_string(&svg).expect("SVG from a command");
    let frames = svg_frames(&text);
    assert!(
        frames.iter().any(|r| r.title.starts_with("hot_a (")),
        "hot_a drawn"
    );
    assert!(
        frames.iter().any(|r| r.title.starts_with("outer_b (")),
        "outer_b drawn"
    );
    assert!(
        !dir.path().join("perf.data").exists(),
        "the recording is temporary"
    );

    // --diff: two recordings of the same program, drawn with deltas.
    let before = perf_record_or_scry(dir.path(), "before", &["30"]);
    let after = perf_record_or_scry(dir.path(), "after", &["30"]);
    let diff_svg = dir.path().join("diff.svg");
    common::run_ok(
        common::scry()
            .args(["flamegraph", "-i"])
            .arg(&after)
            .arg("--diff")
            .arg(&before)
            .arg("-o")
            .arg(&diff_svg),
    );
    let diff = std::fs::read_to_string(&diff_svg).unwrap();
    let diff_frames = svg_frames(&diff);
    assert!(
        diff_frames
            .iter()
            .any(|r| r.title.starts_with("hot_a (") && r.title.contains("%;")),
        "differential titles carry the delta"
    );

    // --inverted draws an icicle: inferno marks it in the script block.
    let icicle = dir.path().join("icicle.svg");
    common::run_ok(
        common::scry()
            .args(["flamegraph", "--inverted", "--colors", "java", "-i"])
            .arg(&after)
            .arg("-o")
            .arg(&icicle),
    );
    let icicle_text = std::fs::read_to_string(&icicle).unwrap();
    assert!(
        icicle_text.contains("inverted = true"),
        "inverted flag in the SVG"
    );
    svg_frames(&icicle_text);
}

/// A recording of cpu7525 made by `scry record` (the path under test for
/// `--diff` does not care who recorded it).
fn perf_record_or_scry(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let data = dir.join(format!("{name}.data"));
    common::run_ok(
        common::scry()
            .args(["record", "-q", "-F", "999", "-g", "-o"])
            .arg(&data)
            .arg("--")
            .arg(common::workload("cpu7525"))
            .args(args),
    );
    data
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = common::tempdir();
    let garbage = dir.path().join("garbage.data");
    std::fs::write(
        &garbage,
        b"PERFILE2 but then nothing sensible at all........",
    )
    .unwrap();
    for (args, what) in [
        (vec!["flamegraph", "-i", "nope.data"], "nope.data"),
        (
            vec!["flamegraph", "-i", garbage.to_str().unwrap()],
            "garbage.data",
        ),
        (vec!["flamegraph", "--colors", "plaid"], "plaid"),
    ] {
        let out = common::output(common::scry().args(&args).current_dir(dir.path()));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("scry: "), "{stderr}");
        assert!(
            stderr.contains(what),
            "{args:?} should name {what}: {stderr}"
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    }
}

/// A file recorded without -g: drawn as perf script | flamegraph.pl draws
/// it (one frame per sample over its command), with one line saying why.
#[test]
fn a_file_without_call_chains_is_drawn_flat_and_said_once() {
    require_kernel!();
    let dir = common::tempdir();
    let data = dir.path().join("flat.data");
    common::run_ok(
        common::scry()
            .args(["record", "-F", "999", "-o"])
            .arg(&data)
            .arg("--")
            .arg(common::workload("cpu7525"))
            .arg("0.2s"),
    );
    let svg = dir.path().join("flat.svg");
    let out = common::output(
        common::scry()
            .args(["flamegraph", "-i"])
            .arg(&data)
            .arg("-o")
            .arg(&svg),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("no call chains recorded (record with -g)"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    let frames = svg_frames(&std::fs::read_to_string(&svg).expect("the SVG"));
    assert!(
        frames.iter().any(|r| r.title.starts_with("hot_a (")),
        "hot_a drawn"
    );
}

/// A big file (past the 8 MB from which `resolve_file` finds stacks on a
/// second thread) draws the graph its bytes draw read as a stream on
/// standard input (one thread), byte for byte; and the second thread
/// (`scry-unwind`, named through prctl, which strace shows) did run.
#[test]
fn a_big_file_is_resolved_on_two_threads_as_on_one() {
    require_kernel!();
    if !common::require_tool("strace", "apt-get install strace") {
        return;
    }
    let dir = common::tempdir();
    let data = dir.path().join("big.data");
    // deep's work by CPU time: -g samples of deep stacks, ~600 bytes each;
    // longer each try should the kernel have lowered the sample rate.
    for cpu_time in ["2s", "4s", "8s"] {
        common::run_ok(
            common::scry()
                .args(["record", "-q", "-F", "10000", "-g", "-o"])
                .arg(&data)
                .arg("--")
                .arg(common::workload("deep"))
                .arg(cpu_time),
        );
        if std::fs::metadata(&data).map_or(0, |m| m.len()) >= 8 << 20 {
            break;
        }
    }
    let size = std::fs::metadata(&data).map_or(0, |m| m.len());
    assert!(size >= 8 << 20, "{} is {size} bytes", data.display());
    let (two, one) = (dir.path().join("two.svg"), dir.path().join("one.svg"));
    let traced = common::output(
        Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=prctl", "-o"])
            .arg(dir.path().join("strace.txt"))
            .arg(env!("CARGO_BIN_EXE_scry"))
            .args(["flamegraph", "-i"])
            .arg(&data)
            .arg("-o")
            .arg(&two),
    );
    assert!(
        traced.status.success(),
        "{}",
        String::from_utf8_lossy(&traced.stderr)
    );
    let input = std::fs::File::open(&data).expect("the recording");
    common::run_ok(
        common::scry()
            .args(["flamegraph", "-o"])
            .arg(&one)
            .stdin(Stdio::from(input)),
    );
    let (two, one) = (
        std::fs::read(&two).expect("the file's SVG"),
        std::fs::read(&one).expect("the stream's SVG"),
    );
    assert!(two == one, "the SVGs of the file and of the stream differ");
    let strace = std::fs::read_to_string(dir.path().join("strace.txt")).expect("strace's log");
    assert!(
        strace.contains("PR_SET_NAME, \"scry-unwind\""),
        "no scry-unwind thread:\n{strace}"
    );
}
