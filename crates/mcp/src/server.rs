//! Serving a [`ToolRegistry`] as an MCP server, over stdio or Streamable HTTP (axum).
//!
//! - `tools/list`: every registry tool, with its `inputSchema` and annotations derived from
//!   its permissions (`readOnlyHint` when it declares nothing that writes, deletes or runs
//!   shell commands; `destructiveHint` for Delete/Shell; `openWorldHint` for Network).
//! - `tools/call`: runs the full registry pipeline (validation, permission gate, timeout).
//!   Success returns the render text as content plus `structuredContent` (the canonical
//!   value; non-objects wrapped as `{"result": value}`). Any [`ToolError`] — unknown tool,
//!   invalid arguments, denial, failure — is a result with `isError: true` (and
//!   `structuredContent: {"error": kind, "message": ...}`), never a JSON-RPC error.
//! - Progress: a tool's `ToolContext::report_progress` becomes `notifications/progress` when
//!   the client sent a progress token. `notifications/cancelled` cancels the tool's
//!   `ToolContext`.
//! - `notifications/tools/list_changed` whenever the registry changes: on legacy
//!   (`initialize`) sessions directly, on `2026-07-28` sessions through
//!   `subscriptions/listen`. A change between the `initialize` answer and the client's
//!   `notifications/initialized` (tools loading in the background) is announced too.
//! - `tools/call` of a tool the registry is still loading waits for it (the registry's
//!   pending loads, `ToolRegistry::begin_loading`).
//! - HTTP binds loopback by default ([`serve_http`] refuses other addresses unless told),
//!   and validates `Host` (loopback names only) and `Origin` (loopback origins only; requests
//!   without `Origin` pass, as non-browser clients send none).
//! - HTTP is bounded ([`HttpLimits`], defaults in docs/mcp.md): a connection must send its
//!   request headers within the header-read timeout (also the idle limit of a keep-alive
//!   connection between requests), at most `max_connections` are served at once (further
//!   ones wait in the kernel's accept queue), at most `max_sessions` MCP sessions exist
//!   (the next `initialize` gets HTTP 503 with a JSON-RPC error saying so), and a session
//!   with no traffic for `session_idle` is closed. Accepted sockets get `TCP_NODELAY`:
//!   a response is one small write, and Nagle's algorithm with the client's delayed ACK
//!   would hold every keep-alive call back by ~40 ms.
//! - A POST whose body is not JSON gets HTTP 400 with JSON-RPC error -32700 (parse error),
//!   rather than rmcp's 415.
//!
//! Over 700 lines because it holds both transports of the server: the MCP handler, the
//! stdio loop, and the HTTP front (its own hyper accept loop with header timeout,
//! connection and session caps, and the 400/-32700 body check). The HTTP front belongs in
//! its own file (`server/http.rs`); the split is pending, not a design choice.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
    ToolAnnotations,
};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{
    NotificationContext, Peer, RequestContext, RoleServer, ServiceExt, SubscriptionContext,
};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolhost_core::tools::{
    Permission, ServedHints, ToolCall, ToolContext, ToolEntry, ToolRegistry,
};

use crate::error::McpServeError;

/// The token that stops [`McpServer::serve_http`] (tokio-util's `CancellationToken`).
pub use tokio_util::sync::CancellationToken as StopToken;

/// An MCP server over a [`ToolRegistry`]. Cheap to clone (one clone per HTTP session).
#[derive(Clone, Debug)]
pub struct McpServer {
    registry: ToolRegistry,
    name: String,
    version: String,
    instructions: Option<String>,
    /// The state of the session this instance serves (a fresh one per HTTP session).
    session: Arc<Session>,
}

/// Per-session state.
#[derive(Debug)]
struct Session {
    /// The registry's change generation when `initialize` was answered (`u64::MAX`
    /// before). The client's view is at least that old: if the registry changed since
    /// (tools still loading in the background), `on_initialized` says so at once.
    initialized_at: std::sync::atomic::AtomicU64,
}

impl Session {
    fn new() -> Arc<Session> {
        Arc::new(Session {
            initialized_at: std::sync::atomic::AtomicU64::new(u64::MAX),
        })
    }
}

impl McpServer {
    /// A server named `toolhost` exposing every tool of `registry` (including tools added
    /// later).
    pub fn new(registry: ToolRegistry) -> Self {
        Self {
            registry,
            name: "toolhost".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
            session: Session::new(),
        }
    }

    /// A copy for a new session: same registry and identity, its own session state.
    fn for_session(&self) -> Self {
        Self {
            session: Session::new(),
            ..self.clone()
        }
    }

