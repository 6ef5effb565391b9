//! [`McpClient`]: an MCP client over rmcp, stdio (child process) or Streamable HTTP, whose
//! tools become ordinary registry tools.
//!
//! - The handshake offers protocol `2025-11-25` with `initialize`
//!   (`ProtocolVersion::LATEST_WITH_INITIALIZE`) and accepts any older version the server
//!   answers with.
//! - Every request is bounded by the client timeout (default 30 s). On timeout rmcp sends
//!   `notifications/cancelled` and the call fails with `ToolError::McpTimeout`. A call whose
//!   `ToolContext` is cancelled, or whose future is dropped, also sends
//!   `notifications/cancelled`.
//! - A stdio child runs with a **cleared environment** plus exactly the listed variables;
//!   its stderr goes to `tracing` (target `toolhost_mcp::stderr`), capped per line and in
//!   total, and its last lines are quoted in error messages. A stdout line longer than
//!   [`StdioLimits::max_line_bytes`] closes the connection with an error (memory stays
//!   bounded); unparsable lines are skipped by rmcp; replies with unknown ids are dropped.
//! - When the connection dies (crash, exit, broken framing), the call in flight gets a
//!   structured `McpError` naming the cause, and the next call reconnects. Repeated failures
//!   back off exponentially (100 ms doubling, at most 10 s).
//! - `notifications/tools/list_changed` invalidates the tool cache; a registry filled with
//!   [`McpClient::register_into`] is updated in the background.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientRequest, Implementation, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, RequestId, ServerResult,
};
use rmcp::service::{
    ClientCacheConfig, NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService,
    ServiceError, ServiceExt,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolhost_core::tools::{
    BaseTool, FunctionDefinition, ToolContext, ToolDefinition, ToolError, ToolOutput, ToolRegistry,
};

use crate::error::McpClientError;
use crate::stdio::{ChildState, LineGuard, StdioLimits, exit_note, pump_stderr, resolve_command};
use crate::tool::{McpTool, McpToolAnnotations, McpToolInfo, output_from_result, registry_name};

/// Default time budget of one MCP request (seed 000: 30 s).
pub const DEFAULT_MCP_TIMEOUT: Duration = Duration::from_secs(30);

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Streamable HTTP (MCP 2025-03-26 and later): one endpoint, JSON or SSE replies.
    StreamableHttp {
        /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Extra headers sent with every request (`Authorization: Bearer ...` included).
        headers: Option<Vec<(String, String)>>,
    },
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

#[derive(Debug, Clone)]
struct Config {
    server: String,
    transport: McpTransport,
    timeout: Duration,
    limits: StdioLimits,
}

/// The rmcp client handler: forwards list-changed, progress and log notifications.
#[derive(Clone)]
struct Hooks {
    server: Arc<str>,
    info: ClientConfig,
    changed: Arc<watch::Sender<u64>>,
    progress: Arc<Mutex<HashMap<ProgressToken, ToolContext>>>,
}

impl rmcp::ClientHandler for Hooks {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "tools/list_changed");
        self.changed.send_modify(|g| *g += 1);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let ctx = self
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&params.progress_token)
            .cloned();
        if let Some(ctx) = ctx {
            ctx.report_progress(params.progress, params.total, params.message);
        }
    }
}

struct Conn {
    service: RunningService<RoleClient, Hooks>,
    child: Option<Arc<tokio::sync::Mutex<tokio::process::Child>>>,
    state: Arc<ChildState>,
    protocol: String,
}

impl Conn {
    fn alive(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }

    /// Why the connection died, as far as it can be told.
    async fn death_note(&self) -> String {
        let mut parts = Vec::new();
        if let Some(b) = self.state.broken.get() {
            parts.push(b.clone());
        }
        if let Some(child) = &self.child
            && let Some(note) = exit_note(child).await
        {
            parts.push(note);
            self.state.settle().await;
        }
        if parts.is_empty() {
            parts.push("the transport closed".into());
        }
        let tail = self.state.tail_text();
        if !tail.is_empty() {
            parts.push(format!("last stderr: {tail}"));
        }
        parts.join("; ")
    }

