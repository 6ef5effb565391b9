//! MCP servers' pins while `serve` runs, and their approval from anywhere in the library
//! (`toolhost approve mcp:SERVER` and the operator's console share [`chosen_pins`] and
//! [`approve_mcp_pins`]).
//!
//! - [`McpPins`]: the lock's `[mcp.NAME]` pins as `serve` applies them now. The filter of
//!   each server's tools reads them at every sync, so a new approval applies as soon as the
//!   server's list is synced again ([`McpBoard::approve`] asks for that at once).
//! - [`McpBoard`]: what the console reads and acts on: each connected server's tools as the
//!   server last listed them, which of them are withheld, and the approval of the whole
//!   set as it stands. A decision names the digest of the definitions the page showed; a
//!   server whose definitions changed since gets [`McpApproveError::Changed`] and nothing is
//!   written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use toolhost_trust::{Capabilities, DefStore, Diff, Lock, McpEntry, McpToolState, ToolDef};

use super::mcp_tool_def;

/// The tool pins of every server, by server name then tool name (the definitions'
/// hashes), shared by the tool filters and whoever approves.
#[derive(Clone, Debug, Default)]
pub struct McpPins(Arc<RwLock<BTreeMap<String, BTreeMap<String, String>>>>);

impl McpPins {
    /// The pins of `lock`.
    pub fn from_lock(lock: &Lock) -> McpPins {
        let all = lock
            .mcp
            .iter()
            .map(|(k, v)| (k.clone(), v.tools.clone()))
            .collect();
        McpPins(Arc::new(RwLock::new(all)))
    }

    /// The pins of `server`, if it is pinned.
    pub fn get(&self, server: &str) -> Option<BTreeMap<String, String>> {
        // A poisoned lock: the map is replaced per server, never left half-written.
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(server)
            .cloned()
    }

    /// Pins `tools` for `server`.
    pub fn set(&self, server: &str, tools: BTreeMap<String, String>) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(server.to_string(), tools);
    }
}

/// Why an MCP server's tools were not approved.
#[derive(Debug, thiserror::Error)]
pub enum McpApproveError {
    /// No connected server has this name.
    #[error("no connected MCP server is named {0:?}")]
    Unknown(String),
    /// The server has not listed its tools (yet).
    #[error("MCP server {0:?} has not listed its tools yet; try again")]
    NotListed(String),
    /// The definitions differ from those the decision was made on.
    #[error("the tools of MCP server {0:?} changed since they were shown; review them again")]
    Changed(String),
    /// The choice names tools the server does not withhold now.
    #[error("MCP server {0:?} does not withhold {1}: review it again")]
    NotWithheld(String, String),
    /// The choice names no tool.
    #[error("no tool of MCP server {0:?} was chosen: tick at least one, or deny")]
    NoneChosen(String),
    /// The lock or the definitions store could not be written.
    #[error("writing the approval: {0}")]
    Write(#[from] toolhost_trust::TrustError),
}

/// Pins `pins` (tool name to definition hash) as the approved tools of MCP server
/// `server` in the lock of `dir`, with `defs` saved in the store for later diffs. Returns
/// the lock's path.
pub fn approve_mcp_pins(
    dir: &Path,
    server: &str,
    defs: &[ToolDef],
    pins: BTreeMap<String, String>,
) -> Result<PathBuf, McpApproveError> {
    let lock_path = Lock::path_in(dir);
    let mut lock = Lock::load(&lock_path)?;
    let store = DefStore::in_dir(dir);
    for t in defs {
        store.save(t)?;
    }
    lock.mcp.insert(
        server.to_string(),
        McpEntry {
            approved_at: toolhost_trust::now_rfc3339(),
            tools: pins,
        },
    );
    lock.save(&lock_path)?;
    Ok(lock_path)
}

/// The pins that approve, of `defs` (server `server`'s tools as it lists them now), the
/// tools withheld under the `old` pins that `only` names (all of them when `None`): those
/// and the tools offered now are pinned as they are; a withheld tool not chosen keeps its
/// old pin, or none, and stays withheld; a tool no longer listed is dropped. `only` must
/// name at least one tool, each withheld now. Returns the pins and the tools approved.
pub fn chosen_pins(
    server: &str,
    old: &BTreeMap<String, String>,
    defs: &[ToolDef],
    only: Option<&[String]>,
    opts: toolhost_trust::TrustOptions,
) -> Result<(BTreeMap<String, String>, Vec<String>), McpApproveError> {
    let withheld = |d: &ToolDef| {
        toolhost_trust::evaluate_mcp_tool(Some(old), d, opts) != McpToolState::Offered
    };
    if let Some(only) = only {
        if only.is_empty() {
            return Err(McpApproveError::NoneChosen(server.to_string()));
        }
        let stray: Vec<&str> = only
            .iter()
            .filter(|n| !defs.iter().any(|d| &d.name == *n && withheld(d)))
            .map(|n| n.as_str())
            .take(5)
            .collect();
        if !stray.is_empty() {
            return Err(McpApproveError::NotWithheld(
                server.to_string(),
                toolhost_trust::clean(&stray.join(", ")),
            ));
        }
    }
    let chosen = |d: &ToolDef| only.is_none_or(|o| o.contains(&d.name)) || !withheld(d);
    let mut approved = Vec::new();
    let mut next = BTreeMap::new();
    for d in defs {
        if chosen(d) {
            next.insert(d.name.clone(), d.hash());
            if withheld(d) {
                approved.push(d.name.clone());
            }
        } else if let Some(h) = old.get(&d.name) {
            next.insert(d.name.clone(), h.clone());
        }
    }
    Ok((next, approved))
}

/// The digest of a set of definitions: what a decision on them names.
pub fn defs_digest(defs: &[ToolDef]) -> String {
    let mut text = String::new();
    for d in defs {
        text.push_str(&d.name);
        text.push('\0');
        text.push_str(&d.hash());
        text.push('\n');
    }
    toolhost_trust::canon::sha256(text.as_bytes())
}

/// A connected server with tools withheld, as a reviewer sees it.
#[derive(Debug, Clone)]
pub struct HeldServer {
    /// Its name in the config.
    pub server: String,
    /// Its tools as it lists them now.
    pub defs: Vec<ToolDef>,
    /// Those withheld, and why (changed since approval, or never approved).
    pub withheld: Vec<(String, McpToolState)>,
    /// What changed against the approved definitions, if it was approved before.
    pub diff: Option<String>,
    /// [`defs_digest`] of `defs`.
    pub digest: String,
}

/// The connected MCP servers of a running `serve`, for the console.
#[derive(Clone, Default)]
pub struct McpBoard(Arc<RwLock<Option<Published>>>);

/// What `serve` published on the board.
struct Published {
    pins: McpPins,
    clients: Vec<crate::mcp::McpClient>,
    opts: toolhost_trust::TrustOptions,
    dir: PathBuf,
}

impl std::fmt::Debug for McpBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpBoard").finish_non_exhaustive()
    }
}

