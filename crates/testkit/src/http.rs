//! Raw HTTP/1.1 on 127.0.0.1, one request a connection (`Connection: close`): what the
//! tests of `serve --http` and its admin endpoints send, byte for byte as written here,
//! so a test sees the status and headers exactly as the server wrote them.

use std::io::{Read, Write};
use std::time::Duration;

/// One response: status (0 when none could be read), head and body.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The status line and headers.
    pub head: String,
    /// The body.
    pub body: String,
}

impl Response {
    /// A header's value (the first of that name, case-insensitive).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
}

/// `METHOD PATH` to `addr` (`127.0.0.1:PORT`) with extra `headers` and `body`; an error
/// when the connection cannot be made or breaks.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<Response> {
    let mut s = std::net::TcpStream::connect(addr)?;
    // A guard against a hang, not a timing assertion.
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    let mut text = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(text.as_bytes())?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok(Response {
        status,
        head: head.to_string(),
        body: body.to_string(),
    })
}

/// A JSON-RPC POST to an MCP endpoint `path` of `addr`, in session `session` if given.
pub fn mcp_post(
    addr: &str,
    path: &str,
    session: Option<&str>,
    body: &str,
) -> std::io::Result<Response> {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(id) = session {
        headers.push(("Mcp-Session-Id", id));
    }
    request(addr, "POST", path, &headers, body)
}

/// `initialize` of the 2025-06-18 revision, for a raw client.
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
/// `notifications/initialized`.
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A session of a raw client at `addr`: `initialize` then `notifications/initialized`;
/// the session id.
pub fn mcp_session(addr: &str) -> std::io::Result<String> {
    let r = mcp_post(addr, "/mcp", None, INITIALIZE)?;
    let id = r
        .header("mcp-session-id")
        .ok_or_else(|| std::io::Error::other(format!("no session id in: {} {}", r.head, r.body)))?;
    mcp_post(addr, "/mcp", Some(&id), INITIALIZED)?;
    Ok(id)
}

/// `tools/call` of `tool` with `args` (JSON text) in `session`: the response.
pub fn mcp_call(addr: &str, session: &str, tool: &str, args: &str) -> std::io::Result<Response> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
    );
    mcp_post(addr, "/mcp", Some(session), &body)
}
