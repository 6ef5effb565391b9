//! [`Host`]: one toolhost instance: the wasm engine every plugin of it runs on, and the
//! paths no plugin of it may be granted. Every way of loading plugins (a folder at start,
//! live reload, `approve`, `install`, `inspect`) takes a `Host`, and a `Host` cannot be
//! made without toolhost's own state being protected, so a library user of the loader
//! cannot skip a protection that a command line would set up (docs/security.md,
//! "toolhost's own state granted to a plugin").
//!
//! Protected from the start, for every `Host`: the data folder `<data dir>/toolhost` (the
//! remembered approvals, the audit trail) and every folder above it, and its `oauth`
//! folder (the MCP logins) with all it holds. A plugin that could read `approvals.json`
//! or an OAuth token through its own `wasi:filesystem` calls, where no argument hook sees
//! the path, would hold the operator's secrets; one that could write them would approve
//! itself. Subfolders of the data folder other than `oauth` stay grantable: the default
//! plugins folder lives there, and its data folders (`./data/NAME`) are meant to be
//! granted (the plugins folder itself never is). A host that reads a config protects it
//! and the credential files it names with [`Host::protect_config`].

use std::path::{Path, PathBuf};

use crate::config::HostConfig;
use crate::loader::{LoadProblem, LoadProgress, NoProgress};
use crate::tools::ToolRegistry;
use crate::trust::LoadRules;
use crate::trust::{LoadedFolder, McpWithheld, PluginTrust};
use crate::wasm::folder::FolderSet;
use crate::wasm::{EngineError, EngineOptions, WasmEngine};

/// One toolhost instance: its wasm engine and protected paths. Cheap to clone (the clones
/// share the engine and its protections).
#[derive(Clone)]
pub struct Host {
    engine: WasmEngine,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("protected", &self.engine.protected_paths())
            .finish_non_exhaustive()
    }
}

impl Host {
    /// A host for a short-lived command: the default engine (pooling, epoch deadlines,
    /// fuel, the compile cache), toolhost's own state protected.
    pub fn new() -> Result<Host, EngineError> {
        Host::with_options(EngineOptions::default())
    }

    /// A long-lived host's (`serve`): a component missing from the compile cache is
    /// compiled by the baseline compiler first and by Cranelift in the background
    /// ([`EngineOptions::baseline_first`]); `spare_sandboxes` sandboxes of recently called
    /// tools are prepared ahead ([`EngineOptions::spare_sandboxes`]).
    pub fn long_lived(spare_sandboxes: usize) -> Result<Host, EngineError> {
        Host::with_options(EngineOptions {
            baseline_first: true,
            spare_sandboxes,
            ..EngineOptions::default()
        })
    }

    /// A host on an engine made with `options`, toolhost's own state protected.
    pub fn with_options(options: EngineOptions) -> Result<Host, EngineError> {
        let engine = WasmEngine::with_options(options)?;
        if let Some(data) = own_data_dir() {
            engine.protect_path(&data);
            engine.protect_folder_sealed(&data.join("oauth"));
        }
        Ok(Host { engine })
    }

    /// Makes the config file `config_path` and every credential file `config` names
    /// (`auth_token_file`, `bearer_token_file`, `client_secret_file`, `private_key_file`)
    /// ungrantable to plugin policies, with every folder above them: a plugin that could
    /// write `toolhost.toml` could add MCP servers (run commands), one that could read a
    /// token file would hold the credential. Protected even when a file does not exist
    /// yet.
    pub fn protect_config(&self, config_path: &Path, config: &HostConfig) {
        self.protect_paths(
            std::iter::once(config_path.to_path_buf()).chain(config.credential_files()),
        );
    }

    /// Makes `paths` (files or folders) ungrantable to plugin policies, with every folder
    /// above them.
    pub fn protect_paths(&self, paths: impl IntoIterator<Item = PathBuf>) {
        for p in paths {
            let p = std::path::absolute(&p).unwrap_or(p);
            self.engine.protect_path(&p);
        }
    }

    /// The engine plugins of this host run on.
    pub fn engine(&self) -> &WasmEngine {
        &self.engine
    }

    /// Loads every plugin of `dir` into `registry` under the lock of `dir` (see
    /// [`crate::trust::load_folder_with`]). Returns what was decided per plugin and the
    /// problems met; good plugins load regardless.
    pub async fn load_plugins(
        &self,
        registry: &ToolRegistry,
        dir: &Path,
        rules: &LoadRules,
    ) -> (Vec<PluginTrust>, Vec<LoadProblem>) {
        let loaded = self.load_folder(registry, dir, rules, &NoProgress).await;
        (loaded.reports, loaded.problems)
    }

    /// [`Host::load_plugins`], reporting progress to `progress` and also returning the
    /// plugins registered (for live reload to go on from).
    pub async fn load_folder(
        &self,
        registry: &ToolRegistry,
        dir: &Path,
        rules: &LoadRules,
        progress: &dyn LoadProgress,
    ) -> LoadedFolder {
        crate::trust::load_folder_with(self, registry, dir, rules, progress).await
    }
}

