//! What a 401 from an HTTP MCP server is explained as, against real HTTP servers on
//! 127.0.0.1 (axum): a bare `WWW-Authenticate: Bearer` from a server that publishes OAuth
//! metadata at its well-known paths (path-based or root protected-resource metadata, or
//! only the 2025-03-26 root authorization server metadata) names `toolhost mcp login NAME`;
//! one that publishes none gets the static token advice; a 401 on `tools/list` or
//! `tools/call` after a good `initialize` says what to do, without rmcp's internal type
//! names. Hostile: metadata paths that never answer or send a body that never ends are
//! bounded (the probe's budget and size limit), then a good server still works.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use toolhost_mcp::oauth::METADATA_PROBE_BUDGET;
use toolhost_mcp::{McpClient, McpClientError, McpTransport};

/// What the fake server publishes under `/.well-known/`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Publishes {
    /// Protected-resource metadata at `/.well-known/oauth-protected-resource/mcp` (the
    /// path-based form) naming an authorization server on another origin.
    PathResourceMetadata,
    /// Protected-resource metadata at the root, `/.well-known/oauth-protected-resource`,
    /// naming an authorization server on the same origin that publishes its metadata.
    RootResourceMetadata,
    /// Only authorization server metadata at the root of the origin,
    /// `/.well-known/oauth-authorization-server` (the 2025-03-26 revision).
    RootAuthorizationServer,
    /// Nothing: 404 everywhere.
    Nothing,
    /// Hostile: every well-known path is accepted and never answered.
    Hang,
    /// Hostile: every well-known path answers 200 with a body that never ends.
    Endless,
}

/// Which MCP requests get 401.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Guard {
    /// All of them.
    Everything,
    /// All but `initialize` (and its notification): the handshake succeeds, then
    /// `tools/list` and `tools/call` are refused.
    AfterInitialize,
}

struct Fake {
    addr: SocketAddr,
    publishes: Publishes,
    guard: Guard,
    /// Bytes of endless body handed to the connection.
    sent: AtomicU64,
}

/// One chunk of the endless body (JSON whitespace).
static CHUNK: [u8; 64 * 1024] = [b' '; 64 * 1024];

fn json_response(status: StatusCode, body: Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn refused() -> Response {
    Response::builder()
        .status(StatusCode::UNAUTHORIZED)
        .header("www-authenticate", "Bearer")
        .header("content-type", "application/json")
        .body(Body::from(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"unauthorized"}}"#,
        ))
        .unwrap()
}

fn not_found() -> Response {
    Response::builder()
        .status(StatusCode::NOT_FOUND)
        .body(Body::empty())
        .unwrap()
}

impl Fake {
    async fn well_known(self: Arc<Self>, path: &str) -> Response {
        let a = self.addr;
        let server_metadata = |issuer: String| {
            json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "registration_endpoint": format!("{issuer}/register"),
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
            })
        };
        match (self.publishes, path) {
            (Publishes::Hang, _) => {
                let () = std::future::pending().await;
                not_found()
            }
            (Publishes::Endless, _) => {
                let fake = self.clone();
                let body = futures::stream::repeat_with(move || {
                    fake.sent.fetch_add(CHUNK.len() as u64, Ordering::Relaxed);
                    Ok::<_, Infallible>(Bytes::from_static(&CHUNK))
                });
                Response::builder()
                    .header("content-type", "application/json")
                    .body(Body::from_stream(body))
                    .unwrap()
            }
            (Publishes::PathResourceMetadata, "/.well-known/oauth-protected-resource/mcp") => {
                json_response(
                    StatusCode::OK,
                    json!({"resource": format!("http://{a}/mcp"),
                           "authorization_servers": ["https://auth.invalid/"]}),
                )
            }
            (Publishes::RootResourceMetadata, "/.well-known/oauth-protected-resource") => {
                json_response(
                    StatusCode::OK,
                    json!({"resource": format!("http://{a}/mcp"),
                           "authorization_servers": [format!("http://{a}/as")]}),
                )
            }
            (Publishes::RootResourceMetadata, "/.well-known/oauth-authorization-server/as") => {
                json_response(StatusCode::OK, server_metadata(format!("http://{a}/as")))
            }
            (Publishes::RootAuthorizationServer, "/.well-known/oauth-authorization-server") => {
                json_response(StatusCode::OK, server_metadata(format!("http://{a}")))
            }
            _ => not_found(),
        }
    }

    fn mcp(&self, body: &[u8]) -> Response {
        if self.guard == Guard::Everything {
            return refused();
        }
        let Ok(request) = serde_json::from_slice::<Value>(body) else {
            return json_response(StatusCode::BAD_REQUEST, json!({}));
        };
        let id = request["id"].clone();
        match request["method"].as_str().unwrap_or("") {
            "initialize" => Response::builder()
                .header("content-type", "application/json")
                .header("mcp-session-id", "s1")
                .body(Body::from(
                    json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "half-guarded", "version": "0"}}})
                    .to_string(),
                ))
                .unwrap(),
            _ if id.is_null() => Response::builder()
                .status(StatusCode::ACCEPTED)
                .body(Body::empty())
                .unwrap(),
            "tools/list" | "tools/call" => refused(),
            _ => json_response(
                StatusCode::OK,
                json!({"jsonrpc": "2.0", "id": id,
                       "error": {"code": -32601, "message": "method not found"}}),
            ),
        }
    }
}

