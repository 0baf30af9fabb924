//! `scry offwaketime` (bcc's offwaketime, its flags and layout): the time
//! tasks spent blocked, summed in the kernel per the blocked task's stacks
//! joined to the stacks of the task that woke it, printed at the end
//! (Ctrl-C, the duration, or the `-p` process's exit) as bcc's chains
//! (waker's stacks, `--`, the blocked stacks), folded (`-f`) or JSON
//! (`--json`), or with `--to FORMAT [-o FILE]` as an export whose samples
//! are bcc's folded chains (`analysis::offcputime::offwake_joined`). Its
//! flags are offcputime's (`-p -t -u -k -U -K -d -f -m -M --state
//! --stack-storage-size --to -o`); the maps of each process seen, blocked
//! or waker, are read while it runs. `scry offcpu --wakeup` is the
//! streamed (perf_event) counterpart. Wiring only:
//! `sys::bpf_offwaketime` → `symbol::raw_stacks` → `analysis::offcputime`
//! → `render::offcputime`.

use std::io::Write;

use scry::analysis::offcputime::{offwake_entries, offwake_joined, offwake_raw_stacks};
use scry::render::offcputime::{write_offwake_folded, write_offwake_json, write_offwake_stacks};
use scry::sys::bpf_offwaketime::OffwaketimeBpf;

use super::offcputime::{OffcputimeArgs, export_blocked, finish_naming, run_seeing, start};

pub(crate) fn run(args: OffcputimeArgs) -> anyhow::Result<()> {
    let (mut bpf, mut out) = start(
        &args,
        "offwaketime",
        OffwaketimeBpf::load,
        OffwaketimeBpf::hooks,
        || {
            format!(
                "Tracing blocked time (us) by {} off-CPU and waker stack{}",
                args.stacks_label(),
                args.until()
            )
        },
    )?;
    let halves = args.halves();
    let mut exported = None;
    run_seeing(
        &args.run_options(),
        &mut bpf,
        OffwaketimeBpf::tgids,
        |bpf, mut resolver| {
            bpf.detach();
            let sums = bpf.read()?;
            let stacks = offwake_raw_stacks(&sums);
            resolver.see(stacks.iter().map(|s| s.pid));
            for stack in &stacks {
                resolver.add(stack);
            }
            let named = finish_naming("offwaketime", resolver);
            if args.run.export.to.is_some() {
                exported = Some(offwake_joined(named));
                return Ok(());
            }
            let entries = offwake_entries(&sums, &named, halves);
            if args.json {
                write_offwake_json(&mut out, &entries)?;
            } else if args.stacks.folded {
                write_offwake_folded(&mut out, &entries, args.stacks.delimited)?;
            } else {
                write_offwake_stacks(&mut out, &entries, args.stacks.delimited)?;
            }
            out.flush()
        },
    )?;
    export_blocked(&args.run.export, exported, "off-wake", "offwaketime")
}
