//! `toolhost approvals list|add|revoke`: the "allow always" decisions of destructive
//! tools, kept in the data folder (`toolhost::approvals`). `add` approves a tool ahead of
//! time (what `toolhost serve` needs for clients it cannot ask); `revoke` takes a
//! decision back, effective at the next call of every running toolhost.

use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use toolhost::approvals::{FileApprovals, default_path};
use toolhost::tools::{ApprovalStore, ArgPattern};

/// Arguments of `toolhost approvals`.
#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    /// Accepted like every command's (the approvals file is per user, not per folder).
    #[command(flatten)]
    host: super::HostArgs,
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// List the remembered decisions, numbered.
    List {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a destructive tool for every later call (or only calls whose arguments
    /// match every `--arg NAME=GLOB`).
    Add {
        /// The tool's registered name.
        tool: String,
        /// An argument pattern, e.g. `--arg path=/tmp/scratch/**` (repeatable).
        #[arg(long = "arg", value_name = "NAME=GLOB")]
        args: Vec<String>,
    },
    /// Take decisions back: by number (from `list`), by tool name, or `--all`.
    Revoke {
        /// A number from `list`, or a tool name.
        which: Option<String>,
        /// Every decision.
        #[arg(long, conflicts_with = "which")]
        all: bool,
    },
}

/// Runs `toolhost approvals`.
pub async fn run(args: ApprovalsArgs) -> anyhow::Result<ExitCode> {
    let store = FileApprovals::new(default_path());
    match args.action {
        Action::List { json } => {
            let list = store.list()?;
            if json {
                println!(
                    "{}",
                    super::term::json(serde_json::to_string_pretty(&list)?)
                );
            } else if list.is_empty() {
                eprintln!("no remembered approvals ({})", store.path().display());
            } else {
                for (i, r) in list.iter().enumerate() {
                    println!(
                        "{:>3}  {}  {}  {}",
                        i + 1,
                        super::term::cell(&r.tool),
                        super::term::cell(&r.pattern.describe()),
                        r.at.as_deref().unwrap_or("")
                    );
                }
            }
        }
        Action::Add { tool, args } => {
            let mut pattern = ArgPattern::default();
            for a in &args {
                let Some((name, glob)) = a.split_once('=') else {
                    bail!("--arg {a:?}: write NAME=GLOB, e.g. --arg path=/tmp/**");
                };
                pattern.0.insert(name.to_string(), glob.to_string());
            }
            pattern.validate()?;
            store
                .remember(&tool, &pattern)
                .context("recording the approval")?;
            eprintln!(
                "approved {tool} always for {} (in {})",
                pattern.describe(),
                store.path().display()
            );
        }
        Action::Revoke { which, all } => {
            let removed = match (which, all) {
                (_, true) => store.revoke(|_, _| true)?,
                (Some(w), false) => match w.parse::<usize>() {
                    Ok(n) => store.revoke(|i, _| i + 1 == n)?,
                    Err(_) => store.revoke(|_, r| r.tool == w)?,
                },
                (None, false) => bail!(
                    "say which: a number from `toolhost approvals list`, a tool name, or --all"
                ),
            };
            if removed == 0 {
                eprintln!("nothing matched; see `toolhost approvals list`");
                return Ok(ExitCode::FAILURE);
            }
            eprintln!("revoked {removed} approval(s)");
        }
    }
    Ok(ExitCode::SUCCESS)
}
