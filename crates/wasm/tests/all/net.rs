//! Network: the wasi:http allowlist (scheme, host, port) against two real local HTTP
//! servers, undeclared Network, and raw sockets (off unless granted, checked on IPs).

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::{call, err_text, still_works, with_policy};

/// `http_get` of `url` through the registry.
async fn get(
    reg: &toolhost_core::tools::ToolRegistry,
    url: String,
) -> toolhost_core::tools::ToolInvocation {
    call(reg, "http_get", json!({ "url": url })).await
}

/// A tiny HTTP server answering every request with `body`. Returns its port.
pub(crate) async fn server(body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
            });
        }
    });
    port
}

#[tokio::test]
async fn http_allowlist_is_enforced_on_host_and_port() {
    let a = server("from A").await;
    let b = server("from B").await;
    let policy = format!("network = [\"http://127.0.0.1:{a}\"]\n");
    let (reg, _d) = with_policy("fetch", &policy).await;

    let ok = get(&reg, format!("http://127.0.0.1:{a}/")).await;
    let out = ok
        .output
        .unwrap_or_else(|e| panic!("allowed request failed: {e}"));
    assert_eq!(out.canonical["body"], json!("from A"));

    // Same host, other port: denied, with the policy line that would allow it.
    let inv = get(&reg, format!("http://127.0.0.1:{b}/")).await;
    let e = err_text(&inv);
    assert!(e.contains("denied") && !e.contains("from B"), "{e}");
    assert!(
        e.contains(&format!("add \"http://127.0.0.1:{b}\" to `network`")),
        "{e}"
    );

    // Other host name for the same server: denied (the check is on the URL's host).
    let inv = get(&reg, format!("http://localhost:{a}/")).await;
    assert!(err_text(&inv).contains("denied"));

    // Other scheme: denied.
    let inv = get(&reg, format!("https://127.0.0.1:{a}/")).await;
    assert!(err_text(&inv).contains("denied"));

    let ok = get(&reg, format!("http://127.0.0.1:{a}/")).await;
    assert!(ok.is_ok(), "{}", ok.model_text());
}

#[tokio::test]
async fn a_tool_that_did_not_declare_network_gets_none() {
    let a = server("from A").await;
    let policy = format!("network = [\"http://127.0.0.1:{a}\"]\n");
    let (reg, _d) = with_policy("hostile", &policy).await;
    // The declared tool may go there...
    let ok = call(
        &reg,
        "http_declared",
        json!({"authority": format!("127.0.0.1:{a}")}),
    )
    .await;
    assert_eq!(ok.output.map(|o| o.canonical).ok(), Some(json!("from A")));
    // ...the undeclared one in the same component may not, though the policy offers it.
    let inv = call(
        &reg,
        "http_undeclared",
        json!({"authority": format!("127.0.0.1:{a}")}),
    )
    .await;
    let e = err_text(&inv);
    assert!(e.contains("did not declare the Network permission"), "{e}");
    still_works(&reg).await;
}

#[tokio::test]
async fn raw_sockets_are_off_unless_granted_and_then_checked_on_ips() {
    let a = server("from A").await;
    let b = server("from B").await;
    let policy = format!("network = [\"http://127.0.0.1:{a}\"]\n");
    let (reg, _d) = with_policy("hostile", &policy).await;
    let inv = call(
        &reg,
        "tcp_connect",
        json!({"authority": format!("127.0.0.1:{a}")}),
    )
    .await;
    err_text(&inv);
    still_works(&reg).await;

    let policy = format!("network = [\"http://127.0.0.1:{a}\"]\nsockets = true\n");
    let (reg, _d) = with_policy("hostile", &policy).await;
    let ok = call(
        &reg,
        "tcp_connect",
        json!({"authority": format!("127.0.0.1:{a}")}),
    )
    .await;
    assert!(ok.is_ok(), "{}", ok.model_text());
    let inv = call(
        &reg,
        "tcp_connect",
        json!({"authority": format!("127.0.0.1:{b}")}),
    )
    .await;
    let e = err_text(&inv);
    assert!(
        e.contains(&format!("socket connect to 127.0.0.1:{b} denied")),
        "{e}"
    );
    still_works(&reg).await;
}

#[tokio::test]
async fn a_guest_blocked_in_host_io_is_stopped_at_the_deadline() {
    // A server that accepts and never answers: the guest waits in the host, where no wasm
    // runs for the epoch check to stop.
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let policy = format!("network = [\"http://127.0.0.1:{port}\"]\ntimeout_ms = 300\n");
    let (reg, _d) = with_policy("fetch", &policy).await;
    let start = std::time::Instant::now();
    let inv = get(&reg, format!("http://127.0.0.1:{port}/")).await;
    assert!(
        err_text(&inv).contains("timed out after 300 ms"),
        "{}",
        inv.model_text()
    );
    assert!(
        start.elapsed() < std::time::Duration::from_millis(600),
        "{:?}",
        start.elapsed()
    );
}

/// A host *name* on the allowlist must not lead into the host's own network: `localhost`
/// resolves to 127.0.0.1, so it is refused (no connection is made) with the IP-literal
/// entry that would allow it; the same server through that entry works.
#[tokio::test]
async fn an_allowlisted_name_resolving_to_an_internal_address_is_refused() {
    let a = server("from A").await;
    let policy = format!("network = [\"http://localhost:{a}\"]\n");
    let (reg, _d) = with_policy("fetch", &policy).await;
    let inv = get(&reg, format!("http://localhost:{a}/")).await;
    let e = err_text(&inv);
    assert!(!e.contains("from A"), "{e}");
    assert!(e.contains("internal address"), "{e}");
    assert!(
        e.contains(&format!("add \"http://127.0.0.1:{a}\" to `network`")),
        "{e}"
    );

    let policy = format!("network = [\"http://127.0.0.1:{a}\"]\n");
    let (reg, _d) = with_policy("fetch", &policy).await;
    let ok = get(&reg, format!("http://127.0.0.1:{a}/")).await;
    let out = ok.output.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.canonical["body"], json!("from A"));
}
