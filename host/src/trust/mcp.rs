//! MCP servers under the lock: the definition of each server's tool as the lock pins it,
//! and [`connect_mcp`], which connects the configured servers and withholds tools whose
//! definition changed since approval (or that were never approved, with
//! `require_approval = "all"`), by the pins as they are at each sync of a server's list.

use toolhost_trust::{Lock, ToolDef, clean};

use crate::loader::LoadProblem;
use crate::tools::ToolRegistry;

/// The definition of an MCP server's tool, as the lock pins it and lint reads it: all a
/// client or model is shown (its own name, the description, the input schema, the
/// permissions its annotations map to, and its title, annotations' title, output schema,
/// icons and `_meta`).
pub fn mcp_tool_def(info: &crate::mcp::McpToolInfo) -> ToolDef {
    ToolDef::new(
        info.name.clone(),
        info.description.clone().unwrap_or_default(),
        info.input_schema.clone(),
        info.annotations
            .as_ref()
            .map(|a| a.permissions())
            .unwrap_or_default()
            .iter()
            .map(|p| p.as_str().to_string()),
    )
    .with_display(
        info.title.clone(),
        info.annotations.as_ref().and_then(|a| a.title.clone()),
        info.output_schema.clone(),
        info.icons.iter().map(|i| i.src.clone()).collect(),
    )
    .with_meta(info.meta.clone().map(serde_json::Value::Object))
}

/// An MCP tool that is not offered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpWithheld {
    /// The server's name in the config.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// `Changed` (definition differs from the pinned one) or `Unapproved` (not pinned,
    /// `require_approval = "all"`).
    pub state: toolhost_trust::McpToolState,
}

/// What connecting the configured MCP servers gave.
#[derive(Debug, Default)]
pub struct McpLoad {
    /// The tools withheld at connect time.
    pub withheld: Vec<McpWithheld>,
    /// The problems met.
    pub problems: Vec<LoadProblem>,
    /// The (enabled) servers that did not connect at all.
    pub down: Vec<String>,
    /// Those of `down` that answered HTTP 401: their credential was refused.
    pub unauthorized: Vec<String>,
    /// The connected clients (for the gateway of `serve`).
    pub clients: Vec<crate::mcp::McpClient>,
    /// The pins the clients' tool filters read (an approval while serving updates them).
    pub pins: super::McpPins,
}

/// Connects the MCP servers of `config`, offering only the tools the lock's `[mcp.NAME]`
/// pins allow (see [`toolhost_trust::evaluate_mcp_tool`]), at connect time and at every
/// `tools/list_changed` refresh.
pub async fn connect_mcp(
    registry: &ToolRegistry,
    config: &crate::config::HostConfig,
    lock: &Lock,
) -> McpLoad {
    use std::sync::{Arc, Mutex};
    let opts = config.trust.options();
    let withheld: Arc<Mutex<Vec<McpWithheld>>> = Arc::default();
    // Read at every sync of a server's list, so an approval made while serving applies.
    let pins = super::McpPins::from_lock(lock);
    let filter_for = |server: &str| -> Option<crate::mcp::ToolFilter> {
        let pins = pins.clone();
        let server = server.to_string();
        let withheld = withheld.clone();
        Some(Arc::new(move |info: &crate::mcp::McpToolInfo| {
            let pinned = pins.get(&server);
            let state =
                toolhost_trust::evaluate_mcp_tool(pinned.as_ref(), &mcp_tool_def(info), opts);
            if state == toolhost_trust::McpToolState::Offered {
                return true;
            }
            tracing::warn!(server = %server, tool = %clean(&info.name), ?state, "MCP tool withheld until `toolhost approve mcp:{server}`");
            let mut w = withheld.lock().unwrap_or_else(|e| e.into_inner());
            let item = McpWithheld {
                server: server.clone(),
                tool: info.name.clone(),
                state,
            };
            if !w.contains(&item) {
                w.push(item);
            }
            false
        }))
    };
    let (clients, problems) =
        crate::mcp::config::connect_all_filtered(registry, &config.mcp, filter_for).await;
    let mut down: Vec<String> = problems
        .iter()
        .filter(|p| !matches!(p.error, crate::mcp::McpLoadError::Tool(_)))
        .map(|p| p.server.clone())
        .collect();
    down.dedup();
    let unauthorized = problems
        .iter()
        .filter(|p| {
            matches!(
                &p.error,
                crate::mcp::McpLoadError::Client(crate::mcp::McpClientError::Unauthorized {
                    status: 401,
                    ..
                })
            )
        })
        .map(|p| p.server.clone())
        .collect();
    let problems = problems.iter().map(crate::loader::mcp_problem).collect();
    let withheld = withheld.lock().unwrap_or_else(|e| e.into_inner()).clone();
    McpLoad {
        withheld,
        problems,
        down,
        unauthorized,
        clients,
        pins,
    }
}
