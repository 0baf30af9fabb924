//! Stripped binaries: code without symbols is kept apart by the function
//! ranges of the binary's `.eh_frame` (`gzip+0x4290`), and debug files are
//! found where they are (`.gnu_debugdata`, debuginfod's cache).
//!
//! The oracles: perf, which keeps each unknown address apart (`perf report
//! --sort dso,sym` prints `0x4330`), on the same perf.data; binutils'
//! `readelf --debug-dump=frames`, which lists the FDE ranges the addresses
//! fall in. Summing perf's addresses per FDE must give scry's entries.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use scry::symbol::{ResolveOptions, resolve_file};

/// FDE ranges (`pc=START..END`) of a file, as readelf lists them.
fn fde_ranges(binary: &Path) -> Vec<(u64, u64)> {
    let text = common::run_ok(
        Command::new("readelf")
            .arg("--debug-dump=frames")
            .arg(binary),
    );
    let mut out: Vec<(u64, u64)> = text
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("pc="))
        .filter_map(|r| r.split_once(".."))
        .filter_map(|(a, b)| {
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .collect();
    out.sort_unstable();
    out
}

/// perf's overhead per unknown address of `dso` (`[.] 0x...` lines).
fn perf_addresses(data: &Path, dso: &str) -> Vec<(u64, f64)> {
    let text = common::run_ok(
        common::perf()
            .args(["report", "--no-children", "--sort", "dso,sym", "--stdio"])
            .args(["-q", "-g", "none", "--percent-limit", "0", "-i"])
            .arg(data),
    );
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let (pct, d, addr) = (w.first()?, w.get(1)?, w.get(3)?);
            if *d != dso || w.get(2) != Some(&"[.]") {
                return None;
            }
            let addr = u64::from_str_radix(addr.strip_prefix("0x")?, 16).ok()?;
            Some((addr, pct.trim_end_matches('%').parse().ok()?))
        })
        .collect()
}

/// scry's overhead (period-weighted, as perf's) per leaf symbol.
fn scry_leaves(data: &Path) -> BTreeMap<String, f64> {
    let r = resolve_file(data, &ResolveOptions::default()).expect("resolve");
    let total: u64 = r.samples.iter().map(|s| s.period).sum();
    let mut out = BTreeMap::new();
    for s in &r.samples {
        let Some(&leaf) = s.stack.first() else {
            continue;
        };
        let f = r.frames.get(leaf);
        let name = f.sym.as_deref().unwrap_or("[unknown]").to_string();
        *out.entry(name).or_insert(0.0) += s.period as f64 * 100.0 / total.max(1) as f64;
    }
    out
}

/// A text file of `lines` lines, alike enough to compress, not trivially.
fn input(dir: &Path, lines: u64) -> PathBuf {
    use std::io::Write;
    let path = dir.join("input.txt");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for i in 0..lines {
        writeln!(w, "{} lorem ipsum {i}", i * 7919 % 100_003).unwrap();
    }
    w.flush().unwrap();
    path
}

/// Records `shell` under perf (leaf samples only) and checks that each
/// function of `binary` that perf's addresses fall in is one scry entry
/// weighing what those addresses weigh.
fn compare(dir: &Path, name: &str, shell: &str, binary: &Path) {
    let data = dir.join(format!("{name}.data"));
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-e", "cpu-clock", "-F", "1999", "-o"])
            .arg(&data)
            .args(["--", "sh", "-c", shell]),
    );
    let dso = binary.file_name().unwrap().to_string_lossy().into_owned();
    let fdes = fde_ranges(binary);
    let perf = perf_addresses(&data, &dso);
    assert!(!perf.is_empty(), "perf shows no address of {dso}");
    let mut by_function: BTreeMap<u64, (f64, usize)> = BTreeMap::new();
    for &(addr, pct) in &perf {
        let Some(&(start, _)) = fdes.iter().find(|(s, e)| (*s..*e).contains(&addr)) else {
            continue;
        };
        let e = by_function.entry(start).or_default();
        e.0 += pct;
        e.1 += 1;
    }
    let ours = scry_leaves(&data);
    eprintln!("{name}: perf by function {by_function:x?}");
    eprintln!("{name}: scry {ours:?}");
    let unknown = ours.get("[unknown]").copied().unwrap_or(0.0);
    assert!(unknown < 1.0, "{name}: {unknown:.1}% [unknown] leaves");
    let mut compared = 0;
    for (&start, &(pct, addrs)) in &by_function {
        if pct < 2.0 {
            continue;
        }
        let entry = format!("{dso}+{start:#x}");
        let got = ours.get(&entry).copied().unwrap_or(0.0);
        // perf rounds each address's share to 0.01%.
        let slack = 0.1 + 0.01 * addrs as f64;
        assert!(
            (got - pct).abs() <= slack,
            "{name}: {entry} {got:.2}% in scry, perf's {addrs} addresses in it {pct:.2}%"
        );
        compared += 1;
    }
    assert!(compared >= 1, "{name}: no function of {dso} above 2%");
    let functions = ours.keys().filter(|k| k.starts_with(&format!("{dso}+0x")));
    assert!(
        functions.count() >= 3,
        "{name}: fewer than 3 functions of {dso}"
    );
}

