//! `scry flamegraph`.

use clap::Args;

#[derive(Args, Debug)]
pub struct FlamegraphArgs {}

pub fn run(_args: FlamegraphArgs) -> anyhow::Result<()> {
    anyhow::bail!("'scry flamegraph' is not built yet")
}
