//! The `[mcp.servers.NAME]` entries of the host config file, and connecting them all.
//!
//! ```toml
//! [mcp.servers.everything]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! env = { API_KEY = "..." }      # the child's whole environment (it starts empty but for
//!                                 # a minimal PATH: its program's folder, then the system's);
//!                                 # a value may come from a source: { env = "VAR" },
//!                                 # { file = "PATH" } (0600), { keyring = "SERVICE/USER" }
//! inherit_env = ["HOME"]          # host variables copied into it by name
//! timeout_secs = 30               # per request (default 30)
//! allow_secret_fields = false     # its forms asking for passwords, tokens, keys: refused
//! max_tools = 1000                # the first 1,000 tools listed are used (the default)
//! max_tools_bytes = 8388608       # at most 8 MiB of tool definitions, as JSON (the default)
//! # Confine it (see `sandbox` below):
//! sandbox = { read = ["/usr/lib/node_modules"], write = ["/home/me/.npm"], network = true }
//!
//! [mcp.servers.remote]
//! url = "http://127.0.0.1:3001/mcp"
//! bearer_token_env = "REMOTE_TOKEN"   # sent as `Authorization: Bearer $REMOTE_TOKEN`
//! # or: bearer_token_file = "/home/me/.config/toolhost/remote.token"  (mode 0600)
//! # or: headers = { Authorization = "Bearer ..." }   (the secret then sits in this file)
//! # or, for a server that asks for OAuth: `toolhost mcp login remote`, and optionally
//! [mcp.servers.remote.oauth]
//! client_id = "toolhost-at-example"    # registered out of band (no dynamic registration)
//! client_secret_env = "REMOTE_SECRET"  # or client_secret_file (0600); a confidential client
//! client_metadata_url = "https://me.example/toolhost.json"  # or: a Client ID Metadata Document
//! scopes = ["mcp:read"]                # what `login` asks for when `--scope` is not given
//! ```
//!
//! A missing variable or file, an empty one, or a token file group or others may read is
//! a [`McpConfigError`] for that server; the other servers load regardless.
//!
//! The `env` values read from a source (`{ env }`, `{ file }`, `{ keyring }`) are
//! secrets: every text the server's tools return has them replaced by `[redacted: VAR]`
//! (exact matches of 8 characters or more; see docs/secrets.md).
//!
//! ## Rating the tools
//!
//! A server's annotations are its own word; the operator's rules win ([`crate::rating`]):
//!
//! ```toml
//! [mcp]
//! default_risk = "destructive"   # unrated tools need an approval (the default)
//!
//! [mcp.servers.everything]
//! permissions = ["read"]          # every tool of this server, whatever it claims
//! default_risk = "write"          # or: this server's unrated tools only
//!
//! [mcp.servers.everything.tools.delete_everything]
//! permissions = ["delete"]        # one tool
//! ```
//!
//! ## `sandbox`
//!
//! A `command` server with `sandbox = { read = [...], write = [...], network = false }`
//! ([`McpSandbox`]) runs confined (Linux: Landlock and seccomp):
//!
//! - **files**: it may read and execute only the `read` paths, its own executable and the
//!   runtime base ([`crate::sandbox::RUNTIME_BASE`]: `/usr`, `/lib*`, `/bin`, `/sbin`, a
//!   few non-secret files of `/etc`, `/dev/null`, `/dev/urandom`, ...; not `/proc`,
//!   `/tmp` or any home folder); it may write, create and delete only beneath the `write`
//!   paths;
//! - **network**: with `network = false` (the default) it can neither bind nor connect TCP
//!   (Landlock) nor create any IP socket, UDP and raw included (seccomp); with
//!   `network = true` TCP and UDP are not restricted at all;
//! - **other programs**: it can never create a Unix socket (so no ssh-agent, D-Bus or
//!   `docker.sock`; `socketpair(2)` still works), connect to an abstract Unix socket,
//!   or signal or trace a process outside its sandbox.
//!
//! Paths must be **absolute** (`~` and relative paths are refused: this file may be read
//! from anywhere) and must exist when the server starts; a folder grants everything
//! beneath it. Grant what the program needs to start: an interpreter's prefix (for a
//! Python venv, the venv and the Python it was made from, `sys.base_prefix`), its script,
//! its packages (for Node, the `node_modules` folder).
//!
//! A declared sandbox is never dropped: on a kernel without Landlock ABI 6 (Linux 6.12),
//! or on another OS, connecting fails with [`McpSandboxError::Unsupported`] and the server
//! is not started; a missing path fails with [`McpSandboxError::MissingPath`] naming it.
//! A stdio server without `sandbox` runs with all the user's rights; the client logs a
//! warning saying so when it first connects. docs/permissions.md, "Sandboxed MCP
//! servers", lists exactly what is and is not enforced.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use toolhost_core::secrets::{Redactor, SecretSource};
use toolhost_core::tools::{Permission, RiskLevel, ToolRegistry};

