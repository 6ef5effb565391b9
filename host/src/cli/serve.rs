//! `toolhost serve`.

use std::process::ExitCode;

use clap::Args;

/// Arguments of `toolhost serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    host: super::HostArgs,
}

/// Runs `toolhost serve`.
pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let _ = &args.host;
    anyhow::bail!("`toolhost serve` is not implemented yet")
}
