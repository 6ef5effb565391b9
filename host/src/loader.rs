//! Wiring: builds a [`ToolRegistry`] from a plugins folder and a host config.
//!
//! `load_plugins` loads the plugins folder under the operator's lock (see [`crate::trust`]);
//! `connect_mcp` connects the configured MCP servers. [`LoadEvent`]s report the progress
//! of a folder load (which component is compiling, how many of how many are done), for a
//! progress bar or logs.

use std::path::Path;
use std::time::Duration;

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

/// A plugin load that takes longer than this is reported as compiling
/// ([`LoadEvent::Compiling`]): a load from the compile cache takes milliseconds.
pub const SLOW_LOAD: Duration = Duration::from_secs(1);

/// The progress of loading a plugins folder, in the order it happens.
#[derive(Debug, Clone, Copy)]
pub enum LoadEvent<'a> {
    /// Loading starts: `total` component files.
    Started {
        /// The number of component files.
        total: usize,
    },
    /// A component has been loading for [`SLOW_LOAD`]: it is being compiled.
    Compiling {
        /// The plugin name (file stem).
        name: &'a str,
        /// The file's size, bytes.
        bytes: u64,
    },
    /// A component is loaded (or failed to); `done` of `total` are.
    Finished {
        /// The plugin name (file stem).
        name: &'a str,
        /// How long it took.
        elapsed: Duration,
        /// Whether it was reported as compiling.
        slow: bool,
        /// Components finished so far.
        done: usize,
        /// The number of component files.
        total: usize,
    },
    /// Every component is loaded and registered.
    Done,
}

/// Receives [`LoadEvent`]s (called from the loading task, never concurrently).
pub trait LoadProgress: Send + Sync {
    /// One event.
    fn event(&self, event: &LoadEvent<'_>);
}

/// A [`LoadProgress`] that ignores every event.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl LoadProgress for NoProgress {
    fn event(&self, _event: &LoadEvent<'_>) {}
}

/// `12.3 MB` or `640 kB`: a file size for messages.
pub fn human_bytes(bytes: u64) -> String {
    if bytes >= 1_000_000 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else {
        format!("{} kB", bytes.div_ceil(1000))
    }
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
    let engine = ENGINE
        .get_or_init(|| with_own_state_protected(crate::wasm::WasmEngine::new()))
        .clone()?;
    // Paths protected before the engine existed (see `protect_config_paths`) are handed
    // to it here, by the one function every user of the engine goes through.
    let pending = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|e| e.into_inner()));
    for p in pending {
        engine.protect_path(&p);
    }
    Ok(engine)
}

/// Paths to protect, waiting for the engine (see [`protect_config_paths`]).
static PENDING: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// The engine with toolhost's own state made ungrantable to every plugin policy: the data
/// folder `<data dir>/toolhost` (the remembered approvals, the audit trail) and every
/// folder above it, and its `oauth` folder (the MCP logins) with all it holds. A plugin
/// that could read `approvals.json` or an OAuth token through its own `wasi:filesystem`
/// calls, where no argument hook sees the path, would hold the operator's secrets; one
/// that could write them would approve itself. Subfolders of the data folder other than
/// `oauth` stay grantable: the default plugins folder lives there, and its data folders
/// (`./data/NAME`) are meant to be granted (the plugins folder itself never is).
fn with_own_state_protected(
    engine: Result<crate::wasm::WasmEngine, crate::wasm::EngineError>,
) -> Result<crate::wasm::WasmEngine, crate::wasm::EngineError> {
    if let (Ok(e), Some(data)) = (&engine, own_data_dir()) {
        e.protect_path(&data);
        e.protect_folder_sealed(&data.join("oauth"));
    }
    engine
}

/// toolhost's data folder, `<data dir>/toolhost` (approvals, audit trail, OAuth logins,
/// the default plugins folder).
pub fn own_data_dir() -> Option<std::path::PathBuf> {
    dirs::data_dir().map(|d| d.join("toolhost"))
}

/// Makes every credential file `config` (read from `config_path`) names ungrantable to
/// plugin policies, with every folder above it, and the config file itself: a plugin that
/// could write `toolhost.toml` could add MCP servers (run commands), one that could read
/// a token file would hold the credential. Protected even when a file does not exist
/// yet. Called wherever the config is read, before any plugin is loaded.
/// Does not create the engine (a command may still choose its options, see
/// [`use_long_lived_engine`]): the paths are handed over by [`wasm_engine`].
pub fn protect_config_paths(config_path: &Path, config: &HostConfig) {
    protect_paths(std::iter::once(config_path.to_path_buf()).chain(config.credential_files()));
}

/// Makes `paths` (files or folders) ungrantable to plugin policies, with every folder
/// above them (see [`protect_config_paths`]).
pub fn protect_paths(paths: impl IntoIterator<Item = std::path::PathBuf>) {
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    pending.extend(
        paths
            .into_iter()
            .map(|p| std::path::absolute(&p).unwrap_or(p)),
    );
}

type EngineCell = std::sync::OnceLock<Result<crate::wasm::WasmEngine, crate::wasm::EngineError>>;

/// The process-wide engine of [`wasm_engine`].
static ENGINE: EngineCell = std::sync::OnceLock::new();

/// Makes the process-wide engine a long-lived host's: a component missing from the
/// compile cache is compiled by the baseline compiler first and by Cranelift in the
/// background ([`crate::wasm::EngineOptions::baseline_first`]). `serve` calls it before
/// loading anything; it has no effect once the engine exists (returns `false` then).
pub fn use_long_lived_engine() -> bool {
    let mut made = false;
    ENGINE.get_or_init(|| {
        made = true;
        with_own_state_protected(crate::wasm::WasmEngine::with_options(
            crate::wasm::EngineOptions {
                baseline_first: true,
                ..crate::wasm::EngineOptions::default()
            },
        ))
    });
    made
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
        // The message can quote the server's URL or its errors' URLs: hide credentials.
        message: crate::tools::redact::scrub_urls(&p.error.to_string()).into_owned(),
    }
}
