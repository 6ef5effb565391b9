//! The Streamable HTTP front of [`McpServer`]: its own hyper accept loop (header-read
//! timeout, connection cap, `TCP_NODELAY`, the peer address handed to the guard), the
//! guard in front of rmcp's service (HTTP 400 / -32700 for a body that is not JSON;
//! admission of a new session by the session store of `server/sessions.rs`, HTTP 503 when
//! it refuses; a POST to a session marked in flight until its response is sent), Host /
//! Origin validation (loopback names, plus the operator's `--allowed-host` names), and,
//! when tokens are configured, bearer authentication in front of everything
//! ([`super::auth`]). Limits and their defaults: [`HttpLimits`], docs/mcp.md.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::SessionId;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::auth::{AuthenticatedToken, BearerTokens};
use super::http_limits::{HttpLimits, jsonrpc_error};
use super::sessions::{CappedSessionManager, ClientKey, SessionCounters, with_reservation};
use crate::error::McpServeError;

impl McpServer {
    /// The Streamable HTTP service (an axum router) to mount at `/mcp` on an axum router
    /// (`nest_service`), with Host and Origin validation for `port` on loopback, the
    /// session rules of `limits` and the guard that enforces them. Clients are told apart
    /// by the peer address when the router is served with
    /// `into_make_service_with_connect_info::<SocketAddr>()`; otherwise only the cap
    /// applies, not the per-client share.
    pub fn http_service(
        &self,
        port: u16,
        stop: CancellationToken,
        limits: &HttpLimits,
    ) -> axum::Router {
        let manager = Arc::new(CappedSessionManager::new(limits));
        let service = self.http_service_on(port, &[], stop, manager.clone());
        guarded(service, manager)
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
        let manager = Arc::new(CappedSessionManager::with_counters(
            &limits,
            options.session_counters.clone(),
        ));
        // The sessions outlive `stop` until their connections are drained: a call in
        // flight when the server is asked to stop finishes and its answer is sent (a
        // graceful shutdown); only then, or when this future is dropped (the caller's
        // drain deadline), are the sessions' tasks cancelled.
        let sessions = CancellationToken::new();
        let _end_sessions = sessions.clone().drop_guard();
        let service = self.http_service_on(bound.port(), &hosts, sessions.clone(), manager.clone());
        let in_flight = Arc::new(super::drain::InFlight::default());
        let mut router = axum::Router::new()
            .nest_service("/mcp", guarded(service, manager))
            .layer(axum::middleware::from_fn_with_state(
                in_flight.clone(),
                super::drain::track,
            ));
        // Outermost: nothing else (body parsing, session lookup, Host checks) runs for a
        // request without a valid token.
        if let Some(tokens) = auth {
            router = router.layer(axum::middleware::from_fn_with_state(
                Arc::new(tokens),
                super::auth::require_bearer,
            ));
        }
        on_bound(bound);
        let end_sessions = async {
            stop.cancelled().await;
            in_flight.idle().await;
            sessions.cancel();
            std::future::pending::<()>().await;
        };
        tokio::select! {
            () = serve_connections(listener, router, &limits, stop.clone()) => {}
            () = end_sessions => {}
        }
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
    /// Where the session store counts its evictions and refusals (keep a clone to read
    /// them, e.g. for a metrics endpoint).
    pub session_counters: Arc<SessionCounters>,
}

/// Accepts connections until `stop`, each served by hyper's HTTP/1 server with the
/// header-read timeout, `TCP_NODELAY`, and at most `max_connections` at once (of
/// `limits`, the rest are for MCP sessions). On `stop`, open connections finish their
/// current request and close. Also serves `toolhost serve`'s admin endpoints, so a
/// client that opens connections and never sends a request cannot exhaust them either.
pub async fn serve_connections(
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
                let mut req = req.map(axum::body::Body::new);
                // Who is asking, for the per-client session share (server/sessions.rs).
                req.extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                router.clone().oneshot(req)
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

/// State of [`http_guard`].
#[derive(Clone)]
struct HttpGuard {
    manager: Arc<CappedSessionManager>,
}

/// rmcp's `service` behind [`http_guard`], which enforces `manager`'s session rules.
fn guarded(
    service: StreamableHttpService<McpServer, CappedSessionManager>,
    manager: Arc<CappedSessionManager>,
) -> axum::Router {
    axum::Router::new()
        .fallback_service(service)
        .layer(axum::middleware::from_fn_with_state(
            HttpGuard { manager },
            http_guard,
        ))
}

/// Who sent `parts`, for the per-client share: the bearer token it authenticated with,
/// else the peer's IP address (the port changes with every connection), else unknown.
fn client_key(parts: &http::request::Parts) -> Option<ClientKey> {
    if let Some(t) = parts.extensions.get::<AuthenticatedToken>() {
        return Some(ClientKey::Token(t.index));
    }
    parts
        .extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| ClientKey::Addr(c.0.ip().to_canonical()))
}

/// `response` with `held` kept alive until its body has been sent (or dropped, when the
/// client goes away).
fn hold_until_sent<T: Send + 'static>(
    response: axum::response::Response,
    held: T,
) -> axum::response::Response {
    use http_body_util::BodyExt as _;
    response.map(|body| {
        // The closure owns `held`; it is dropped with the body.
        axum::body::Body::new(body.map_frame(move |frame| {
            let _ = &held;
            frame
        }))
    })
}

/// In front of rmcp's service. For POSTs with a JSON content type: a body that is not
/// JSON gets HTTP 400 / JSON-RPC -32700; a new `initialize` (no session id) is admitted
/// by the session store (which may close idle sessions to make room, and runs the rest of
/// the request with the admitted slot) or gets HTTP 503 with a JSON-RPC error naming the
/// limit; a POST to a session marks it in flight until its response is sent. A GET to a
/// session counts as a use. The body is read up to rmcp's own limit and handed on
/// unchanged.
async fn http_guard(
    axum::extract::State(guard): axum::extract::State<HttpGuard>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use http_body_util::BodyExt as _;

    let session: Option<SessionId> = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.to_owned().into());
    if request.method() == http::Method::GET
        && let Some(id) = &session
    {
        guard.manager.touch(id);
    }
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
    if let Some(id) = session {
        // Marked before rmcp looks the session up, so it cannot be evicted between the
        // lookup and the answer.
        let in_flight = guard.manager.begin_request(&id);
        let request = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
        let response = next.run(request).await;
        return match in_flight {
            Some(held) => hold_until_sent(response, held),
            None => response,
        };
    }
    let new_session = message.get("method").and_then(Value::as_str) == Some("initialize");
    let client = client_key(&parts);
    let request = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
    if !new_session {
        return next.run(request).await;
    }
    match guard.manager.admit(client) {
        Ok(admission) => {
            guard.manager.close_evicted(admission.evicted).await;
            with_reservation(admission.reservation, next.run(request)).await
        }
        Err(e) => jsonrpc_error(http::StatusCode::SERVICE_UNAVAILABLE, -32000, e.to_string()),
    }
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
