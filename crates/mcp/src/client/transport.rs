//! Opening a connection: [`McpTransport`] (a stdio child process, sandboxed or not, or
//! Streamable HTTP), spawning the child with a cleared environment (and inside its
//! sandbox, when one is declared), and the handshake under the client's timeout, with the
//! rmcp handler of `client/hooks.rs`. An HTTP server's 401 or 403 (at the handshake or,
//! through `client/connection.rs`, on any later request) becomes
//! [`McpClientError::Unauthorized`] with what to do: `toolhost mcp login NAME` when the
//! server's challenge points at OAuth metadata or its well-known paths publish some
//! (docs/mcp.md, "Servers that need a token"), the config keys of a static token otherwise; a server
//! with a stored OAuth login (crate::oauth) gets its access token, refreshed as needed.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::service::{
    ClientCacheConfig, ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RoleClient,
    RunningService, ServiceExt,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::McpClient;
use super::connection::{Conn, why_closed};
use super::hooks::Hooks;
use crate::error::{McpClientError, init_error_text};
use crate::sandbox::McpSandbox;
use crate::stdio::{
    ChildState, DeepLines, LineGuard, codec_max_line, pump_stderr, resolve_command,
};

/// How long a child may take to exit after it was told to.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// How to reach an MCP server. Its `Debug` hides the values of HTTP headers (they carry
/// credentials such as the bearer token) and of the child's environment, and the
/// credentials of the URL (user-info, secret query parameters).
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// Start a child process and talk JSON-RPC over its stdin/stdout.
    Stdio {
        /// The program (looked up in the host's `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// The child's whole environment: it starts empty and gets exactly these variables.
        env: Vec<(String, String)>,
    },
    /// Like [`McpTransport::Stdio`], but the child runs inside `sandbox` (see
    /// [`crate::sandbox`]); when the sandbox cannot be enforced here, the server is not
    /// started and connecting fails with [`McpClientError::Sandbox`].
    SandboxedStdio {
        /// The program (looked up in the host's `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// The child's whole environment: it starts empty and gets exactly these variables.
        env: Vec<(String, String)>,
        /// What the child may read, write and reach.
        sandbox: McpSandbox,
    },
    /// Streamable HTTP (MCP 2025-03-26 and later): one endpoint, JSON or SSE replies.
    StreamableHttp {
        /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Extra headers sent with every request (`Authorization: Bearer ...` included).
        headers: Option<Vec<(String, String)>>,
    },
}

impl std::fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |pairs: &[(String, String)]| -> Vec<String> {
            pairs
                .iter()
                .map(|(k, _)| format!("{k}=[redacted]"))
                .collect()
        };
        match self {
            McpTransport::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &names(env))
                .finish(),
            McpTransport::SandboxedStdio {
                command,
                args,
                env,
                sandbox,
            } => f
                .debug_struct("SandboxedStdio")
                .field("command", command)
                .field("args", args)
                .field("env", &names(env))
                .field("sandbox", sandbox)
                .finish(),
            McpTransport::StreamableHttp { url, headers } => f
                .debug_struct("StreamableHttp")
                .field("url", &toolhost_core::tools::redact::scrub_urls(url))
                .field("headers", &headers.as_deref().map(names))
                .finish(),
        }
    }
}

impl McpTransport {
    /// A stdio transport with no environment variables.
    pub fn stdio(
        command: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        McpTransport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        }
    }

    /// A Streamable HTTP transport with no extra headers.
    pub fn http(url: impl Into<String>) -> Self {
        McpTransport::StreamableHttp {
            url: url.into(),
            headers: None,
        }
    }
}

/// The HTTP status (401 or 403) and `WWW-Authenticate` challenge (when sent) of a
/// handshake the server refused for want of authorization; `None` for other failures.
fn http_auth_failure(e: &rmcp::service::ClientInitializeError) -> Option<(u16, Option<String>)> {
    use rmcp::service::ClientInitializeError as E;
    match e {
        E::TransportError { error, .. } => auth_failure_in(error.error.as_ref()),
        E::LegacyFallbackFailed { fallback, .. } => http_auth_failure(fallback),
        _ => None,
    }
}

