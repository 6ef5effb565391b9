//! Confining a stdio MCP server: the `sandbox = { read, write, network }` table of a
//! `[mcp.servers.NAME]` entry ([`McpSandbox`]), its errors ([`McpSandboxError`]), and the
//! platform code that enforces it on the child process (Linux: `linux.rs`, with
//! Landlock and a small seccomp filter).
//!
//! MCP servers are not trusted (docs/design.md, threat model): a server that declares a
//! sandbox runs confined, and one that cannot be confined as declared is **not started**
//! (fail closed). What is and is not enforced is listed in docs/permissions.md, section
//! "Sandboxed MCP servers"; [`RUNTIME_BASE`] is what every sandboxed program may read so
//! that it can start at all.
//!
//! Its own crate because it alone needs unsafe code (`pre_exec`, one raw system call, in
//! `linux.rs`): every other toolhost crate forbids it.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

#[cfg(target_os = "linux")]
mod linux;

/// The sandbox of one stdio MCP server (`sandbox = { ... }` in `[mcp.servers.NAME]`).
///
/// Paths must be absolute (`~` and relative paths are not expanded: the config file may be
/// read from anywhere, and a path that silently meant something else would grant the wrong
/// folder). Every listed path must exist when the server is started; a folder grants
/// everything beneath it.
///
/// ```toml
/// [mcp.servers.files]
/// command = "/opt/venvs/mcp/bin/python"
/// args = ["/opt/mcp/files_server.py"]
/// sandbox = { read = ["/opt/venvs/mcp", "/opt/mcp", "/srv/data"], write = ["/srv/out"], network = false }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSandbox {
    /// Files and folders the server may read and execute (besides [`RUNTIME_BASE`] and its
    /// own executable): its interpreter's prefix, its script, its data.
    #[serde(default)]
    pub read: Vec<PathBuf>,
    /// Files and folders the server may read, write, create, delete and execute.
    #[serde(default)]
    pub write: Vec<PathBuf>,
    /// Whether the server may use the network at all (default `false`: no TCP bind or
    /// connect, and on Linux no IP sockets of any kind).
    #[serde(default)]
    pub network: bool,
}

/// What a sandboxed server may read (and execute) without being granted it: what a
/// dynamically linked program or an interpreter needs to start, and nothing that holds
/// secrets. Entries missing on this machine are skipped.
///
/// - `/usr`, `/bin`, `/sbin`, `/lib`, `/lib64`, `/lib32`, `/libx32`: programs, the
///   dynamic loader and shared libraries (read and execute);
/// - `/etc/ld.so.cache`, `/etc/ld.so.preload`: the loader's configuration;
/// - `/etc/localtime`, `/etc/nsswitch.conf`, `/etc/passwd`, `/etc/group`: time zone and
///   user names (Python's `expanduser` reads `/etc/passwd` when `HOME` is unset, which it
///   is in the cleared environment);
/// - `/etc/hosts`, `/etc/host.conf`, `/etc/resolv.conf`, `/etc/gai.conf`,
///   `/etc/services`, `/etc/protocols`, `/etc/ssl/certs`, `/etc/ca-certificates`: name
///   resolution and CA certificates (only useful with `network = true`, harmless without);
///   `/etc/ssl/private` is deliberately not listed;
/// - `/etc/ssl/openssl.cnf`: OpenSSL's configuration, which Node reads at start-up (it
///   exits with "OpenSSL configuration error" when it cannot);
/// - `/dev/null` (read and write), `/dev/zero`, `/dev/random`, `/dev/urandom` (read).
///
/// Not listed, on purpose: `/proc` (another process's `/proc/PID/environ` and `cmdline`
/// hold secrets; Landlock cannot grant only the child's own `/proc/self`, whose inode does
/// not exist before the child does), `/sys`, `/tmp`, `/home`, `/root`, `/var`, `/run`.
pub const RUNTIME_BASE: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/lib32",
    "/libx32",
    "/etc/ld.so.cache",
    "/etc/ld.so.preload",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/ssl/openssl.cnf",
    "/etc/ssl/certs",
    "/etc/ca-certificates",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
];

/// Device files of the runtime base that the server may also write.
pub const RUNTIME_BASE_WRITE: &[&str] = &["/dev/null"];

/// Why a declared sandbox cannot be set up. The server is then not started.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum McpSandboxError {
    /// A `read` or `write` path is not absolute.
    #[error(
        "sandbox `{list}` path {path:?} is not absolute; write the full path \
         (`~` and relative paths are not expanded)"
    )]
    RelativePath {
        /// `read` or `write`.
        list: &'static str,
        /// The path as written.
        path: PathBuf,
    },
    /// A `read` or `write` path does not exist or cannot be opened.
    #[error(
        "sandbox `{list}` path {path:?} cannot be opened: {source}; create it, or remove it \
         from `{list}`"
    )]
    MissingPath {
        /// `read` or `write`.
        list: &'static str,
        /// The path as written.
        path: PathBuf,
        /// Why it could not be opened.
        source: std::io::Error,
    },
    /// This system cannot enforce the sandbox (no Landlock, a Landlock ABI too old for a
    /// declared rule, or not Linux).
    #[error(
        "{reason}; the server was not started (a declared sandbox is never dropped \
         silently: run it on Linux 6.12 or later with Landlock enabled, or remove `sandbox` \
         from its entry to run it unconfined)"
    )]
    Unsupported {
        /// What is missing, as a sentence starting "sandbox not supported".
        reason: String,
    },
    /// Building the Landlock ruleset or the seccomp filter failed.
    #[error("cannot build the sandbox: {0}")]
    Setup(String),
}

impl McpSandbox {
    /// Checks what can be checked without touching the system: every path is absolute.
    pub fn validate(&self) -> Result<(), McpSandboxError> {
        for (list, paths) in [("read", &self.read), ("write", &self.write)] {
            if let Some(path) = paths.iter().find(|p| !p.is_absolute()) {
                return Err(McpSandboxError::RelativePath {
                    list,
                    path: path.clone(),
                });
            }
        }
        Ok(())
    }

    /// Prepares the sandbox for `program` (the resolved executable) and installs it on
    /// `cmd`: everything that allocates or opens files happens here, in the parent; the
    /// child only enters the prepared sandbox between fork and exec.
    pub fn apply(
        &self,
        program: &Path,
        cmd: &mut tokio::process::Command,
    ) -> Result<(), McpSandboxError> {
        self.validate()?;
        #[cfg(target_os = "linux")]
        {
            linux::Prepared::new(self, program)?.install(cmd);
            Ok(())
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (program, cmd);
            Err(McpSandboxError::Unsupported {
                reason: "sandbox not supported on this OS (it needs Linux: Landlock and seccomp)"
                    .into(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_refused() {
        let sb = McpSandbox {
            read: vec!["/usr/share".into()],
            write: vec!["out".into()],
            network: false,
        };
        let err = sb.validate().unwrap_err();
        assert!(
            matches!(&err, McpSandboxError::RelativePath { list: "write", path } if path == Path::new("out")),
            "{err:?}"
        );
        assert!(err.to_string().contains("not absolute"), "{err}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let r: Result<McpSandbox, _> = serde_json::from_value(serde_json::json!({"reed": []}));
        assert!(r.unwrap_err().to_string().contains("unknown field"));
    }
}
