//! Error types at this crate's boundaries. Every message names the file concerned.

use thiserror::Error;

/// A policy file could not be used.
#[derive(Debug, Error)]
pub enum PolicyError {
    /// The file exists but could not be read.
    #[error("cannot read policy {file}: {source}")]
    Read {
        /// The policy file.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A key the host does not know (a typo, or a capability that does not exist).
    #[error(
        "policy {file}: unknown key `{key}` (known keys: read, write, network, sockets, env, config, timeout_ms, fuel, memory_mb, output_kb)"
    )]
    UnknownKey {
        /// The policy file.
        file: String,
        /// The offending key.
        key: String,
    },
    /// A `read`/`write` entry names a path no plugin may be granted (the plugins folder
    /// or a folder above it, the compile cache, the host config file).
    #[error(
        "policy {file}: `{key}` entry {entry:?} is not grantable: {reason}; grant a dedicated data folder instead (e.g. `{key} = [\"./data/NAME\"]`)"
    )]
    Forbidden {
        /// The policy file.
        file: String,
        /// `read` or `write`.
        key: String,
        /// The entry as written.
        entry: String,
        /// The real path and which protected path it is, contains or is inside.
        reason: String,
    },
    /// Several `read`/`write` entries name protected paths: each refusal, in full.
    #[error("policy {file}: {} entries are not grantable:\n  {}", entries.len(), entries.join("\n  "))]
    ForbiddenEntries {
        /// The policy file.
        file: String,
        /// One [`PolicyError::Forbidden`] message per refused entry.
        entries: Vec<String>,
    },
    /// A `config` key that cannot be asked for (too many, too long, bad characters,
    /// repeated).
    #[error("policy {file}: `config` key \"{key}\" {reason}")]
    ConfigKey {
        /// The policy file.
        file: String,
        /// The key as asked for (cut to 40 characters, escaped).
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// Bad TOML or a bad value.
    #[error("policy {file}: {message}")]
    Invalid {
        /// The policy file.
        file: String,
        /// What is wrong.
        message: String,
    },
}

/// The engine could not be created. Clonable, so a process-wide engine kept in a
/// `OnceLock` can hand its creation error to every caller.
#[derive(Debug, Clone, Error)]
pub enum EngineError {
    /// wasmtime rejected the configuration.
    #[error("cannot create the wasm engine: {0}")]
    Config(String),
    /// The host side of the linker could not be set up.
    #[error("cannot set up the wasm linker: {0}")]
    Linker(String),
}

