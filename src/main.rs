//! The `scry` binary: parses the command line and runs one subcommand.
//! Errors print once as `scry: {chain}`; only `main` exits.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
