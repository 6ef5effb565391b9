//! The `[mcp.servers.NAME]` entries of the host config file, and connecting them all.
//!
//! ```toml
//! [mcp.servers.everything]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! env = { API_KEY = "..." }      # the child's whole environment (it starts empty but for
//!                                 # a minimal PATH: its program's folder, then the system's)
//! inherit_env = ["HOME"]          # host variables copied into it by name
//! timeout_secs = 30               # per request (default 30)
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
use toolhost_core::tools::{Permission, RiskLevel, ToolRegistry};

use crate::client::{DEFAULT_MCP_TIMEOUT, McpClient, McpTransport};
use crate::error::{McpConfigError, McpLoadError, McpServerProblem};
use crate::rating::{DEFAULT_UNRATED_RISK, McpToolRules};
use crate::sandbox::McpSandbox;
#[cfg(doc)]
use crate::sandbox::McpSandboxError;

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

/// `[mcp.servers.NAME.oauth]`: how toolhost identifies itself to the authorization server
/// of a `url` server that asks for OAuth (docs/mcp.md, "Servers that log in with OAuth").
/// Without it, toolhost registers itself dynamically.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpOAuthConfig {
    /// A client id registered with the authorization server out of band.
    pub client_id: Option<String>,
    /// The environment variable holding that client's secret.
    pub client_secret_env: Option<String>,
    /// A file holding that client's secret (first line that is neither blank nor a `#`
    /// comment; not accessible by group or others).
    pub client_secret_file: Option<std::path::PathBuf>,
    /// The `https` URL of toolhost's Client ID Metadata Document, hosted by the operator.
    pub client_metadata_url: Option<String>,
    /// The scopes `toolhost mcp login` asks for when given no `--scope` (and a machine
    /// client's tokens).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// `authorization_code` (the default: a person logs in) or `client_credentials` (a
    /// machine client: toolhost gets its tokens itself with `client_id` and its secret
    /// or `private_key_file`).
    #[serde(default)]
    pub grant: crate::oauth::OAuthGrant,
    /// (`client_credentials`) A PEM private key (RSA or EC, not accessible by group or
    /// others) to authenticate with a signed assertion (`private_key_jwt`).
    pub private_key_file: Option<std::path::PathBuf>,
    /// The algorithm of `private_key_file`: `RS256` (the default), `RS384`, `RS512`,
    /// `ES256` or `ES384`.
    pub signing_algorithm: Option<String>,
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
    pub env: BTreeMap<String, String>,
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
                env.extend(self.env.iter().map(|(k, v)| (k.clone(), v.clone())));
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

    /// The bearer token of `bearer_token_env` or `bearer_token_file`, read now; `None`
    /// when neither is set. Errors never contain the token.
    fn bearer_token(&self) -> Result<Option<String>, McpConfigError> {
        let token = match (&self.bearer_token_env, &self.bearer_token_file) {
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => return Err(McpConfigError::BearerTokenTwice),
            (Some(var), None) => {
                let env_error = |why: &'static str| McpConfigError::BearerTokenEnv {
                    var: var.clone(),
                    why,
                };
                env_secret(var).map_err(env_error)?
            }
            (None, Some(path)) => read_token_file(path)?,
        };
        Ok(Some(token))
    }

    /// Who toolhost is to this server's authorization server, from
    /// `[mcp.servers.NAME.oauth]` with the secret read now: a default identity (dynamic
    /// registration) when the table is absent. Errors never contain the secret.
    pub fn oauth_client(&self) -> Result<crate::oauth::OAuthClientIdentity, McpConfigError> {
        let Some(o) = &self.oauth else {
            return Ok(crate::oauth::OAuthClientIdentity::default());
        };
        let bad = |m: String| McpConfigError::OAuth(m);
        if self.url.is_none() {
            return Err(bad(
                "OAuth applies only to a `url` (HTTP) server; remove the table from this \
                 `command` entry"
                    .into(),
            ));
        }
        let client_secret = match (&o.client_secret_env, &o.client_secret_file) {
            (None, None) => None,
            (Some(_), Some(_)) => {
                return Err(bad(
                    "set only one of `client_secret_env` and `client_secret_file`".into(),
                ));
            }
            (Some(var), None) => Some(env_secret(var).map_err(|why| {
                bad(format!(
                    "`client_secret_env = \"{var}\"`: the environment variable {var} is {why}"
                ))
            })?),
            (None, Some(path)) => Some(read_token_file(path).map_err(|e| match e {
                McpConfigError::BearerTokenFile { path, message } => {
                    bad(format!("`client_secret_file = \"{path}\"`: {message}"))
                }
                other => other,
            })?),
        };
        if client_secret.is_some() && o.client_id.is_none() {
            return Err(bad(
                "a client secret needs the `client_id` it belongs to".into()
            ));
        }
        if let Some(id) = &o.client_id
            && (id.is_empty() || id.chars().any(char::is_control))
        {
            return Err(bad("`client_id` is empty or has control characters".into()));
        }
        if let Some(u) = &o.client_metadata_url {
            let ok = url::Url::parse(u)
                .is_ok_and(|p| p.scheme() == "https" && !matches!(p.path(), "" | "/"));
            if !ok {
                return Err(bad(format!(
                    "`client_metadata_url = {u:?}` must be an https URL with a path (the \
                     address of toolhost's Client ID Metadata Document)"
                )));
            }
        }
        let machine = o.grant == crate::oauth::OAuthGrant::ClientCredentials;
        let private_key = match &o.private_key_file {
            None => None,
            Some(_) if !machine => {
                return Err(bad(
                    "`private_key_file` is for `grant = \"client_credentials\"`".into(),
                ));
            }
            Some(path) => Some(crate::oauth::SigningKey {
                pem: read_private_file(path).map_err(|m| {
                    bad(format!("`private_key_file = \"{}\"`: {m}", path.display()))
                })?,
                algorithm: o
                    .signing_algorithm
                    .clone()
                    .unwrap_or_else(|| "RS256".into()),
            }),
        };
        if let Some(alg) = &o.signing_algorithm
            && !["RS256", "RS384", "RS512", "ES256", "ES384"].contains(&alg.as_str())
        {
            return Err(bad(format!(
                "`signing_algorithm = {alg:?}`: use RS256, RS384, RS512, ES256 or ES384"
            )));
        }
        if machine {
            if o.client_id.is_none() {
                return Err(bad(
                    "`grant = \"client_credentials\"` needs the `client_id` registered for \
                     toolhost"
                        .into(),
                ));
            }
            if client_secret.is_some() == private_key.is_some() {
                return Err(bad(
                    "`grant = \"client_credentials\"` needs one of `client_secret_env`, \
                     `client_secret_file` and `private_key_file`"
                        .into(),
                ));
            }
            if o.client_metadata_url.is_some() {
                return Err(bad(
                    "`client_metadata_url` is for logins; a machine client has a `client_id`"
                        .into(),
                ));
            }
        }
        Ok(crate::oauth::OAuthClientIdentity {
            grant: o.grant,
            private_key,
            client_id: o.client_id.clone(),
            client_secret,
            client_metadata_url: o.client_metadata_url.clone(),
            scopes: o.scopes.clone(),
        })
    }

    /// The request timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_MCP_TIMEOUT)
    }
}