async fn handle(State(fake): State<Arc<Fake>>, method: Method, uri: Uri, body: Bytes) -> Response {
    let path = uri.path();
    if path.starts_with("/.well-known/") {
        return fake.well_known(path).await;
    }
    match (path, method) {
        ("/mcp", Method::POST) => fake.mcp(&body),
        ("/mcp", _) if fake.guard == Guard::Everything => refused(),
        ("/mcp", _) => Response::builder()
            .status(StatusCode::METHOD_NOT_ALLOWED)
            .body(Body::empty())
            .unwrap(),
        _ => not_found(),
    }
}

/// Starts a fake server; returns it (for its byte count) and its MCP endpoint.
async fn start(publishes: Publishes, guard: Guard) -> (Arc<Fake>, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let fake = Arc::new(Fake {
        addr,
        publishes,
        guard,
        sent: AtomicU64::new(0),
    });
    let app = axum::Router::new()
        .fallback(handle)
        .with_state(fake.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (fake, format!("http://{addr}/mcp"))
}

/// Connects as `name` (sending `token` when given) and returns the refusal's text.
async fn refusal(name: &str, url: &str, token: Option<&str>) -> String {
    let transport = McpTransport::StreamableHttp {
        url: url.to_string(),
        headers: token.map(|t| vec![("Authorization".into(), format!("Bearer {t}"))]),
    };
    let err = McpClient::new(name, transport)
        .with_timeout(10)
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(err, McpClientError::Unauthorized { status: 401, .. }),
        "{err:?}"
    );
    err.to_string()
}

fn assert_no_internal_names(text: &str) {
    for internal in ["rmcp::", "WorkerTransport", "Transport [", "StreamableHttp"] {
        assert!(!text.contains(internal), "{internal} in: {text}");
    }
}

#[tokio::test]
async fn published_resource_metadata_names_the_login() {
    for publishes in [
        Publishes::PathResourceMetadata,
        Publishes::RootResourceMetadata,
    ] {
        let (_fake, url) = start(publishes, Guard::Everything).await;
        let text = refusal("remote", &url, None).await;
        assert!(
            text.contains("toolhost mcp login remote"),
            "{publishes:?}: {text}"
        );
        assert!(text.contains("OAuth"), "{publishes:?}: {text}");
        // A refused static token: the login is named as the other way in.
        let text = refusal("remote", &url, Some("a-static-token")).await;
        assert!(text.contains("refused"), "{publishes:?}: {text}");
        assert!(
            text.contains("toolhost mcp login remote"),
            "{publishes:?}: {text}"
        );
    }
}

#[tokio::test]
async fn root_authorization_server_metadata_of_2025_03_26_names_the_login() {
    let (_fake, url) = start(Publishes::RootAuthorizationServer, Guard::Everything).await;
    let text = refusal("legacy", &url, None).await;
    assert!(text.contains("toolhost mcp login legacy"), "{text}");
}

#[tokio::test]
async fn no_metadata_anywhere_gets_the_static_token_advice() {
    let (_fake, url) = start(Publishes::Nothing, Guard::Everything).await;
    let text = refusal("plain", &url, None).await;
    assert!(text.contains("bearer_token_env"), "{text}");
    assert!(!text.contains("mcp login"), "{text}");
    let text = refusal("plain", &url, Some("a-static-token")).await;
    assert!(text.contains("refused"), "{text}");
    assert!(!text.contains("mcp login"), "{text}");
}

#[tokio::test]
async fn a_401_after_initialize_says_what_to_do_without_internal_names() {
    for (publishes, advice) in [
        (Publishes::Nothing, "bearer_token_env"),
        (Publishes::PathResourceMetadata, "toolhost mcp login half"),
    ] {
        let (_fake, url) = start(publishes, Guard::AfterInitialize).await;
        let client = McpClient::new("half", McpTransport::http(&url)).with_timeout(10);
        client.connect().await.unwrap();
        let err = client.list_tools().await.unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, McpClientError::Unauthorized { status: 401, .. }),
            "{publishes:?}: {err:?}"
        );
        assert!(text.contains(advice), "{publishes:?}: {text}");
        assert_no_internal_names(&text);
        // A call (reconnecting first if the refusal closed the connection) is refused
        // the same way.
        let err = client
            .call_tool("anything", json!({}))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(advice), "{publishes:?}: {err}");
        assert_no_internal_names(&err);
        let _ = client.close().await;
    }
}

#[tokio::test]
async fn hostile_metadata_paths_are_bounded_then_a_good_server_still_works() {
    // Generous next to the real bound (the probe's budget), far under what an unbounded
    // probe would take (forever, or rmcp's 30 s per request).
    let limit = METADATA_PROBE_BUDGET * 3;
    for publishes in [Publishes::Hang, Publishes::Endless] {
        let (fake, url) = start(publishes, Guard::Everything).await;
        let started = Instant::now();
        let text = refusal("hostile", &url, None).await;
        let took = started.elapsed();
        assert!(took < limit, "{publishes:?}: {took:?}");
        // Nothing usable was found: the static advice, as for a server without metadata.
        assert!(text.contains("bearer_token_env"), "{publishes:?}: {text}");
        let sent = fake.sent.load(Ordering::Relaxed);
        assert!(
            sent < 32 * 1024 * 1024,
            "{publishes:?}: {sent} bytes were read"
        );
    }
    // A good server afterwards: its metadata is found and the login named.
    let (_fake, url) = start(Publishes::PathResourceMetadata, Guard::Everything).await;
    let text = refusal("good", &url, None).await;
    assert!(text.contains("toolhost mcp login good"), "{text}");
    // And a good call to a real toolhost server with its token.
    super::http_auth::good_call_with_a_token().await;
}
