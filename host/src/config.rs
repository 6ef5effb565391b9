//! The host configuration file (`--config FILE`, default `./toolhost.toml`).
//!
//! Owned by the MCP work (issue 4): `[mcp.servers.NAME]` entries with `command`/`args`/`env`
//! (plus `inherit_env`) or `url`/`headers`, and `timeout_secs`; see
//! [`McpServerConfig`](crate::mcp::McpServerConfig).
//!
//! ```toml
//! plugins = "./plugins"
//!
//! [mcp.servers.everything]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! timeout_secs = 30
//!
//! [mcp.servers.remote]
//! url = "http://127.0.0.1:3001/mcp"
//! headers = { Authorization = "Bearer ..." }
//! ```

use std::path::Path;

use serde::Deserialize;

/// Errors reading the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid TOML for this schema.
    #[error("invalid config {path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// The whole configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// The plugins folder, if set here (the `--plugins` flag and `TOOLHOST_PLUGINS` win).
    pub plugins: Option<std::path::PathBuf>,
    /// The MCP servers whose tools load next to the plugins.
    #[serde(default)]
    pub mcp: crate::mcp::McpConfig,
}

impl HostConfig {
    /// Reads `path`. A missing file at the default location is an empty config; a missing
    /// file given explicitly is an error.
    pub fn load(path: &Path, explicit: bool) -> Result<Self, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
                return Ok(Self::default());
            }
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_servers_parse_from_toml() {
        let cfg: HostConfig = toml::from_str(
            r#"
            plugins = "p"
            [mcp.servers.fs]
            command = "node"
            args = ["server.js", "/tmp"]
            env = { A = "1" }
            timeout_secs = 7
            [mcp.servers.remote]
            url = "http://127.0.0.1:9/mcp"
            headers = { Authorization = "Bearer x" }
            "#,
        )
        .unwrap(); // ok: test code
        assert_eq!(cfg.mcp.servers.len(), 2);
        assert_eq!(cfg.mcp.servers["fs"].timeout_secs, Some(7));
        assert!(cfg.mcp.servers["remote"].transport().is_ok());
        assert!(toml::from_str::<HostConfig>("[mcp.servers.x]\nbogus = 1").is_err());
    }
}
