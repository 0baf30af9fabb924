//! The block devices this machine has, by name and by number, from
//! `/proc/partitions` (disks and their partitions), as the block tools
//! name them (libbpf-tools reads the same file). Numbers are the kernel's
//! own dev_t (`major << 20 | minor`), as BPF programs read them.

use std::io;

/// One disk or partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Partition {
    pub(crate) dev: u32,
    pub(crate) name: String,
}

/// The kernel's dev_t of `major:minor`.
pub(crate) fn mkdev(major: u32, minor: u32) -> u32 {
    (major << 20) | (minor & 0xf_ffff)
}

/// Parses `/proc/partitions` (`major minor #blocks name` per line, after
/// a header); lines that do not parse are skipped.
pub(crate) fn parse_partitions(text: &str) -> Vec<Partition> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [major, minor, _blocks, name] = f[..] else {
                return None;
            };
            Some(Partition {
                dev: mkdev(major.parse().ok()?, minor.parse().ok()?),
                name: name.to_string(),
            })
        })
        .collect()
}

/// This machine's partitions.
pub(crate) fn partitions() -> io::Result<Vec<Partition>> {
    let text = std::fs::read_to_string("/proc/partitions")
        .map_err(|e| io::Error::new(e.kind(), format!("reading /proc/partitions: {e}")))?;
    Ok(parse_partitions(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_names_and_numbers() {
        let text = "major minor  #blocks  name\n\n 254        0  268435456 vda\n   7        0      65536 loop0\n";
        let parts = parse_partitions(text);
        assert_eq!(
            parts,
            vec![
                Partition {
                    dev: 254 << 20,
                    name: "vda".into()
                },
                Partition {
                    dev: 7 << 20,
                    name: "loop0".into()
                },
            ]
        );
    }
}
