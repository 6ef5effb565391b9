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

/// The protocol revision of [`mcp_2026`].
pub const REVISION_2026: &str = "2026-07-28";

/// A stateless request of the 2026-07-28 revision: `method` with `params` (a JSON object;
/// `_meta` with the protocol version, client info and `capabilities` is added unless it
/// has one), the `MCP-Protocol-Version`, `Mcp-Method` and (for `name`) `Mcp-Name`
/// headers, and no session.
pub fn mcp_2026(
    addr: &str,
    method: &str,
    name: Option<&str>,
    params: serde_json::Value,
    capabilities: serde_json::Value,
) -> std::io::Result<Response> {
    mcp_2026_as(addr, None, method, name, params, capabilities)
}

/// [`mcp_2026`] with `Authorization: Bearer TOKEN` when `token` is given.
pub fn mcp_2026_as(
    addr: &str,
    token: Option<&str>,
    method: &str,
    name: Option<&str>,
    mut params: serde_json::Value,
    capabilities: serde_json::Value,
) -> std::io::Result<Response> {
    if let Some(p) = params.as_object_mut() {
        p.entry("_meta").or_insert_with(|| {
            serde_json::json!({
                "io.modelcontextprotocol/protocolVersion": REVISION_2026,
                "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            })
        });
    }
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", REVISION_2026),
        ("Mcp-Method", method),
    ];
    if let Some(n) = name {
        headers.push(("Mcp-Name", n));
    }
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    request(addr, "POST", "/mcp", &headers, &body.to_string())
}

/// The JSON-RPC message of a response body: the body itself (`application/json`), or
/// the last `data:` line of an event stream that holds a result or an error.
pub fn rpc_message(r: &Response) -> Option<serde_json::Value> {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(r.body.trim()) {
        return Some(v);
    }
    r.body
        .lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
        .find(|v| v.get("result").is_some() || v.get("error").is_some())
}
