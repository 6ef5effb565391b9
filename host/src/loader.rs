//! Wiring: builds a [`ToolRegistry`] from a plugins folder and a host config.
//!
//! The WASM side (issue 3) fills `load_plugins`; the MCP side (issue 4) fills `connect_mcp`.

use std::path::Path;

use crate::config::HostConfig;
use crate::tools::ToolRegistry;

/// One problem met while loading (a bad plugin, an unreachable server). Loading goes on.
#[derive(Debug, Clone)]
pub struct LoadProblem {
    /// The file or server concerned.
    pub source: String,
    /// What went wrong.
    pub message: String,
}

/// Loads every plugin of `dir` into `registry`. Returns the problems met; good plugins load
/// regardless.
pub async fn load_plugins(_registry: &ToolRegistry, _dir: &Path) -> Vec<LoadProblem> {
    Vec::new()
}

/// Connects the MCP servers of `config` and registers their tools.
pub async fn connect_mcp(_registry: &ToolRegistry, _config: &HostConfig) -> Vec<LoadProblem> {
    Vec::new()
}
