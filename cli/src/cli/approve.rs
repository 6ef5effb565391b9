//! `toolhost approve NAME [--yes] [--allow-downgrade]`: the operator grants what a plugin
//! (or an MCP server, `mcp:SERVER`) requests. Shows the request, the tools, their lint
//! findings, the release version and signer (verified from `NAME.wasm.minisig` and
//! `NAME.wasm.statement` beside it) and the diff against the lock, asks (or takes `--yes`),
//! then writes the lock atomically. Approving is the operator's word for a signer change;
//! a release that is not newer than the approved one (older, the same version with another
//! file, or unversioned after versioned) also needs `--allow-downgrade`. See
//! `docs/trust.md`, "Rollback and freeze".

use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;

/// Arguments of `toolhost approve`.
#[derive(Debug, Args)]
pub struct ApproveArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// The plugin (NAME of NAME.wasm in the plugins folder), `mcp:SERVER` for the tools
    /// of a configured MCP server, or `skill:NAME` for a skill of the skills folder.
    pub name: String,
    /// Approve without asking (required when there is no terminal to ask on).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Accept a release that is not newer than the approved one: an older version (a
    /// rollback), the same version with another file, or an unversioned package after a
    /// versioned approval.
    #[arg(long)]
    pub allow_downgrade: bool,
    /// With `mcp:SERVER`: approve only this one of its withheld tools (repeatable); the
    /// others keep their old pin, or none, and stay withheld.
    #[arg(long = "tool", value_name = "TOOL")]
    pub tools: Vec<String>,
}

/// Runs `toolhost approve`.
pub async fn run(args: ApproveArgs) -> anyhow::Result<ExitCode> {
    let config = super::common::load_config(&args.host)?;
    let dir = super::common::plugins_dir(&args.host, &config);
    if let Some(server) = args.name.strip_prefix("mcp:") {
        return super::mcp_trust::approve(&config, &dir, server, &args.tools, args.yes).await;
    }
    if !args.tools.is_empty() {
        bail!("--tool chooses among the withheld tools of an MCP server: give mcp:SERVER");
    }
    if let Some(skill) = args.name.strip_prefix("skill:") {
        let Some(folder) = super::common::skills_dir(&args.host, &config) else {
            bail!("no skills folder: pass --skills DIR or set [serve] skills in the config");
        };
        return super::skill_trust::approve(&folder, &dir, skill, args.yes);
    }
    let name = super::common::plugin_name_arg(&args.name)?;
    let host = super::common::host(&args.host, &config, false)?;
    let review = toolhost::trust::review_plugin(&host, &dir, &config.trust.keys, name)
        .await
        .with_context(|| format!("reviewing plugin {name}"))?;
    print!("{}", review.candidate.summary());
    super::lint::show_for_approval(
        &config,
        &super::lint::subjects(&format!("plugin:{name}"), &review.candidate.tools),
    )
    .await;
    super::common::refuse_denied_folders(&config, name, &review.candidate.request)?;
    print!("{}", review.release.text);
    if let Some(diff) = &review.diff {
        if diff.is_empty() {
            println!("already approved as it is; nothing to do");
            return Ok(ExitCode::SUCCESS);
        }
        println!(
            "changes since the approval of {}:\n{diff}",
            review
                .entry
                .as_ref()
                .map(|e| e.approved_at.as_str())
                .unwrap_or("")
        );
    }
    if let Some(why) = review
        .release
        .refusal
        .as_ref()
        .filter(|_| !args.allow_downgrade)
    {
        bail!(
            "not approved: {why}; to accept this release deliberately: `toolhost approve {name} --allow-downgrade`"
        );
    }
    super::common::confirm(args.yes, &format!("approve plugin {name}?"))?;
    let lock_path = review.approve(&dir, None, args.allow_downgrade)?;
    println!("approved {name}: {}", lock_path.display());
    Ok(ExitCode::SUCCESS)
}