    /// Sets the server name and version sent in the handshake.
    pub fn with_identity(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// Sets the `instructions` sent in the handshake.
    pub fn with_instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// The registry served.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// Serves one client over any byte stream pair (stdin/stdout, a pipe, a socket) until
    /// it disconnects.
    pub async fn serve_io<R, W>(self, read: R, write: W) -> Result<(), McpServeError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let running = self
            .serve((read, write))
            .await
            .map_err(|e| McpServeError::Session(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| McpServeError::Session(e.to_string()))?;
        Ok(())
    }

    /// Serves one client over this process's stdin/stdout until it disconnects. Nothing
    /// else may write to stdout meanwhile (logs go to stderr).
    ///
    /// When stdin and stdout are pipes (as when an MCP client spawns the server), they
    /// are reopened privately and driven directly by the tokio reactor in non-blocking
    /// mode (the shared stdio descriptors stay blocking, see `stdio_pipes`). tokio's own
    /// `stdin()`/`stdout()` (which rmcp's `stdio()` uses) hand every read and write to a
    /// blocking thread, two thread hops per message; on a 2-core machine that was a
    /// third of the latency of a small `tools/call`. Otherwise (a terminal, a file) the
    /// portable blocking-pool streams are used.
    pub async fn serve_stdio(self) -> Result<(), McpServeError> {
        #[cfg(unix)]
        if let Some((read, write)) = stdio_pipes() {
            return self.serve_io(read, write).await;
        }
        let (stdin, stdout) = rmcp::transport::stdio();
        self.serve_io(stdin, stdout).await
    }

    /// The Streamable HTTP service (a tower service) to mount at `/mcp` on an axum router,
    /// with Host and Origin validation for `port` on loopback, and the session cap and
    /// idle expiry of `limits`.
    pub fn http_service(
        &self,
        port: u16,
        stop: CancellationToken,
        limits: &HttpLimits,
    ) -> StreamableHttpService<McpServer, CappedSessionManager> {
        self.http_service_on(port, stop, Arc::new(CappedSessionManager::new(limits)))
    }

    fn http_service_on(
        &self,
        port: u16,
        stop: CancellationToken,
        manager: Arc<CappedSessionManager>,
    ) -> StreamableHttpService<McpServer, CappedSessionManager> {
        let this = self.clone();
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(loopback_hosts(port))
            .with_allowed_origins(loopback_origins())
            .with_cancellation_token(stop)
            .with_max_request_body_bytes(MAX_BODY_BYTES);
        StreamableHttpService::new(move || Ok(this.for_session()), manager, config)
    }

    /// Listens on `addr` and serves `/mcp` until `stop` is cancelled, with the default
    /// [`HttpLimits`]. See [`McpServer::serve_http_with`].
    pub async fn serve_http(
        self,
        addr: SocketAddr,
        allow_remote: bool,
        stop: CancellationToken,
        on_bound: impl FnOnce(SocketAddr),
    ) -> Result<(), McpServeError> {
        self.serve_http_with(addr, allow_remote, HttpLimits::default(), stop, on_bound)
            .await
    }

    /// Listens on `addr` and serves `/mcp` until `stop` is cancelled, within `limits`.
    /// Refuses a non-loopback address unless `allow_remote`. Returns the bound address
    /// through `on_bound` (useful with port 0).
    ///
    /// The accept loop is hyper's HTTP/1 server driven directly rather than `axum::serve`,
    /// which has no header-read timeout (a client could hold a connection open forever by
    /// sending half a request) and no connection cap.
    pub async fn serve_http_with(
        self,
        addr: SocketAddr,
        allow_remote: bool,
        limits: HttpLimits,
        stop: CancellationToken,
        on_bound: impl FnOnce(SocketAddr),
    ) -> Result<(), McpServeError> {
        if !addr.ip().is_loopback() && !allow_remote {
            return Err(McpServeError::NotLoopback(addr.to_string()));
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| McpServeError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        let bound = listener.local_addr()?;
        let manager = Arc::new(CappedSessionManager::new(&limits));
        let service = self.http_service_on(bound.port(), stop.child_token(), manager.clone());
        let guard = HttpGuard {
            manager,
            max_sessions: limits.max_sessions,
        };
        let router = axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn_with_state(guard, http_guard));
        on_bound(bound);
        serve_connections(listener, router, &limits, stop).await;
        Ok(())
    }
}

/// Resource bounds of the Streamable HTTP server. Every field has a flag in
/// `toolhost serve --http` and a documented default (docs/mcp.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Time a connection has to send a complete request head (request line and
    /// headers); also how long a keep-alive connection may sit idle between requests.
    /// After it, the connection is closed. Default 10 s.
    pub header_read_timeout: Duration,
    /// Connections served at once; further ones wait in the accept queue. Default 1024.
    pub max_connections: usize,
    /// MCP sessions (`initialize` handshakes) alive at once; the next one is refused with
    /// HTTP 503 and a JSON-RPC error. Default 256.
    pub max_sessions: usize,
    /// A session that sees no request for this long is closed (its client must
    /// `initialize` again). Default 300 s.
    pub session_idle: Duration,
}