/// The same for a request after the handshake (`tools/list`, `tools/call`, ...).
pub(super) fn request_auth_failure(
    e: &rmcp::service::ServiceError,
) -> Option<(u16, Option<String>)> {
    match e {
        rmcp::service::ServiceError::TransportSend(error) => auth_failure_in(error.error.as_ref()),
        _ => None,
    }
}

/// The HTTP status (401 or 403) and challenge of an auth refusal somewhere in the chain of
/// a transport error.
fn auth_failure_in(
    error: &(dyn std::error::Error + Send + Sync + 'static),
) -> Option<(u16, Option<String>)> {
    use rmcp::transport::streamable_http_client::{
        AuthRequiredError, InsufficientScopeError, StreamableHttpError,
    };
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = next {
        if let Some(a) = current.downcast_ref::<AuthRequiredError>() {
            return Some((401, Some(a.www_authenticate_header.clone())));
        }
        if let Some(a) = current.downcast_ref::<InsufficientScopeError>() {
            return Some((403, Some(a.www_authenticate_header.clone())));
        }
        // A 401/403 without a challenge: rmcp keeps only "HTTP <status>: <body>".
        if let Some(StreamableHttpError::UnexpectedServerResponse(text)) =
            current.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            for status in [401u16, 403] {
                if text.starts_with(&format!("HTTP {status} ")) {
                    return Some((status, None));
                }
            }
        }
        next = current.source();
    }
    None
}

/// Whether a `WWW-Authenticate` challenge points at OAuth metadata (`resource_metadata`,
/// as MCP authorization servers send it).
fn names_metadata(challenge: &str) -> bool {
    challenge.to_ascii_lowercase().contains("resource_metadata")
}

/// The longest part of a server's `WWW-Authenticate` value shown in an error.
const MAX_CHALLENGE_SHOWN: usize = 200;

/// What to do about a 401/403 from `server`: the config keys to set, or, when `oauth`
/// (the server's challenge points at OAuth metadata, or its well-known paths publish some),
/// `toolhost mcp login`; with the challenge itself escaped and shortened.
pub(super) fn unauthorized_hint(
    server: &str,
    status: u16,
    challenge: Option<&str>,
    how: Credential,
    oauth: bool,
) -> String {
    let sent_token = how == Credential::Bearer;
    let mut hint = if how == Credential::OAuth && status == 401 {
        format!(
            "the stored OAuth login was refused or has expired and could not be refreshed; \
             run `toolhost mcp login {server}` again"
        )
    } else if oauth && status == 401 && !sent_token {
        format!(
            "the server asks for OAuth 2.1 authorization and no login is stored for it; run \
             `toolhost mcp login {server}` (or, if the server also accepts a static token, \
             set `bearer_token_env = \"VAR\"` or `bearer_token_file` in [mcp.servers.{server}])"
        )
    } else if status == 403 && how == Credential::OAuth {
        format!(
            "the server asks for more scope than the stored login has; run `toolhost mcp \
             login {server}` with `--scope` for each scope it names (or, for `toolhost call`, \
             let it log in when asked: on a terminal, or with `--login`)"
        )
    } else if status == 403 {
        format!(
            "the credential was accepted but is not allowed to do this (scope or role); use \
             a token with more rights in [mcp.servers.{server}]"
        )
    } else if sent_token && oauth {
        format!(
            "the bearer token was refused; check the token of `bearer_token_env`, \
             `bearer_token_file` or the `Authorization` header in [mcp.servers.{server}], \
             or, as the server also offers OAuth 2.1, remove it and run `toolhost mcp login \
             {server}`"
        )
    } else if sent_token {
        format!(
            "the bearer token was refused; check the token of `bearer_token_env`, \
             `bearer_token_file` or the `Authorization` header in [mcp.servers.{server}]"
        )
    } else {
        format!(
            "the server requires authentication; set `bearer_token_env = \"VAR\"` (the \
             variable holding the token) or `bearer_token_file = \"PATH\"` in \
             [mcp.servers.{server}], or send the credential with `headers`"
        )
    };
    if let Some(c) = challenge {
        let mut shown: String = c
            .chars()
            .take(MAX_CHALLENGE_SHOWN)
            .flat_map(char::escape_default)
            .collect();
        if c.chars().count() > MAX_CHALLENGE_SHOWN {
            shown.push_str("...");
        }
        hint.push_str(&format!(" (WWW-Authenticate: \"{shown}\")"));
    }
    hint
}

