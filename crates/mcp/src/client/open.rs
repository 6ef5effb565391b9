//! Opening a connection and keeping it open: the handshake over the configured
//! [`McpTransport`] (a stdio child spawned with a cleared environment, inside its sandbox
//! when one is declared, or Streamable HTTP with its credential) under the client's
//! timeout and in the revision `protocol` names; the rmcp handler ([`Hooks`]) that
//! declares what toolhost takes from a server; reconnecting a dead connection with
//! back-off (`connection.rs`); and turning rmcp's request failures into [`McpClientError`]s
//! (a 401/403 on any request becomes `Unauthorized` with what to do, and no message
//! carries rmcp's internal type names).
//!
//! The types it works with are below it (`connection.rs`, `transport.rs`, `hooks.rs`);
//! this file is where they meet the client's state.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitationCapability, FormElicitationCapability,
    Implementation, ProtocolVersion, RootsCapabilities, SamplingCapability,
};
use rmcp::service::{
    ClientCacheConfig, ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer,
    RoleClient, RunningService, ServiceError, ServiceExt,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::McpClient;
use super::connection::{Conn, backoff, why_closed};
use super::hooks::Hooks;
use super::transport::{
    Credential, McpProtocol, McpTransport, http_auth_failure, kill_child, names_metadata,
    request_auth_failure, unauthorized_hint,
};
use crate::error::{McpClientError, init_error_text, service_error_text};
use crate::sandbox::McpSandbox;
use crate::stdio::{
    ChildState, DeepLines, LineGuard, codec_max_line, pump_stderr, resolve_command,
};

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

    /// The revision this connection starts in: the configured one, except that a server
    /// `auto` could not start in 2026-07-28 is spoken to in 2025-11-25 from then on.
    fn protocol(&self) -> McpProtocol {
        if self.cfg.protocol == McpProtocol::Auto && self.shared.legacy_only.load(Ordering::Relaxed)
        {
            McpProtocol::Initialize
        } else {
            self.cfg.protocol
        }
    }

    /// Opens a connection. Under `protocol = "auto"`, a server whose
    /// 2026-07-28 start fails (a handshake error or a timeout: a server that answers
    /// `server/discover` badly, or not at all) is started again in 2025-11-25 at once,
    /// and remembered so: its later reconnections skip the attempt. One log line says so.
    pub(super) async fn open(&self) -> Result<Conn, McpClientError> {
        let auto = self.protocol() == McpProtocol::Auto;
        match self.open_once().await {
            Err(e @ (McpClientError::Handshake { .. } | McpClientError::Timeout { .. }))
                if auto =>
            {
                self.shared.legacy_only.store(true, Ordering::Relaxed);
                tracing::warn!(
                    server = %self.cfg.server,
                    "server {}: starting it in 2026-07-28 failed ({}); toolhost speaks \
                     2025-11-25 to it from now on",
                    self.cfg.server,
                    toolhost_core::tools::escape::escape_line(&e.to_string())
                );
                self.open_once().await
            }
            Ok(conn) if auto && conn.protocol != ProtocolVersion::V_2026_07_28.to_string() => {
                // Started in 2025-11-25 after `server/discover` was refused or not
                // answered: the next connections go there at once (a server that does
                // not answer it would cost rmcp's discovery timeout each time).
                self.shared.legacy_only.store(true, Ordering::Relaxed);
                tracing::info!(
                    server = %self.cfg.server,
                    "server {} does not speak 2026-07-28; toolhost speaks {} to it",
                    self.cfg.server,
                    conn.protocol
                );
                Ok(conn)
            }
            other => other,
        }
    }

    async fn open_once(&self) -> Result<Conn, McpClientError> {
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
                let protocol = self.protocol();
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
        let protocol = self.protocol();
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
            .envs(env.iter().map(|(k, v)| (k, v)));
        // Which toolhosts started this one, so a server that is toolhost with the same
        // config refuses to wrap itself (crate::nesting).
        if let Some(chain) = crate::nesting::for_children() {
            cmd.env(crate::nesting::CHAIN_ENV, chain);
        }
        cmd.stdin(std::process::Stdio::piped())
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
                hooks.watched.clone(),
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
    protocol: McpProtocol,
) -> Result<RunningService<RoleClient, Hooks>, ClientInitializeError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
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

impl McpClient {
    /// Lets this server's forms ask for secret-looking fields (passwords, tokens, keys):
    /// they are passed on flagged instead of refused (`allow_secret_fields` in
    /// `[mcp.servers.NAME]`; see [`crate::attribution`]).
    pub fn with_secret_fields(mut self, allow: bool) -> Self {
        Arc::make_mut(&mut self.cfg).allow_secret_fields = allow;
        self
    }

    pub(super) fn hooks(&self) -> Hooks {
        // Declared so wrapped servers may ask; each request is passed on to the client of
        // `serve` whose call it belongs to, and refused when that client cannot take it.
        // Tasks: a call the server makes a task of is followed to its end (tasks.rs).
        let mut caps = ClientCapabilities::builder().enable_tasks().build();
        caps.sampling = Some(SamplingCapability::default());
        let mut elicitation = ElicitationCapability::default();
        elicitation.form = Some(FormElicitationCapability::default());
        caps.elicitation = Some(elicitation);
        caps.roots = Some(RootsCapabilities::default());
        // MCP Apps: toolhost passes a server's views (`ui://` resources) and its tools'
        // UI links to its clients as written, so it tells the server it may offer them
        // (a server that checks its host's support registers its UI tools only then). A
        // client without the extension ignores the links; the tools work the same.
        let mut ui = rmcp::model::JsonObject::new();
        ui.insert(
            "mimeTypes".into(),
            serde_json::json!([crate::gateway::MCP_APP_MIME]),
        );
        caps.extensions
            .get_or_insert_default()
            .insert(crate::gateway::UI_EXTENSION.to_string(), ui);
        let mut info = ClientConfig::new(
            caps,
            Implementation::new("toolhost", env!("CARGO_PKG_VERSION")),
        );
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        Hooks {
            server: Arc::from(self.cfg.server.as_str()),
            info,
            changed: self.shared.changed.clone(),
            progress: self.shared.progress.clone(),
            events: self.shared.events.clone(),
            watched: self.shared.watched.subscribe(),
            timeout: self.cfg.timeout,
            attribution: crate::attribution::Attribution::new(
                self.cfg.server.as_str(),
                self.cfg.allow_secret_fields,
            ),
        }
    }
}

impl McpClient {
    /// A live peer, reconnecting (with back-off) if the connection died.
    pub(super) async fn peer(&self) -> Result<Peer<RoleClient>, McpClientError> {
        let server = &self.cfg.server;
        let mut slot = self.shared.slot.lock().await;
        if let Some(conn) = &slot.conn
            && conn.alive()
        {
            return Ok(conn.service.peer().clone());
        }
        if let Some(dead) = slot.conn.take() {
            slot.last_error = dead.death_note().await;
            let n = self.shared.failures.fetch_add(1, Ordering::Relaxed) + 1;
            slot.not_before = Some(Instant::now() + backoff(n));
            tokio::spawn(dead.shutdown());
        }
        if !slot.connected_once || self.shared.closed.load(Ordering::SeqCst) {
            return Err(McpClientError::NotConnected(server.clone()));
        }
        if let Some(nb) = slot.not_before {
            let now = Instant::now();
            if nb > now {
                let wait = nb - now;
                if wait > self.cfg.timeout / 2 {
                    return Err(McpClientError::BackingOff {
                        server: server.clone(),
                        message: slot.last_error.clone(),
                        retry_in: wait,
                    });
                }
                tokio::time::sleep(wait).await;
            }
        }
        tracing::info!(server = %server, "reconnecting to MCP server");
        match self.open().await {
            Ok(conn) => {
                let peer = conn.service.peer().clone();
                slot.conn = Some(conn);
                slot.not_before = None;
                self.shared.reconnects.fetch_add(1, Ordering::Relaxed);
                // A new process may have other tools.
                self.shared.changed.send_modify(|g| *g += 1);
                Ok(peer)
            }
            Err(e) => {
                let n = self.shared.failures.fetch_add(1, Ordering::Relaxed) + 1;
                slot.not_before = Some(Instant::now() + backoff(n));
                slot.last_error = e.to_string();
                Err(e)
            }
        }
    }

    /// Turns a request failure into a client error; for a dead connection, says why.
    pub(super) async fn request_error(&self, e: ServiceError, what: &str) -> McpClientError {
        let server = self.cfg.server.clone();
        match e {
            ServiceError::Timeout { timeout } => McpClientError::Timeout {
                server,
                what: what.to_string(),
                timeout,
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let refused = request_auth_failure(&e);
                let mut slot = self.shared.slot.lock().await;
                let how = slot
                    .conn
                    .as_ref()
                    .map_or(Credential::None, |c| c.credential);
                let message = match slot.conn.take() {
                    Some(conn) if !conn.alive() || matches!(e, ServiceError::TransportClosed) => {
                        let note = conn.death_note().await;
                        slot.last_error = note.clone();
                        let n = self.shared.failures.fetch_add(1, Ordering::Relaxed) + 1;
                        slot.not_before = Some(Instant::now() + backoff(n));
                        tokio::spawn(conn.shutdown());
                        note
                    }
                    Some(conn) => {
                        slot.conn = Some(conn);
                        service_error_text(&e)
                    }
                    None => slot.last_error.clone(),
                };
                drop(slot);
                // An HTTP server that ended the session with 403 `insufficient_scope`.
                let denied = self
                    .shared
                    .denied
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take();
                if let Some(challenge) = denied {
                    let hint = super::transport::unauthorized_hint(
                        &server,
                        403,
                        Some(&challenge),
                        Credential::OAuth,
                        true,
                    );
                    return McpClientError::Unauthorized {
                        server,
                        status: 403,
                        hint,
                        challenge: Some(challenge),
                    };
                }
                // Refused for want of authorization (a token revoked or expired, or a
                // server that lets `initialize` through but guards the rest).
                if let Some((status, challenge)) = refused {
                    return self.unauthorized(status, challenge, how).await;
                }
                McpClientError::Closed {
                    server,
                    message: format!("{message} (during {what}); the next call reconnects"),
                }
            }
            other => McpClientError::Protocol {
                server,
                what: what.to_string(),
                message: service_error_text(&other),
            },
        }
    }
}
