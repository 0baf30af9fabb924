//! The kernel symbol cache (`$XDG_CACHE_HOME/scry/kallsyms`, written by
//! `symbol::kallsyms`'s `cache`): a report names kernel frames alike with
//! no cache, with the cache it wrote, and with a damaged one; a cache is
//! read (a name doctored in it shows) only while its key holds (another
//! boot's is rewritten); it is its user's alone (0600 in a 0700 folder).

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Every symbol of the file's stacks with its share, kernel ones included.
fn report(data: &Path, cache_home: &Path) -> String {
    common::run_ok(
        common::scry()
            .env("XDG_CACHE_HOME", cache_home)
            .args([
                "report",
                "--stdio",
                "--children",
                "-g",
                "none",
                "--sort",
                "dso,sym",
                "-i",
            ])
            .arg(data),
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `bytes` with every `from` replaced by `to` (same length).
fn replaced(bytes: &[u8], from: &[u8], to: &[u8]) -> (Vec<u8>, usize) {
    let mut out = bytes.to_vec();
    let mut n = 0;
    let mut i = 0;
    while i + from.len() <= out.len() {
        if &out[i..i + from.len()] == from {
            out[i..i + from.len()].copy_from_slice(to);
            n += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    (out, n)
}

#[test]
fn kernel_frames_are_named_alike_from_the_kernel_and_from_the_cache() {
    require_kernel!();
    let dir = common::tempdir();
    let data = dir.path().join("calls.data");
    common::run_ok(
        common::scry()
            .args(["record", "-q", "-F", "999", "-g", "-o"])
            .arg(&data)
            .arg("--")
            .arg(common::workload("calls"))
            .arg("3000000"),
    );
    let home = dir.path().join("cache");
    let cold = report(&data, &home);
    // (The dso column is as wide as the longest name in the report.)
    assert!(
        cold.lines()
            .any(|l| l.contains("[kernel.kallsyms] ") && l.ends_with("[k] do_syscall_64")),
        "the recording has kernel frames:\n{cold}"
    );
    let cache = home.join("scry/kallsyms");
    assert_eq!(mode(&cache), 0o600);
    assert_eq!(mode(&home.join("scry")), 0o700);
    let written = std::fs::read(&cache).expect("the cache");

    // Warm: the same report.
    assert_eq!(report(&data, &home), cold);

    // The cache is what names the frames while its key holds: a name
    // changed in it shows.
    let (doctored, n) = replaced(&written, b"do_syscall_64", b"do_syscall_6X");
    assert!(n > 0, "do_syscall_64 is in the cache");
    std::fs::write(&cache, &doctored).expect("write the cache");
    let from_cache = report(&data, &home);
    assert!(from_cache.contains("[k] do_syscall_6X"), "{from_cache}");

    // Another boot's cache (its boot id is the key's first string) is
    // not read, and is replaced by this boot's.
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").expect("boot id");
    let boot_id = boot_id.trim().as_bytes();
    let mut other = boot_id.to_vec();
    other[0] = if other[0] == b'0' { b'1' } else { b'0' };
    let (foreign, k) = replaced(&doctored, boot_id, &other);
    assert_eq!(k, 1, "the boot id is in the cache once");
    std::fs::write(&cache, &foreign).expect("write the cache");
    assert_eq!(report(&data, &home), cold);
    // (Not byte for byte the first: the names of the kernel's pseudo
    // modules, `[bpf]` among them, come and go with other tools' programs.)
    let rewritten = std::fs::read(&cache).expect("the cache");
    assert_eq!(
        replaced(&rewritten, boot_id, boot_id).1,
        1,
        "this boot's id"
    );
    assert_eq!(
        replaced(&rewritten, b"do_syscall_6X", b"do_syscall_6X").1,
        0
    );

    // Damaged caches: cut short, and garbage.
    std::fs::write(&cache, &written[..written.len() / 2]).expect("write the cache");
    assert_eq!(report(&data, &home), cold);
    std::fs::write(&cache, vec![0xa5u8; 4096]).expect("write the cache");
    assert_eq!(report(&data, &home), cold);
    // A cache that cannot be written (its folder is a file) costs nothing.
    let blocked = dir.path().join("blocked");
    std::fs::write(&blocked, b"").expect("a file");
    assert_eq!(report(&data, &blocked), cold);
}
