//! Wiring: builds a [`ToolRegistry`] from a plugins folder and a host config.
//!
//! `load_plugins` loads the plugins folder under the operator's lock (see [`crate::trust`]);
//! `connect_mcp` connects the configured MCP servers.

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

/// Loads every plugin of `dir` into `registry` under the lock of `dir` with the default
/// trust settings (see [`crate::trust::load_plugins`]). Returns the problems met; good
/// plugins load regardless.
pub async fn load_plugins(registry: &ToolRegistry, dir: &Path) -> Vec<LoadProblem> {
    crate::trust::load_plugins(registry, dir, &crate::config::TrustConfig::default())
        .await
        .1
}

/// The process-wide wasm engine (default options: pooling, epoch, fuel, compile cache),
/// created on first use. A creation failure is kept too: every caller gets the same
/// error.
pub fn wasm_engine() -> Result<crate::wasm::WasmEngine, crate::wasm::EngineError> {
    static ENGINE: std::sync::OnceLock<Result<crate::wasm::WasmEngine, crate::wasm::EngineError>> =
        std::sync::OnceLock::new();
    ENGINE.get_or_init(crate::wasm::WasmEngine::new).clone()
}

/// A [`LoadProblem`] from a plugin error (the file goes to `source`, not twice).
pub fn plugin_problem(e: &crate::wasm::PluginError) -> LoadProblem {
    let source = e.path().to_string();
    let text = e.to_string();
    let message = text
        .strip_prefix(&format!("{source}: "))
        .map(str::to_string)
        .unwrap_or(text);
    LoadProblem { source, message }
}

/// Connects the MCP servers of `config` and registers their tools (a name already taken
/// becomes `server__tool`). A server that cannot be reached is a problem, not a failure:
/// the others load. The clients live as long as their tools stay registered.
pub async fn connect_mcp(registry: &ToolRegistry, config: &HostConfig) -> Vec<LoadProblem> {
    let (_clients, problems) = crate::mcp::config::connect_all(registry, &config.mcp).await;
    problems.iter().map(mcp_problem).collect()
}

/// A [`LoadProblem`] from an MCP server that (or one of whose tools) did not load.
pub fn mcp_problem(p: &crate::mcp::McpServerProblem) -> LoadProblem {
    LoadProblem {
        source: format!("mcp server '{}'", p.server),
        message: p.error.to_string(),
    }
}
