//! `scry list [FILTER]`: every event this machine offers (from
//! `capture::inventory`), filtered by a group keyword or a glob, printed
//! as perf list does or as JSON, on stdout.

use std::io::{self, BufWriter, Write};

use clap::Args;

use scry::capture::inventory;
use scry::render::list;

#[derive(Args, Debug)]
pub(crate) struct ListArgs {
    /// A group (hw, sw, cache, pmu, tracepoint, probe) or a glob ('sched:*', '*fault*');
    /// a plain word matches anywhere in the name.
    #[arg(value_name = "FILTER")]
    filter: Option<String>,
    /// Print a JSON array instead of the two columns.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: ListArgs) -> anyhow::Result<()> {
    let found = inventory::inventory();
    for note in &found.notes {
        eprintln!("scry: {note}");
    }
    let events = inventory::select(found.events, args.filter.as_deref());
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        list::write_json(&mut out, &events)?;
    } else {
        list::write_text(&mut out, &events)?;
    }
    out.flush()?;
    Ok(())
}
