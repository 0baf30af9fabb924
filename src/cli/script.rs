//! `scry script`: the samples of a perf.data file, one per line, in perf
//! script's layout; `-D` dumps the records in file order, `--header` prints
//! the header features first. The flags; `render::script_file` writes.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use clap::Args;

use scry::data::reader::PerfReader;
use scry::render::script::FieldSpec;
use scry::render::script_file::{ScriptOptions, write_script};

#[derive(Args, Debug)]
pub(crate) struct ScriptArgs {
    /// Input file; `-` reads the pipe format from stdin
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// Fields to print (perf's names): comm,tid,pid,time,cpu,event,ip,sym,
    /// symoff,dso,period,trace; or +field,-field to change the defaults.
    /// Default: perf's default fields for each event type
    #[arg(short = 'F', long = "fields", value_parser = FieldSpec::parse)]
    fields: Option<FieldSpec>,
    /// Dump every record in file order: offset, size, hex bytes, type
    #[arg(short = 'D', long = "dump-raw-trace")]
    dump_raw: bool,
    /// Print the header (host, kernel, command line, events) before the samples
    #[arg(long)]
    header: bool,
    /// Print only the header
    #[arg(long = "header-only")]
    header_only: bool,
}

pub(crate) fn run(args: ScriptArgs) -> anyhow::Result<()> {
    // `-` is standard input (a file redirected, or a pipe read as it comes).
    let mut reader = PerfReader::open(&args.input)?;
    let opts = ScriptOptions {
        fields: args.fields,
        dump_raw: args.dump_raw,
        header: args.header,
        header_only: args.header_only,
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    write_script(&mut reader, &mut out, &opts)?;
    out.flush()?;
    Ok(())
}
