//! `toolhost call`.

use std::process::ExitCode;

use clap::Args;

/// Arguments of `toolhost call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    #[command(flatten)]
    host: super::HostArgs,
}

/// Runs `toolhost call`.
pub async fn run(args: CallArgs) -> anyhow::Result<ExitCode> {
    let _ = &args.host;
    anyhow::bail!("`toolhost call` is not implemented yet")
}