/// A plugin (one `.wasm` file) could not be loaded. Other plugins are not affected.
#[derive(Debug, Error)]
pub enum PluginError {
    /// The file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The component file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is larger than the loader accepts.
    #[error("{path}: {size} bytes is over the {max}-byte plugin size limit")]
    TooLarge {
        /// The component file.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// Not a WebAssembly component (garbage, or a core module).
    #[error("{path}: not a WebAssembly component: {detail}")]
    NotAComponent {
        /// The component file.
        path: String,
        /// What it is instead.
        detail: String,
    },
    /// wasmtime could not compile it.
    #[error("{path}: cannot compile: {message}")]
    Compile {
        /// The component file.
        path: String,
        /// The compiler's message.
        message: String,
    },
    /// It imports something the host does not provide, or lacks the `tool` world's exports.
    #[error("{path}: does not fit the toolhost:tool world: {message}")]
    WrongWorld {
        /// The component file.
        path: String,
        /// The linker's message (it names the import or export).
        message: String,
    },
    /// A plain WIT component (not the `tool` world, see `crate::plain`) that cannot be
    /// used: it imports something the host does not provide.
    #[error("{path}: a plain WIT component toolhost cannot load: {message}")]
    PlainWit {
        /// The component file.
        path: String,
        /// Why (it names the import).
        message: String,
    },
    /// Its policy file is broken.
    #[error("{path}: {source}")]
    Policy {
        /// The component file.
        path: String,
        /// The policy problem (it names the policy file).
        source: PolicyError,
    },
    /// `describe()` trapped or failed.
    #[error("{path}: describe() failed: {message}")]
    Describe {
        /// The component file.
        path: String,
        /// What happened.
        message: String,
    },
    /// `describe()` did not return within its wall-clock budget (it spun, or blocked in
    /// host I/O such as a sleep). Remembered by the component's digest in the compile
    /// cache, so later starts refuse it at once with this same error.
    #[error(
        "{path}: describe() did not return within {} ms (it must list its tools at once, without waiting or looping)",
        timeout.as_millis()
    )]
    DescribeTimeout {
        /// The component file.
        path: String,
        /// The budget.
        timeout: std::time::Duration,
    },
    /// `describe()` returned more than the host accepts (too many tools, a description,
    /// schema, name or tag list over its cap; see [`crate::describe::describe_limits`]).
    /// Remembered like [`PluginError::DescribeTimeout`].
    #[error("{path}: describe() output refused: {message}")]
    DescribeTooLarge {
        /// The component file.
        path: String,
        /// Which cap, its value, and what the component returned.
        message: String,
    },
    /// A described tool failed the registration checks (name, description, schema,
    /// duplicates).
    #[error("{path}: {message}")]
    Definition {
        /// The component file.
        path: String,
        /// The check that failed.
        message: String,
    },
    /// The file changed since the plugin was listed from the compile cache (its digest is
    /// not the one that was described), so it cannot be linked on first use.
    #[error("{path} changed since it was loaded; restart toolhost to load the new version")]
    Changed {
        /// The component file.
        path: String,
    },
    /// A plugin listed from the compile cache could not be linked when first used or
    /// warmed (the cached artifact went away and the file no longer compiles or links,
    /// or it changed). The first attempt's error is kept, so every later use reports
    /// the same cause; the message is the cause's.
    #[error("{cause}")]
    Link {
        /// The component file.
        path: String,
        /// What the first attempt to link it met.
        cause: std::sync::Arc<PluginError>,
    },
}

/// The sandbox (`Store`) of one call could not be set up. Crate-internal: a tool call
/// reports it as a failed call, `describe()` as [`PluginError::Describe`].
#[cfg(feature = "runtime")]
#[derive(Debug, Error)]
pub(crate) enum StoreError {
    /// A granted folder could not be made a preopen (its held handle is gone, or the
    /// folder was replaced since the plugin loaded).
    #[error("{what} dir unavailable: {message}")]
    DirUnavailable {
        /// `read` or `write`.
        what: &'static str,
        /// Why.
        message: String,
    },
    /// WASI refused a granted folder as a preopen.
    #[error("cannot open {what} dir {}: {message}", dir.display())]
    OpenDir {
        /// `read` or `write`.
        what: &'static str,
        /// The granted folder.
        dir: std::path::PathBuf,
        /// wasmtime's message.
        message: String,
    },
    /// The fuel budget could not be set.
    #[error("cannot set fuel: {message}")]
    Fuel {
        /// wasmtime's message.
        message: String,
    },
}

impl PluginError {
    /// The component file this error is about.
    pub fn path(&self) -> &str {
        match self {
            PluginError::Io { path, .. }
            | PluginError::TooLarge { path, .. }
            | PluginError::NotAComponent { path, .. }
            | PluginError::Compile { path, .. }
            | PluginError::WrongWorld { path, .. }
            | PluginError::PlainWit { path, .. }
            | PluginError::Policy { path, .. }
            | PluginError::Describe { path, .. }
            | PluginError::DescribeTimeout { path, .. }
            | PluginError::DescribeTooLarge { path, .. }
            | PluginError::Definition { path, .. }
            | PluginError::Changed { path }
            | PluginError::Link { path, .. } => path,
        }
    }
}
