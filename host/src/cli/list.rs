//! `toolhost list`.

use std::process::ExitCode;

use clap::Args;

/// Arguments of `toolhost list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    host: super::HostArgs,
}

/// Runs `toolhost list`.
pub async fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    let _ = &args.host;
    anyhow::bail!("`toolhost list` is not implemented yet")
}
