//! bpftrace's own tools (Debian's bpftrace installs them as
//! `/usr/sbin/*.bt`) run unchanged through `scry run`, each beside
//! bpftrace on the same workload: `TOOLS` says, for every one of them,
//! whether it runs here and prints as bpftrace prints, or why not (a
//! probe this kernel lacks, a symbol it does not export, a library
//! function glibc no longer has), so a tool that stops running fails.
//!
//! A tool runs until its workload's trace shows (or 2 s for tools that
//! print only at the end), then gets Ctrl-C as a user would stop it. What
//! is compared: the lines its `BEGIN` prints (with "Attaching N
//! probes...") byte for byte; the lines naming the workload (a unique
//! command name, path or function) with every number masked (pids, times
//! and latencies differ between two runs); the names of the maps printed
//! at the end; both exit 0. The tools on kprobes (this kernel has none)
//! go through `scry run --dry-run`: compiled, every program loaded past
//! the verifier, nothing attached.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What a tool does here.
enum Expect {
    /// Runs and prints as bpftrace does: `head` lines from `BEGIN` (with
    /// "Attaching"), then lines holding the workload's needle (empty: no
    /// workload this machine can make it see); `live`: the needle shows
    /// while it runs (a printf), not only in the maps at the end.
    Runs {
        head: usize,
        needle: Needle,
        live: bool,
    },
    /// Runs with scry; bpftrace cannot run it here (the reason).
    ScryOnly {
        head: usize,
        needle: Needle,
        why: &'static str,
    },
    /// Needs kprobes or kretprobes, which this kernel lacks: scry says so
    /// at the probe's line, exit 2; `scry run --dry-run` compiles it and
    /// the verifier accepts every program. The qemu guest (Debian's 6.1,
    /// scripts/kernel-matrix's run_tools and run_bt_tools) runs them
    /// attached: all but biolatency, biosnoop and biostacks (6.1 inlined
    /// blk_account_io_start) and mdflush and xfsdist (modules not loaded).
    Kprobes,
    /// Needs a kernel function this kernel does not have (`--dry-run`
    /// says which, exit 2), and why.
    KprobeMissing {
        message: &'static str,
        why: &'static str,
    },
    /// Neither tracer runs it on this machine: the message both print
    /// (`bpftrace_too`) or scry's alone, and why.
    Fails {
        message: &'static str,
        bpftrace_too: bool,
        why: &'static str,
    },
}

