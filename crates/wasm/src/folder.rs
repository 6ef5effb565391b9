//! The plugins folder: every `*.wasm` file (with its `NAME.toml` policy) becomes a
//! [`Plugin`], and its tools go into a [`ToolRegistry`]. A bad plugin gives a
//! [`PluginError`] naming the file; the others still load.
//!
//! **Tool names belong to no plugin.** Load order must never decide who owns a name: a
//! plugin `aaa_shadow.wasm` that describes `add` must not take `add` from `calc.wasm`,
//! nor get `calc.wasm` refused. Names follow the registry's one rule for every source
//! (`toolhost_core::tools::ToolRegistry::claim`, docs/design.md "One naming rule"): each
//! plugin claims the names it describes under its file stem, and a name two sources
//! claim (two plugins, a plugin and an MCP server) or a native tool holds is registered
//! as `plugin__tool` by **every** plugin that describes it, with a warning. Described
//! names containing `__` are reserved for these qualified names: a plugin that describes
//! one is refused (only that plugin).
//!
//! A [`FolderSet`] applies the rule to a registry whenever a plugin is added, replaced or
//! removed, and when another source's claims change ([`FolderSet::follow_names`]),
//! renaming only what changes. The host's start-up load (incremental, in file order), its
//! live reload and [`register_plugins`] all go through a [`FolderSet`], so the registry
//! always holds what a fresh start with the same files and servers would give.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use toolhost_core::tools::{QUALIFIER, ToolRegistry, ToolSource};

use std::sync::Arc;

use crate::component::{Plugin, WasmTool};
#[cfg(feature = "unchecked-load")]
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

/// Loads every plugin of `dir`, each with its own request file as its grant: no lock, no
/// approval, no protected paths but the folder's own. Returns the plugins that loaded and
/// one error per file that did not. Only with the `unchecked-load` feature (tests and
/// benchmarks): a host loads a folder through `toolhost::Host::load`.
#[cfg(feature = "unchecked-load")]
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
/// registered. Its names follow the registry's one rule as it stands
/// ([`ToolRegistry::claim`]): a name another source claims or a native tool holds is
/// registered as `plugin__tool`. It does not follow later changes: to keep several
/// plugins named as the rule says over time, use a [`FolderSet`].
pub fn register_plugin(registry: &ToolRegistry, plugin: &Plugin) -> Result<usize, PluginError> {
    FolderSet::new().insert(registry, plugin.clone())
}

/// The described tool names of a plugin.
fn described_names(p: &Plugin) -> BTreeSet<String> {
    p.tools().iter().map(|t| t.spec().name.clone()).collect()
}

/// The plugins of one folder as registered in a registry, named by the registry's one
/// rule of tool names ([`ToolRegistry::claim`], see the module docs). Every change (a plugin added,
/// replaced or removed) recomputes the names of the whole set and changes only the
/// registrations whose name or component changes: a plugin that appears beside `calc`
/// describing `add` makes **both** `plugin__tool` (it never gets the plain name, not even
/// for a moment), and when it goes away `calc`'s tool gets `add` back. The registry is
/// then what a restart with the same set of files would give, whatever the order or the
/// timing of the changes. Start-up loads and live reload both go through it.
#[derive(Debug, Default)]
pub struct FolderSet {
    plugins: BTreeMap<String, Plugin>,
}

impl FolderSet {
    /// An empty set (nothing registered by it yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// The plugin registered under `name` (its tools carry their registry names).
    pub fn get(&self, name: &str) -> Option<&Plugin> {
        self.plugins.get(name)
    }

    /// The plugins registered, by name.
    pub fn plugins(&self) -> impl Iterator<Item = &Plugin> {
        self.plugins.values()
    }

    /// The plugins registered, by name, taken out of the set (the registry keeps them).
    pub fn into_plugins(self) -> Vec<Plugin> {
        self.plugins.into_values().collect()
    }

    /// Adds `plugin` (or replaces the plugin of the same name) and renames what the rule
    /// demands. All or nothing: a plugin failing its checks or the registry's leaves the
    /// registry and the set as they were. Returns the number of tools it registered.
    pub fn insert(
        &mut self,
        registry: &ToolRegistry,
        plugin: Plugin,
    ) -> Result<usize, PluginError> {
        check_plugin(&plugin)?;
        let name = plugin.name().to_string();
        if let Some(old) = self.plugins.get(&name)
            && old.path() != plugin.path()
        {
            return Err(PluginError::Definition {
                path: plugin.path().display().to_string(),
                message: format!(
                    "a plugin named '{name}' is already registered from {}",
                    old.path().display()
                ),
            });
        }
        let mut next: BTreeMap<String, Plugin> = self.plugins.clone();
        next.insert(name.clone(), plugin);
        self.apply(registry, next)?;
        Ok(self.plugins.get(&name).map_or(0, |p| p.tools().len()))
    }

    /// Removes plugin `name` (its tools are unregistered; calls in flight finish) and
    /// gives the others back the names the rule now gives them. Returns the plugin.
    pub fn remove(&mut self, registry: &ToolRegistry, name: &str) -> Option<Plugin> {
        let mut next: BTreeMap<String, Plugin> = self.plugins.clone();
        let gone = next.remove(name)?;
        if let Err(e) = self.apply(registry, next) {
            // Only a registry refusing a name the rule gives back can get here; the
            // removal itself stands.
            tracing::warn!("{e}");
            let mut rest = self.plugins.clone();
            rest.remove(name);
            for t in gone.tools() {
                unregister_own(registry, t);
            }
            self.plugins = rest;
        }
        Some(gone)
    }

