//! Bearer authentication of `McpServer::serve_http_opts` over real HTTP (reqwest and
//! `McpClient`): hostile requests (no token, a wrong one, the right one with a byte more,
//! an empty `Bearer`, the `Basic` scheme, two `Authorization` headers, on POST, GET and
//! DELETE) get 401 with `WWW-Authenticate: Bearer realm="toolhost"` and a JSON-RPC error,
//! then a good call with the token still works; a non-loopback bind without a token is
//! refused; a 0.0.0.0 bind with a token serves clients that have it (Host still checked);
//! and the client reports a 401 as `McpClientError::Unauthorized` with what to do.

use std::net::SocketAddr;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost_mcp::server::{BearerTokens, HttpServeOptions};
use toolhost_mcp::{McpClient, McpClientError, McpServeError, McpServer, McpTransport};

const TOKEN: &str = "tok-0123456789abcdef0123456789abcdef";

fn tokens() -> BearerTokens {
    let mut t = BearerTokens::new();
    t.add(TOKEN, "test").unwrap();
    t
}

/// Serves the native `add` of `http_limits` on `bind` with `options`; returns the bound
/// address.
async fn start(bind: &str, options: HttpServeOptions) -> (SocketAddr, CancellationToken) {
    crate::support::serve_http(
        McpServer::new(super::http_limits::registry()),
        bind,
        options,
    )
    .await
}

fn with_token() -> HttpServeOptions {
    HttpServeOptions {
        auth: Some(tokens()),
        ..HttpServeOptions::default()
    }
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "0"}}})
    .to_string()
}

/// One request to `/mcp` at `addr` with `headers`; returns status, WWW-Authenticate and
/// the body.
async fn request(
    addr: SocketAddr,
    method: reqwest::Method,
    headers: &[(&str, &str)],
) -> (u16, Option<String>, String) {
    let mut req = reqwest::Client::new()
        .request(
            method.clone(),
            format!("http://127.0.0.1:{}/mcp", addr.port()),
        )
        .header("accept", "application/json, text/event-stream");
    if method == reqwest::Method::POST {
        req = req
            .header("content-type", "application/json")
            .body(initialize());
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let challenge = resp
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string());
    (status, challenge, resp.text().await.unwrap())
}

fn assert_refused(what: &str, (status, challenge, body): (u16, Option<String>, String)) {
    assert_eq!(status, 401, "{what}: {body}");
    let challenge = challenge.unwrap_or_else(|| panic!("{what}: no WWW-Authenticate"));
    assert!(
        challenge.starts_with(r#"Bearer realm="toolhost""#),
        "{what}: {challenge}"
    );
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["jsonrpc"], "2.0", "{what}: {body}");
    assert!(body["error"]["code"].is_i64(), "{what}: {body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("unauthorized"), "{what}: {message}");
    assert!(
        !message.contains(TOKEN),
        "{what}: the token leaked: {message}"
    );
}

/// A good `add` through `McpClient`, sending the token as an `Authorization` header.
async fn good_call(addr: SocketAddr) {
    let transport = McpTransport::StreamableHttp {
        url: format!("http://127.0.0.1:{}/mcp", addr.port()),
        headers: Some(vec![("Authorization".into(), format!("Bearer {TOKEN}"))]),
    };
    let client = McpClient::new("self", transport).with_timeout(10);
    client.connect().await.unwrap();
    let out = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(out, json!({"result": 5}));
    let _ = client.close().await;
}

/// Starts a real toolhost server guarded by the token and makes a good call to it.
pub(crate) async fn good_call_with_a_token() {
    let (addr, stop) = start("127.0.0.1:0", with_token()).await;
    good_call(addr).await;
    stop.cancel();
}

#[tokio::test]
async fn requests_without_the_bearer_token_get_401_and_a_good_call_still_works() {
    let (addr, stop) = start("127.0.0.1:0", with_token()).await;
    use reqwest::Method;
    let wrong = format!("Bearer {}", "x".repeat(TOKEN.len()));
    let longer = format!("Bearer {TOKEN}x");
    let shorter = format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]);
    let basic = format!("Basic {TOKEN}");
    let good = format!("Bearer {TOKEN}");
    assert_refused("no token", request(addr, Method::POST, &[]).await);
    for (what, value) in [
        ("a wrong token", wrong.as_str()),
        ("the token with a trailing byte", longer.as_str()),
        ("the token without its last byte", shorter.as_str()),
        ("an empty bearer", "Bearer "),
        ("the bare scheme", "Bearer"),
        ("the Basic scheme", basic.as_str()),
    ] {
        let (status, challenge, body) =
            request(addr, Method::POST, &[("authorization", value)]).await;
        assert!(
            challenge
                .as_deref()
                .is_some_and(|c| c.contains("invalid_token")),
            "{what}: {challenge:?}"
        );
        assert_refused(what, (status, challenge, body));
    }
    // Two Authorization headers, one of them right: refused (which one counts would be
    // up to whoever reads the headers).
    let mut req = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{}/mcp", addr.port()))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(initialize());
    req = req
        .header("authorization", good.as_str())
        .header("authorization", wrong.as_str());
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    // GET (the SSE stream) and DELETE (end a session) are guarded too, session id or not.
    assert_refused("GET", request(addr, Method::GET, &[]).await);
    assert_refused(
        "DELETE",
        request(addr, Method::DELETE, &[("mcp-session-id", "some-session")]).await,
    );
    // The right token: the raw initialize is answered.
    let (status, _, body) = request(addr, Method::POST, &[("authorization", &good)]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("serverInfo"), "{body}");
    good_call(addr).await;
    stop.cancel();
}

