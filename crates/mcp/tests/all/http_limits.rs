//! The resource bounds of `McpServer::serve_http_with` over real HTTP on 127.0.0.1, each
//! attacked with raw sockets and followed by a good call through `McpClient`:
//! half-sent requests are closed after the header-read timeout; at the session cap the
//! least recently used idle session is closed for a newcomer (404 afterwards) while busy
//! ones are kept, and the newcomer is refused with a clear JSON-RPC error only when every
//! session is busy; one peer address holds at most its share; an idle session expires;
//! and a body that is not JSON gets HTTP 400 / -32700.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use toolhost_core::tools::{DynamicTool, ToolOutput, ToolRegistry};
use toolhost_mcp::server::{HttpLimits, HttpServeOptions, SessionCounters};
use toolhost_mcp::{McpClient, McpServer, McpTransport};

pub(crate) fn registry() -> ToolRegistry {
    let r = ToolRegistry::new();
    r.register(
        DynamicTool::builder("add")
            .description("Add two integers a and b")
            .parameters(json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}))
            .handler(|args, _ctx| async move {
                let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                Ok(ToolOutput::json(json!(sum)))
            })
            .build_dyn(),
    )
    .unwrap();
    r
}

/// Serves a native `add` with `limits` on 127.0.0.1 (port 0); returns the bound address.
pub(crate) async fn start(limits: HttpLimits) -> (SocketAddr, CancellationToken) {
    start_counted(limits, registry()).await.0
}

/// Serves `registry` with `limits` on 127.0.0.1 (port 0); returns the bound address and
/// the session store's counters.
async fn start_counted(
    limits: HttpLimits,
    registry: ToolRegistry,
) -> ((SocketAddr, CancellationToken), Arc<SessionCounters>) {
    let counters = Arc::new(SessionCounters::default());
    let options = HttpServeOptions {
        limits,
        session_counters: counters.clone(),
        ..Default::default()
    };
    let served = crate::support::serve_http(McpServer::new(registry), "127.0.0.1:0", options).await;
    (served, counters)
}

/// [`registry`] plus `hold`, which reports that it started and then waits until the
/// returned sender says `true`: a request that stays in flight as long as the test wants.
fn holding_registry() -> (
    ToolRegistry,
    tokio::sync::mpsc::UnboundedReceiver<()>,
    tokio::sync::watch::Sender<bool>,
) {
    let (started_tx, started) = tokio::sync::mpsc::unbounded_channel();
    let (release, released) = tokio::sync::watch::channel(false);
    let r = registry();
    r.register(
        DynamicTool::builder("hold")
            .description("Wait until the test releases the call")
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(move |_args, _ctx| {
                let started = started_tx.clone();
                let mut released = released.clone();
                async move {
                    let _ = started.send(());
                    let _ = released.wait_for(|v| *v).await;
                    Ok(ToolOutput::json(json!("held")))
                }
            })
            .build_dyn(),
    )
    .unwrap();
    (r, started, release)
}

/// A good call through the real client: connect, call `add`, check the sum.
pub(crate) async fn good_call(addr: SocketAddr) {
    let client =
        McpClient::new("self", McpTransport::http(format!("http://{addr}/mcp"))).with_timeout(10);
    client.connect().await.unwrap();
    let out = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(out, json!({"result": 5}));
    let _ = client.close().await;
}

/// One raw HTTP/1.1 request with `Connection: close`; returns (status, headers, body).
async fn raw(
    addr: SocketAddr,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        addr.port(),
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    // A guard against a hang, not a timing assertion.
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut out))
        .await
        .expect("the server never finished the response")
        .unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// A POST of `body` to session `id`: (status, body).
async fn post(addr: SocketAddr, id: &str, body: &str) -> (u16, String) {
    let (status, _, body) = raw(
        addr,
        "POST",
        &[("Content-Type", "application/json"), ("Mcp-Session-Id", id)],
        body,
    )
    .await;
    (status, body)
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
const HOLD: &str =
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hold","arguments":{}}}"#;

/// An `initialize` that must succeed; the new session id.
async fn open(addr: SocketAddr) -> String {
    let (status, id, body) = initialize(addr).await;
    assert_eq!(status, 200, "{body}");
    id.unwrap()
}

async fn initialize(addr: SocketAddr) -> (u16, Option<String>, String) {
    let (status, head, body) =
        raw(addr, "POST", &[("Content-Type", "application/json")], INIT).await;
    (
        status,
        header(&head, "mcp-session-id").map(str::to_string),
        body,
    )
}

#[tokio::test]
async fn half_sent_requests_are_closed_after_the_header_timeout() {
    let limits = HttpLimits {
        header_read_timeout: Duration::from_millis(300),
        ..HttpLimits::default()
    };
    let (addr, stop) = start(limits).await;
    // Twenty clients that send half a request head and then nothing.
    let mut half_open = Vec::new();
    for _ in 0..20 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
            .await
            .unwrap();
        half_open.push(s);
    }
    // And one that connects and sends nothing at all.
    half_open.push(TcpStream::connect(addr).await.unwrap());
    for mut s in half_open {
        let mut buf = [0u8; 512];
        // The server must close the socket (EOF, possibly after a 408 response, or a
        // reset). The 30 s bound only keeps a broken server from hanging the test.
        let closed = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return true,
                    Ok(_) => continue,
                }
            }
        })
        .await
        .unwrap_or(false);
        assert!(closed, "a half-open connection was left open");
    }
    good_call(addr).await;
    stop.cancel();
}