    /// Renames what the rule now says after another source claimed or released a name
    /// (an MCP server that appeared or went away; [`ToolRegistry::names_changed`]). Only
    /// the registrations whose name changes are touched.
    pub fn follow_names(&mut self, registry: &ToolRegistry) -> Result<(), PluginError> {
        let same = self.plugins.clone();
        self.apply(registry, same)
    }

    /// Makes the registry hold exactly the tools of `next`, named by the rule: unregisters
    /// the registrations that change, registers the new ones. On a refusal puts back what
    /// was there and returns the error (naming the plugin refused).
    fn apply(
        &mut self,
        registry: &ToolRegistry,
        mut next: BTreeMap<String, Plugin>,
    ) -> Result<(), PluginError> {
        claim(registry, &next, &self.plugins)?;
        for (name, p) in next.iter_mut() {
            p.qualify(&registry.naming(name));
        }
        let now: Vec<&Arc<WasmTool>> = self.plugins.values().flat_map(|p| p.tools()).collect();
        let wanted: Vec<(&Plugin, &Arc<WasmTool>)> = next
            .values()
            .flat_map(|p| p.tools().iter().map(move |t| (p, t)))
            .collect();
        let stays = |t: &Arc<WasmTool>| wanted.iter().any(|(_, w)| Arc::ptr_eq(*w, t));
        let removed: Vec<&Arc<WasmTool>> = now.iter().copied().filter(|t| !stays(t)).collect();
        for t in &removed {
            unregister_own(registry, t);
        }
        let mut added: Vec<&str> = Vec::new();
        for (p, t) in &wanted {
            if now.iter().any(|n| Arc::ptr_eq(*n, *t)) {
                continue;
            }
            if t.registry_name() != t.spec().name {
                tracing::warn!(
                    plugin = %p.path().display(),
                    "tool name '{}' is described by several plugins or held by another source; registering this plugin's tool as '{}'",
                    t.spec().name,
                    t.registry_name()
                );
            }
            let refused = if registry.contains(t.registry_name()) {
                Some(format!(
                    "a tool named '{}' is already registered by another source",
                    t.registry_name()
                ))
            } else {
                registry.register((*t).clone()).err().map(|e| e.to_string())
            };
            if let Some(message) = refused {
                // Put back what was there, claims first.
                let _ = claim(registry, &self.plugins, &next);
                for n in &added {
                    registry.unregister(n);
                }
                for t in &removed {
                    if let Err(e) = registry.register((*t).clone()) {
                        tracing::warn!(tool = %t.registry_name(), "could not be put back: {e}");
                    }
                }
                return Err(PluginError::Definition {
                    path: p.path().display().to_string(),
                    message,
                });
            }
            added.push(t.registry_name());
        }
        self.plugins = next;
        Ok(())
    }
}

/// Makes the registry's claims of this folder those of `next` (`before`: what they were):
/// every plugin claims its described names under its own name; plugins gone release
/// theirs. A plugin whose name another source uses is refused, and the claims are put
/// back as they were.
fn claim(
    registry: &ToolRegistry,
    next: &BTreeMap<String, Plugin>,
    before: &BTreeMap<String, Plugin>,
) -> Result<(), PluginError> {
    for (name, p) in next {
        let owner = ToolSource::Wasm {
            path: p.path().display().to_string(),
        };
        if let Err(e) = registry.claim(name, &owner, described_names(p)) {
            for gone in next.keys().filter(|n| !before.contains_key(*n)) {
                registry.release(gone);
            }
            for (name, p) in before {
                let owner = ToolSource::Wasm {
                    path: p.path().display().to_string(),
                };
                let _ = registry.claim(name, &owner, described_names(p));
            }
            return Err(PluginError::Definition {
                path: p.path().display().to_string(),
                message: e.to_string(),
            });
        }
    }
    for gone in before.keys().filter(|n| !next.contains_key(*n)) {
        registry.release(gone);
    }
    Ok(())
}

/// Unregisters `t` if the registry entry of its name is this plugin's (a tool of another
/// source that took the name since stays).
fn unregister_own(registry: &ToolRegistry, t: &WasmTool) {
    let source = ToolSource::Wasm {
        path: t.path().display().to_string(),
    };
    if registry
        .entry(t.registry_name())
        .is_some_and(|e| *e.source() == source)
    {
        registry.unregister(t.registry_name());
    }
}

/// Registers several plugins so that the outcome does not depend on their order: a
/// plugin failing its own checks is refused (alone); among the others, a tool name
/// described by two or more plugins, or already in the registry, is registered as
/// `plugin__tool` for **every** plugin that describes it (a [`FolderSet`]). Returns the
/// plugins registered (their tools carry the names they got) and one error per plugin
/// refused.
pub fn register_plugins(
    registry: &ToolRegistry,
    plugins: Vec<Plugin>,
) -> (Vec<Plugin>, Vec<PluginError>) {
    let mut set = FolderSet::new();
    let mut errors = Vec::new();
    let mut order = Vec::new();
    for p in plugins {
        let name = p.name().to_string();
        match set.insert(registry, p) {
            Ok(_) => order.push(name),
            Err(e) => {
                tracing::warn!("{e}");
                errors.push(e);
            }
        }
    }
    // In the order given (the set keeps them by name).
    let mut by_name: BTreeMap<String, Plugin> = set
        .into_plugins()
        .into_iter()
        .map(|p| (p.name().to_string(), p))
        .collect();
    let kept = order.iter().filter_map(|n| by_name.remove(n)).collect();
    (kept, errors)
}

/// Loads every plugin of `dir` into `registry` (see [`register_plugins`] for names), each
/// with its own request as its grant ([`load_dir`]). Returns the loaded plugins and one
/// error per file that failed (to load or to register). Only with the `unchecked-load`
/// feature (tests and benchmarks).
#[cfg(feature = "unchecked-load")]
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
