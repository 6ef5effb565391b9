//! toolhost as the client of a 2026-07-28 server follows its changes through
//! `subscriptions/listen`; a hostile server (`fixtures/listen_hostile.cjs`) that ends
//! every stream at once or floods it costs a bounded number of requests, and a good call
//! follows each attack.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_core::tools::ToolContext;
use toolhost_mcp::McpClient;

use crate::support;

/// The fixture in `mode` on a free port; killed on drop.
async fn start(mode: &str) -> (tokio::process::Child, u16) {
    support::node_fixture_on_port("listen_hostile.cjs", &[mode]).await
}

async fn stats(port: u16) -> Value {
    support::fixture_stats(port).await
}

async fn client(port: u16) -> McpClient {
    support::client_2026(port, 10).await
}

async fn good_call(client: &McpClient) {
    let out = client
        .call_tool_output("ping", json!({}), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!(out.render, "pong");
}

/// Polls `cond` for up to 20 s.
async fn eventually(mut cond: impl AsyncFnMut() -> bool) -> bool {
    for _ in 0..200 {
        if cond().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn a_listed_change_reaches_the_client() {
    let (_server, port) = start("good").await;
    let client = client(port).await;
    let first = client.tools().await.unwrap();
    assert!(!first.iter().any(|t| t.name == "late"));
    assert!(
        eventually(async || client
            .tools()
            .await
            .is_ok_and(|t| t.iter().any(|t| t.name == "late")))
        .await,
        "the change never reached the client: {}",
        stats(port).await
    );
    good_call(&client).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_server_ending_every_stream_is_asked_again_only_after_growing_pauses() {
    let (_server, port) = start("end").await;
    let client = client(port).await;
    assert!(eventually(async || stats(port).await["listens"].as_u64() >= Some(2)).await);
    // Pauses of 0.5, 1, 2 s...: three more seconds add at most three streams (one opened
    // at once after each ending would be thousands).
    let before = stats(port).await["listens"].as_u64().unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = stats(port).await["listens"].as_u64().unwrap();
    assert!(after - before <= 3, "{before} -> {after}");
    good_call(&client).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_flood_of_changes_costs_few_lists() {
    let (_server, port) = start("flood").await;
    let client = client(port).await;
    assert!(eventually(async || stats(port).await["flooded"] == json!(true)).await);
    let first = client.tools().await.unwrap();
    assert!(first.iter().any(|t| t.name == "ping"));
    // 20000 notifications: each only marks the tool cache stale; a few lists follow.
    for _ in 0..5 {
        client.tools().await.unwrap();
    }
    let lists = stats(port).await["lists"].as_u64().unwrap();
    assert!(lists <= 8, "{lists} tools/list for one flood");
    good_call(&client).await;
    client.close().await.unwrap();
}
