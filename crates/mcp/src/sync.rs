//! Keeping a registry in step with a server: [`McpClient::register_into`] registers the
//! server's tools and, on `list_changed`, after a reconnect and when another source's
//! claims change the names, adds, replaces, renames and removes them;
//! [`McpClient::into_tools`] adapts the cached list without syncing.
//!
//! Names follow the registry's one rule (`ToolRegistry::claim`, docs/design.md "One
//! naming rule"): the server claims the names of the tools it offers under its configured
//! name, and a name another source also claims (a plugin, another server) or a native
//! tool holds is registered as `server__tool` by every claimant, whatever the order in
//! which they connected.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use toolhost_core::tools::{BaseTool, Registration, ToolRegistry, ToolSource, safe_name};

use crate::client::McpClient;
use crate::error::McpClientError;
use crate::info::McpToolInfo;
use crate::tool::McpTool;

impl McpClient {
    /// The server's tools as `BaseTool`s, under their own (sanitised) names. Lists them
    /// first when nothing was listed yet: on a multi-threaded tokio runtime it waits for
    /// `tools/list` in place; elsewhere (a current-thread runtime, no runtime) it cannot
    /// wait, so it logs a warning and gives nothing: use
    /// [`McpClient::into_listed_tools`] there. Use [`McpClient::register_into`] to get the
    /// one naming rule and list_changed updates.
    pub fn into_tools(self) -> Vec<Arc<dyn BaseTool>> {
        if let Some(tools) = self.cached_tools() {
            return self.adapt(&tools);
        }
        let multi = tokio::runtime::Handle::try_current()
            .ok()
            .filter(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let Some(handle) = multi else {
            tracing::warn!(
                server = %self.server_name(),
                "into_tools before any listing, outside a multi-threaded runtime: no tools \
                 (list_tools first, or use into_listed_tools)"
            );
            return Vec::new();
        };
        match tokio::task::block_in_place(|| handle.block_on(self.tools())) {
            Ok(tools) => self.adapt(&tools),
            Err(e) => {
                tracing::warn!(server = %self.server_name(), error = %e, "listing the tools failed: no tools");
                Vec::new()
            }
        }
    }

    /// [`McpClient::into_tools`] for async code: lists the tools when nothing was listed
    /// yet, and says why when that fails.
    pub async fn into_listed_tools(self) -> Result<Vec<Arc<dyn BaseTool>>, McpClientError> {
        let tools = self.tools().await?;
        Ok(self.adapt(&tools))
    }

    fn adapt(&self, tools: &[McpToolInfo]) -> Vec<Arc<dyn BaseTool>> {
        tools
            .iter()
            .map(|info| {
                Arc::new(McpTool::new(
                    self.clone(),
                    safe_name(&info.name),
                    info.clone(),
                )) as Arc<dyn BaseTool>
            })
            .collect()
    }

    /// Registers the server's tools into `registry` and keeps them in sync: on
    /// `tools/list_changed` (and after a reconnect) the list is fetched again, new tools are
    /// added, changed ones replaced and removed ones unregistered, until [`McpClient::close`].
    ///
    /// A tool whose name another source also claims (or a native tool holds) is
    /// registered as `server__tool` (see the module docs).
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
        // Another source's claim that changes this server's names renames its tools at
        // once, from the cached list.
        let follower = {
            let (this, sync, keep) = (self.clone(), sync.clone(), keep.clone());
            Arc::new(move |registry: &ToolRegistry| {
                if let Some(tools) = this.cached_tools() {
                    let r = sync_registry(&this, registry, &sync, &tools, &keep);
                    for p in &r.problems {
                        tracing::warn!(server = %this.server_name(), "{p}");
                    }
                }
            })
        };
        registry.follow_names(self.server_name(), follower);
        let stop = self.stop_token();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => {
                        registry.release(this.server_name());
                        break;
                    }
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
    /// remote name -> the tool as registered
    registered: HashMap<String, Registered>,
}

/// One tool of the server as registered.
struct Registered {
    name: String,
    info: McpToolInfo,
    registration: Registration,
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
    let mut report = McpRegistered::default();
    let offered: Vec<&McpToolInfo> = tools.iter().filter(|i| offered(i)).collect();
    let described: BTreeSet<String> = offered.iter().map(|i| safe_name(&i.name)).collect();
    let owner = ToolSource::Mcp {
        server: server.to_string(),
    };
    // Claimed before this server's state is locked: the claim may call other sources'
    // followers, which lock theirs (never the other way round, so no deadlock).
    let claimed = registry.claim(server, &owner, described);
    let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = claimed {
        // Another source uses this server's name: nothing of it is offered.
        for (_, r) in st.registered.drain() {
            r.registration.dispose();
        }
        report.problems.push(e.to_string());
        return report;
    }
    // The rule as it stands now that the state is held (a later claim waits for it and
    // renames again).
    let naming = registry.naming(server);
    let mut keep = HashMap::new();
    for info in offered {
        let name = naming.name(&safe_name(&info.name));
        // A tool whose name and definition are unchanged stays as it is (no churn, no
        // `list_changed`); one the rule now names otherwise is registered anew.
        let existing = match st.registered.remove(&info.name) {
            Some(r) if r.name == name && r.info == *info => {
                report.names.push(name);
                keep.insert(info.name.clone(), r);
                continue;
            }
            Some(r) if r.name != name => {
                r.registration.dispose();
                None
            }
            other => other,
        };
        let tool = Arc::new(McpTool::new(client.clone(), name.clone(), info.clone()));
        let result = match &existing {
            Some(_) => registry.register_or_replace(tool),
            None => registry.register(tool),
        };
        match result {
            Ok(registration) => {
                report.names.push(name.clone());
                let kept = Registered {
                    name,
                    info: info.clone(),
                    registration,
                };
                keep.insert(info.name.clone(), kept);
            }
            Err(e) => report.problems.push(format!("tool '{}': {e}", info.name)),
        }
    }
    for (_, r) in st.registered.drain() {
        r.registration.dispose();
    }
    st.registered = keep;
    // Tools the listing refused by name are problems of this registration too.
    report.problems.extend(client.refused_tools());
    report
}
