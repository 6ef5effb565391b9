//! The Streamable HTTP front of [`McpServer`]: its own hyper accept loop (header-read
//! timeout, connection cap, `TCP_NODELAY`), the session manager with a cap and idle
//! expiry ([`CappedSessionManager`]), the guard in front of rmcp's service (HTTP 400 /
//! -32700 for a body that is not JSON, 503 when every session slot is taken), and Host /
//! Origin validation (loopback names, plus the operator's `--allowed-host` names), and,
//! when tokens are configured, bearer authentication in front of everything
//! ([`super::auth`]). Limits and their defaults: [`HttpLimits`], docs/mcp.md.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::auth::BearerTokens;
use crate::error::McpServeError;

impl McpServer {
    /// The Streamable HTTP service (a tower service) to mount at `/mcp` on an axum router,
    /// with Host and Origin validation for `port` on loopback, and the session cap and
    /// idle expiry of `limits`.
    pub fn http_service(
        &self,
        port: u16,
        stop: CancellationToken,
        limits: &HttpLimits,
    ) -> StreamableHttpService<McpServer, CappedSessionManager> {
        self.http_service_on(port, &[], stop, Arc::new(CappedSessionManager::new(limits)))
    }

    fn http_service_on(
        &self,
        port: u16,
        extra_hosts: &[String],
        stop: CancellationToken,
        manager: Arc<CappedSessionManager>,
    ) -> StreamableHttpService<McpServer, CappedSessionManager> {
        let this = self.clone();
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_origins(loopback_origins())
            .with_cancellation_token(stop)
            .with_max_request_body_bytes(MAX_BODY_BYTES);
        config = if extra_hosts.iter().any(|h| h == ANY_HOST) {
            config.disable_allowed_hosts()
        } else {
            let mut hosts = loopback_hosts(port);
            hosts.extend(extra_hosts.iter().cloned());
            config.with_allowed_hosts(hosts)
        };
        StreamableHttpService::new(move || Ok(this.for_session()), manager, config)
    }

    /// Listens on `addr` and serves `/mcp` until `stop` is cancelled, with the default
    /// [`HttpLimits`] and no authentication. See [`McpServer::serve_http_opts`].
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

    /// Listens on `addr` and serves `/mcp` until `stop` is cancelled, within `limits`,
    /// with no authentication (so only on loopback). See [`McpServer::serve_http_opts`].
    pub async fn serve_http_with(
        self,
        addr: SocketAddr,
        allow_remote: bool,
        limits: HttpLimits,
        stop: CancellationToken,
        on_bound: impl FnOnce(SocketAddr),
    ) -> Result<(), McpServeError> {
        let options = HttpServeOptions {
            allow_remote,
            limits,
            ..HttpServeOptions::default()
        };
        self.serve_http_opts(addr, options, stop, on_bound).await
    }

    /// Listens on `addr` and serves `/mcp` until `stop` is cancelled, as `options` say.
    /// Refuses a non-loopback address unless `allow_remote` and at least one bearer token
    /// is configured, and `*` in `allowed_hosts` without a token. Returns the bound
    /// address through `on_bound` (useful with port 0).
    ///
    /// The accept loop is hyper's HTTP/1 server driven directly rather than `axum::serve`,
    /// which has no header-read timeout (a client could hold a connection open forever by
    /// sending half a request) and no connection cap.
    pub async fn serve_http_opts(
        self,
        addr: SocketAddr,
        options: HttpServeOptions,
        stop: CancellationToken,
        on_bound: impl FnOnce(SocketAddr),
    ) -> Result<(), McpServeError> {
        let auth = options.auth.filter(|t| !t.is_empty());
        if !addr.ip().is_loopback() {
            if !options.allow_remote {
                return Err(McpServeError::NotLoopback(addr.to_string()));
            }
            if auth.is_none() {
                return Err(McpServeError::RemoteWithoutAuth(addr.to_string()));
            }
        }
        if auth.is_none() && options.allowed_hosts.iter().any(|h| h == ANY_HOST) {
            return Err(McpServeError::AnyHostWithoutAuth);
        }
        let limits = options.limits;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| McpServeError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        let bound = listener.local_addr()?;
        // A client that reaches a specific address names it in `Host`; an unspecified
        // address (0.0.0.0, ::) has no such name, so the operator lists them.
        let mut hosts = options.allowed_hosts;
        let ip = bound.ip();
        if !ip.is_loopback() && !ip.is_unspecified() {
            hosts.push(match ip {
                std::net::IpAddr::V4(v4) => v4.to_string(),
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            });
        }
        let manager = Arc::new(CappedSessionManager::new(&limits));
        let service =
            self.http_service_on(bound.port(), &hosts, stop.child_token(), manager.clone());
        let guard = HttpGuard {
            manager,
            max_sessions: limits.max_sessions,
        };
        let mut router = axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn_with_state(guard, http_guard));
        // Outermost: nothing else (body parsing, session lookup, Host checks) runs for a
        // request without a valid token.
        if let Some(tokens) = auth {
            router = router.layer(axum::middleware::from_fn_with_state(
                Arc::new(tokens),
                super::auth::require_bearer,
            ));
        }
        on_bound(bound);
        serve_connections(listener, router, &limits, stop).await;
        Ok(())
    }
}

/// The `allowed_hosts` entry that accepts any `Host` (only with a bearer token).
pub const ANY_HOST: &str = "*";

/// How [`McpServer::serve_http_opts`] serves. The default: loopback only, default
/// limits, no authentication, loopback `Host` names only.
#[derive(Debug, Clone, Default)]
pub struct HttpServeOptions {
    /// Allow a non-loopback address; requires `auth` with at least one token.
    pub allow_remote: bool,
    /// The resource bounds.
    pub limits: HttpLimits,
    /// The bearer tokens every request must carry one of (`Authorization: Bearer ...`);
    /// `None` or empty: no authentication (loopback only).
    pub auth: Option<BearerTokens>,
    /// `Host` names (`name` or `name:port`) accepted besides the loopback names and the
    /// bound address; [`ANY_HOST`] accepts any (only with `auth`). A present `Origin` must
    /// still be a loopback origin.
    pub allowed_hosts: Vec<String>,
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
pub(super) fn jsonrpc_error(
    status: http::StatusCode,
    code: i64,
    message: String,
) -> axum::response::Response {
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
