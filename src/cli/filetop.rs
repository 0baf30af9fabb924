//! `scry filetop` (bcc's filetop, libbpf-tools' flags and layout): every
//! interval (1 s by default), the files read and written the most, per
//! thread: calls and KB each way, summed in the kernel on vfs_read and
//! vfs_write as bcc hooks them (fentry, else kprobe) or, where neither
//! can be hooked, on the read and write system calls (what those see
//! differently is in the program's header). The screen is not cleared
//! (`-C` is accepted for bcc's command lines). `-d DIR` (bcc's) keeps the
//! files directly in one directory.
//! Wiring only: `sys::bpf_filetop` → `analysis::files` → `render::files`.

use clap::Args;

use super::target::PidArg;
use scry::analysis::files::{FileCalls, FileSort, only_calls, top_files};
use scry::render::files::{filetop_json, filetop_table};
use scry::sys::bpf_filetop::{FiletopBpf, FiletopSettings, kernel_dev};

use super::bpf_tool;

#[derive(Args, Debug)]
#[command(mut_arg("json", |a| a.help("One JSON array of rows per interval instead of the table")))]
pub(crate) struct FiletopArgs {
    #[command(flatten)]
    target: PidArg,
    /// Don't clear the screen (scry never does).
    #[arg(short = 'C', long = "noclear")]
    noclear: bool,
    /// Include special files: sockets, pipes, devices (default: regular files only).
    #[arg(short = 'a', long = "all", visible_alias = "all-files")]
    all: bool,
    /// Sort by all (calls and bytes summed), reads, writes, rbytes or wbytes.
    #[arg(short = 's', long = "sort", value_name = "SORT", default_value = "all",
          value_parser = ["all", "reads", "writes", "rbytes", "wbytes"])]
    sort: String,
    #[command(flatten)]
    rows: bpf_tool::RowsArg,
    /// Count reads only (bcc's).
    #[arg(long = "read-only", conflicts_with = "write_only")]
    read_only: bool,
    /// Count writes only (bcc's).
    #[arg(long = "write-only")]
    write_only: bool,
    /// Only the files directly in this directory (bcc's; not those of
    /// its subdirectories).
    #[arg(short = 'd', long = "directory", value_name = "DIR")]
    directory: Option<std::path::PathBuf>,
    #[command(flatten)]
    out: bpf_tool::TopTailArgs,
}

pub(crate) fn run(args: FiletopArgs) -> anyhow::Result<()> {
    let _ = args.noclear;
    let pid = args.target.pid;
    bpf_tool::check_pid("filetop", "-p", pid)?;
    let directory = args.directory.as_deref().map(directory_id).transpose()?;
    let settings = FiletopSettings {
        pid,
        all_files: args.all,
        directory,
    };
    let mut bpf = bpf_tool::load("filetop", || FiletopBpf::load(settings))?;
    bpf_tool::print_hooks("filetop", &bpf.hooks(), args.out.table.verbose);
    if let (Some(dir), Some((ino, _)), false) = (&args.directory, directory, args.out.table.json) {
        println!("Tracing directory: {} (Inode: {ino})", dir.display());
    }
    let sort = FileSort::parse(&args.sort).unwrap_or_default();
    let calls = match (args.read_only, args.write_only) {
        (true, _) => FileCalls::Reads,
        (false, true) => FileCalls::Writes,
        (false, false) => FileCalls::Both,
    };
    args.out.run(pid, |out, last| {
        if last {
            bpf.detach();
        }
        let stats = only_calls(bpf.take()?, calls);
        let rows = top_files(stats, sort, args.rows.rows as usize);
        if args.out.table.json {
            filetop_json(out, &rows)
        } else {
            filetop_table(out, Some(&bpf_tool::loadavg_summary()), &rows)
        }
    })
}

/// `-d DIR`'s inode number and device (the kernel's encoding).
fn directory_id(dir: &std::path::Path) -> anyhow::Result<(u64, u32)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir)
        .map_err(|e| anyhow::anyhow!("filetop: -d {}: {e}", dir.display()))?;
    if !meta.is_dir() {
        anyhow::bail!("filetop: -d {}: not a directory", dir.display());
    }
    Ok((meta.ino(), kernel_dev(meta.dev())))
}