    async fn shutdown(self) {
        let Conn { service, child, .. } = self;
        let _ = service.cancel().await;
        if let Some(child) = child {
            let mut child = child.lock().await;
            let _ = child.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
        }
    }
}

#[derive(Default)]
struct Slot {
    conn: Option<Conn>,
    connected_once: bool,
    not_before: Option<Instant>,
    last_error: String,
}

struct Shared {
    slot: tokio::sync::Mutex<Slot>,
    tools: RwLock<Option<(u64, Arc<Vec<McpToolInfo>>)>>,
    changed: Arc<watch::Sender<u64>>,
    progress: Arc<Mutex<HashMap<ProgressToken, ToolContext>>>,
    failures: AtomicU32,
    reconnects: AtomicU64,
    closed: AtomicBool,
    stop: CancellationToken,
}

/// An MCP client (seed 000, section 4).
///
/// Cheap to clone; clones share the connection. The tools it adapts ([`McpClient::into_tools`],
/// [`McpClient::register_into`]) hold a clone.
///
/// ```no_run
/// # async fn demo() -> Result<(), toolhost_core::tools::ToolError> {
/// use toolhost_mcp::{McpClient, McpTransport};
/// let client = McpClient::new("everything", McpTransport::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]))
///     .with_timeout(10);
/// client.connect().await?;
/// let tools = client.list_tools().await?;
/// let sum = client.call_tool("get-sum", serde_json::json!({"a": 1, "b": 2})).await?;
/// client.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpClient {
    cfg: Arc<Config>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.cfg.server)
            .field("transport", &self.cfg.transport)
            .field("timeout", &self.cfg.timeout)
            .finish_non_exhaustive()
    }
}

fn backoff(failures: u32) -> Duration {
    if failures <= 1 {
        return Duration::ZERO;
    }
    let ms = 100u64.saturating_mul(1u64 << (failures - 2).min(10));
    Duration::from_millis(ms.min(10_000))
}

impl McpClient {
    /// A client for `server_name` (the name used in errors, logs and `server__tool` names).
    /// Nothing starts until [`McpClient::connect`].
    pub fn new(server_name: impl Into<String>, transport: McpTransport) -> Self {
        let (changed, _) = watch::channel(0);
        Self {
            cfg: Arc::new(Config {
                server: server_name.into(),
                transport,
                timeout: DEFAULT_MCP_TIMEOUT,
                limits: StdioLimits::default(),
            }),
            shared: Arc::new(Shared {
                slot: tokio::sync::Mutex::new(Slot::default()),
                tools: RwLock::new(None),
                changed: Arc::new(changed),
                progress: Arc::new(Mutex::new(HashMap::new())),
                failures: AtomicU32::new(0),
                reconnects: AtomicU64::new(0),
                closed: AtomicBool::new(false),
                stop: CancellationToken::new(),
            }),
        }
    }

    /// Sets the time budget of each request, in seconds (seed 000's signature).
    pub fn with_timeout(self, secs: u64) -> Self {
        self.with_timeout_duration(Duration::from_secs(secs))
    }

