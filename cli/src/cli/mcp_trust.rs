//! `toolhost approve mcp:SERVER`: pins the tool definitions of a configured MCP server in
//! the lock, so a later change of a description or schema is withheld until approved
//! again (see `docs/trust.md`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use toolhost::config::HostConfig;
use toolhost::mcp::McpClient;
use toolhost::trust::{clean, mcp_tool_def};
use toolhost_trust::{Capabilities, DefStore, Diff, Lock, McpEntry, ToolDef};

/// The tools of MCP server `server` as it describes them now (connects, lists, closes).
pub async fn server_tools(
    server: &str,
    cfg: &toolhost::mcp::McpServerConfig,
) -> anyhow::Result<Vec<toolhost::tools::McpToolInfo>> {
    Ok(server_definitions(server, cfg, false).await?.0)
}

/// What MCP server `server` shows now: its tools, and with `served` also its prompts and
/// resources, each as its served object (`prompt NAME` or `resource URI`, the object),
/// for lint. One connection; a server that offers no prompts or resources, or fails to
/// list them, gives none of them (its tools are what approval pins).
pub async fn server_definitions(
    server: &str,
    cfg: &toolhost::mcp::McpServerConfig,
    served: bool,
) -> anyhow::Result<(
    Vec<toolhost::tools::McpToolInfo>,
    Vec<(String, serde_json::Value)>,
)> {
    let transport = cfg
        .transport()
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("mcp server {server}"))?;
    let oauth_client = cfg
        .oauth_client()
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("mcp server {server}"))?;
    let client = McpClient::new(server, transport)
        .with_timeout_duration(cfg.timeout())
        .with_oauth_store(toolhost::mcp::oauth::OAuthStore::default_location().ok())
        .with_oauth_client(oauth_client);
    client
        .connect()
        .await
        .with_context(|| format!("connecting MCP server {server}"))?;
    let tools = client.tools().await;
    let mut items = Vec::new();
    if served {
        if let Ok(prompts) = client.list_prompts().await {
            for p in prompts {
                let value = serde_json::to_value(&p).unwrap_or_default();
                items.push((format!("prompt {}", p.name), value));
            }
        }
        if let Ok(resources) = client.list_resources().await {
            for r in resources {
                let value = serde_json::to_value(&r).unwrap_or_default();
                items.push((format!("resource {}", r.uri), value));
            }
        }
    }
    let _ = client.close().await;
    Ok((tools?.as_ref().clone(), items))
}

/// Approves the tools of MCP server `server` as it describes them now.
pub async fn approve(
    config: &HostConfig,
    dir: &Path,
    server: &str,
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

    let lock_path = Lock::path_in(dir);
    let mut lock = Lock::load(&lock_path)?;
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
    super::common::confirm(yes, &format!("approve the tools of mcp server {server}?"))?;
    for t in &defs {
        store.save(t)?;
    }
    lock.mcp.insert(
        server.to_string(),
        McpEntry {
            approved_at: toolhost_trust::now_rfc3339(),
            tools: defs.iter().map(|t| (t.name.clone(), t.hash())).collect(),
        },
    );
    lock.save(&lock_path)?;
    println!("approved mcp:{server}: {}", lock_path.display());
    Ok(ExitCode::SUCCESS)
}