fn setup(tools: &[&str]) -> Option<tempfile::TempDir> {
    if !common::require_perf_events() || !common::require_perf() {
        return None;
    }
    for t in tools {
        if !common::require_tool(t, &format!("{t} is not installed (scripts/deps)")) {
            return None;
        }
    }
    Some(common::tempdir())
}

#[test]
fn stripped_gzip_is_named_by_its_functions() {
    let Some(dir) = setup(&["gzip", "readelf"]) else {
        return;
    };
    let input = input(dir.path(), 800_000);
    let gzip = std::fs::canonicalize("/usr/bin/gzip").unwrap();
    let shell = format!("gzip -9 -c {} > /dev/null", input.display());
    compare(dir.path(), "gzip", &shell, &gzip);
}

#[test]
fn stripped_liblzma_is_named_by_its_functions() {
    let Some(dir) = setup(&["xz", "readelf", "ldd"]) else {
        return;
    };
    let ldd = common::run_ok(Command::new("ldd").arg("/usr/bin/xz"));
    let Some(lib) = ldd
        .lines()
        .filter_map(|l| l.split("=>").nth(1))
        .filter_map(|r| r.split_whitespace().next())
        .find(|p| p.contains("liblzma"))
    else {
        panic!("xz links no liblzma:\n{ldd}");
    };
    let lib = std::fs::canonicalize(lib).unwrap();
    let input = input(dir.path(), 400_000);
    let shell = format!("xz -1 -T1 -c {} > /dev/null", input.display());
    compare(dir.path(), "xz", &shell, &lib);
}

/// `perf record --call-graph dwarf` of a stripped binary: its stacks reach
/// the root (framehop) though no frame has a symbol; they count as fully
/// unwound, the unnamed functions apart.
#[test]
fn unwound_stacks_of_a_stripped_binary_are_whole() {
    let Some(dir) = setup(&["gzip"]) else {
        return;
    };
    let input = input(dir.path(), 300_000);
    let data = dir.path().join("dwarf.data");
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-e", "cpu-clock", "-F", "999"])
            .args(["--call-graph", "dwarf", "-o"])
            .arg(&data)
            .args(["--", "sh", "-c"])
            .arg(format!("gzip -9 -c {} > /dev/null", input.display())),
    );
    let r = resolve_file(&data, &ResolveOptions::default()).expect("resolve");
    let s = &r.stats;
    eprintln!("{}", s.summary());
    assert!(s.complete_pct() > 90.0, "{}", s.summary());
    assert!(s.ranged_frames > s.frames / 2, "{}", s.summary());
    assert!(s.summary().contains("frames in functions without a symbol"));
}

/// Copies of cpu7525 in a folder: stripped, its debug file, and stripped
/// with MiniDebugInfo.
struct Copies {
    stripped: PathBuf,
    debug: PathBuf,
    minibin: PathBuf,
}

/// Makes the [`Copies`] of cpu7525 in `d` (objcopy, xz): MiniDebugInfo
/// as Fedora's recipe makes it, the symbols `.dynsym` lacks xz-compressed
/// into `.gnu_debugdata`.
fn stripped_copies(d: &Path) -> Copies {
    let full = common::workload("cpu7525");
    let (stripped, debug, mini) = (d.join("stripped"), d.join("cpu7525.debug"), d.join("mini"));
    let objcopy = || Command::new("objcopy");
    common::run_ok(objcopy().arg("--strip-all").arg(&full).arg(&stripped));
    common::run_ok(objcopy().arg("--only-keep-debug").arg(&full).arg(&debug));
    let mut keep = objcopy();
    keep.arg("-S");
    for sym in ["main", "hot_a", "hot_b", "outer_a", "outer_b", "middle_b"] {
        keep.arg(format!("--keep-symbol={sym}"));
    }
    common::run_ok(keep.arg(&debug).arg(&mini));
    common::run_ok(Command::new("xz").arg("-f").arg(&mini));
    let minibin = d.join("minibin");
    common::run_ok(
        objcopy()
            .arg("--add-section")
            .arg(format!(".gnu_debugdata={}.xz", mini.display()))
            .arg(&stripped)
            .arg(&minibin),
    );
    Copies {
        stripped,
        debug,
        minibin,
    }
}

