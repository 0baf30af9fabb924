//! `scry report`.

use clap::Args;

#[derive(Args, Debug)]
pub struct ReportArgs {}

pub fn run(_args: ReportArgs) -> anyhow::Result<()> {
    anyhow::bail!("'scry report' is not built yet")
}
