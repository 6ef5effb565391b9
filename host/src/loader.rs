//! The types a load reports with ([`LoadProblem`], [`LoadEvent`], [`LoadProgress`]).
//! Loading itself is [`crate::host::Host::load`]: the plugins folder under its lock (see
//! [`crate::trust`]), then the configured MCP servers pinned by the same lock.
//! [`LoadEvent`]s report the progress of a folder load (which component is compiling, how
//! many of how many are done), for a progress bar or logs.

use std::time::Duration;

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

/// A [`LoadProblem`] from an MCP server that (or one of whose tools) did not load.
pub fn mcp_problem(p: &crate::mcp::McpServerProblem) -> LoadProblem {
    LoadProblem {
        source: format!("mcp server '{}'", p.server),
        // The message can quote the server's URL or its errors' URLs: hide credentials.
        message: crate::tools::redact::scrub_urls(&p.error.to_string()).into_owned(),
    }
}