/// Which credential the handshake sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Credential {
    None,
    /// A configured `Authorization` header (`bearer_token_env`, `bearer_token_file`, ...).
    Bearer,
    /// The access token of a stored OAuth login.
    OAuth,
}

impl McpClient {
    /// The error of a 401/403 from this server: what to do, after looking for OAuth
    /// metadata at its well-known paths when a 401's challenge points at none (bounded:
    /// `crate::oauth::offers_oauth`).
    pub(super) async fn unauthorized(
        &self,
        status: u16,
        challenge: Option<String>,
        how: Credential,
    ) -> McpClientError {
        let server = self.cfg.server.clone();
        let mut oauth = challenge.as_deref().is_some_and(names_metadata);
        if !oauth
            && status == 401
            && how != Credential::OAuth
            && let McpTransport::StreamableHttp { url, .. } = &self.cfg.transport
        {
            oauth = crate::oauth::offers_oauth(url, challenge.as_deref(), self.cfg.timeout).await;
        }
        let hint = unauthorized_hint(&server, status, challenge.as_deref(), how, oauth);
        McpClientError::Unauthorized {
            server,
            status,
            hint,
            challenge,
        }
    }
}

/// Kills a child process and waits (a little) for it to go.
pub(super) async fn kill_child(child: &tokio::sync::Mutex<tokio::process::Child>) {
    let mut child = child.lock().await;
    let _ = child.start_kill();
    let _ = tokio::time::timeout(KILL_GRACE, child.wait()).await;
}

impl McpClient {
    /// Replaces the secrets given to the server (its `env` values read from a secret source) in every result and
    /// error its tools return.
    pub fn with_redactor(mut self, redactor: toolhost_core::secrets::Redactor) -> Self {
        Arc::make_mut(&mut self.cfg).redactor = redactor;
        self
    }

    /// What replaces the secrets given to the server in its tools' results.
    pub fn redactor(&self) -> &toolhost_core::secrets::Redactor {
        &self.cfg.redactor
    }