#[cfg(doc)]
use crate::client::{DEFAULT_MAX_TOOLS, DEFAULT_MAX_TOOLS_BYTES};
use crate::client::{DEFAULT_MCP_TIMEOUT, McpClient, McpProtocol, McpTransport, ToolLimits};
use crate::error::{McpConfigError, McpLoadError, McpServerProblem};
use crate::rating::{DEFAULT_UNRATED_RISK, McpToolRules};
use crate::sandbox::McpSandbox;
#[cfg(doc)]
use crate::sandbox::McpSandboxError;

mod credentials;
pub use credentials::McpOAuthConfig;

/// The `[mcp]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The risk floor of MCP tools that neither the operator nor their server rated
    /// (`read-only`, `write`, `network`, `destructive`); default `destructive`: an
    /// approval is needed (see [`crate::rating`]).
    #[serde(default)]
    pub default_risk: Option<RiskLevel>,
    /// `[mcp.servers.NAME]`, by name.
    #[serde(default)]
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// `[mcp.servers.NAME.tools.TOOL]`: the operator's rule for one tool of a server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpToolConfig {
    /// Exactly the permissions this tool has (its annotations are ignored).
    pub permissions: Vec<Permission>,
}

/// One `[mcp.servers.NAME]` entry: `command` (stdio) or `url` (Streamable HTTP).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to start (stdio).
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables of the child (its environment is otherwise empty, but for a
    /// minimal `PATH` when neither this nor `inherit_env` sets one: see `minimal_path`).
    #[serde(default)]
    pub env: BTreeMap<String, SecretSource>,
    /// Host environment variables copied into the child's environment, by name.
    #[serde(default)]
    pub inherit_env: Vec<String>,
    /// The Streamable HTTP endpoint.
    pub url: Option<String>,
    /// HTTP headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// (`url` servers) The environment variable holding the bearer token sent as
    /// `Authorization: Bearer ...`.
    #[serde(default)]
    pub bearer_token_env: Option<String>,
    /// (`url` servers) A file holding the bearer token (its first line that is neither
    /// blank nor a `#` comment); it must not be accessible by group or others.
    #[serde(default)]
    pub bearer_token_file: Option<std::path::PathBuf>,
    /// (`url` servers) Who toolhost is to the server's OAuth authorization server.
    #[serde(default)]
    pub oauth: Option<McpOAuthConfig>,
    /// The time budget of each request, in seconds (default 30).
    #[serde(default, alias = "timeout")]
    pub timeout_secs: Option<u64>,
    /// Set to `false` to keep the entry but not connect it.
    #[serde(default)]
    pub disabled: bool,
    /// Run the (stdio) server confined to these paths and this network access.
    #[serde(default)]
    pub sandbox: Option<McpSandbox>,
    /// The permissions of every tool of this server without a rule of its own (the
    /// server's annotations are ignored).
    #[serde(default)]
    pub permissions: Option<Vec<Permission>>,
    /// The risk floor of this server's unrated tools (overrides `[mcp] default_risk`).
    #[serde(default)]
    pub default_risk: Option<RiskLevel>,
    /// Rules for single tools, by the server's tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, McpToolConfig>,
    /// Pass on this server's forms that ask for secret-looking fields (passwords,
    /// tokens, keys), flagged; by default they are refused ([`crate::attribution`]).
    #[serde(default)]
    pub allow_secret_fields: bool,
    /// The protocol revision toolhost speaks to this server (default `2025-11-25`; `auto`:
    /// 2026-07-28 when it offers it, else 2025-11-25).
    #[serde(default)]
    pub protocol: McpProtocol,
    /// The most tools of this server toolhost uses: the first ones it lists (default
    /// [`DEFAULT_MAX_TOOLS`], 1,000).
    #[serde(default)]
    pub max_tools: Option<usize>,
    /// The most bytes of this server's tool definitions (as JSON) toolhost holds
    /// (default [`DEFAULT_MAX_TOOLS_BYTES`], 8 MiB).
    #[serde(default)]
    pub max_tools_bytes: Option<usize>,
}