/// What the workload leaves in a tool's output.
#[derive(Clone, Copy)]
enum Needle {
    /// Nothing this test can cause.
    None,
    /// The workload's unique tag (its command names and file path).
    Tag,
    /// One of the workload's commands: the tag and this suffix (`d`: dd).
    TagOf(&'static str),
    /// Fixed text.
    Text(&'static str),
    /// Fixed text, in scry's output only (bpftrace prints something else
    /// for the same event: the reason).
    ScryText(&'static str, &'static str),
}

use Expect::*;

const TOOLS: &[(&str, Expect)] = &[
    (
        "bashreadline",
        Runs {
            head: 3,
            needle: Needle::None,
            live: true,
        },
    ),
    ("biolatency", Kprobes),
    ("biosnoop", Kprobes),
    ("biostacks", Kprobes),
    (
        "bitesize",
        Runs {
            head: 2,
            // dd's direct I/O only: whether another command of the
            // workload reads from the disk or the page cache depends on
            // the machine (bpftrace once saw the opens command's reads).
            needle: Needle::TagOf("d"),
            live: false,
        },
    ),
    ("capable", Kprobes),
    (
        "cpuwalk",
        Runs {
            head: 2,
            needle: Needle::Text("@cpu: "),
            live: false,
        },
    ),
    ("dcsnoop", Kprobes),
    (
        "execsnoop",
        Runs {
            head: 2,
            needle: Needle::Tag,
            live: true,
        },
    ),
    (
        "gethostlatency",
        Runs {
            head: 3,
            needle: Needle::Tag,
            live: true,
        },
    ),
    (
        "killsnoop",
        Runs {
            head: 3,
            needle: Needle::Tag,
            live: true,
        },
    ),
    (
        "loads",
        Fails {
            message: "Failed to resolve kernel symbol: avenrun",
            bpftrace_too: true,
            why: "avenrun (a data symbol) is not in this kernel's /proc/kallsyms",
        },
    ),
    (
        "mdflush",
        KprobeMissing {
            message: "kprobe:md_flush_request: the kernel has no function md_flush_request",
            why: "md (software RAID) is a module this machine has not loaded",
        },
    ),
    (
        "naptime",
        Runs {
            head: 3,
            needle: Needle::Tag,
            live: true,
        },
    ),
    ("oomkill", Kprobes),
    (
        "opensnoop",
        Runs {
            head: 3,
            needle: Needle::Tag,
            live: true,
        },
    ),
    (
        "pidpersec",
        Runs {
            head: 2,
            needle: Needle::Text("PIDs/sec: @: "),
            live: true,
        },
    ),
    (
        "runqlat",
        ScryOnly {
            head: 2,
            needle: Needle::Text("@usecs: "),
            why: "bpftrace 0.17 includes linux/sched.h, which its clang cannot read here (unknown type name '__aligned_u64')",
        },
    ),
    (
        "runqlen",
        Fails {
            message: "Struct/union of type 'struct cfs_rq' does not contain a field named 'nr_running'",
            bpftrace_too: true,
            why: "this kernel's struct cfs_rq (BTF) has no nr_running",
        },
    ),
    (
        "setuids",
        Runs {
            head: 3,
            needle: Needle::Tag,
            live: true,
        },
    ),
    (
        "ssllatency",
        Runs {
            head: 2,
            needle: Needle::ScryText(
                "[RSA_sign]: ",
                "bpftrace keeps func's address and names it at exit, when openssl has gone: @hist[0x7f...]",
            ),
            live: false,
        },
    ),
    (
        "sslsnoop",
        Runs {
            head: 3,
            needle: Needle::ScryText(
                " RSA_sign",
                "bpftrace keeps func's address and names it when it prints, after openssl has gone: 0x7f...",
            ),
            live: true,
        },
    ),
    (
        "statsnoop",
        Runs {
            head: 3,
            needle: Needle::Tag,
            live: true,
        },
    ),
    (
        "swapin",
        KprobeMissing {
            message: "kprobe:swap_readpage: the kernel has no function swap_readpage",
            why: "Linux 6.6 renamed swap_readpage to swap_read_folio",
        },
    ),
    (
        "syncsnoop",
        Runs {
            head: 3,
            needle: Needle::Tag,
            live: true,
        },
    ),
    (
        "syscount",
        Runs {
            head: 2,
            needle: Needle::Text("@syscall["),
            live: false,
        },
    ),
    ("tcpaccept", Kprobes),
    ("tcpconnect", Kprobes),
    (
        "tcpdrop",
        ScryOnly {
            head: 3,
            needle: Needle::None,
            why: "bpftrace 0.17 wants kernel headers here ('net/sock.h' file not found); scry reads BTF",
        },
    ),
    ("tcplife", Kprobes),
    ("tcpretrans", Kprobes),
    ("tcpsynbl", Kprobes),
    (
        "threadsnoop",
        Fails {
            message: "libpthread.so.0:pthread_create: ",
            bpftrace_too: false,
            why: "glibc 2.34 moved pthread_create into libc: libpthread.so.0 has none (bpftrace attaches nothing and prints no thread)",
        },
    ),
    ("undump", Kprobes),
    ("vfscount", Kprobes),
    ("vfsstat", Kprobes),
    (
        "writeback",
        Runs {
            head: 3,
            needle: Needle::None,
            live: true,
        },
    ),
    ("xfsdist", Kprobes),
];

fn tool_path(name: &str) -> std::path::PathBuf {
    Path::new("/usr/sbin").join(format!("{name}.bt"))
}

/// The tools Debian's bpftrace installed, by name.
fn installed() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/usr/sbin")
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_suffix(".bt"))
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Every digit run as `N`, every run of spaces as one.
fn masked(line: &str) -> String {
    let mut out = String::new();
    for c in line.chars() {
        let c = if c.is_ascii_digit() { 'N' } else { c };
        if (c == 'N' || c == ' ') && out.ends_with(c) {
            continue;
        }
        out.push(c);
    }
    out
}

/// The names of the maps printed (`@`, `@usecs`, `@hist`).
fn map_names(text: &str) -> std::collections::BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with('@'))
        .filter_map(|l| l.split(['[', ':']).next().map(str::to_string))
        .collect()
}

