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

use std::io::{self, Write};

use scry::analysis::offcputime::{offwake_entries, offwake_joined, offwake_raw_stacks};
use scry::render::offcputime::{write_offwake_folded, write_offwake_json, write_offwake_stacks};
use scry::symbol::raw_stacks::{Named, RawStackResolver};
use scry::sys::bpf_offwaketime::{OffwakeSum, OffwaketimeBpf};

use super::offcputime::{Blocked, OffcputimeArgs, finish_naming, run_blocked, start};

impl Blocked for OffwaketimeBpf {
    type Sums = Vec<OffwakeSum>;
    const TOOL: &'static str = "offwaketime";
    const EVENT: &'static str = "off-wake";

    fn tgids(&self) -> io::Result<Vec<u32>> {
        OffwaketimeBpf::tgids(self)
    }

    fn finish(&mut self) -> io::Result<Vec<OffwakeSum>> {
        self.detach();
        self.read()
    }

    /// Each blocked stack joined to its waker's.
    fn name(mut resolver: RawStackResolver, sums: &Vec<OffwakeSum>) -> Named {
        let stacks = offwake_raw_stacks(sums);
        resolver.see(stacks.iter().map(|s| s.pid));
        for stack in &stacks {
            resolver.add(stack);
        }
        finish_naming(Self::TOOL, resolver)
    }

    /// bcc's folded chains (blocked stack, `--`, the waker's).
    fn exported(named: Named) -> Named {
        offwake_joined(named)
    }

    fn print(
        out: &mut impl Write,
        args: &OffcputimeArgs,
        sums: &Vec<OffwakeSum>,
        named: &Named,
    ) -> io::Result<()> {
        let entries = offwake_entries(sums, named, args.halves());
        if args.json {
            write_offwake_json(out, &entries)
        } else if args.stacks.folded {
            write_offwake_folded(out, &entries, args.stacks.delimited)
        } else {
            write_offwake_stacks(out, &entries, args.stacks.delimited)
        }
    }
}

pub(crate) fn run(args: OffcputimeArgs) -> anyhow::Result<()> {
    let (bpf, out) = start(
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
    run_blocked(&args, bpf, out)
}
