//! The plugins folder: every `*.wasm` file (with its `NAME.toml` policy) becomes a
//! [`Plugin`], and its tools go into a [`ToolRegistry`]. A bad plugin gives a
//! [`PluginError`] naming the file; the others still load.
//!
//! **Tool names belong to no plugin.** Load order must never decide who owns a name: a
//! plugin `aaa_shadow.wasm` that describes `add` must not take `add` from `calc.wasm`,
//! nor get `calc.wasm` refused. So when two or more plugins of a folder describe the same
//! tool name (or the name is already registered by another source), **every** plugin that
//! describes it gets the qualified name `plugin__tool` (the file stem, characters outside
//! `[a-zA-Z0-9_-]` replaced by `_`; a name over 64 characters is cut and ends in a short
//! hash of the full name), and a warning says so. The outcome depends only on the set of
//! plugins, not on their order. Described names containing `__` are reserved for these
//! qualified names: a plugin that describes one is refused (only that plugin). MCP tools
//! use the same `server__tool` form.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use toolhost_core::tools::ToolRegistry;

use std::sync::Arc;

use crate::component::{Plugin, WasmTool};
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

/// The separator of qualified tool names (`plugin__tool`); reserved in described names.
pub const QUALIFIER: &str = "__";

/// The qualified registry name `plugin__tool` of a tool (see the module docs): valid
/// under the registry's name rule whatever the plugin's file stem.
pub fn qualified_name(plugin: &str, tool: &str) -> String {
    let stem: String = plugin
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let full = format!("{stem}{QUALIFIER}{tool}");
    if full.len() <= 64 {
        return full;
    }
    use sha2::Digest;
    let hash = hex::encode(sha2::Sha256::digest(full.as_bytes()));
    // `full` is ASCII here (a described name that passed the checks, a sanitised stem).
    let keep = full.get(..55).unwrap_or(&full);
    format!("{keep}_{}", &hash[..8])
}

/// The checks every tool of a plugin must pass before any is registered: the registry's
/// definition checks (name, description, schema), no duplicate inside the plugin, and no
/// reserved `__` in a described name.
fn check_plugin(plugin: &Plugin) -> Result<(), PluginError> {
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
        if t.spec().name.contains(QUALIFIER) {
            return Err(def(format!(
                "tool '{}': names containing '{QUALIFIER}' are reserved for the host's qualified names (plugin{QUALIFIER}tool)",
                t.spec().name
            )));
        }
    }
    Ok(())
}

/// Registers the tools of one plugin, all or nothing: every tool must pass the registry's
/// checks (name, description, schema, no duplicate, no reserved `__`) before any is
/// registered. A tool whose name is already registered is registered as `plugin__tool`
/// instead (with a warning). To register several plugins independently of their order,
/// use [`register_plugins`] (or [`load_into`]).
pub fn register_plugin(registry: &ToolRegistry, plugin: &Plugin) -> Result<usize, PluginError> {
    check_plugin(plugin)?;
    let taken: HashSet<String> = plugin
        .tools()
        .iter()
        .filter(|t| registry.contains(t.registry_name()))
        .map(|t| t.registry_name().to_string())
        .collect();
    let tools: Vec<Arc<WasmTool>> = plugin
        .tools()
        .iter()
        .map(|t| {
            if taken.contains(t.registry_name()) {
                let q = qualified_name(plugin.name(), &t.spec().name);
                tracing::warn!(
                    plugin = %plugin.path().display(),
                    "tool name '{}' is already registered; registering this plugin's tool as '{q}'",
                    t.registry_name()
                );
                Arc::new(t.renamed(q))
            } else {
                t.clone()
            }
        })
        .collect();
    register_tools(registry, plugin, &tools)
}