impl McpConfig {
    /// Relative `file` sources of every server's `env` made relative to `base` (the
    /// configuration file's folder).
    pub fn anchor_secrets(&mut self, base: &std::path::Path) {
        for server in self.servers.values_mut() {
            for source in server.env.values_mut() {
                *source = source.anchored(base);
            }
        }
    }
}

/// What replaces the secret values of `transport` in a server's results: the values of
/// the entry's `env` variables read from a secret source (`{ env }`, `{ file }`,
/// `{ keyring }`). A value written in the file is configuration (`NODE_PATH`, `HOME`,
/// a log level) that results may rightly show; variables copied by `inherit_env` are
/// the host's own.
fn env_redactor(server: &McpServerConfig, transport: &McpTransport) -> Redactor {
    let env = match transport {
        McpTransport::Stdio { env, .. } | McpTransport::SandboxedStdio { env, .. } => env,
        McpTransport::StreamableHttp { .. } => return Redactor::default(),
    };
    Redactor::new(
        env.iter()
            .filter(|(k, _)| {
                server
                    .env
                    .get(k)
                    .is_some_and(|s| !matches!(s, SecretSource::Value(_)))
            })
            .map(|(k, v)| (k.as_str(), v.as_str())),
    )
}

impl McpServerConfig {
    /// The operator's rating of this server's tools, with `default_risk` the `[mcp]`-wide
    /// floor for unrated tools (this entry's own `default_risk` wins).
    pub fn tool_rules(&self, default_risk: Option<RiskLevel>) -> McpToolRules {
        McpToolRules {
            server: self.permissions.clone(),
            tools: self
                .tools
                .iter()
                .map(|(k, v)| (k.clone(), v.permissions.clone()))
                .collect(),
            default_risk: self
                .default_risk
                .or(default_risk)
                .unwrap_or(DEFAULT_UNRATED_RISK),
        }
    }

    /// The transport this entry describes ([`McpTransport::SandboxedStdio`] when it
    /// declares a `sandbox`); an error when it has both or neither of `command` and `url`,
    /// or a `sandbox` on a `url` server.
    pub fn transport(&self) -> Result<McpTransport, McpConfigError> {
        let token_set = self.bearer_token_env.is_some() || self.bearer_token_file.is_some();
        if token_set && self.url.is_none() {
            return Err(McpConfigError::BearerTokenWithoutUrl);
        }
        match (&self.command, &self.url) {
            (None, Some(_)) if self.sandbox.is_some() => Err(McpConfigError::SandboxWithoutCommand),
            (Some(command), None) => {
                let mut env: Vec<(String, String)> = Vec::new();
                for name in &self.inherit_env {
                    if let Ok(v) = std::env::var(name) {
                        env.push((name.clone(), v));
                    }
                }
                for (var, source) in &self.env {
                    let value = source.resolve().map_err(|e| McpConfigError::Env {
                        var: var.clone(),
                        from: source.describe(),
                        message: e.to_string(),
                    })?;
                    env.push((var.clone(), value.expose().to_string()));
                }
                if !env.iter().any(|(k, _)| k == "PATH") {
                    env.push(("PATH".into(), minimal_path(command)));
                }
                Ok(match &self.sandbox {
                    None => McpTransport::Stdio {
                        command: command.clone(),
                        args: self.args.clone(),
                        env,
                    },
                    Some(sandbox) => McpTransport::SandboxedStdio {
                        command: command.clone(),
                        args: self.args.clone(),
                        env,
                        sandbox: sandbox.clone(),
                    },
                })
            }
            (None, Some(url)) => {
                let mut headers: Vec<(String, String)> = self
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if let Some(token) = self.bearer_token()? {
                    if headers
                        .iter()
                        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                    {
                        return Err(McpConfigError::BearerTokenTwice);
                    }
                    headers.push(("Authorization".into(), format!("Bearer {token}")));
                }
                Ok(McpTransport::StreamableHttp {
                    url: url.clone(),
                    headers: (!headers.is_empty()).then_some(headers),
                })
            }
            (Some(_), Some(_)) => Err(McpConfigError::BothCommandAndUrl),
            (None, None) => Err(McpConfigError::NoTransport),
        }
    }

