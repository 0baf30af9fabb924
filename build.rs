//! Compiles the BPF programs of `src/bpf/` with clang (libbpf-cargo's
//! `SkeletonBuilder`, libbpf's headers vendored) and generates their Rust
//! skeletons into `OUT_DIR`; each `src/sys/bpf_NAME.rs` includes its own.
//! clang is a build dependency (scripts/deps installs it); without it the
//! build stops here with one line saying so.

use std::path::{Path, PathBuf};

const PROGRAMS: &[&str] = &[
    "profile",
    "trace_args",
    "syscount",
    "cpudist",
    "runqslower",
    "runqlat",
    "execsnoop",
    "opensnoop",
    "exitsnoop",
    "irqs",
    "sigsnoop",
    "statsnoop",
    "offcputime",
    "tcp",
    "runqlen",
    "threadsnoop",
    "wakeuptime",
    "offwaketime",
    "futexctn",
    "klockstat",
    "bio",
    "vfsstat",
    "memleak",
    "oomkill",
    "drsnoop",
    "capable",
    "sockcall",
    "oncpu",
    "targets",
    "filelife",
    "tcptop",
    "tcprtt",
    "cachestat",
    "funcs",
    "filetop",
    "fsslower",
    "mountsnoop",
    "swapin",
];

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // linux/types.h includes asm/types.h, which Debian keeps under the
    // multiarch directory that `clang -target bpf` does not search.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = Path::new("/usr/include").join(format!("{arch}-linux-gnu"));
    // -mcpu=v3: atomic compare-and-swap (kernel 5.12 and later).
    let mut args: Vec<String> = vec!["-Wall".into(), "-O2".into(), "-g".into(), "-mcpu=v3".into()];
    if multiarch.is_dir() {
        args.push("-idirafter".into());
        args.push(multiarch.display().to_string());
    }
    // bpf_tracing.h's PT_REGS_PARM* (the uprobes' arguments) need the
    // target's register names.
    let bpf_arch = match arch.as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        "riscv64" => "riscv",
        other => other,
    };
    args.push(format!("-D__TARGET_ARCH_{bpf_arch}"));
    // The whole directory (cargo scans it): any program or shared header.
    println!("cargo:rerun-if-changed=src/bpf");
    for name in PROGRAMS {
        let src = format!("src/bpf/{name}.bpf.c");
        println!("cargo:rerun-if-changed={src}");
        let skel = out.join(format!("{name}.skel.rs"));
        if let Err(err) = libbpf_cargo::SkeletonBuilder::new()
            .source(&src)
            .clang_args(&args)
            .build_and_generate(&skel)
        {
            panic!("building {src} (clang is needed: run scripts/deps): {err:#}");
        }
    }
}