fn register_tools(
    registry: &ToolRegistry,
    plugin: &Plugin,
    tools: &[Arc<WasmTool>],
) -> Result<usize, PluginError> {
    let path = plugin.path().display().to_string();
    let def = |message: String| PluginError::Definition {
        path: path.clone(),
        message,
    };
    if let Some(t) = tools.iter().find(|t| registry.contains(t.registry_name())) {
        return Err(def(format!(
            "a tool named '{}' is already registered by another source",
            t.registry_name()
        )));
    }
    let mut done = Vec::new();
    for t in tools {
        match registry.register(t.clone()) {
            Ok(_) => done.push(t.registry_name().to_string()),
            Err(e) => {
                // All or nothing: take back what this plugin registered.
                for n in &done {
                    registry.unregister(n);
                }
                return Err(def(e.to_string()));
            }
        }
    }
    Ok(done.len())
}

/// Registers several plugins so that the outcome does not depend on their order: a
/// plugin failing its own checks is refused (alone); among the others, a tool name
/// described by two or more plugins, or already in the registry, is registered as
/// `plugin__tool` for **every** plugin that describes it. Updates each plugin's tools to
/// the names they got. Returns the plugins registered and one error per plugin refused.
pub fn register_plugins(
    registry: &ToolRegistry,
    plugins: Vec<Plugin>,
) -> (Vec<Plugin>, Vec<PluginError>) {
    let mut errors = Vec::new();
    let mut ok = Vec::new();
    for p in plugins {
        match check_plugin(&p) {
            Ok(()) => ok.push(p),
            Err(e) => {
                tracing::warn!("{e}");
                errors.push(e);
            }
        }
    }
    let mut owners: HashMap<&str, Vec<&str>> = HashMap::new();
    for p in &ok {
        for t in p.tools() {
            owners
                .entry(t.spec().name.as_str())
                .or_default()
                .push(p.name());
        }
    }
    let mut contested = HashSet::new();
    let mut names: Vec<_> = owners.into_iter().collect();
    names.sort();
    for (name, plugins) in names {
        if plugins.len() > 1 {
            tracing::warn!(
                "tool name '{name}' is described by several plugins ({}); each is registered as plugin{QUALIFIER}{name}",
                plugins.join(", ")
            );
            contested.insert(name.to_string());
        } else if registry.contains(name) {
            tracing::warn!(
                "tool name '{name}' of plugin {} is already registered; registering it as '{}'",
                plugins.join(", "),
                qualified_name(plugins.first().copied().unwrap_or_default(), name)
            );
            contested.insert(name.to_string());
        }
    }
    let mut kept = Vec::new();
    for mut p in ok {
        p.qualify(&contested);
        let tools = p.tools().to_vec();
        match register_tools(registry, &p, &tools) {
            Ok(_) => kept.push(p),
            Err(e) => {
                tracing::warn!("{e}");
                errors.push(e);
            }
        }
    }
    (kept, errors)
}

/// Loads every plugin of `dir` into `registry` (see [`register_plugins`] for names).
/// Returns the loaded plugins and one error per file that failed (to load or to
/// register).
pub async fn load_into(
    engine: &WasmEngine,
    registry: &ToolRegistry,
    dir: &Path,
) -> (Vec<Plugin>, Vec<PluginError>) {
    let (loaded, mut errors) = load_dir(engine, dir).await;
    let (kept, more) = register_plugins(registry, loaded);
    errors.extend(more);
    (kept, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_follow_the_registry_rule() {
        assert_eq!(qualified_name("calc", "add"), "calc__add");
        assert_eq!(qualified_name("my plugin.v2", "add"), "my_plugin_v2__add");
        let long = qualified_name(&"p".repeat(60), "a_rather_long_tool_name");
        assert_eq!(long.len(), 64);
        assert!(toolhost_core::tools::is_valid_tool_name(&long), "{long}");
        // Deterministic, and different inputs stay apart.
        assert_eq!(
            long,
            qualified_name(&"p".repeat(60), "a_rather_long_tool_name")
        );
        assert_ne!(
            long,
            qualified_name(&"p".repeat(60), "a_rather_long_tool_name2")
        );
    }
}