/// The files and copies the workload uses, named by one tag.
struct Workload {
    dir: tempfile::TempDir,
    tag: String,
}

impl Workload {
    fn new() -> Workload {
        let dir = common::tempdir();
        let tag = format!("lt{}", std::process::id() % 100000);
        for (from, to) in [
            (common::workload("quick"), "q"),
            (Path::new("/bin/kill").to_path_buf(), "k"),
            (Path::new("/bin/sync").to_path_buf(), "s"),
            (Path::new("/usr/bin/getent").to_path_buf(), "g"),
            (Path::new("/bin/dd").to_path_buf(), "d"),
            (Path::new("/usr/bin/setpriv").to_path_buf(), "u"),
            (Path::new("/usr/bin/openssl").to_path_buf(), "o"),
        ] {
            if from.exists() {
                std::fs::copy(&from, dir.path().join(format!("{tag}{to}"))).expect("copy");
            }
        }
        let w = Workload { dir, tag };
        let _ = w
            .cmd("o")
            .args(["genrsa", "-out"])
            .arg(w.dir.path().join("key.pem"))
            .arg("1024")
            .stderr(Stdio::null())
            .status();
        w
    }

    fn cmd(&self, which: &str) -> Command {
        let mut c = Command::new(self.dir.path().join(format!("{}{which}", self.tag)));
        c.stdout(Stdio::null()).stderr(Stdio::null());
        c
    }

    /// Everything every tool may see: an exec with arguments, opens and
    /// stats of a tagged file, a kill, nanosleeps, a sync, a name lookup,
    /// direct writes, setuid calls, an RSA signature.
    fn run(&self) {
        let file = self.dir.path().join(format!("{}f", self.tag));
        let _ = self.cmd("q").args(["a", "b"]).status();
        let _ = std::fs::write(&file, b"x");
        let _ = std::fs::read(&file);
        let _ = std::fs::metadata(&file);
        let _ = self
            .cmd("k")
            .args(["-0", &std::process::id().to_string()])
            .status();
        // nanosleep(2) itself (glibc's nanosleep() is clock_nanosleep).
        let _ = Command::new("python3")
            .arg("-c")
            .arg(format!(
                "import ctypes, struct; l = ctypes.CDLL(None); l.prctl(15, b'{}n'); \
                 ts = ctypes.create_string_buffer(struct.pack('qq', 0, 20000000)); \
                 l.syscall(35, ts, None); l.syscall(35, ts, None)",
                self.tag
            ))
            .status();
        let _ = self.cmd("s").status();
        let _ = self.cmd("g").args(["ahosts", "localhost"]).status();
        let _ = self
            .cmd("d")
            .args(["if=/dev/zero", "bs=64k", "count=4", "oflag=direct"])
            .arg(format!("of={}", self.dir.path().join("dd.data").display()))
            .status();
        let _ = self
            .cmd("u")
            .args(["--reuid=0", "--regid=0", "--clear-groups", "true"])
            .status();
        let _ = self
            .cmd("o")
            .args(["dgst", "-sha256", "-sign"])
            .arg(self.dir.path().join("key.pem"))
            .arg(&file)
            .status();
    }
}

/// One tracer's run of a tool: its whole stdout, stderr and exit.
struct ToolRun {
    out: String,
    err: String,
    ok: bool,
}