    pub(super) async fn open(&self) -> Result<Conn, McpClientError> {
        match &self.cfg.transport {
            McpTransport::Stdio { command, args, env } => {
                self.open_stdio(command, args, env, None).await
            }
            McpTransport::SandboxedStdio {
                command,
                args,
                env,
                sandbox,
            } => self.open_stdio(command, args, env, Some(sandbox)).await,
            McpTransport::StreamableHttp { url, headers } => {
                let server = self.cfg.server.clone();
                let timeout = self.cfg.timeout;
                let protocol = self.cfg.protocol;
                let hooks = self.hooks();
                let mut map = HashMap::new();
                let mut auth = None;
                for (k, v) in headers.iter().flatten() {
                    if k.eq_ignore_ascii_case("authorization") {
                        let token = v.strip_prefix("Bearer ").unwrap_or(v);
                        auth = Some(token.to_string());
                        continue;
                    }
                    let name = http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| {
                        McpClientError::Config {
                            server: server.clone(),
                            message: format!("header name {k:?}: {e}"),
                        }
                    })?;
                    let value =
                        http::HeaderValue::from_str(v).map_err(|e| McpClientError::Config {
                            server: server.clone(),
                            message: format!("header {k:?} value: {e}"),
                        })?;
                    map.insert(name, value);
                }
                let mut cfg =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map);
                if let Some(token) = auth.clone() {
                    cfg = cfg.auth_header(token);
                }
                let sent_token = auth.is_some();
                // OAuth credentials from `toolhost mcp login`, unless the operator set an
                // `Authorization` header (theirs wins).
                let machine = self.cfg.oauth_client.grant
                    == crate::oauth::OAuthGrant::ClientCredentials
                    && !sent_token;
                let oauth_client = match (&self.cfg.oauth, sent_token) {
                    _ if machine => None,
                    (Some(store), false) => {
                        crate::oauth::auth_client(&server, url, store, &self.cfg.oauth_client)
                            .await
                            .map_err(|e| McpClientError::Config {
                                server: server.clone(),
                                message: e.to_string(),
                            })?
                    }
                    _ => None,
                };
                // A machine client gets its token itself, now and whenever it expires.
                let machine = if machine {
                    let auth =
                        crate::oauth::MachineAuth::connect(&server, url, &self.cfg.oauth_client)
                            .await
                            .map_err(|e| McpClientError::Unauthorized {
                                server: server.clone(),
                                status: 401,
                                hint: e.to_string(),
                                challenge: None,
                            })?;
                    Some(auth)
                } else {
                    None
                };
                let how = if oauth_client.is_some() || machine.is_some() {
                    Credential::OAuth
                } else if sent_token {
                    Credential::Bearer
                } else {
                    Credential::None
                };
                let served = match oauth_client {
                    Some(client) => {
                        // Keeps the challenge of a 403 `insufficient_scope` mid-session.
                        let client = super::http_client::Watched {
                            inner: client,
                            denied: self.shared.denied.clone(),
                            machine: None,
                        };
                        let transport = StreamableHttpClientTransport::with_client(client, cfg);
                        tokio::time::timeout(timeout, start(hooks, transport, protocol)).await
                    }
                    None if machine.is_some() => {
                        let client = super::http_client::Watched {
                            inner: reqwest::Client::default(),
                            denied: self.shared.denied.clone(),
                            machine,
                        };
                        let transport = StreamableHttpClientTransport::with_client(client, cfg);
                        tokio::time::timeout(timeout, start(hooks, transport, protocol)).await
                    }
                    None => {
                        let transport = StreamableHttpClientTransport::from_config(cfg);
                        tokio::time::timeout(timeout, start(hooks, transport, protocol)).await
                    }
                };
                let service = match served {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => {
                        if let Some((status, challenge)) = http_auth_failure(&e) {
                            return Err(self.unauthorized(status, challenge, how).await);
                        }
                        // The URL and the HTTP client's error (which quotes it) may carry
                        // credentials in user-info or the query: hidden.
                        let message = format!("{} (url {url})", init_error_text(&e));
                        return Err(McpClientError::Handshake {
                            server,
                            message: toolhost_core::tools::redact::scrub_urls(&message)
                                .into_owned(),
                        });
                    }
                    Err(_) => {
                        return Err(McpClientError::Timeout {
                            server,
                            what: "initialize".into(),
                            timeout,
                        });
                    }
                };
                Ok(Self::finish(service, None, Arc::new(ChildState::default()), how).await)
            }
        }
    }

    /// Starts the child (inside `sandbox`, if any) and runs the handshake over its stdio.
    async fn open_stdio(
        &self,
        command: &str,
        args: &[String],
        env: &[(String, String)],
        sandbox: Option<&McpSandbox>,
    ) -> Result<Conn, McpClientError> {
        let server = self.cfg.server.clone();
        let timeout = self.cfg.timeout;
        let protocol = self.cfg.protocol;
        let hooks = self.hooks();
        let program = resolve_command(command);
        let mut cmd = tokio::process::Command::new(&program);
        match sandbox {
            Some(sandbox) => {
                sandbox
                    .apply(&program, &mut cmd)
                    .map_err(|source| McpClientError::Sandbox {
                        server: server.clone(),
                        source,
                    })?
            }
            None => {
                if !self.shared.warned_unsandboxed.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        server = %server,
                        "server {server} runs unsandboxed: it can read and write all \
                         your files and use the network; add `sandbox = {{ read = \
                         [...], write = [...], network = false }}` to \
                         [mcp.servers.{server}] (docs/permissions.md)"
                    );
                }
            }
        }
        cmd.args(args)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|source| McpClientError::Spawn {
            server: server.clone(),
            command: std::iter::once(command)
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            source,
        })?;
        let state = Arc::new(ChildState::default());
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(McpClientError::Handshake {
                server,
                message: "the child's stdio pipes are missing".into(),
            });
        };
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(pump_stderr(
                server.clone(),
                stderr,
                self.cfg.limits,
                state.clone(),
            ));
        }
        let child = Arc::new(tokio::sync::Mutex::new(child));
        let reader = DeepLines::new(
            LineGuard::with_state(stdout, self.cfg.limits.max_line_bytes, state.clone()),
            server.as_str(),
        );
        let transport = AsyncRwTransport::<RoleClient, _, _>::new_client(reader, stdin)
            .with_max_line_length(codec_max_line(self.cfg.limits.max_line_bytes));
        let served = tokio::time::timeout(timeout, start(hooks, transport, protocol)).await;
        let service = match served {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                let note = why_closed(Some(&child), &state).await;
                return Err(McpClientError::Handshake {
                    server,
                    message: format!("{}; {note}", init_error_text(&e)),
                });
            }
            Err(_) => {
                kill_child(&child).await;
                return Err(McpClientError::Timeout {
                    server,
                    what: "initialize".into(),
                    timeout,
                });
            }
        };
        Ok(Self::finish(service, Some(child), state, Credential::None).await)
    }

    async fn finish(
        service: RunningService<RoleClient, Hooks>,
        child: Option<Arc<tokio::sync::Mutex<tokio::process::Child>>>,
        state: Arc<ChildState>,
        credential: Credential,
    ) -> Conn {
        // We keep our own tool cache (invalidated by list_changed); rmcp's would be a second,
        // independently expiring copy.
        service
            .peer()
            .set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        let protocol = service
            .peer()
            .peer_info()
            .map(|i| i.protocol_version.to_string())
            .unwrap_or_default();
        tracing::debug!(%protocol, "MCP connected");
        // A 2026-07-28 server's own notifications come only on a `subscriptions/listen`.
        let listening = if protocol == ProtocolVersion::V_2026_07_28.to_string() {
            let hooks = service.service();
            super::listen::follow(
                hooks.server.clone(),
                service.peer().clone(),
                hooks.changed.clone(),
                hooks.events.clone(),
            )
        } else {
            None
        };
        Conn {
            service,
            child,
            state,
            protocol,
            credential,
            _listening: listening,
        }
    }
}

/// Starts the client session over `transport` in the revision `protocol` names.
async fn start<T, E, A>(
    hooks: Hooks,
    transport: T,
    protocol: crate::config::McpProtocol,
) -> Result<RunningService<RoleClient, Hooks>, ClientInitializeError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    use crate::config::McpProtocol;
    let modern = vec![ProtocolVersion::V_2026_07_28];
    match protocol {
        McpProtocol::Initialize => hooks.serve(transport).await,
        McpProtocol::Discover => {
            let mode = ClientLifecycleMode::Discover {
                preferred_versions: modern,
            };
            hooks.serve_with_lifecycle(transport, mode).await
        }
        McpProtocol::Auto => {
            let mode = ClientLifecycleMode::Auto {
                preferred_versions: modern,
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            };
            hooks.serve_with_lifecycle(transport, mode).await
        }
    }
}