#[tokio::test]
async fn at_the_cap_the_oldest_idle_session_goes_and_only_an_all_busy_server_refuses() {
    let limits = HttpLimits {
        max_sessions: 3,
        // One peer address here: the share is tested below.
        max_sessions_per_client: Some(3),
        ..HttpLimits::default()
    };
    let (registry, mut started, release) = holding_registry();
    let ((addr, stop), counters) = start_counted(limits, registry).await;
    let s1 = open(addr).await;
    let s2 = open(addr).await;
    let s3 = open(addr).await;
    // s2 has a request in flight; s3 is used after s1 was.
    let held2 = tokio::spawn(async move { post(addr, &s2, HOLD).await });
    started.recv().await.unwrap();
    assert_eq!(post(addr, &s3, LIST).await.0, 200);

    // The server is full: the newcomer is admitted, and s1 (least recently used, idle) is
    // closed for it, so its client must initialize again.
    let s4 = open(addr).await;
    assert_eq!(post(addr, &s1, LIST).await.0, 404);
    assert_eq!(post(addr, &s3, LIST).await.0, 200);
    assert_eq!(counters.snapshot().evicted_at_cap, 1);

    // Every session busy: now, and only now, a newcomer is refused, with a clear error.
    let s3c = s3.clone();
    let held3 = tokio::spawn(async move { post(addr, &s3c, HOLD).await });
    let s4c = s4.clone();
    let held4 = tokio::spawn(async move { post(addr, &s4c, HOLD).await });
    started.recv().await.unwrap();
    started.recv().await.unwrap();
    let (status, _id, body) = initialize(addr).await;
    assert_eq!(status, 503, "{body}");
    let err: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(err["jsonrpc"], "2.0");
    assert_eq!(err["error"]["code"], -32000);
    let msg = err["error"]["message"].as_str().unwrap();
    assert!(msg.contains("session limit reached: 3"), "{msg}");
    assert!(msg.contains("request in flight"), "{msg}");
    assert!(msg.contains("--max-sessions"), "{msg}");
    assert_eq!(counters.snapshot().refused_all_busy, 1);

    // The busy sessions were kept: their calls complete.
    release.send(true).unwrap();
    for held in [held2, held3, held4] {
        let (status, body) = held.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("held"), "{body}");
    }
    assert_eq!(post(addr, &s4, LIST).await.0, 200);
    assert_eq!(counters.snapshot().live, 3);
    good_call(addr).await;
    stop.cancel();
}

#[tokio::test]
async fn one_peer_address_holds_at_most_its_share() {
    // A cap of 4 gives each client a share of 2. Every socket here comes from 127.0.0.1
    // (each from its own port): one client.
    let limits = HttpLimits {
        max_sessions: 4,
        ..HttpLimits::default()
    };
    let ((addr, stop), counters) = start_counted(limits, registry()).await;
    let mut ids = Vec::new();
    for _ in 0..6 {
        ids.push(open(addr).await);
    }
    let mut alive = Vec::new();
    for id in &ids {
        alive.push(post(addr, id, LIST).await.0);
    }
    assert_eq!(alive, [404, 404, 404, 404, 200, 200]);
    let counts = counters.snapshot();
    assert_eq!((counts.evicted_over_share, counts.evicted_at_cap), (4, 0));
    assert_eq!(counts.refused(), 0);
    good_call(addr).await;
    stop.cancel();
}

#[tokio::test]
async fn an_idle_session_expires() {
    let limits = HttpLimits {
        session_idle: Duration::from_millis(300),
        ..HttpLimits::default()
    };
    let ((addr, stop), counters) = start_counted(limits, registry()).await;
    let id = open(addr).await;
    // The session sees no traffic from here on: it leaves the store (bounded wait).
    let mut expired = false;
    for _ in 0..600 {
        if counters.snapshot().live == 0 {
            expired = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(expired, "the idle session never expired");
    // The expired session is gone for good.
    assert_eq!(post(addr, &id, LIST).await.0, 404);
    assert_eq!(counters.snapshot().evicted(), 0);
    good_call(addr).await;
    stop.cancel();
}

#[tokio::test]
async fn a_body_that_is_not_json_gets_400_parse_error() {
    let (addr, stop) = start(HttpLimits::default()).await;
    let (status, head, body) = raw(
        addr,
        "POST",
        &[("Content-Type", "application/json")],
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ",
    )
    .await;
    assert_eq!(status, 400, "{head}\n{body}");
    let err: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(err["error"]["code"], -32700);
    assert_eq!(err["id"], Value::Null);
    good_call(addr).await;
    stop.cancel();
}