/// Runs `cmd` on tool `name`: waits for `head` lines, runs the workload,
/// waits for `needle` (up to 20 s when `live`, else 2 s), then Ctrl-C.
fn run_tool(
    mut cmd: Command,
    head: usize,
    w: &Workload,
    needle: Option<&str>,
    live: bool,
) -> ToolRun {
    let mut child: Child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the tracer");
    let (rx, reader) = crate::lang::line_reader(child.stdout.take().expect("stdout"));
    let mut stderr = child.stderr.take().expect("stderr");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let mut out = String::new();
    let until = |out: &mut String, done: &dyn Fn(&str) -> bool, limit: Duration| {
        let start = Instant::now();
        while !done(out) {
            let left = limit.saturating_sub(start.elapsed());
            match rx.recv_timeout(left) {
                Ok(line) => out.push_str(&line),
                Err(_) => return false,
            }
        }
        true
    };
    if until(
        &mut out,
        &|o| o.lines().count() >= head,
        Duration::from_secs(60),
    ) {
        w.run();
        match needle {
            Some(n) if live => {
                // A bound, not a measure: on a loaded machine a tracer
                // prints every other process's events too (statsnoop: each
                // stat of every build) and may be behind, and bpftrace
                // drops what it has not read at Ctrl-C.
                until(&mut out, &|o| o.contains(n), Duration::from_secs(120));
                // What the rest of the workload made it print.
                until(&mut out, &|_| false, Duration::from_secs(1));
            }
            _ => {
                until(&mut out, &|_| false, Duration::from_secs(2));
            }
        }
    }
    let mut status = None;
    for _ in 0..3 {
        if let Ok(Some(s)) = child.try_wait() {
            status = Some(s);
            break;
        }
        common::signal(child.id(), "INT");
        status = common::wait_timeout(&mut child, Duration::from_secs(20));
        if status.is_some() {
            break;
        }
    }
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    reader.join().expect("reader");
    out.extend(rx.try_iter());
    ToolRun {
        out,
        err: err_reader.join().expect("stderr reader"),
        ok: status.is_some_and(|s| s.success()),
    }
}

fn scry_tool(name: &str) -> Command {
    let mut c = common::scry();
    c.arg("run").arg(tool_path(name));
    c
}

fn bpftrace_tool(name: &str) -> Command {
    let mut c = Command::new("bpftrace");
    c.arg(tool_path(name));
    c
}

fn gates() -> bool {
    common::require_tracefs()
        && common::require_tool("bpftrace", "bpftrace is not installed (scripts/deps)")
}

/// The list above names every tool bpftrace installed, once.
#[test]
fn every_installed_tool_has_its_expectation() {
    if !gates() {
        return;
    }
    let listed: Vec<String> = TOOLS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(installed(), listed, "/usr/sbin/*.bt against TOOLS");
}

