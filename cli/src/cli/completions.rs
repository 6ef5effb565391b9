//! `toolhost completions SHELL`: prints the shell completion script that clap_complete
//! generates from the command line's own definition, so it never drifts from the flags.

use std::process::ExitCode;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

/// Arguments of `toolhost completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: Shell,
}

/// Writes the script to stdout.
pub fn run(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = super::Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "toolhost", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}
