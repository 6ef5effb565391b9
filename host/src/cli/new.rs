//! `toolhost new`.

use std::process::ExitCode;

use clap::Args;

/// Arguments of `toolhost new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    #[command(flatten)]
    host: super::HostArgs,
}

/// Runs `toolhost new`.
pub async fn run(args: NewArgs) -> anyhow::Result<ExitCode> {
    let _ = &args.host;
    anyhow::bail!("`toolhost new` is not implemented yet")
}
