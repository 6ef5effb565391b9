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
pub async fn load_plugins(registry: &ToolRegistry, dir: &Path) -> Vec<LoadProblem> {
    let engine = match wasm_engine() {
        Ok(e) => e,
        Err(message) => {
            return vec![LoadProblem {
                source: dir.display().to_string(),
                message,
            }];
        }
    };
    let (plugins, errors) = crate::wasm::loader::load_into(&engine, registry, dir).await;
    // Plugins listed from the compile cache are linked on first use; link them now on a
    // blocking thread so the first call does not wait for it, while the host is already
    // answering (`tools/list` needs no linked component).
    if !plugins.is_empty() && tokio::runtime::Handle::try_current().is_ok() {
        tokio::task::spawn_blocking(move || {
            for p in &plugins {
                if let Err(e) = p.warm() {
                    tracing::warn!(plugin = %p.path().display(), "{e}");
                }
            }
        });
    }
    errors.iter().map(plugin_problem).collect()
}

/// The process-wide wasm engine (default options: pooling, epoch, fuel, compile cache),
/// created on first use.
pub fn wasm_engine() -> Result<crate::wasm::WasmEngine, String> {
    static ENGINE: std::sync::OnceLock<Result<crate::wasm::WasmEngine, String>> =
        std::sync::OnceLock::new();
    ENGINE
        .get_or_init(|| crate::wasm::WasmEngine::new().map_err(|e| e.to_string()))
        .clone()
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
    problems
        .into_iter()
        .map(|p| LoadProblem {
            source: format!("mcp server '{}'", p.server),
            message: p.error.to_string(),
        })
        .collect()
}
