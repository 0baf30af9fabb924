//! `scry threadsnoop` (bcc's threadsnoop and its layout): each thread
//! created, with the function it starts in, streamed from the kernel's
//! ring buffer. Wiring only: `sys::bpf_threadsnoop` → the start
//! function's name (`symbol::live_names`, looked up as the event arrives)
//! → `render::threadsnoop`. Without the pthread_create uprobe, one note
//! says what is not shown.

use clap::Args;

use super::target::PidArg;
use scry::analysis::snoop::ThreadEvent;
use scry::render::threadsnoop::ThreadLayout;
use scry::symbol::live_names::LiveNames;
use scry::sys::bpf_threadsnoop::{self, START_FUNCTIONS};

use super::{bpf_tool, snoop};

#[derive(Args, Debug)]
#[command(mut_arg("pid", |a| a.help("Only threads this process creates (ends when it exits)")))]
pub(crate) struct ThreadsnoopArgs {
    #[command(flatten)]
    target: PidArg,
    #[command(flatten)]
    common: snoop::StreamFlags,
}

pub(crate) fn run(args: ThreadsnoopArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid("threadsnoop", "-p", args.target.pid)?;
    let bpf = bpf_tool::load("threadsnoop", || bpf_threadsnoop::load(args.target.pid))?;
    if let Some(hook) = bpf
        .hooks()
        .into_iter()
        .find(|h| h.group == START_FUNCTIONS && h.section.is_none())
    {
        let why: Vec<String> = hook.refused.iter().map(|r| r.reason.clone()).collect();
        eprintln!(
            "threadsnoop: no uprobe on libc's pthread_create ({}): each thread is listed, its start function is not",
            why.join("; ")
        );
    }
    let names = LiveNames::new();
    let layout = ThreadLayout {
        name_of: |e: &ThreadEvent| names.function(e.pid, e.func),
    };
    let how = snoop::Stream::new("threadsnoop", &args.common, args.target.pid);
    snoop::run(&how, &args.common, &bpf, &layout, |_| true)
}
