//! Calls over one kept-alive HTTP/1.1 connection must be as quick as calls that each open
//! a fresh connection: `McpServer::serve_http_with` on 127.0.0.1 with a native `add`, and a
//! raw-socket client that reads every response exactly (chunked SSE or Content-Length) so
//! the same socket carries the next request.
//!
//! The stall this guards against: the server writes a streamed response in more than one
//! segment (the SSE event, then the chunked terminator). With Nagle's algorithm on the
//! server socket, the last small segment waits until the client has acknowledged the
//! previous one, and a client in delayed-ACK mode holds that acknowledgement for ~40 ms.
//! A fresh connection hides it (Linux acknowledges immediately at the start of a
//! connection), so a keep-alive client paid ~44 ms per `tools/call` where a
//! connection-per-call client paid under 1 ms. `TCP_NODELAY` on accepted sockets
//! (server/http.rs) removes it. The check compares the two kinds of calls made in the same
//! test, in alternation, as a ratio with a wide margin, never against an absolute time:
//! the stall is tens of milliseconds per call, far above any scheduling noise.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use toolhost_mcp::server::HttpLimits;

use crate::http_limits::{good_call, start};

/// Calls of each kind.
const CALLS: usize = 30;

/// One HTTP/1.1 connection that stays open between requests.
struct Conn {
    stream: BufReader<TcpStream>,
    addr: SocketAddr,
}

/// A response read exactly to its end.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message of the body: plain JSON, or the `data:` of an SSE event.
    fn message(&self) -> Value {
        if let Ok(v) = serde_json::from_str(&self.body) {
            return v;
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .find_map(|d| serde_json::from_str::<Value>(d).ok())
            .unwrap_or_else(|| panic!("no JSON-RPC message in the body: {:?}", self.body))
    }
}

impl Conn {
    async fn open(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).await.unwrap();
        Self {
            stream: BufReader::new(stream),
            addr,
        }
    }

    /// POSTs `body` to `/mcp` in one write and reads the whole response.
    async fn post(&mut self, session: Option<&str>, body: &str) -> Response {
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: keep-alive\r\n\
             Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.addr.port(),
            body.len()
        );
        if let Some(id) = session {
            req.push_str(&format!(
                "Mcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-06-18\r\n"
            ));
        }
        req.push_str("\r\n");
        req.push_str(body);
        self.stream
            .get_mut()
            .write_all(req.as_bytes())
            .await
            .unwrap();
        // A guard against a hang, not a timing assertion.
        tokio::time::timeout(Duration::from_secs(30), self.read_response())
            .await
            .expect("the server never finished the response")
    }

    async fn line(&mut self) -> String {
        let mut line = String::new();
        let n = self.stream.read_line(&mut line).await.unwrap();
        assert!(n > 0, "the server closed the kept-alive connection");
        line.trim_end_matches(['\r', '\n']).to_string()
    }

    async fn read_response(&mut self) -> Response {
        let status_line = self.line().await;
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP status line: {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let l = self.line().await;
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').unwrap();
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        let mut resp = Response {
            status,
            headers,
            body: String::new(),
        };
        let chunked = resp
            .header("transfer-encoding")
            .is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
        let mut body = Vec::new();
        if chunked {
            loop {
                let size_line = self.line().await;
                let size = usize::from_str_radix(size_line.split(';').next().unwrap().trim(), 16)
                    .unwrap_or_else(|_| panic!("bad chunk size line: {size_line:?}"));
                if size == 0 {
                    // Trailers (none expected), then the empty line that ends the message.
                    while !self.line().await.is_empty() {}
                    break;
                }
                let start = body.len();
                body.resize(start + size, 0);
                self.stream.read_exact(&mut body[start..]).await.unwrap();
                assert_eq!(self.line().await, "", "chunk not followed by CRLF");
            }
        } else if let Some(len) = resp.header("content-length") {
            body.resize(len.parse().unwrap(), 0);
            self.stream.read_exact(&mut body).await.unwrap();
        } else {
            assert!(
                status == 202 || status == 204 || status == 304,
                "a response with no length on a kept-alive connection: {status}"
            );
        }
        resp.body = String::from_utf8(body).unwrap();
        resp
    }
}

fn call(id: usize) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "add", "arguments": {"a": id, "b": 1}}})
    .to_string()
}

/// Checks one `tools/call add` answer: HTTP 200 and the right sum.
fn check_sum(resp: &Response, id: usize) {
    assert_eq!(resp.status, 200, "{}", resp.body);
    let msg = resp.message();
    assert_eq!(msg["id"], json!(id), "{msg}");
    let sum = &msg["result"]["structuredContent"]["result"];
    assert_eq!(sum, &json!(id + 1), "{msg}");
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::test]
async fn keepalive_calls_do_not_stall_on_delayed_acks() {
    let (addr, stop) = start(HttpLimits::default()).await;

    // One session, set up on the connection that stays open for every kept-alive call.
    let mut kept = Conn::open(addr).await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "keepalive", "version": "0"}}})
    .to_string();
    let resp = kept.post(None, &init).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert!(resp.message()["result"]["serverInfo"].is_object());
    let session = resp
        .header("mcp-session-id")
        .expect("initialize answered without mcp-session-id")
        .to_string();
    let resp = kept
        .post(
            Some(&session),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
        .await;
    assert_eq!(resp.status, 202, "{}", resp.body);

    // Warm both paths once, then alternate the two kinds so that whatever else the machine
    // is doing weighs on both alike.
    check_sum(&kept.post(Some(&session), &call(1)).await, 1);
    check_sum(
        &Conn::open(addr).await.post(Some(&session), &call(2)).await,
        2,
    );
    let (mut keepalive, mut fresh) = (Vec::new(), Vec::new());
    for i in 0..CALLS {
        let id = 10 + 2 * i;
        let t = Instant::now();
        let resp = kept.post(Some(&session), &call(id)).await;
        keepalive.push(t.elapsed());
        check_sum(&resp, id);

        let t = Instant::now();
        let mut conn = Conn::open(addr).await;
        let resp = conn.post(Some(&session), &call(id + 1)).await;
        fresh.push(t.elapsed());
        check_sum(&resp, id + 1);
    }
    let (k, f) = (median(keepalive), median(fresh));
    eprintln!("tools/call median over {CALLS}: kept-alive {k:?}, fresh connection {f:?}");
    // A stall costs ~40 ms on every kept-alive call; a kept-alive call without one is no
    // slower than a fresh connection (which also pays the TCP handshake).
    assert!(
        k <= f * 4 + Duration::from_millis(5),
        "kept-alive calls stall: median {k:?} against {f:?} on a fresh connection \
         (is TCP_NODELAY set on accepted sockets?)"
    );

    good_call(addr).await;
    stop.cancel();
}