/// Everything one load ([`Host::load`]) produced: what was decided per plugin and per MCP
/// tool, the problems met, and what `serve` goes on from (the MCP clients for its gateway,
/// the plugins registered for live reload).
#[derive(Debug, Default)]
pub struct Loaded {
    /// The trust decision per plugin.
    pub plugins: Vec<PluginTrust>,
    /// The plugins registered (for live reload, [`crate::reload`], to go on from).
    pub folder: FolderSet,
    /// The problems met: bad plugins, a bad lock, MCP servers or tools that did not load.
    pub problems: Vec<LoadProblem>,
    /// MCP tools not offered (not approved, or changed since approval).
    pub mcp_withheld: Vec<McpWithheld>,
    /// Enabled MCP servers that did not connect.
    pub mcp_down: Vec<String>,
    /// Those of `mcp_down` that refused their credential (HTTP 401).
    pub mcp_unauthorized: Vec<String>,
    /// The MCP servers connected.
    pub mcp_clients: Vec<crate::mcp::McpClient>,
    /// The pins their tool filters read (an approval while serving updates them).
    pub mcp_pins: crate::trust::McpPins,
}

impl Host {
    /// Loads the plugins folder `dir` (under its lock, as [`Host::load_folder`]) and then
    /// the MCP servers of `config`, their tools pinned by the same lock (read once, then
    /// kept in [`Loaded::mcp_pins`], see [`crate::trust::connect_mcp`]), into `registry`. Plugins come first, so a plugin
    /// keeps a tool name an MCP server also offers (the server's tool becomes
    /// `server__tool`), whatever finishes first. Problems with single plugins or servers
    /// are reported; the rest loads.
    pub async fn load(
        &self,
        registry: &ToolRegistry,
        dir: &Path,
        config: &HostConfig,
        progress: &dyn LoadProgress,
    ) -> Loaded {
        let folder = self
            .load_folder(registry, dir, &config.load_rules(), progress)
            .await;
        let mut problems = folder.problems;
        let mcp = crate::trust::connect_mcp(registry, config, &folder.lock).await;
        problems.extend(mcp.problems);
        // The servers' claims may contest names the plugins took: the rule decides on
        // the whole set, so the plugins are renamed as it now says.
        let mut set = folder.set;
        if let Err(e) = set.follow_names(registry) {
            problems.push(crate::loader::plugin_problem(&e));
        }
        Loaded {
            plugins: folder.reports,
            folder: set,
            problems,
            mcp_withheld: mcp.withheld,
            mcp_down: mcp.down,
            mcp_unauthorized: mcp.unauthorized,
            mcp_clients: mcp.clients,
            mcp_pins: mcp.pins,
        }
    }
}

/// Loads every plugin of `dir` into `registry` under the lock of `dir` with the default
/// trust settings, on a new [`Host`] (see [`Host::load_plugins`]). Returns the problems
/// met; good plugins load regardless.
pub async fn load_plugins(registry: &ToolRegistry, dir: &Path) -> Vec<LoadProblem> {
    match Host::new() {
        Ok(host) => {
            host.load_plugins(registry, dir, &LoadRules::default())
                .await
                .1
        }
        Err(e) => vec![LoadProblem {
            source: dir.display().to_string(),
            message: e.to_string(),
        }],
    }
}

/// toolhost's data folder, `<data dir>/toolhost` (approvals, audit trail, OAuth logins,
/// the default plugins folder).
pub fn own_data_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("toolhost"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wasm::Policy;

    fn grants(host: &Host, folder: &Path, policy_dir: &Path) -> bool {
        let text = format!("read = [{:?}]\n", folder.display().to_string());
        Policy::parse_protected(
            &text,
            &policy_dir.join("p.toml"),
            &host.engine().protected_paths(),
        )
        .is_ok_and(|p| {
            p.caps.read.iter().any(|r| {
                r.as_path()
                    .ends_with(folder.file_name().unwrap_or_default())
            })
        })
    }

    #[test]
    fn every_host_protects_toolhosts_own_state_and_the_config_it_is_given() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let policies = tmp.path().join("plugins");
        let conf = tmp.path().join("conf");
        for d in [&policies, &conf] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
        }
        let host = Host::new().unwrap_or_else(|e| panic!("{e}"));
        // The folder above toolhost's data folder exists on every machine that has one.
        if let Some(above) = own_data_dir().as_deref().and_then(Path::parent)
            && above.is_dir()
        {
            assert!(!grants(&host, above, &policies), "{}", above.display());
        }
        // A config folder is grantable until the host is given the config, then not.
        assert!(grants(&host, &conf, &policies));
        host.protect_config(&conf.join("toolhost.toml"), &HostConfig::default());
        assert!(!grants(&host, &conf, &policies));
        // A clone shares the protections; a new host starts from its own state only.
        assert!(!grants(&host.clone(), &conf, &policies));
        let other = Host::new().unwrap_or_else(|e| panic!("{e}"));
        assert!(grants(&other, &conf, &policies));
    }
}