/// The whole content of a private key file, which must not be accessible by group or
/// others and must be under 64 KiB; what is wrong with it otherwise (never its content).
fn read_private_file(path: &std::path::Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(format!(
                "it is accessible by group or others (mode {mode:04o}); a private key is a \
                 secret: run `chmod 600 {}`",
                path.display()
            ));
        }
    }
    if meta.len() > 64 * 1024 {
        return Err("larger than 64 KiB; not a private key".into());
    }
    std::fs::read(path).map_err(|e| e.to_string())
}

/// The secret in the environment variable `var`, trimmed; what is wrong with it
/// otherwise (never its value).
fn env_secret(var: &str) -> Result<String, &'static str> {
    let value = std::env::var(var).map_err(|e| match e {
        std::env::VarError::NotPresent => "not set",
        std::env::VarError::NotUnicode(_) => "not valid UTF-8",
    })?;
    let value = value.trim().to_string();
    if value.is_empty() {
        return Err("empty");
    }
    if !value.chars().all(|c| c.is_ascii_graphic()) {
        return Err("not a bearer token (it has whitespace or non-ASCII characters)");
    }
    Ok(value)
}

/// The token of a `bearer_token_file`: its first line that is neither blank nor a `#`
/// comment. Refuses a file group or others may access, as ssh does for a key.
fn read_token_file(path: &std::path::Path) -> Result<String, McpConfigError> {
    let file_error = |message: String| McpConfigError::BearerTokenFile {
        path: path.display().to_string(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| file_error(e.to_string()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(file_error(format!(
                "it is accessible by group or others (mode {mode:04o}); a token is a \
                 password: run `chmod 600 {}`",
                path.display()
            )));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
    let token = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .ok_or_else(|| file_error("it holds no token".into()))?;
    if !token.chars().all(|c| c.is_ascii_graphic()) {
        return Err(file_error(
            "its token has whitespace or non-ASCII characters".into(),
        ));
    }
    Ok(token.to_string())
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
        let client = McpClient::new(name.clone(), transport)
            .with_timeout_duration(server.timeout())
            .with_tool_rules(server.tool_rules(config.default_risk))
            .with_oauth_store(crate::oauth::OAuthStore::default_location().ok())
            .with_oauth_client(oauth_client);
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

    #[test]
    fn bearer_tokens_come_from_a_variable_or_a_private_file() {
        use std::os::unix::fs::PermissionsExt as _;
        let url = Some("http://127.0.0.1:1/mcp".to_string());
        let entry = |env: Option<&str>, file: Option<std::path::PathBuf>| McpServerConfig {
            url: url.clone(),
            bearer_token_env: env.map(str::to_string),
            bearer_token_file: file,
            ..Default::default()
        };
        let missing = entry(Some("TOOLHOST_TEST_NO_SUCH_VARIABLE"), None).transport();
        let Err(e) = missing else {
            panic!("a missing variable must be an error");
        };
        assert!(e.to_string().contains("bearer_token_env"), "{e}");
        assert!(e.to_string().contains("not set"), "{e}");

        let dir = toolhost_testkit::temp_dir("mcp-token");
        let file = dir.join("token");
        std::fs::write(&file, "# the token\n\n  secret-token-value  \n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = entry(None, Some(file.clone())).transport().unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        assert!(!e.to_string().contains("secret-token-value"), "{e}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let Ok(McpTransport::StreamableHttp { headers, .. }) =
            entry(None, Some(file.clone())).transport()
        else {
            panic!("an HTTP transport");
        };
        assert_eq!(
            headers,
            Some(vec![(
                "Authorization".to_string(),
                "Bearer secret-token-value".to_string()
            )])
        );
        let transport = McpTransport::StreamableHttp {
            url: "http://127.0.0.1:1/mcp".into(),
            headers,
        };
        let shown = format!("{transport:?}");
        assert!(!shown.contains("secret-token-value"), "{shown}");
        assert!(shown.contains("Authorization=[redacted]"), "{shown}");
        assert_eq!(
            entry(Some("X"), Some(file.clone())).transport(),
            Err(McpConfigError::BearerTokenTwice)
        );
        let mut both = entry(None, Some(file));
        both.headers
            .insert("authorization".into(), "Bearer other".into());
        assert_eq!(both.transport(), Err(McpConfigError::BearerTokenTwice));
        let stdio = McpServerConfig {
            command: Some("node".into()),
            bearer_token_env: Some("X".into()),
            ..Default::default()
        };
        assert_eq!(
            stdio.transport(),
            Err(McpConfigError::BearerTokenWithoutUrl)
        );
    }

    #[test]
    fn oauth_identity_is_checked_and_its_secret_never_shown() {
        use std::os::unix::fs::PermissionsExt as _;
        let parse = |extra: &str| -> McpServerConfig {
            toml::from_str(&format!(
                "url = \"http://127.0.0.1:1/mcp\"\n[oauth]\n{extra}"
            ))
            .unwrap_or_else(|e| panic!("{e}"))
        };
        // No table: dynamic registration.
        let plain = McpServerConfig {
            url: Some("http://127.0.0.1:1/mcp".into()),
            ..Default::default()
        };
        assert_eq!(plain.oauth_client(), Ok(Default::default()));

        let dir = std::env::temp_dir().join(format!("th-oauth-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let secret = dir.join("secret");
        std::fs::write(&secret, "# the client secret\nvery-secret-value\n").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let good = parse(&format!(
            "client_id = \"th\"\nclient_secret_file = \"{}\"",
            secret.display()
        ))
        .oauth_client()
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(good.client_id.as_deref(), Some("th"));
        assert_eq!(good.client_secret.as_deref(), Some("very-secret-value"));
        assert!(!format!("{good:?}").contains("very-secret"));

        // A world-readable secret file is refused, naming the key, never the secret.
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = parse(&format!(
            "client_id = \"th\"\nclient_secret_file = \"{}\"",
            secret.display()
        ))
        .oauth_client()
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("client_secret_file") && e.contains("chmod 600"),
            "{e}"
        );
        assert!(!e.contains("very-secret"), "{e}");

        for (extra, says) in [
            (
                "client_secret_env = \"TH_NO_SUCH_VAR_X\"\nclient_id = \"a\"",
                "not set",
            ),
            ("client_secret_env = \"PATH\"", "needs the `client_id`"),
            (
                "client_metadata_url = \"http://me.example/c.json\"",
                "https URL",
            ),
            ("client_metadata_url = \"https://me.example/\"", "https URL"),
            ("client_id = \"a\\u001b[2J\"", "control characters"),
        ] {
            let e = parse(extra).oauth_client().unwrap_err().to_string();
            assert!(e.contains(says), "{extra}: {e}");
        }
        // Machine clients: a client id and exactly one of a secret and a private key,
        // the key private to its owner.
        let key = dir.join("key.pem");
        std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\nsecret-key-material\n").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let machine = parse(&format!(
            "grant = \"client_credentials\"\nclient_id = \"m\"\nprivate_key_file = \"{}\"\nsigning_algorithm = \"ES256\"",
            key.display()
        ))
        .oauth_client()
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(machine.grant, crate::oauth::OAuthGrant::ClientCredentials);
        assert!(!format!("{machine:?}").contains("secret-key-material"));
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = parse(&format!(
            "grant = \"client_credentials\"\nclient_id = \"m\"\nprivate_key_file = \"{}\"",
            key.display()
        ))
        .oauth_client()
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("chmod 600") && !e.contains("secret-key-material"),
            "{e}"
        );
        for (extra, says) in [
            ("grant = \"client_credentials\"", "needs the `client_id`"),
            (
                "grant = \"client_credentials\"\nclient_id = \"m\"",
                "needs one of",
            ),
            (
                "client_id = \"m\"\nprivate_key_file = \"/nonexistent\"",
                "is for `grant",
            ),
            (
                "grant = \"client_credentials\"\nclient_id = \"m\"\nclient_secret_env = \"PATH\"\nsigning_algorithm = \"none\"",
                "signing_algorithm",
            ),
        ] {
            let e = parse(extra).oauth_client().unwrap_err().to_string();
            assert!(e.contains(says), "{extra}: {e}");
        }

        // Unknown keys are refused (a typo must not silently fall back to registration).
        let typo: Result<McpServerConfig, _> =
            toml::from_str("url = \"http://127.0.0.1:1/mcp\"\n[oauth]\nclient_ud = \"a\"");
        assert!(typo.is_err());
        // Only for HTTP servers.
        let stdio: McpServerConfig =
            toml::from_str("command = \"node\"\n[oauth]\nclient_id = \"a\"").unwrap();
        assert!(
            stdio
                .oauth_client()
                .unwrap_err()
                .to_string()
                .contains("only to a `url`")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
