//! The resource bounds of `McpServer::serve_http_with` over real HTTP on 127.0.0.1, each
//! attacked with raw sockets and followed by a good call through `McpClient`:
//! half-sent requests are closed after the header-read timeout, the session cap refuses
//! the next `initialize` with a clear JSON-RPC error, an idle session expires and frees its
//! slot, and a body that is not JSON gets HTTP 400 / -32700.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use toolhost_core::tools::{DynamicTool, ToolOutput, ToolRegistry};
use toolhost_mcp::server::HttpLimits;
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
    let options = toolhost_mcp::server::HttpServeOptions {
        limits,
        ..Default::default()
    };
    crate::support::serve_http(McpServer::new(registry()), "127.0.0.1:0", options).await
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
async fn the_session_cap_refuses_the_next_initialize_and_delete_frees_a_slot() {
    let limits = HttpLimits {
        max_sessions: 2,
        ..HttpLimits::default()
    };
    let (addr, stop) = start(limits).await;
    let (s1, id1, _) = initialize(addr).await;
    let (s2, id2, _) = initialize(addr).await;
    assert_eq!((s1, s2), (200, 200));
    let (id1, _id2) = (id1.unwrap(), id2.unwrap());

    let (status, _head, body) = initialize(addr).await;
    assert_eq!(status, 503, "{body}");
    let err: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(err["jsonrpc"], "2.0");
    let msg = err["error"]["message"].as_str().unwrap();
    assert!(msg.contains("session limit reached: 2"), "{msg}");
    assert!(msg.contains("--max-sessions"), "{msg}");

    // The client ends one session: its slot is free again for a good call.
    let (status, _, _) = raw(addr, "DELETE", &[("Mcp-Session-Id", &id1)], "").await;
    assert!(
        status == 200 || status == 202 || status == 204,
        "DELETE gave {status}"
    );
    good_call(addr).await;
    stop.cancel();
}

#[tokio::test]
async fn an_idle_session_expires_and_frees_its_slot() {
    let limits = HttpLimits {
        max_sessions: 1,
        session_idle: Duration::from_millis(300),
        ..HttpLimits::default()
    };
    let (addr, stop) = start(limits).await;
    let (status, id, _) = initialize(addr).await;
    assert_eq!(status, 200);
    let id = id.unwrap();
    // The one slot is taken ...
    let (status, _, _) = initialize(addr).await;
    assert_eq!(status, 503);
    // ... until the idle session expires (it sees no traffic from here on).
    let mut freed = false;
    for _ in 0..300 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (status, new_id, _) = initialize(addr).await;
        if status == 200 {
            // Give the slot back for the good call below.
            let new_id = new_id.unwrap();
            raw(addr, "DELETE", &[("Mcp-Session-Id", &new_id)], "").await;
            freed = true;
            break;
        }
    }
    assert!(freed, "the idle session never expired");
    // The expired session is gone for good.
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (status, _, _) = raw(
        addr,
        "POST",
        &[
            ("Content-Type", "application/json"),
            ("Mcp-Session-Id", &id),
        ],
        list,
    )
    .await;
    assert_eq!(status, 404);
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