#[tokio::test]
async fn a_public_bind_is_refused_without_a_token() {
    let options = HttpServeOptions {
        allow_remote: true,
        ..HttpServeOptions::default()
    };
    let err = McpServer::new(super::http_limits::registry())
        .serve_http_opts(
            "0.0.0.0:0".parse().unwrap(),
            options,
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpServeError::RemoteWithoutAuth(_)), "{err}");
    assert!(err.to_string().contains("--auth-token-file"), "{err}");
    // An empty token set is no token.
    let options = HttpServeOptions {
        allow_remote: true,
        auth: Some(BearerTokens::new()),
        ..HttpServeOptions::default()
    };
    let err = McpServer::new(super::http_limits::registry())
        .serve_http_opts(
            "0.0.0.0:0".parse().unwrap(),
            options,
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpServeError::RemoteWithoutAuth(_)), "{err}");
    // Any Host without a token would switch off the DNS-rebinding check.
    let options = HttpServeOptions {
        allowed_hosts: vec!["*".into()],
        ..HttpServeOptions::default()
    };
    let err = McpServer::new(super::http_limits::registry())
        .serve_http_opts(
            "127.0.0.1:0".parse().unwrap(),
            options,
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpServeError::AnyHostWithoutAuth), "{err}");
}

#[tokio::test]
async fn a_public_bind_with_a_token_serves_clients_that_have_it() {
    let options = HttpServeOptions {
        allow_remote: true,
        allowed_hosts: vec!["toolhost.example".into()],
        ..with_token()
    };
    let (addr, stop) = start("0.0.0.0:0", options).await;
    let good = format!("Bearer {TOKEN}");
    assert_refused("no token", request(addr, reqwest::Method::POST, &[]).await);
    // The token does not switch off the Host check: an unknown name is still refused.
    let (status, _, body) = request(
        addr,
        reqwest::Method::POST,
        &[("authorization", &good), ("host", "evil.example")],
    )
    .await;
    assert!(status == 403 || status == 421, "{status} {body}");
    // A name the operator allowed is served.
    let (status, _, body) = request(
        addr,
        reqwest::Method::POST,
        &[("authorization", &good), ("host", "toolhost.example")],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    good_call(addr).await;
    stop.cancel();
}

#[tokio::test]
async fn the_client_reports_a_401_as_unauthorized_with_what_to_do() {
    let (addr, stop) = start("127.0.0.1:0", with_token()).await;
    let url = format!("http://127.0.0.1:{}/mcp", addr.port());
    let client = McpClient::new("guarded", McpTransport::http(&url)).with_timeout(10);
    let err = client.connect().await.unwrap_err();
    let text = err.to_string();
    match &err {
        McpClientError::Unauthorized { server, status, .. } => {
            assert_eq!(server, "guarded");
            assert_eq!(*status, 401);
        }
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    assert!(text.contains("bearer_token_env"), "{text}");
    assert!(text.contains(r#"realm=\"toolhost\""#), "{text}");
    assert!(!text.contains("WorkerTransport"), "{text}");
    // A wrong token: the message says the token was refused.
    let transport = McpTransport::StreamableHttp {
        url: url.clone(),
        headers: Some(vec![(
            "Authorization".into(),
            format!("Bearer {}", "y".repeat(40)),
        )]),
    };
    let err = McpClient::new("guarded", transport)
        .with_timeout(10)
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(err, McpClientError::Unauthorized { status: 401, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("refused"), "{err}");
    good_call(addr).await;
    stop.cancel();
}

/// A hostile server: every request gets 401 with a `WWW-Authenticate` asking for OAuth,
/// 5000 bytes long, with quotes, backslashes and a tab (the only control character HTTP
/// lets through; rmcp passes on only visible-ASCII challenges).
async fn hostile_oauth_server(with_challenge: bool) -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let _ = s.read(&mut buf).await;
                let challenge = format!(
                    "Bearer resource_metadata=\"http://evil.example/.well-known/x\", \
                     junk=\"\\\"\tX {}\"",
                    "A".repeat(5000)
                );
                let body = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"no"}}"#;
                let challenge = if with_challenge {
                    format!("WWW-Authenticate: {challenge}\r\n")
                } else {
                    String::new()
                };
                let resp = format!(
                    "HTTP/1.1 401 Unauthorized\r\n{challenge}\
                     Content-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn an_oauth_challenge_is_named_and_shown_escaped_and_bounded() {
    let addr = hostile_oauth_server(true).await;
    let client =
        McpClient::new("oauthy", McpTransport::http(format!("http://{addr}/mcp"))).with_timeout(10);
    let err = client.connect().await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, McpClientError::Unauthorized { status: 401, .. }),
        "{text}"
    );
    assert!(text.contains("OAuth"), "{text}");
    assert!(text.contains("toolhost mcp login oauthy"), "{text}");
    assert!(
        !text.contains('\t'),
        "a raw tab reached the message: {text}"
    );
    assert!(text.contains("\\tX"), "{text}");
    assert!(text.len() < 1200, "not bounded: {} bytes", text.len());
    // Without a challenge, the status still makes it a clear Unauthorized.
    let addr = hostile_oauth_server(false).await;
    let err = McpClient::new("bare", McpTransport::http(format!("http://{addr}/mcp")))
        .with_timeout(10)
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(err, McpClientError::Unauthorized { status: 401, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("bearer_token_env"), "{err}");
    // The good call afterwards: a real server with the token.
    let (addr, stop) = start("127.0.0.1:0", with_token()).await;
    good_call(addr).await;
    stop.cancel();
}

#[tokio::test]
async fn a_broken_oauth_credential_file_is_reported_and_a_good_call_still_works() {
    // Hostile: the stored credentials of the server are garbage with terminal escapes.
    let dir = std::env::temp_dir().join(format!("toolhost-oauth-broken-{}", std::process::id()));
    let store = toolhost_mcp::OAuthStore::new(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(store.path("oauthy").unwrap(), "\u{1b}[2J{not json").unwrap();
    let addr = hostile_oauth_server(true).await;
    let err = McpClient::new("oauthy", McpTransport::http(format!("http://{addr}/mcp")))
        .with_timeout(10)
        .with_oauth_store(Some(store.clone()))
        .connect()
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("toolhost mcp logout oauthy"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
    // Without stored credentials the OAuth challenge asks for a login.
    assert!(store.remove("oauthy").unwrap());
    let err = McpClient::new("oauthy", McpTransport::http(format!("http://{addr}/mcp")))
        .with_timeout(10)
        .with_oauth_store(Some(store))
        .connect()
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("toolhost mcp login oauthy"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    // The good call afterwards: a real server with the token.
    let (addr, stop) = start("127.0.0.1:0", with_token()).await;
    good_call(addr).await;
    stop.cancel();
}
