//! What a configured MCP server shows now, read over one short connection: its tools
//! (what `approve mcp:SERVER` pins) and, for `lint`, its prompts and resources.

use anyhow::Context;
use toolhost::mcp::McpClient;

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
