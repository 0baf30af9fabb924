//! `scry fsslower` (bcc's fsslower and ext4slower family, libbpf-tools'
//! layout): each read, write, open and fsync of a regular file slower
//! than a threshold (`MIN_MS` or `-m`, 10 ms by default, 0: all),
//! streamed, from the system calls' tracepoints (bcc's tools hook a file
//! system's methods with kprobes or fentry, which do not load on every
//! kernel). Any file system, or one with `-t ext4`. What the calls
//! cannot see against bcc's hooks is said once on stderr (and in the
//! program's header). `-j`/`-c` is bcc's CSV, `--json` one object per
//! operation. Wiring only: `sys::bpf_fsslower` → `render::files`.

use clap::Args;

use super::target::PidArg;
use scry::render::files::FsslowerLayout;
use scry::sys::bpf_fsslower::{self, FS_NAME_MAX, FsslowerSettings};

use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only this process (ends when it exits)")))]
pub(crate) struct FsslowerArgs {
    #[command(flatten)]
    target: PidArg,
    /// Only files of this file system type (ext4, xfs, btrfs, nfs, tmpfs...; default: all).
    #[arg(short = 't', long = "type", value_name = "FS")]
    fs: Option<String>,
    /// Operations slower than MIN ms (default 10; 0: all); the same as MIN_MS.
    #[arg(
        short = 'm',
        long = "min",
        value_name = "MIN",
        conflicts_with = "min_ms"
    )]
    min: Option<u64>,
    /// Just the fields, comma-separated (bcc's -j, libbpf-tools' -c).
    #[arg(short = 'j', long = "csv", visible_short_alias = 'c')]
    csv: bool,
    #[command(flatten)]
    common: snoop::StreamFlags,
    /// Operations slower than MIN_MS ms (default 10; 0: all), as bcc's ext4slower takes it.
    #[arg(value_name = "MIN_MS")]
    min_ms: Option<u64>,
}

/// `-t`'s file system name: letters, digits and a few marks, at most
/// what the program holds.
fn check_fs_name(text: &str) -> anyhow::Result<()> {
    let fits = !text.is_empty() && text.len() <= FS_NAME_MAX;
    let spelled = text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !fits || !spelled {
        anyhow::bail!(
            "fsslower: -t {text}: a file system type is 1 to {FS_NAME_MAX} letters, digits, \
             '.', '_' or '-' (as /proc/filesystems lists them)"
        );
    }
    Ok(())
}

/// What the tracepoints cannot see, said once.
const BLIND: &str = "fsslower: timed at the system calls (kprobes on the file systems' methods \
                     are not used): latency is the whole call's, and I/O outside read, write, \
                     open and fsync calls (mmap, sendfile, splice, io_uring, writeback) is not seen";

pub(crate) fn run(args: FsslowerArgs) -> anyhow::Result<()> {
    let pid = args.target.pid;
    bpf_tool::check_pid("fsslower", "-p", pid)?;
    if let Some(fs) = &args.fs {
        check_fs_name(fs)?;
    }
    let min_ms = args.min.or(args.min_ms).unwrap_or(10);
    let min_us = min_ms
        .checked_mul(1000)
        .ok_or_else(|| anyhow::anyhow!("fsslower: {min_ms} ms is too long a threshold"))?;
    let settings = FsslowerSettings {
        pid,
        min_us,
        fs: args.fs.clone(),
    };
    let bpf = bpf_tool::load("fsslower", || bpf_fsslower::load(&settings))?;
    eprintln!("{BLIND}");
    if !args.common.json && !args.csv {
        let what = args.fs.as_deref().unwrap_or("file system");
        if min_ms == 0 {
            println!("Tracing {what} operations");
        } else {
            println!("Tracing {what} operations slower than {min_ms} ms");
        }
    }
    let layout = FsslowerLayout { csv: args.csv };
    let how = snoop::Stream::new("fsslower", &args.common, pid);
    snoop::run(&how, &args.common, &bpf, &layout, |_| true)
}