impl HttpLimits {
    /// Default of [`HttpLimits::header_read_timeout`].
    pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default of [`HttpLimits::max_connections`].
    pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
    /// Default of [`HttpLimits::max_sessions`].
    pub const DEFAULT_MAX_SESSIONS: usize = 256;
    /// Default of [`HttpLimits::session_idle`].
    pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Self::DEFAULT_HEADER_READ_TIMEOUT,
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            max_sessions: Self::DEFAULT_MAX_SESSIONS,
            session_idle: Self::DEFAULT_SESSION_IDLE,
        }
    }
}

/// Accepts connections until `stop`, each served by hyper's HTTP/1 server with the
/// header-read timeout, `TCP_NODELAY`, and at most `max_connections` at once. On `stop`,
/// open connections finish their current request and close.
async fn serve_connections(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    limits: &HttpLimits,
    stop: CancellationToken,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use tower::ServiceExt as _;

    let permits = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let builder = Arc::new(builder);
    let connections = tokio_util::task::TaskTracker::new();
    loop {
        let permit = tokio::select! {
            _ = stop.cancelled() => break,
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            _ = stop.cancelled() => break,
            r = listener.accept() => match r {
                Ok(s) => s,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let router = router.clone();
        let service =
            hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                router.clone().oneshot(req.map(axum::body::Body::new))
            });
        let builder = builder.clone();
        let stop = stop.clone();
        connections.spawn(async move {
            let _permit = permit;
            let conn = builder
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(%peer, error = %e, "connection ended");
                    }
                    return;
                }
                _ = stop.cancelled() => {}
            }
            conn.as_mut().graceful_shutdown();
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
        });
    }
    connections.close();
    connections.wait().await;
}

/// A [`LocalSessionManager`] with a cap on live sessions and the idle expiry of
/// [`HttpLimits`]. Sessions leave the count when rmcp closes them (client DELETE, idle
/// expiry, shutdown).
#[derive(Debug)]
pub struct CappedSessionManager {
    inner: LocalSessionManager,
    max_sessions: usize,
    // Held across "count, then create" so two concurrent handshakes cannot both take the
    // last slot.
    creating: tokio::sync::Mutex<()>,
}

impl CappedSessionManager {
    /// A manager for `limits.max_sessions` sessions that expire after
    /// `limits.session_idle` without traffic.
    pub fn new(limits: &HttpLimits) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.session_idle);
        Self {
            inner,
            max_sessions: limits.max_sessions,
            creating: tokio::sync::Mutex::new(()),
        }
    }

    /// How many sessions are alive.
    pub async fn session_count(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    /// The session cap.
    pub fn max_sessions(&self) -> usize {
        self.max_sessions
    }
}

/// Why [`CappedSessionManager`] refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionLimitError {
    /// Every session slot is taken.
    #[error(
        "session limit reached: {0} MCP sessions are open (raise --max-sessions, close \
         sessions with HTTP DELETE, or wait for idle ones to expire)"
    )]
    Full(usize),
    /// The underlying session manager failed.
    #[error(transparent)]
    Session(#[from] LocalSessionManagerError),
}

