//! `toolhost chat`.

use std::process::ExitCode;

use clap::Args;

/// Arguments of `toolhost chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    host: super::HostArgs,
}

/// Runs `toolhost chat`.
pub async fn run(args: ChatArgs) -> anyhow::Result<ExitCode> {
    let _ = &args.host;
    anyhow::bail!("`toolhost chat` is not implemented yet")
}
