//! `toolhost inspect`.

use std::process::ExitCode;

use clap::Args;

/// Arguments of `toolhost inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    host: super::HostArgs,
}

/// Runs `toolhost inspect`.
pub async fn run(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let _ = &args.host;
    anyhow::bail!("`toolhost inspect` is not implemented yet")
}