impl SessionManager for CappedSessionManager {
    type Error = SessionLimitError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one_at_a_time = self.creating.lock().await;
        if self.session_count().await >= self.max_sessions {
            return Err(SessionLimitError::Full(self.max_sessions));
        }
        Ok(self.inner.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>
    {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>
    {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>
    {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(self.inner.restore_session(id).await?)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// State of [`http_guard`].
#[derive(Clone)]
struct HttpGuard {
    manager: Arc<CappedSessionManager>,
    max_sessions: usize,
}

/// A JSON-RPC error response (`id: null`) with an HTTP status.
fn jsonrpc_error(status: http::StatusCode, code: i64, message: String) -> axum::response::Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    let mut resp = axum::response::Response::new(axum::body::Body::from(body.to_string()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

/// In front of rmcp's service, for POSTs with a JSON content type: a body that is not
/// JSON gets HTTP 400 / JSON-RPC -32700, and a new `initialize` (no session id) while
/// every session slot is taken gets HTTP 503 with a JSON-RPC error naming the limit. The
/// body is read up to rmcp's own limit and handed on unchanged.
async fn http_guard(
    axum::extract::State(guard): axum::extract::State<HttpGuard>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use http_body_util::BodyExt as _;

    let is_json_post = request.method() == http::Method::POST
        && request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
            });
    if !is_json_post {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_BODY_BYTES);
    let bytes = match limited.collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) => {
            let too_large = e.is::<http_body_util::LengthLimitError>();
            return if too_large {
                jsonrpc_error(
                    http::StatusCode::PAYLOAD_TOO_LARGE,
                    -32600,
                    format!("request body exceeds {MAX_BODY_BYTES} bytes"),
                )
            } else {
                jsonrpc_error(
                    http::StatusCode::BAD_REQUEST,
                    -32700,
                    format!("cannot read the request body: {e}"),
                )
            };
        }
    };
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return jsonrpc_error(
                http::StatusCode::BAD_REQUEST,
                -32700,
                format!("parse error: the body is not valid JSON ({e})"),
            );
        }
    };
    let new_session = !parts.headers.contains_key("mcp-session-id")
        && message.get("method").and_then(Value::as_str) == Some("initialize");
    if new_session && guard.manager.session_count().await >= guard.max_sessions {
        return jsonrpc_error(
            http::StatusCode::SERVICE_UNAVAILABLE,
            -32000,
            SessionLimitError::Full(guard.max_sessions).to_string(),
        );
    }
    let request = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
    next.run(request).await
}

/// The largest request body accepted (by [`http_guard`] and by rmcp behind it).
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Stdin and stdout as non-blocking tokio pipes, when both are pipes (FIFOs).
///
/// The non-blocking flag (`O_NONBLOCK`) belongs to the open file description, which a
/// duplicated descriptor shares: with the original fds, setting it would also make fd 2
/// non-blocking when stderr is the same pipe (`2>&1`), and logging would then fail with
/// `EAGAIN` (it aborted the process), and it would leak into the parent that handed us the
/// pipe. So each pipe is opened afresh through `/proc/self/fd/N`, which gives this process
/// a private file description of the same pipe; only that one is made non-blocking. Where
/// that is impossible (no `/proc`, not a pipe) the caller falls back to blocking streams.
#[cfg(target_os = "linux")]
fn stdio_pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let is_fifo = |fd: u8| {
        std::fs::metadata(format!("/proc/self/fd/{fd}")).is_ok_and(|m| m.file_type().is_fifo())
    };
    if !is_fifo(0) || !is_fifo(1) {
        return None;
    }
    // Opened non-blocking: opening a FIFO blocks until the other end is open, and if
    // the client already closed its end that would be forever (for writing it fails
    // with ENXIO instead, and we fall back).
    let open = |path: &str, write: bool| {
        std::fs::OpenOptions::new()
            .read(!write)
            .write(write)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .ok()
    };
    let stdin = open("/proc/self/fd/0", false)?;
    let stdout = open("/proc/self/fd/1", true)?;
    // `from_file` refuses anything that is not a FIFO and sets O_NONBLOCK on our private
    // descriptions only.
    let read = tokio::net::unix::pipe::Receiver::from_file(stdin).ok()?;
    let write = tokio::net::unix::pipe::Sender::from_file(stdout).ok()?;
    Some((read, write))
}

/// Elsewhere there is no private reopening of a pipe: use the blocking-pool streams.
#[cfg(all(unix, not(target_os = "linux")))]
fn stdio_pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    None
}

fn loopback_hosts(port: u16) -> Vec<String> {
    ["localhost", "127.0.0.1", "[::1]", "::1"]
        .iter()
        .flat_map(|h| [h.to_string(), format!("{h}:{port}")])
        .collect()
}

