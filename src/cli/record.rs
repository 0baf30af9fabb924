//! `scry record`.

use clap::Args;

#[derive(Args, Debug)]
pub struct RecordArgs {}

pub fn run(_args: RecordArgs) -> anyhow::Result<()> {
    anyhow::bail!("'scry record' is not built yet")
}
