//! Keeping a registry in step with a server: [`McpClient::register_into`] registers the
//! server's tools (a name already taken becomes `server__tool`) and, on `list_changed` and
//! after a reconnect, adds, replaces and removes them; [`McpClient::into_tools`] adapts the
//! cached list without syncing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use toolhost_core::tools::{BaseTool, Registration, ToolRegistry};

use crate::client::McpClient;
use crate::error::McpClientError;
use crate::info::{McpToolInfo, registry_name};
use crate::tool::McpTool;

impl McpClient {
    /// The server's tools as `BaseTool`s, under their own (sanitised) names, from the tool
    /// cache: call [`McpClient::list_tools`] first. Use [`McpClient::register_into`] to get
    /// collision handling and list_changed updates.
    pub fn into_tools(self) -> Vec<Arc<dyn BaseTool>> {
        self.cached_tools()
            .map(|tools| {
                tools
                    .iter()
                    .map(|info| {
                        Arc::new(McpTool::new(
                            self.clone(),
                            registry_name(&info.name),
                            info.clone(),
                        )) as Arc<dyn BaseTool>
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Registers the server's tools into `registry` and keeps them in sync: on
    /// `tools/list_changed` (and after a reconnect) the list is fetched again, new tools are
    /// added, changed ones replaced and removed ones unregistered, until [`McpClient::close`].
    ///
    /// A tool whose name is already taken by another source is registered as
    /// `server__tool`.
    pub async fn register_into(
        &self,
        registry: &ToolRegistry,
    ) -> Result<McpRegistered, McpClientError> {
        self.register_into_filtered(registry, Arc::new(|_: &McpToolInfo| true))
            .await
    }

    /// [`McpClient::register_into`], offering only the tools `keep` accepts, at first and
    /// at every refresh (the host withholds tools whose definition the operator has not
    /// approved; see `docs/trust.md`).
    pub async fn register_into_filtered(
        &self,
        registry: &ToolRegistry,
        keep: ToolFilter,
    ) -> Result<McpRegistered, McpClientError> {
        let tools = self.tools().await?;
        let sync = Arc::new(Mutex::new(SyncState::default()));
        let report = sync_registry(self, registry, &sync, &tools, &keep);
        let this = self.clone();
        let registry = registry.clone();
        let mut rx = self.tool_changes();
        rx.borrow_and_update();
        let stop = self.stop_token();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    r = rx.changed() => if r.is_err() { break },
                }
                match this.tools().await {
                    Ok(tools) => {
                        let r = sync_registry(&this, &registry, &sync, &tools, &keep);
                        for p in &r.problems {
                            tracing::warn!(server = %this.server_name(), "{p}");
                        }
                    }
                    Err(e) => {
                        tracing::warn!(server = %this.server_name(), error = %e, "refreshing MCP tools failed")
                    }
                }
            }
        });
        Ok(report)
    }
}

/// What [`McpClient::register_into`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpRegistered {
    /// The registry names of the server's tools (some may be `server__tool`).
    pub names: Vec<String>,
    /// Tools that could not be registered, with the reason.
    pub problems: Vec<String>,
}

#[derive(Default)]
struct SyncState {
    /// remote name -> (registry name, registration)
    registered: HashMap<String, (String, Registration)>,
}

/// Decides which tools of a server are offered; see [`McpClient::register_into_filtered`].
pub type ToolFilter = Arc<dyn Fn(&McpToolInfo) -> bool + Send + Sync>;

fn sync_registry(
    client: &McpClient,
    registry: &ToolRegistry,
    state: &Mutex<SyncState>,
    tools: &[McpToolInfo],
    offered: &ToolFilter,
) -> McpRegistered {
    let server = client.server_name();
    let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
    let mut report = McpRegistered::default();
    let mut keep = HashMap::new();
    for info in tools.iter().filter(|i| offered(i)) {
        let existing = st.registered.remove(&info.name);
        let name = match &existing {
            Some((name, _)) => name.clone(),
            None => {
                let plain = registry_name(&info.name);
                if registry.contains(&plain) {
                    registry_name(&format!("{server}__{}", info.name))
                } else {
                    plain
                }
            }
        };
        let tool = Arc::new(McpTool::new(client.clone(), name.clone(), info.clone()));
        let result = match &existing {
            Some(_) => registry.register_or_replace(tool),
            None => registry.register(tool),
        };
        match result {
            Ok(reg) => {
                report.names.push(name.clone());
                keep.insert(info.name.clone(), (name, reg));
            }
            Err(e) => report.problems.push(format!("tool '{}': {e}", info.name)),
        }
    }
    for (_, (_, reg)) in st.registered.drain() {
        reg.dispose();
    }
    st.registered = keep;
    // Tools the listing refused by name are problems of this registration too.
    report.problems.extend(client.refused_tools());
    report
}
