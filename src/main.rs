//! The `scry` binary: the command line is the library's (`scry::cli`).
//! Errors print once as `scry: {chain}`; only `main` exits.

use std::process::ExitCode;

fn main() -> ExitCode {
    scry::cli::main()
}