    /// Sets the time budget of each request.
    pub fn with_timeout_duration(mut self, timeout: Duration) -> Self {
        Arc::make_mut(&mut self.cfg).timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Sets the stdio limits (line size, stderr caps).
    pub fn with_limits(mut self, limits: StdioLimits) -> Self {
        Arc::make_mut(&mut self.cfg).limits = limits;
        self
    }

    /// The configured server name.
    pub fn server_name(&self) -> &str {
        &self.cfg.server
    }

    /// The time budget of each request.
    pub fn timeout(&self) -> Duration {
        self.cfg.timeout
    }

    /// How many times the client reconnected after the connection died.
    pub fn reconnect_count(&self) -> u64 {
        self.shared.reconnects.load(Ordering::Relaxed)
    }

    /// The protocol version the server agreed to, while connected.
    pub async fn protocol_version(&self) -> Option<String> {
        self.shared
            .slot
            .lock()
            .await
            .conn
            .as_ref()
            .map(|c| c.protocol.clone())
    }

    /// The last stderr lines of the server process (stdio only; empty otherwise).
    pub async fn stderr_tail(&self) -> Vec<String> {
        let slot = self.shared.slot.lock().await;
        slot.conn
            .as_ref()
            .map(|c| {
                c.state
                    .tail
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A receiver that changes whenever the server says its tool list changed (and after a
    /// reconnect).
    pub fn watch_tool_changes(&self) -> watch::Receiver<u64> {
        self.shared.changed.subscribe()
    }

    /// Connects and runs the `initialize` handshake. Calling it again while connected does
    /// nothing.
    pub async fn connect(&self) -> Result<(), ToolError> {
        let mut slot = self.shared.slot.lock().await;
        self.shared.closed.store(false, Ordering::SeqCst);
        if slot.conn.as_ref().is_some_and(Conn::alive) {
            return Ok(());
        }
        if let Some(old) = slot.conn.take() {
            old.shutdown().await;
        }
        let conn = self.open().await?;
        slot.conn = Some(conn);
        slot.connected_once = true;
        slot.not_before = None;
        self.shared.failures.store(0, Ordering::Relaxed);
        Ok(())
    }

    /// Closes the connection (ends the child process). The client can `connect` again.
    pub async fn close(&self) -> Result<(), ToolError> {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.stop.cancel();
        let conn = self.shared.slot.lock().await.conn.take();
        if let Some(conn) = conn {
            conn.shutdown().await;
        }
        Ok(())
    }

    fn hooks(&self) -> Hooks {
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolhost", env!("CARGO_PKG_VERSION")),
        );
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        Hooks {
            server: Arc::from(self.cfg.server.as_str()),
            info,
            changed: self.shared.changed.clone(),
            progress: self.shared.progress.clone(),
        }
    }

    async fn open(&self) -> Result<Conn, McpClientError> {
        let server = self.cfg.server.clone();
        let timeout = self.cfg.timeout;
        let hooks = self.hooks();
        match &self.cfg.transport {
            McpTransport::Stdio { command, args, env } => {
                let program = resolve_command(command);
                let mut cmd = tokio::process::Command::new(&program);
                cmd.args(args)
                    .env_clear()
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .kill_on_drop(true);
                let mut child = cmd.spawn().map_err(|source| McpClientError::Spawn {
                    server: server.clone(),
                    command: std::iter::once(command.as_str())
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
                let reader = LineGuard::new(stdout, self.cfg.limits.max_line_bytes, state.clone());
                let transport = AsyncRwTransport::<RoleClient, _, _>::new_client(reader, stdin)
                    .with_max_line_length(self.cfg.limits.max_line_bytes.saturating_add(64));
                let served = tokio::time::timeout(timeout, hooks.serve(transport)).await;
                let service = match served {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => {
                        let probe = Conn::probe(child.clone(), state.clone());
                        let note = probe.await;
                        return Err(McpClientError::Handshake {
                            server,
                            message: format!("{e}; {note}"),
                        });
                    }
                    Err(_) => {
                        kill(&child).await;
                        return Err(McpClientError::Timeout {
                            server,
                            what: "initialize".into(),
                            timeout,
                        });
                    }
                };
                Ok(Self::finish(service, Some(child), state).await)
            }
            McpTransport::StreamableHttp { url, headers } => {
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
                if let Some(token) = auth {
                    cfg = cfg.auth_header(token);
                }
                let transport = StreamableHttpClientTransport::from_config(cfg);
                let service = match tokio::time::timeout(timeout, hooks.serve(transport)).await {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => {
                        return Err(McpClientError::Handshake {
                            server,
                            message: format!("{e} (url {url})"),
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
                Ok(Self::finish(service, None, Arc::new(ChildState::default())).await)
            }
        }
    }

    async fn finish(
        service: RunningService<RoleClient, Hooks>,
        child: Option<Arc<tokio::sync::Mutex<tokio::process::Child>>>,
        state: Arc<ChildState>,
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
        Conn {
            service,
            child,
            state,
            protocol,
        }
    }

    /// A live peer, reconnecting (with back-off) if the connection died.
    async fn peer(&self) -> Result<Peer<RoleClient>, McpClientError> {
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
    async fn request_error(&self, e: ServiceError, what: &str) -> McpClientError {
        let server = self.cfg.server.clone();
        match e {
            ServiceError::Timeout { timeout } => McpClientError::Timeout {
                server,
                what: what.to_string(),
                timeout,
            },
            ServiceError::McpError(err) => McpClientError::Protocol {
                server,
                what: what.to_string(),
                message: format!("{} (JSON-RPC error {})", err.message, err.code.0),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let mut slot = self.shared.slot.lock().await;
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
                        e.to_string()
                    }
                    None => slot.last_error.clone(),
                };
                McpClientError::Closed {
                    server,
                    message: format!("{message} (during {what}); the next call reconnects"),
                }
            }
            other => McpClientError::Protocol {
                server,
                what: what.to_string(),
                message: other.to_string(),
            },
        }
    }

    /// The server's tools, from the cache when it is fresh (refreshed after
    /// `notifications/tools/list_changed`).
    pub async fn tools(&self) -> Result<Arc<Vec<McpToolInfo>>, ToolError> {
        let generation = *self.shared.changed.borrow();
        {
            let cache = self.shared.tools.read().unwrap_or_else(|e| e.into_inner());
            if let Some((g, tools)) = &*cache
                && *g == generation
            {
                return Ok(tools.clone());
            }
        }
        self.refresh_tools().await
    }

    /// Lists the tools again, bypassing the cache.
    pub async fn refresh_tools(&self) -> Result<Arc<Vec<McpToolInfo>>, ToolError> {
        let generation = *self.shared.changed.borrow();
        let peer = self.peer().await?;
        let listed = tokio::time::timeout(self.cfg.timeout, peer.list_all_tools()).await;
        let tools = match listed {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => return Err(self.request_error(e, "tools/list").await.into()),
            Err(_) => {
                return Err(McpClientError::Timeout {
                    server: self.cfg.server.clone(),
                    what: "tools/list".into(),
                    timeout: self.cfg.timeout,
                }
                .into());
            }
        };
        let infos: Arc<Vec<McpToolInfo>> =
            Arc::new(tools.into_iter().map(McpToolInfo::from_rmcp).collect());
        *self.shared.tools.write().unwrap_or_else(|e| e.into_inner()) =
            Some((generation, infos.clone()));
        Ok(infos)
    }

    /// The server's tools as OpenAI-style definitions (seed 000). Cached; see
    /// [`McpClient::refresh_tools`].
    pub async fn list_tools(&self) -> Result<Vec<ToolDefinition>, ToolError> {
        Ok(self
            .tools()
            .await?
            .iter()
            .map(|t| ToolDefinition {
                kind: "function".into(),
                function: FunctionDefinition {
                    name: t.name.clone(),
                    description: t.description.clone().unwrap_or_default(),
                    parameters: t.input_schema.clone(),
                },
            })
            .collect())
    }

    /// Calls a tool and returns its canonical result: `structuredContent` when the server
    /// sends it, else the text content. `isError: true` becomes `ExecutionFailed`.
    pub async fn call_tool(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        self.call_tool_output(name, args, &ToolContext::default())
            .await
            .map(|o| o.canonical)
    }

    /// Calls a tool in a context: progress notifications go to `ctx.report_progress`, and
    /// cancelling `ctx` sends `notifications/cancelled`.
    pub async fn call_tool_output(
        &self,
        name: &str,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let what = format!("tools/call {name}");
        let arguments = match args {
            Value::Object(m) => Some(m),
            Value::Null => None,
            other => {
                return Err(ToolError::InvalidArguments(
                    name.to_string(),
                    format!("MCP tool arguments must be a JSON object, got {other}"),
                ));
            }
        };
        let peer = self.peer().await?;
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = arguments;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(self.cfg.timeout))
            .await
        {
            Ok(h) => h,
            Err(e) => return Err(self.request_error(e, &what).await.into()),
        };
        let mut guard = InFlight {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
            token: handle.progress_token.clone(),
            progress: self.shared.progress.clone(),
        };
        self.shared
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(handle.progress_token.clone(), ctx.clone());
        let result = tokio::select! {
            r = handle.await_response() => r,
            _ = ctx.cancellation_token().cancelled() => {
                // Dropping the guard sends notifications/cancelled.
                drop(guard);
                return Err(ToolError::Cancelled(name.to_string()));
            }
        };
        // Answered or timed out (rmcp already sent notifications/cancelled): nothing to
        // cancel any more.
        guard.id = None;
        drop(guard);
        let result = match result {
            Ok(r) => r,
            Err(e) => return Err(self.request_error(e, &what).await.into()),
        };
        let result: CallToolResult = match result {
            ServerResult::CallToolResult(r) => r,
            ServerResult::EmptyResult(_) => CallToolResult::default(),
            other => {
                return Err(McpClientError::Protocol {
                    server: self.cfg.server.clone(),
                    what,
                    message: format!("unexpected reply {other:?}"),
                }
                .into());
            }
        };
        self.shared.failures.store(0, Ordering::Relaxed);
        output_from_result(name, result)
    }

    /// The server's tools as `BaseTool`s, under their own (sanitised) names, from the tool
    /// cache: call [`McpClient::list_tools`] first. Use [`McpClient::register_into`] to get
    /// collision handling and list_changed updates.
    pub fn into_tools(self) -> Vec<Arc<dyn BaseTool>> {
        let cached = self
            .shared
            .tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|(_, t)| t.clone());
        cached
            .map(|tools| {
                tools
                    .iter()
                    .map(|info| {
                        Arc::new(McpTool::new(
                            self.clone(),
                            registry_name(&info.name),
                            info.clone(),
                        )) as Arc<dyn BaseTool>
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Registers the server's tools into `registry` and keeps them in sync: on
    /// `tools/list_changed` (and after a reconnect) the list is fetched again, new tools are
    /// added, changed ones replaced and removed ones unregistered, until [`McpClient::close`].
    ///
    /// A tool whose name is already taken by another source is registered as
    /// `server__tool`.
    pub async fn register_into(&self, registry: &ToolRegistry) -> Result<McpRegistered, ToolError> {
        self.register_into_filtered(registry, Arc::new(|_: &McpToolInfo| true))
            .await
    }

    /// [`McpClient::register_into`], offering only the tools `keep` accepts, at first and
    /// at every refresh (the host withholds tools whose definition the operator has not
    /// approved; see `docs/trust.md`).
    pub async fn register_into_filtered(
        &self,
        registry: &ToolRegistry,
        keep: ToolFilter,
    ) -> Result<McpRegistered, ToolError> {
        let tools = self.tools().await?;
        let sync = Arc::new(Mutex::new(SyncState::default()));
        let report = sync_registry(self, registry, &sync, &tools, &keep);
        let this = self.clone();
        let registry = registry.clone();
        let mut rx = self.shared.changed.subscribe();
        rx.borrow_and_update();
        let stop = self.shared.stop.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    r = rx.changed() => if r.is_err() { break },
                }
                match this.tools().await {
                    Ok(tools) => {
                        let r = sync_registry(&this, &registry, &sync, &tools, &keep);
                        for p in &r.problems {
                            tracing::warn!(server = %this.cfg.server, "{p}");
                        }
                    }
                    Err(e) => {
                        tracing::warn!(server = %this.cfg.server, error = %e, "refreshing MCP tools failed")
                    }
                }
            }
        });
        Ok(report)
    }
}

async fn kill(child: &tokio::sync::Mutex<tokio::process::Child>) {
    let mut child = child.lock().await;
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
}

impl Conn {
    async fn probe(
        child: Arc<tokio::sync::Mutex<tokio::process::Child>>,
        state: Arc<ChildState>,
    ) -> String {
        let mut parts = Vec::new();
        if let Some(b) = state.broken.get() {
            parts.push(b.clone());
        }
        {
            let mut c = child.lock().await;
            match c.try_wait() {
                Ok(Some(status)) => parts.push(format!("the server process exited ({status})")),
                _ => {
                    let _ = c.start_kill();
                    let _ = tokio::time::timeout(Duration::from_secs(2), c.wait()).await;
                }
            }
        }
        state.settle().await;
        let tail = state.tail_text();
        if !tail.is_empty() {
            parts.push(format!("last stderr: {tail}"));
        }
        parts.join("; ")
    }
}

/// One request in flight: forgets its progress route when done and, if still armed when
/// dropped (caller cancelled or gave up), sends `notifications/cancelled`.
struct InFlight {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    token: ProgressToken,
    progress: Arc<Mutex<HashMap<ProgressToken, ToolContext>>>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.token);
        if let Some(id) = self.id.take() {
            let peer = self.peer.clone();
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let _ = peer
                        .notify_cancelled(CancelledNotificationParam::new(
                            Some(id),
                            Some("cancelled by the host".into()),
                        ))
                        .await;
                });
            }
        }
    }
}

/// What [`McpClient::register_into`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpRegistered {
    /// The registry names of the server's tools (some may be `server__tool`).
    pub names: Vec<String>,
    /// Tools that could not be registered, with the reason.
    pub problems: Vec<String>,
}

#[derive(Default)]
struct SyncState {
    /// remote name -> (registry name, registration)
    registered: HashMap<String, (String, toolhost_core::tools::Registration)>,
}

/// Decides which tools of a server are offered; see [`McpClient::register_into_filtered`].
pub type ToolFilter = Arc<dyn Fn(&McpToolInfo) -> bool + Send + Sync>;

fn sync_registry(
    client: &McpClient,
    registry: &ToolRegistry,
    state: &Mutex<SyncState>,
    tools: &[McpToolInfo],
    offered: &ToolFilter,
) -> McpRegistered {
    let server = client.server_name();
    let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
    let mut report = McpRegistered::default();
    let mut keep = HashMap::new();
    for info in tools.iter().filter(|i| offered(i)) {
        let existing = st.registered.remove(&info.name);
        let name = match &existing {
            Some((name, _)) => name.clone(),
            None => {
                let plain = registry_name(&info.name);
                if registry.contains(&plain) {
                    registry_name(&format!("{server}__{}", info.name))
                } else {
                    plain
                }
            }
        };
        let tool = Arc::new(McpTool::new(client.clone(), name.clone(), info.clone()));
        let result = match &existing {
            Some(_) => registry.register_or_replace(tool),
            None => registry.register(tool),
        };
        match result {
            Ok(reg) => {
                report.names.push(name.clone());
                keep.insert(info.name.clone(), (name, reg));
            }
            Err(e) => report.problems.push(format!("tool '{}': {e}", info.name)),
        }
    }
    for (_, (_, reg)) in st.registered.drain() {
        reg.dispose();
    }
    st.registered = keep;
    report
}

impl McpToolInfo {
    fn from_rmcp(t: rmcp::model::Tool) -> Self {
        McpToolInfo {
            name: t.name.to_string(),
            title: t.title,
            description: t.description.map(|d| d.to_string()),
            input_schema: Value::Object((*t.input_schema).clone()),
            output_schema: t.output_schema.map(|s| Value::Object((*s).clone())),
            annotations: t.annotations.map(|a| McpToolAnnotations {
                title: a.title,
                read_only: a.read_only_hint,
                destructive: a.destructive_hint,
                idempotent: a.idempotent_hint,
                open_world: a.open_world_hint,
            }),
        }
    }
}