/// The functions only a stripped binary's MiniDebugInfo names are where
/// the report finds them for uprobes too (listed, probed: cpu7525 calls
/// hot_a once a round) and for annotate (their code read from the binary).
#[test]
fn uprobes_and_annotate_read_minidebuginfo() {
    let Some(dir) = setup(&["objcopy", "xz"]) else {
        return;
    };
    let d = dir.path();
    let Copies { minibin, .. } = stripped_copies(d);
    let cache = d.join("cache");
    let scry = || {
        let mut c = common::scry();
        c.env("XDG_CACHE_HOME", &cache)
            .env("DEBUGINFOD_CACHE_PATH", d.join("none"));
        c
    };
    let bin = minibin.display();
    let listed = common::run_ok(scry().args(["run", "-l", &format!("uprobe:{bin}:hot_*")]));
    assert_eq!(
        listed.lines().collect::<Vec<_>>(),
        [format!("uprobe:{bin}:hot_a"), format!("uprobe:{bin}:hot_b")],
        "{listed}"
    );
    let counted = common::run_ok(
        scry()
            .args(["run", "-q", "-c", &format!("{bin} 3")])
            .arg(format!("uprobe:{bin}:hot_a {{ @calls = count(); }}")),
    );
    assert!(counted.contains("@calls: 3\n"), "{counted}");
    let data = d.join("minibin.data");
    common::run_ok(
        common::perf()
            .args(["record", "-q", "-e", "cpu-clock", "-F", "999", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&minibin)
            .arg("20"),
    );
    let annotated = common::run_ok(
        scry()
            .args(["annotate", "--stdio", "-i"])
            .arg(&data)
            .arg("hot_a"),
    );
    // Before: "hot_a: .../minibin: no function symbol covers 0x1336".
    assert!(
        annotated.contains(" <hot_a>:") && !annotated.contains("no function symbol"),
        "{annotated}"
    );
}

/// A stripped copy of cpu7525 with MiniDebugInfo (Fedora's recipe: the
/// symbols `.dynsym` lacks, xz-compressed into `.gnu_debugdata`) is named
/// from it; a copy without any is named by function ranges; the same copy
/// with its debug file in debuginfod's cache is named from that.
#[test]
fn debug_files_are_found_where_they_are() {
    let Some(dir) = setup(&["objcopy", "xz", "nm"]) else {
        return;
    };
    let d = dir.path();
    let full = common::workload("cpu7525");
    let Copies {
        stripped,
        debug,
        minibin,
    } = stripped_copies(d);
    let cache = d.join("cache");
    let debuginfod = d.join("debuginfod");
    let report = |program: &Path, with_debuginfod: bool| {
        let data = d.join(format!(
            "{}{}.data",
            program.file_name().unwrap().to_string_lossy(),
            with_debuginfod
        ));
        common::run_ok(
            common::perf()
                .args(["record", "-q", "-e", "cpu-clock", "-F", "999", "-o"])
                .arg(&data)
                .arg("--")
                .arg(program)
                .arg("20"),
        );
        let mut c = common::scry();
        c.args(["report", "--stdio", "--no-children", "--sort", "sym", "-i"])
            .arg(&data)
            .env("XDG_CACHE_HOME", &cache)
            .env("DEBUGINFOD_CACHE_PATH", &debuginfod);
        if !with_debuginfod {
            c.env("DEBUGINFOD_CACHE_PATH", d.join("none"));
        }
        common::run_ok(&mut c)
    };
    let top = |text: &str| {
        text.lines()
            .find(|l| l.contains("[.]"))
            .and_then(|l| l.split("[.]").nth(1))
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    // MiniDebugInfo.
    let text = report(&minibin, false);
    assert_eq!(top(&text), "hot_a", "{text}");
    let id = scry::symbol::read_build_id(&minibin).unwrap();
    let hex = scry::data::build_id_cache::hex(&id);
    let kept = cache
        .join("scry/build-id")
        .join(&hex[..2])
        .join(&hex[2..])
        .join("debugdata");
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&kept), 0o600, "{}", kept.display());
    assert_eq!(mode(kept.parent().unwrap()), 0o700);
    // Nothing: the function ranges, hot_a's among them.
    let text = report(&stripped, false);
    let hot_a = common::run_ok(Command::new("nm").arg(&full))
        .lines()
        .find(|l| l.ends_with(" hot_a"))
        .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
        .expect("nm finds hot_a");
    assert_eq!(top(&text), format!("stripped+{hot_a:#x}"), "{text}");
    assert!(
        text.contains("frames in functions without a symbol"),
        "{text}"
    );
    // debuginfod's cache.
    let slot = debuginfod.join(&hex);
    std::fs::create_dir_all(&slot).unwrap();
    std::fs::copy(&debug, slot.join("debuginfo")).unwrap();
    let text = report(&stripped, true);
    assert_eq!(top(&text), "hot_a", "{text}");
}