    /// How much of this server's tool list is kept (`max_tools`, `max_tools_bytes`).
    pub fn tool_limits(&self) -> ToolLimits {
        let default = ToolLimits::default();
        ToolLimits {
            max_tools: self.max_tools.unwrap_or(default.max_tools),
            max_bytes: self.max_tools_bytes.unwrap_or(default.max_bytes),
        }
    }

    /// The request timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_MCP_TIMEOUT)
    }
}

/// The system folders every `PATH` given to a server starts from.
const SYSTEM_PATH: &[&str] = &["/usr/local/bin", "/usr/bin", "/bin"];

/// The `PATH` a stdio server gets when its entry sets none: the folder of its own
/// program first (so `npx` or `uvx` installed by nvm or pipx finds the `node` or
/// `python` beside it), then the system folders. Nothing else of the host's `PATH` (it
/// may name private tool folders) and no other variable passes.
fn minimal_path(command: &str) -> String {
    let program = crate::stdio::resolve_command(command);
    let own = program
        .parent()
        .filter(|d| d.is_absolute())
        .map(|d| d.display().to_string());
    let mut parts: Vec<String> = own.into_iter().collect();
    for s in SYSTEM_PATH {
        if !parts.iter().any(|p| p == s) {
            parts.push((*s).to_string());
        }
    }
    parts.join(":")
}

/// Connects every enabled server (concurrently) and registers their tools in name order,
/// so collisions (`server__tool`) resolve the same way every run. Returns the connected
/// clients and one problem per server (or tool) that failed; the others load regardless.
pub async fn connect_all(
    registry: &ToolRegistry,
    config: &McpConfig,
) -> (Vec<McpClient>, Vec<McpServerProblem>) {
    connect_all_filtered(registry, config, |_| None).await
}

