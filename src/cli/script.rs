//! `scry script`.

use clap::Args;

#[derive(Args, Debug)]
pub struct ScriptArgs {}

pub fn run(_args: ScriptArgs) -> anyhow::Result<()> {
    anyhow::bail!("'scry script' is not built yet")
}