fn loopback_origins() -> Vec<String> {
    ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The MCP annotations derived from a tool's declared permissions.
pub fn annotations_for(name: &str, permissions: &[Permission]) -> ToolAnnotations {
    let hints = ServedHints::of(permissions);
    ToolAnnotations::with_title(name)
        .read_only(hints.read_only)
        .destructive(hints.destructive)
        .open_world(hints.open_world)
}

fn tool_of(entry: &ToolEntry) -> Tool {
    let schema: JsonObject = match entry.parameters() {
        Value::Object(m) => m.clone(),
        _ => JsonObject::new(),
    };
    Tool::new(
        entry.name().to_string(),
        entry.description().to_string(),
        Arc::new(schema),
    )
    .with_annotations(annotations_for(entry.name(), entry.permissions()))
}

fn error_result(kind: &str, message: String) -> CallToolResult {
    let mut r = CallToolResult::error(vec![ContentBlock::text(format!("Error: {message}"))]);
    r.structured_content = Some(json!({"error": kind, "message": message}));
    r
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut info = ServerConfig::new(caps)
            .with_server_info(Implementation::new(self.name.clone(), self.version.clone()));
        if let Some(i) = &self.instructions {
            info = info.with_instructions(i.clone());
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.registry.entries().iter().map(|e| tool_of(e)).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.registry.entry(name).map(|e| tool_of(&e))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let mut ctx = ToolContext::new("mcp", context.id.to_string())
            .with_cancellation(context.ct.child_token());
        let mut forward = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (tx, mut rx) = mpsc::unbounded_channel();
            ctx = ctx.with_progress(tx);
            let peer: Peer<RoleServer> = context.peer.clone();
            forward = Some(tokio::spawn(async move {
                while let Some(ev) = rx.recv().await {
                    let mut p = ProgressNotificationParam::new(token.clone(), ev.progress);
                    p.total = ev.total;
                    p.message = ev.message;
                    if peer.notify_progress(p).await.is_err() {
                        break;
                    }
                }
            }));
        }
        let call = ToolCall::with_id(
            format!("mcp-{}", context.id),
            request.name.to_string(),
            args,
        );
        let inv = self.registry.invoke_call(call, &ctx).await;
        drop(ctx);
        if let Some(f) = forward {
            // Let queued progress reach the client before the result.
            let _ = tokio::time::timeout(Duration::from_millis(200), f).await;
        }
        let result = match inv.output {
            Ok(out) => {
                let structured = match out.canonical {
                    Value::Object(m) => Value::Object(m),
                    other => json!({ "result": other }),
                };
                let mut r = CallToolResult::success(vec![ContentBlock::text(out.render)]);
                r.structured_content = Some(structured);
                r
            }
            Err(e) => error_result(e.kind(), e.to_string()),
        };
        Ok(CallToolResponse::Complete(result))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let generation = *self.registry.watch_changes().borrow();
        self.session
            .initialized_at
            .store(generation, std::sync::atomic::Ordering::SeqCst);
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Legacy (initialize) session: push list_changed on this peer, for every change
        // after the `initialize` answer. Tools loading in the background may have been
        // registered before this notification arrived (a `tools/list` sent meanwhile may
        // or may not have seen them): then one list_changed goes out at once.
        let peer = context.peer.clone();
        let mut rx = self.registry.watch_changes();
        let now = *rx.borrow_and_update();
        let at_init = self
            .session
            .initialized_at
            .load(std::sync::atomic::Ordering::SeqCst);
        let missed = at_init != u64::MAX && at_init != now;
        tokio::spawn(async move {
            if missed && peer.notify_tool_list_changed().await.is_err() {
                return;
            }
            loop {
                tokio::select! {
                    r = rx.changed() => if r.is_err() { break },
                    _ = tokio::time::sleep(Duration::from_secs(30)) => {
                        if peer.is_transport_closed() { break }
                        continue;
                    }
                }
                if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut rx = self.registry.watch_changes();
        rx.borrow_and_update();
        loop {
            tokio::select! {
                _ = context.cancelled() => break,
                r = rx.changed() => {
                    if r.is_err() { break }
                    if context.sink().notify_tool_list_changed().await.is_err() { break }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_become_annotations() {
        let a = annotations_for("t", &[]);
        assert_eq!(
            (a.read_only_hint, a.destructive_hint, a.open_world_hint),
            (Some(true), Some(false), Some(false))
        );
        let a = annotations_for("t", &[Permission::Read, Permission::Network]);
        assert_eq!(
            (a.read_only_hint, a.destructive_hint, a.open_world_hint),
            (Some(true), Some(false), Some(true))
        );
        let a = annotations_for("t", &[Permission::Delete]);
        assert_eq!(
            (a.read_only_hint, a.destructive_hint),
            (Some(false), Some(true))
        );
        let a = annotations_for("t", &[Permission::Write]);
        assert_eq!(
            (a.read_only_hint, a.destructive_hint),
            (Some(false), Some(false))
        );
    }
}
