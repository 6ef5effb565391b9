//! Resource updates through the gateway to a 2026-07-28 client's `subscriptions/listen`
//! stream, from a wrapped server of each revision: the older revisions' fixture (its
//! `resources/subscribe`) and a 2026-07-28 server (the TypeScript SDK 2.x,
//! `fixtures/native_2026_server.cjs`), which has no `resources/subscribe`: toolhost asks
//! it for the updates on a listen stream of its own (`resourceSubscriptions`).

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use serde_json::Value;
use toolhost_testkit::http::{mcp_2026, rpc_message};
use toolhost_testkit::peers;

use crate::conformance::{Native2026, gateway, one_at_a_time, serve_gateway};

/// What a listen stream carried until an update of `want` (or its end).
struct Heard {
    /// The acknowledgment.
    acknowledged: Option<Value>,
    /// The update of `want`.
    updated: Option<Value>,
    /// The URIs of the other updates.
    others: Vec<Value>,
    /// Every line, for the report.
    seen: Vec<String>,
}

/// Opens `subscriptions/listen` on `serve` at `addr` for the updates of `uris`, and reads
/// it until an update of `want` comes (at most 20 s).
fn listen_until(addr: &str, uris: &[String], want: &str) -> Heard {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {
            "notifications": {"resourceSubscriptions": uris},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "listen-test", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    })
    .to_string();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut heard = Heard {
        acknowledged: None,
        updated: None,
        others: Vec::new(),
        seen: Vec::new(),
    };
    // The stream's keep-alives restart the read timeout: the whole read has a deadline too.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    for line in BufReader::new(s).lines() {
        let Ok(line) = line else { break };
        if std::time::Instant::now() > deadline {
            break;
        }
        heard.seen.push(line.clone());
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let Ok(msg) = serde_json::from_str::<Value>(data.trim()) else {
            continue;
        };
        match msg["method"].as_str() {
            Some("notifications/subscriptions/acknowledged") => heard.acknowledged = Some(msg),
            Some("notifications/resources/updated") if msg["params"]["uri"] == want => {
                heard.updated = Some(msg);
                break;
            }
            Some("notifications/resources/updated") => {
                heard.others.push(msg["params"]["uri"].clone());
            }
            _ => {}
        }
    }
    heard
}

/// `tools/call` of `tool` (no arguments) on `serve` at `addr`, as a 2026-07-28 client.
fn call(addr: &str, tool: &str) -> Value {
    let r = mcp_2026(
        addr,
        "tools/call",
        Some(tool),
        serde_json::json!({"name": tool, "arguments": {}}),
        serde_json::json!({}),
    )
    .unwrap();
    rpc_message(&r).unwrap()
}

/// A 2026-07-28 `subscriptions/listen` stream through the gateway follows the wrapped
/// server's resources it names: the fixture announces an update 50 ms after being
/// subscribed to, and the stream carries it under the URI the client used. A filter
/// naming 102 resources is cut to 64 in the acknowledgment, and none past the 64th is
/// followed (the fixture accepts any URI, so those within the cut may send updates too).
/// A good call follows.
#[test]
fn a_2026_listen_stream_follows_the_resources_it_names() {
    let _serial = one_at_a_time();
    let Some(suite) = peers::suite() else { return };
    let (_dir, serve) = gateway("conformance-listen", &suite, "");
    let addr = serve.addr();
    let watched = "test://watched-resource";
    let mut uris = vec![watched.to_string(), "test://no-such-resource".to_string()];
    uris.extend((0..100).map(|i| format!("test://made-up-{i}")));
    let heard = listen_until(&addr, &uris, watched);
    let seen = &heard.seen;
    let acknowledged = heard
        .acknowledged
        .unwrap_or_else(|| panic!("no acknowledgment: {seen:?}"));
    let accepted = acknowledged["params"]["notifications"]["resourceSubscriptions"]
        .as_array()
        .unwrap_or_else(|| panic!("{acknowledged}"))
        .len();
    assert_eq!(accepted, 64, "{acknowledged}");
    let updated = heard
        .updated
        .unwrap_or_else(|| panic!("no update: {seen:?}\n{}", serve.stderr()));
    assert_eq!(updated["params"]["uri"], watched, "{updated}");
    // Within the cut: the watched one, the unknown one, made-up 0 to 61.
    for uri in &heard.others {
        let n = uri
            .as_str()
            .and_then(|u| u.strip_prefix("test://made-up-"))
            .and_then(|n| n.parse::<usize>().ok());
        assert!(
            uri == "test://no-such-resource" || n.is_some_and(|n| n < 62),
            "an update for a resource past the cut: {uri}"
        );
    }
    let msg = call(&addr, "test_simple_text");
    assert!(msg.to_string().contains("simple text response"), "{msg}");
}

/// A wrapped 2026-07-28 server has no `resources/subscribe`: a client's listen stream
/// naming its resource makes toolhost ask the server for that resource's updates on
/// toolhost's own listen stream, and the server's updates reach the client. After the
/// client's stream closes, a second stream is followed the same way, and a good call
/// follows.
#[test]
fn a_wrapped_2026_servers_resource_updates_reach_a_listening_client() {
    let _serial = one_at_a_time();
    let Some(suite) = peers::suite() else { return };
    let native = Native2026::start(&suite);
    let dir = toolhost_testkit::temp_dir("listen-native-2026");
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    std::fs::write(dir.join("toolhost.toml"), native.config()).unwrap();
    let serve = serve_gateway(&dir);
    let addr = serve.addr();
    let watched = "test://native-watched";
    for round in 0..2 {
        let heard = listen_until(&addr, &[watched.to_string()], watched);
        let seen = &heard.seen;
        let acknowledged = heard
            .acknowledged
            .unwrap_or_else(|| panic!("round {round}: no acknowledgment: {seen:?}"));
        assert_eq!(
            acknowledged["params"]["notifications"]["resourceSubscriptions"],
            serde_json::json!([watched]),
            "{acknowledged}"
        );
        let updated = heard.updated.unwrap_or_else(|| {
            panic!(
                "round {round}: no update of the wrapped 2026-07-28 server's resource: \
                 {seen:?}\n{}",
                serve.stderr()
            )
        });
        assert_eq!(updated["params"]["uri"], watched, "{updated}");
    }
    let msg = call(&addr, "hello");
    assert!(msg.to_string().contains("hello from 2026"), "{msg}");
}