/// [`connect_all`], with `filter_for(server)` choosing which tools of each server are
/// offered (`None`: all); see [`McpClient::register_into_filtered`].
pub async fn connect_all_filtered(
    registry: &ToolRegistry,
    config: &McpConfig,
    filter_for: impl Fn(&str) -> Option<crate::sync::ToolFilter>,
) -> (Vec<McpClient>, Vec<McpServerProblem>) {
    let problem = |server: &str, error: McpLoadError| McpServerProblem {
        server: server.to_string(),
        error,
    };
    let mut problems = Vec::new();
    let mut set = tokio::task::JoinSet::new();
    for (name, server) in &config.servers {
        if server.disabled {
            continue;
        }
        let (transport, oauth_client) = match server
            .transport()
            .and_then(|t| Ok((t, server.oauth_client()?)))
        {
            Ok(t) => t,
            Err(e) => {
                problems.push(problem(name, e.into()));
                continue;
            }
        };
        let redactor = env_redactor(server, &transport);
        let client = McpClient::new(name.clone(), transport)
            .with_redactor(redactor)
            .with_timeout_duration(server.timeout())
            .with_tool_rules(server.tool_rules(config.default_risk))
            .with_oauth_store(crate::oauth::OAuthStore::default_location().ok())
            .with_oauth_client(oauth_client)
            .with_secret_fields(server.allow_secret_fields)
            .with_protocol(server.protocol)
            .with_tool_limits(server.tool_limits());
        set.spawn(async move {
            let r = client.connect().await;
            (client, r)
        });
    }
    let mut connected = Vec::new();
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((client, Ok(()))) => connected.push(client),
            Ok((client, Err(e))) => problems.push(problem(client.server_name(), e.into())),
            Err(e) => problems.push(problem("", McpLoadError::Task(e.to_string()))),
        }
    }
    connected.sort_by(|a, b| a.server_name().cmp(b.server_name()));
    let mut clients = Vec::new();
    for client in connected {
        let registered = match filter_for(client.server_name()) {
            Some(keep) => client.register_into_filtered(registry, keep).await,
            None => client.register_into(registry).await,
        };
        match registered {
            Ok(reg) => {
                for p in reg.problems {
                    problems.push(problem(client.server_name(), McpLoadError::Tool(p)));
                }
                clients.push(client);
            }
            Err(e) => problems.push(problem(client.server_name(), e.into())),
        }
    }
    (clients, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_into_transports() {
        let cfg: McpConfig = serde_json::from_value(serde_json::json!({
            "servers": {
                "a": {"command": "node", "args": ["x.js"], "env": {"K": "v", "PATH": "/opt/n"}, "timeout": 5},
                "b": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer t"}},
                "c": {},
            }
        }))
        .unwrap();
        let a = &cfg.servers["a"];
        assert_eq!(a.timeout(), Duration::from_secs(5));
        assert_eq!(
            a.transport().unwrap(),
            McpTransport::Stdio {
                command: "node".into(),
                args: vec!["x.js".into()],
                env: vec![("K".into(), "v".into()), ("PATH".into(), "/opt/n".into())]
            }
        );
        assert!(matches!(
            cfg.servers["b"].transport(),
            Ok(McpTransport::StreamableHttp { .. })
        ));
        assert_eq!(
            cfg.servers["c"].transport(),
            Err(McpConfigError::NoTransport)
        );
        assert_eq!(cfg.servers["c"].timeout(), DEFAULT_MCP_TIMEOUT);
        assert_eq!(a.tool_limits(), ToolLimits::default());
    }

    #[test]
    fn max_tools_and_max_tools_bytes_set_the_tool_limits() {
        let cfg: McpConfig = toml::from_str(
            "[servers.big]\ncommand = \"x\"\nmax_tools = 5000\nmax_tools_bytes = 1024\n",
        )
        .unwrap();
        assert_eq!(
            cfg.servers["big"].tool_limits(),
            ToolLimits {
                max_tools: 5000,
                max_bytes: 1024
            }
        );
    }

    #[test]
    fn a_server_without_path_gets_its_own_folder_and_the_system_folders_only() {
        let dir = toolhost_testkit::temp_dir("mcp-path");
        let tool = dir.join("npx");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        let cfg = McpServerConfig {
            command: Some(tool.display().to_string()),
            ..Default::default()
        };
        let Ok(McpTransport::Stdio { env, .. }) = cfg.transport() else {
            panic!("a stdio transport");
        };
        let path = format!("{}:/usr/local/bin:/usr/bin:/bin", dir.display());
        assert_eq!(env, vec![("PATH".to_string(), path)]);
        // `inherit_env = ["PATH"]` passes the host's own instead.
        let cfg = McpServerConfig {
            command: Some("node".into()),
            inherit_env: vec!["PATH".into()],
            ..Default::default()
        };
        let Ok(McpTransport::Stdio { env, .. }) = cfg.transport() else {
            panic!("a stdio transport");
        };
        let host = std::env::var("PATH").unwrap_or_default();
        assert_eq!(env.iter().filter(|(k, _)| k == "PATH").count(), 1);
        if !host.is_empty() {
            assert_eq!(env[0].1, host);
        }
    }

    #[test]
    fn a_sandbox_makes_a_sandboxed_stdio_transport() {
        let cfg: McpConfig = serde_json::from_value(serde_json::json!({
            "servers": {
                "s": {"command": "python3", "sandbox": {"read": ["/srv/in"], "write": ["/srv/out"]}},
                "u": {"url": "http://127.0.0.1:1/mcp", "sandbox": {}},
            }
        }))
        .unwrap();
        match cfg.servers["s"].transport().unwrap() {
            McpTransport::SandboxedStdio { sandbox, .. } => {
                assert_eq!(sandbox.read, vec![std::path::PathBuf::from("/srv/in")]);
                assert_eq!(sandbox.write, vec![std::path::PathBuf::from("/srv/out")]);
                assert!(!sandbox.network, "network defaults to off");
            }
            other => panic!("expected SandboxedStdio, got {other:?}"),
        }
        assert_eq!(
            cfg.servers["u"].transport(),
            Err(McpConfigError::SandboxWithoutCommand)
        );
        let bad: Result<McpConfig, _> = serde_json::from_value(serde_json::json!({
            "servers": {"s": {"command": "x", "sandbox": {"read": [], "netwrok": true}}}
        }));
        assert!(bad.unwrap_err().to_string().contains("netwrok"));
    }
}
