//! The plugins folder: every `*.wasm` file (with its `NAME.toml` policy) becomes a
//! [`Plugin`], and its tools go into a [`ToolRegistry`]. A bad plugin gives a
//! [`PluginError`] naming the file; the others still load.

use std::path::{Path, PathBuf};

use toolhost_core::tools::{BaseTool, ToolRegistry};

use crate::component::Plugin;
use crate::engine::WasmEngine;
use crate::error::PluginError;

/// The `.wasm` files of `dir`, sorted by name (a missing folder has none).
pub fn plugin_files(dir: &Path) -> Result<Vec<PathBuf>, PluginError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(PluginError::Io {
                path: dir.display().to_string(),
                source,
            });
        }
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// Loads every plugin of `dir`. Returns the plugins that loaded and one error per file
/// that did not.
pub async fn load_dir(engine: &WasmEngine, dir: &Path) -> (Vec<Plugin>, Vec<PluginError>) {
    let files = match plugin_files(dir) {
        Ok(f) => f,
        Err(e) => return (Vec::new(), vec![e]),
    };
    let mut plugins = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        match Plugin::load(engine, &f).await {
            Ok(p) => plugins.push(p),
            Err(e) => {
                tracing::warn!("{e}");
                errors.push(e);
            }
        }
    }
    (plugins, errors)
}

/// Registers the tools of one plugin, all or nothing: every tool must pass the registry's
/// checks (name, description, schema, no duplicate) before any is registered.
pub fn register_plugin(registry: &ToolRegistry, plugin: &Plugin) -> Result<usize, PluginError> {
    let path = plugin.path().display().to_string();
    let def = |message: String| PluginError::Definition {
        path: path.clone(),
        message,
    };
    // Dry run in a scratch registry: runs the same checks, catches duplicates in the
    // plugin itself.
    let scratch = ToolRegistry::new();
    for t in plugin.tools() {
        scratch
            .register(t.clone())
            .map_err(|e| def(e.to_string()))?;
        if registry.contains(t.name()) {
            return Err(def(format!(
                "a tool named '{}' is already registered by another source",
                t.name()
            )));
        }
    }
    let mut n = 0;
    for t in plugin.tools() {
        registry
            .register(t.clone())
            .map_err(|e| def(e.to_string()))?;
        n += 1;
    }
    Ok(n)
}

/// Loads every plugin of `dir` into `registry`. Returns the loaded plugins and one error
/// per file that failed (to load or to register).
pub async fn load_into(
    engine: &WasmEngine,
    registry: &ToolRegistry,
    dir: &Path,
) -> (Vec<Plugin>, Vec<PluginError>) {
    let (loaded, mut errors) = load_dir(engine, dir).await;
    let mut kept = Vec::new();
    for p in loaded {
        match register_plugin(registry, &p) {
            Ok(_) => kept.push(p),
            Err(e) => {
                tracing::warn!("{e}");
                errors.push(e);
            }
        }
    }
    (kept, errors)
}
