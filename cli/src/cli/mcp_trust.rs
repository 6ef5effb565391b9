//! `toolhost approve mcp:SERVER`: pins the tool definitions of a configured MCP server in
//! the lock, so a later change of a description or schema is withheld until approved
//! again (see `docs/trust.md`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::bail;

use super::servers::server_tools;
use toolhost::config::HostConfig;
use toolhost::trust::{clean, mcp_tool_def};
use toolhost_trust::{Capabilities, DefStore, Diff, Lock, ToolDef};

/// Approves the tools of MCP server `server` as it describes them now: of those withheld,
/// only `only` when it names any (`toolhost::trust::chosen_pins`).
pub async fn approve(
    config: &HostConfig,
    dir: &Path,
    server: &str,
    only: &[String],
    yes: bool,
) -> anyhow::Result<ExitCode> {
    let Some(cfg) = config.mcp.servers.get(server) else {
        bail!("no MCP server {server:?} in the config ([mcp.servers.{server}])");
    };
    let defs: Vec<ToolDef> = server_tools(server, cfg)
        .await?
        .iter()
        .map(mcp_tool_def)
        .collect();

    let lock = Lock::load(&Lock::path_in(dir))?;
    let store = DefStore::in_dir(dir);
    println!("mcp server {server}\n  tools:");
    for t in &defs {
        println!("    {}: {}", clean(&t.name), clean(&t.description));
    }
    super::lint::show_for_approval(
        config,
        &super::lint::subjects(&format!("mcp:{server}"), &defs),
    )
    .await;
    if let Some(entry) = lock.mcp.get(server) {
        let diff = Diff::between(
            &Capabilities::default(),
            &entry.tools,
            |h| store.load(h),
            &Capabilities::default(),
            &defs,
        );
        if diff.is_empty() {
            println!("already approved as it is; nothing to do");
            return Ok(ExitCode::SUCCESS);
        }
        println!(
            "changes since the approval of {}:\n{diff}",
            entry.approved_at
        );
    }
    let only = (!only.is_empty()).then_some(only);
    let old = lock
        .mcp
        .get(server)
        .map(|e| e.tools.clone())
        .unwrap_or_default();
    let (pins, approved) =
        toolhost::trust::chosen_pins(server, &old, &defs, only, config.trust.options())?;
    let what = match only {
        Some(_) => format!(
            "these tools of mcp server {server}: {}",
            clean(&approved.join(", "))
        ),
        None => format!("the tools of mcp server {server}"),
    };
    super::common::confirm(yes, &format!("approve {what}?"))?;
    let lock_path = toolhost::trust::approve_mcp_pins(dir, server, &defs, pins)?;
    println!("approved {what}: {}", lock_path.display());
    Ok(ExitCode::SUCCESS)
}
