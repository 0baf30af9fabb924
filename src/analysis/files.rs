//! filetop's rows: each interval's per-file, per-thread counts ordered as
//! libbpf-tools orders them (`-s`: reads, writes, read bytes, write
//! bytes, or by default their sum) and cut to `-r` rows. Ties go by
//! thread and file name, so the order is stable from run to run
//! (`--read-only`, `--write-only`: one direction's calls only). The
//! kernel side's types are named from here, so `render` and the command
//! lines use one set of types.

pub(crate) use crate::sys::bpf_filetop::FileStat;
pub(crate) use crate::sys::bpf_fsslower::FsEvent;
#[cfg(test)]
pub(crate) use crate::sys::bpf_fsslower::FsOp;

/// filetop's sort orders (`-s`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum FileSort {
    /// reads + writes + read bytes + write bytes (libbpf-tools' `all`).
    #[default]
    All,
    Reads,
    Writes,
    ReadBytes,
    WriteBytes,
}

impl FileSort {
    /// `-s`'s spelling (`all`, `reads`, `writes`, `rbytes`, `wbytes`).
    pub(crate) fn parse(name: &str) -> Option<FileSort> {
        Some(match name {
            "all" => FileSort::All,
            "reads" => FileSort::Reads,
            "writes" => FileSort::Writes,
            "rbytes" => FileSort::ReadBytes,
            "wbytes" => FileSort::WriteBytes,
            _ => return None,
        })
    }

    fn weight(self, s: &FileStat) -> u64 {
        match self {
            FileSort::All => s
                .reads
                .saturating_add(s.writes)
                .saturating_add(s.read_bytes)
                .saturating_add(s.write_bytes),
            FileSort::Reads => s.reads,
            FileSort::Writes => s.writes,
            FileSort::ReadBytes => s.read_bytes,
            FileSort::WriteBytes => s.write_bytes,
        }
    }
}

/// bcc's `--read-only` and `--write-only`: which calls filetop counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum FileCalls {
    #[default]
    Both,
    Reads,
    Writes,
}

/// `stats` with only `calls` counted (bcc skips the other calls in the
/// kernel; here they are zeroed), rows left with none dropped.
pub(crate) fn only_calls(mut stats: Vec<FileStat>, calls: FileCalls) -> Vec<FileStat> {
    match calls {
        FileCalls::Both => {}
        FileCalls::Reads => stats.retain_mut(|s| {
            (s.writes, s.write_bytes) = (0, 0);
            s.reads > 0
        }),
        FileCalls::Writes => stats.retain_mut(|s| {
            (s.reads, s.read_bytes) = (0, 0);
            s.writes > 0
        }),
    }
    stats
}

/// The rows to print: the heaviest first by `sort`, at most `rows`.
pub(crate) fn top_files(mut stats: Vec<FileStat>, sort: FileSort, rows: usize) -> Vec<FileStat> {
    stats.sort_by(|a, b| {
        sort.weight(b)
            .cmp(&sort.weight(a))
            .then((a.tid, &a.name, a.inode).cmp(&(b.tid, &b.name, b.inode)))
    });
    stats.truncate(rows);
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(tid: u32, name: &str, reads: u64, read_bytes: u64, writes: u64) -> FileStat {
        FileStat {
            tid,
            name: name.to_string(),
            reads,
            read_bytes,
            writes,
            ..FileStat::default()
        }
    }

    #[test]
    fn sorts_by_the_chosen_column_and_cuts() {
        let stats = vec![
            stat(1, "a", 1, 100, 0),
            stat(2, "b", 5, 10, 0),
            stat(3, "c", 0, 0, 9),
        ];
        let names = |v: Vec<FileStat>| v.into_iter().map(|s| s.name).collect::<Vec<_>>();
        assert_eq!(
            names(top_files(stats.clone(), FileSort::All, 10)),
            ["a", "b", "c"]
        );
        assert_eq!(
            names(top_files(stats.clone(), FileSort::Reads, 2)),
            ["b", "a"]
        );
        assert_eq!(names(top_files(stats, FileSort::Writes, 1)), ["c"]);
        assert_eq!(FileSort::parse("wbytes"), Some(FileSort::WriteBytes));
        assert_eq!(FileSort::parse("bytes"), None);
    }
}
