//! `scry sigsnoop` and `scry killsnoop` (bcc's, libbpf-tools' flags and
//! layout): each signal generated (sigsnoop), or each kill(2), tkill(2)
//! and tgkill(2) call with its result (killsnoop, or sigsnoop -k), streamed
//! from the kernel's ring buffer. One set of flags for both, as
//! libbpf-tools' killsnoop is its sigsnoop under another name. Wiring
//! only: `sys::bpf_sigsnoop` → `render::sigsnoop`.

use anyhow::anyhow;
use clap::Args;

use scry::render::sigsnoop::{SigLayout, signal_number};
use scry::sys::bpf_sigsnoop::{self, SigSettings};

use super::bpf_tool;
use super::snoop;

#[derive(Args, Debug)]
pub(crate) struct SigsnoopArgs {
    /// -x: failed only (killsnoop: a call that returned an error); -p:
    /// only signals this process sends.
    #[command(flatten)]
    filter: snoop::FailedPidFlags,
    /// The kill, tkill and tgkill calls only (what killsnoop shows).
    #[arg(short = 'k', long = "kill")]
    kill: bool,
    /// Print the signal's name (SIGUSR1) instead of its number.
    #[arg(short = 'n', long = "name")]
    name: bool,
    /// Only these signals: numbers or names, comma-separated (9,USR1).
    #[arg(short = 's', long = "signal", value_name = "SIGNAL")]
    signal: Option<String>,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

/// `scry sigsnoop`.
pub(crate) fn run(args: SigsnoopArgs) -> anyhow::Result<()> {
    let tool = if args.kill { "killsnoop" } else { "sigsnoop" };
    run_as(tool, args)
}

/// `scry killsnoop`: sigsnoop -k.
pub(crate) fn run_kill(args: SigsnoopArgs) -> anyhow::Result<()> {
    run_as("killsnoop", SigsnoopArgs { kill: true, ..args })
}

fn run_as(tool: &str, args: SigsnoopArgs) -> anyhow::Result<()> {
    let (failed, pid) = (args.filter.failed, args.filter.target.pid);
    bpf_tool::check_pid(tool, "-p", pid)?;
    let signals = match &args.signal {
        Some(list) => signal_mask(list).map_err(|NotASignal(bad)| {
            anyhow!("{tool}: -s {bad}: not a signal (a number 1-64 or a name: USR1, SIGTERM)")
        })?,
        None => 0,
    };
    let settings = SigSettings {
        pid,
        signals,
        failed_only: failed,
        kill_only: args.kill,
    };
    let bpf = bpf_tool::load(tool, || bpf_sigsnoop::load(settings))?;
    let how = snoop::Stream::new(tool, &args.common, pid);
    let layout = SigLayout { names: args.name };
    snoop::run(&how, &args.common, &bpf, &layout, |_| true)
}

/// An item of `-s`'s list that is no signal.
#[derive(Debug, PartialEq, Eq)]
struct NotASignal(String);

/// `-s`'s list as a mask (bit `sig - 1`), or the item that is no signal.
fn signal_mask(list: &str) -> Result<u64, NotASignal> {
    list.split(',').try_fold(0u64, |mask, item| {
        let sig = signal_number(item.trim()).ok_or_else(|| NotASignal(item.to_string()))?;
        Ok(mask | 1u64 << (sig - 1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_lists_become_masks() {
        assert_eq!(signal_mask("1"), Ok(1));
        assert_eq!(signal_mask("9, USR1"), Ok(1 << 8 | 1 << 9));
        assert_eq!(signal_mask("64"), Ok(1 << 63));
        assert_eq!(signal_mask("9,nope"), Err(NotASignal("nope".to_string())));
    }
}