/// The tools that cannot run here fail as the list says: exit 2, one
/// message at the probe's or the expression's line; those on kprobes
/// compile and load (`--dry-run`) or name the function the kernel lacks.
#[test]
fn tools_that_cannot_run_here_say_why() {
    if !gates() {
        return;
    }
    let has_kprobes = Path::new("/sys/bus/event_source/devices/kprobe").exists();
    let mut wrong = Vec::new();
    for (name, expect) in TOOLS {
        if !tool_path(name).exists() {
            continue;
        }
        if let Kprobes | KprobeMissing { .. } = expect {
            let out = common::output(scry_tool(name).arg("--dry-run"));
            let text = String::from_utf8_lossy(&out.stdout);
            let err = String::from_utf8_lossy(&out.stderr);
            match expect {
                KprobeMissing { message, why } => {
                    eprintln!("{name}: does not run here: {why}");
                    if out.status.code() != Some(2) || !err.contains(message) {
                        wrong.push(format!("{name} --dry-run: {:?} {err}", out.status.code()));
                    }
                    continue;
                }
                _ if !out.status.success() || !text.starts_with("Dry run: ") => {
                    wrong.push(format!(
                        "{name} --dry-run: {:?} {text}{err}",
                        out.status.code()
                    ));
                }
                _ => eprintln!("{name}: loads (kprobes): {}", text.trim_end()),
            }
        }
        let (message, bpftrace_too) = match expect {
            Kprobes if !has_kprobes => ("this kernel has no kprobes", false),
            Fails {
                message,
                bpftrace_too,
                why,
            } => {
                eprintln!("{name}: does not run here: {why}");
                (*message, *bpftrace_too)
            }
            _ => continue,
        };
        let out = common::output(&mut scry_tool(name));
        let err = String::from_utf8_lossy(&out.stderr);
        let place = format!("/usr/sbin/{name}.bt:");
        if out.status.code() != Some(2) || !err.starts_with(&place) || !err.contains(message) {
            wrong.push(format!("{name}: {:?} {err}", out.status.code()));
        }
        if bpftrace_too {
            let theirs = common::output(&mut bpftrace_tool(name));
            let err = String::from_utf8_lossy(&theirs.stderr);
            if theirs.status.success() || !err.contains(message) {
                wrong.push(format!("bpftrace {name} ran or said otherwise: {err}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The tools that run here run unchanged and print as bpftrace prints.
#[test]
fn tools_run_unchanged_and_print_as_bpftrace() {
    if !gates() {
        return;
    }
    let w = Workload::new();
    let mut wrong = Vec::new();
    for (name, expect) in TOOLS {
        if !tool_path(name).exists() {
            continue;
        }
        let (head, needle, live) = match expect {
            Runs { head, needle, live } => (*head, *needle, *live),
            ScryOnly { head, needle, why } => {
                eprintln!("{name}: scry only: {why}");
                (*head, *needle, false)
            }
            _ => continue,
        };
        let (needle_text, scry_only) = match needle {
            Needle::None => (None, false),
            Needle::Tag => (Some(w.tag.clone()), false),
            Needle::TagOf(suffix) => (Some(format!("{}{suffix}", w.tag)), false),
            Needle::Text(t) => (Some(t.to_string()), false),
            Needle::ScryText(t, why) => {
                eprintln!("{name}: {t:?} checked in scry's output only: {why}");
                (Some(t.to_string()), true)
            }
        };
        let text = needle_text.as_deref();
        let ours = run_tool(scry_tool(name), head, &w, text, live);
        if !ours.ok {
            wrong.push(format!("{name}: scry failed:\n{}{}", ours.out, ours.err));
            continue;
        }
        if let Some(t) = text
            && !ours.out.contains(t)
        {
            wrong.push(format!("{name}: scry printed no {t:?}:\n{}", ours.out));
        }
        if matches!(expect, ScryOnly { .. }) {
            continue;
        }
        let theirs = run_tool(bpftrace_tool(name), head, &w, text, live);
        let first = |t: &str| t.lines().take(head).collect::<Vec<_>>().join("\n");
        if first(&ours.out) != first(&theirs.out) {
            wrong.push(format!(
                "{name}: BEGIN's lines differ:\nscry:\n{}\nbpftrace:\n{}",
                first(&ours.out),
                first(&theirs.out)
            ));
        }
        if !theirs.ok {
            wrong.push(format!("{name}: bpftrace failed: {}", theirs.err));
        }
        if let (Some(t), false) = (text, scry_only) {
            let shapes = |o: &str| -> std::collections::BTreeSet<String> {
                o.lines().filter(|l| l.contains(t)).map(masked).collect()
            };
            // bpftrace drops the events it has not read at Ctrl-C: what it
            // printed scry printed too. It printed some, unless its perf
            // buffers overflowed and it said so ("Lost N events").
            let theirs_shapes = shapes(&theirs.out);
            let lost = theirs
                .out
                .lines()
                .any(|l| l.starts_with("Lost ") && l.ends_with(" events"));
            if (theirs_shapes.is_empty() && !lost) || !theirs_shapes.is_subset(&shapes(&ours.out)) {
                wrong.push(format!(
                    "{name}: the lines with {t:?} differ:\nscry:\n{}\nbpftrace:\n{}",
                    ours.out, theirs.out
                ));
            }
        }
        // (Where bpftrace names the keys otherwise, a slow call may put
        // one tool's in another map: @histF, over 1 ms.)
        if !scry_only && map_names(&ours.out) != map_names(&theirs.out) {
            wrong.push(format!(
                "{name}: the maps printed differ:\nscry:\n{}\nbpftrace:\n{}",
                ours.out, theirs.out
            ));
        }
        eprintln!(
            "{name}: runs as bpftrace ({} lines)",
            ours.out.lines().count()
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn masking_keeps_the_layout() {
    assert_eq!(
        masked("03:29:31  31418  getent  0 x1"),
        "N:N:N N getent N xN"
    );
    assert_eq!(
        map_names("@[a]: 1\n@usecs: \n[1]\n@hist[x]: 2\n"),
        ["@", "@hist", "@usecs"].map(String::from).into()
    );
}