impl McpBoard {
    /// Publishes the servers `serve` connected, the pins their filters read, the trust
    /// options and the folder whose lock approvals write.
    pub fn publish(
        &self,
        pins: McpPins,
        clients: Vec<crate::mcp::McpClient>,
        opts: toolhost_trust::TrustOptions,
        dir: &Path,
    ) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Some(Published {
            pins,
            clients,
            opts,
            dir: dir.to_path_buf(),
        });
    }

    /// The servers with a tool withheld now, in name order.
    pub fn held(&self) -> Vec<HeldServer> {
        let guard = self.0.read().unwrap_or_else(|e| e.into_inner());
        let Some(p) = guard.as_ref() else {
            return Vec::new();
        };
        let store = DefStore::in_dir(&p.dir);
        let mut out = Vec::new();
        for c in &p.clients {
            let Some(tools) = c.cached_tools() else {
                continue;
            };
            let defs: Vec<ToolDef> = tools.iter().map(mcp_tool_def).collect();
            let pinned = p.pins.get(c.server_name());
            let withheld: Vec<_> = defs
                .iter()
                .map(|d| {
                    let state = toolhost_trust::evaluate_mcp_tool(pinned.as_ref(), d, p.opts);
                    (d.name.clone(), state)
                })
                .filter(|(_, s)| *s != McpToolState::Offered)
                .collect();
            if withheld.is_empty() {
                continue;
            }
            let diff = pinned.as_ref().map(|pins| {
                Diff::between(
                    &Capabilities::default(),
                    pins,
                    |h| store.load(h),
                    &Capabilities::default(),
                    &defs,
                )
                .to_string()
            });
            out.push(HeldServer {
                server: c.server_name().to_string(),
                digest: defs_digest(&defs),
                defs,
                withheld,
                diff,
            });
        }
        out.sort_by(|a, b| a.server.cmp(&b.server));
        out
    }

    /// Approves the tools of `server` as it lists them now, if their [`defs_digest`] is
    /// `digest`: the lock pins them, the running filters take the new pins, and the
    /// server's list is synced again so its tools are offered. `only`: of the tools
    /// withheld now, approve just these (each must be withheld, at least one); the others
    /// keep their old pin, or none, and stay withheld. Returns the tools approved.
    pub fn approve(
        &self,
        server: &str,
        digest: &str,
        only: Option<&[String]>,
    ) -> Result<Vec<String>, McpApproveError> {
        let (client, pins, dir, opts) = {
            let guard = self.0.read().unwrap_or_else(|e| e.into_inner());
            let p = guard
                .as_ref()
                .ok_or_else(|| McpApproveError::Unknown(server.to_string()))?;
            let c = p
                .clients
                .iter()
                .find(|c| c.server_name() == server)
                .cloned()
                .ok_or_else(|| McpApproveError::Unknown(server.to_string()))?;
            (c, p.pins.clone(), p.dir.clone(), p.opts)
        };
        let tools = client
            .cached_tools()
            .ok_or_else(|| McpApproveError::NotListed(server.to_string()))?;
        let defs: Vec<ToolDef> = tools.iter().map(mcp_tool_def).collect();
        if defs_digest(&defs) != digest {
            return Err(McpApproveError::Changed(server.to_string()));
        }
        let old = pins.get(server).unwrap_or_default();
        let (next, approved) = chosen_pins(server, &old, &defs, only, opts)?;
        approve_mcp_pins(&dir, server, &defs, next.clone())?;
        pins.set(server, next);
        client.tools_changed();
        Ok(approved)
    }
}
