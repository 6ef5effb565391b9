//! Network-rule attacks against a real HTTP server on 127.0.0.1: a wildcard rule used to
//! reach an IP literal, user information in the authority, and DNS lookups of names
//! outside the allowlist through wasi:sockets. Each attack is followed by a good call.
//! (Rule parsing, internal ranges and https pinning have unit tests in net.rs and
//! pinned.rs: they need names that resolve to public addresses.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::{call, err_text, still_works, with_policy};

/// An HTTP server answering `hello`; returns its port and a count of requests served.
async fn server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let h = h.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                h.fetch_add(1, Ordering::SeqCst);
                let _ = s
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
                    )
                    .await;
            });
        }
    });
    (port, hits)
}

#[tokio::test]
async fn a_wildcard_rule_does_not_match_an_ip_literal() {
    let (port, hits) = server().await;
    let policy = format!("network = [\"http://*.0.0.1:{port}\"]\n");
    let (reg, _d) = with_policy("hostile", &policy).await;
    let inv = call(
        &reg,
        "http_declared",
        json!({"authority": format!("127.0.0.1:{port}")}),
    )
    .await;
    let e = err_text(&inv);
    assert!(e.contains("denied"), "{e}");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the request reached the server"
    );
    still_works(&reg).await;
}

#[tokio::test]
async fn user_information_in_the_authority_is_refused() {
    let (port, hits) = server().await;
    let policy = format!("network = [\"http://127.0.0.1:{port}\"]\n");
    let (reg, _d) = with_policy("hostile", &policy).await;
    for authority in [
        format!("user@127.0.0.1:{port}"),
        format!("evil.example:x@127.0.0.1:{port}"),
    ] {
        let inv = call(&reg, "http_declared", json!({"authority": authority})).await;
        let e = err_text(&inv);
        assert!(!e.contains("hello"), "{e}");
        assert_eq!(
            hits.load(Ordering::SeqCst),
            0,
            "{authority} reached the server"
        );
        still_works(&reg).await;
    }
    // The same server without user information: allowed.
    let inv = call(
        &reg,
        "http_declared",
        json!({"authority": format!("127.0.0.1:{port}")}),
    )
    .await;
    assert_eq!(
        inv.output.map(|o| o.canonical).ok(),
        Some(json!("hello")),
        "the good request failed"
    );
}

#[tokio::test]
async fn socket_lookups_resolve_only_allowlisted_names() {
    let (port, _hits) = server().await;
    let policy = format!("network = [\"http://127.0.0.1:{port}\"]\nsockets = true\n");
    let (reg, _d) = with_policy("hostile_fs", &policy).await;
    for name in [
        "localhost",
        "exfiltrate-secret.attacker.example",
        "metadata.google.internal",
    ] {
        let inv = call(&reg, "resolve", json!({"name": name})).await;
        let e = err_text(&inv);
        assert!(e.contains("access-denied"), "{name}: {e}");
        assert!(e.contains("only names in `network`"), "{name}: {e}");
    }
    // An IP literal needs no lookup and is allowed.
    let inv = call(&reg, "resolve", json!({"name": "127.0.0.1"})).await;
    assert!(inv.is_ok(), "{}", inv.model_text());
    let inv = call(&reg, "ping", json!({})).await;
    assert!(inv.is_ok(), "{}", inv.model_text());
}
