//! What the Streamable HTTP server's parts share below them: its resource bounds
//! ([`HttpLimits`], read by the listener and the session store) and the JSON-RPC error
//! reply a request refused before rmcp sees it gets (a missing credential, a limit).

use std::time::Duration;

use serde_json::json;

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
    /// MCP sessions (`initialize` handshakes) alive at once. At the cap, a new one closes
    /// the least recently used session without a request in flight; it is refused (HTTP
    /// 503 and a JSON-RPC error) only when every session is busy. Default 256.
    pub max_sessions: usize,
    /// The most sessions one client (its bearer token, else its IP address) may hold; a
    /// new one beyond closes the client's own least recently used idle session, or is
    /// refused when all of them are busy. `None`: half of `max_sessions`, rounded up
    /// ([`HttpLimits::session_share`]).
    pub max_sessions_per_client: Option<usize>,
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

    /// The per-client share in force: `max_sessions_per_client`, else half of
    /// `max_sessions` rounded up; at least 1 and at most `max_sessions`.
    pub fn session_share(&self) -> usize {
        let max = self.max_sessions.max(1);
        self.max_sessions_per_client
            .unwrap_or(max.div_ceil(2))
            .clamp(1, max)
    }
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Self::DEFAULT_HEADER_READ_TIMEOUT,
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            max_sessions: Self::DEFAULT_MAX_SESSIONS,
            max_sessions_per_client: None,
            session_idle: Self::DEFAULT_SESSION_IDLE,
        }
    }
}

/// A JSON-RPC error response (`id: null`) with an HTTP status.
pub(crate) fn jsonrpc_error(
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
