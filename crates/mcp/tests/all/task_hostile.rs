//! toolhost as the client of a 2026-07-28 server follows the tasks the server makes of its
//! calls; a hostile server (`fixtures/task_hostile.cjs`) whose task never ends, asks
//! forever, ends with a result that is no tool result, answers about another task, or
//! fails with terminal escapes in its message gets a bounded number of polls, a
//! `tasks/cancel` where toolhost gives up, and a clear error; a good call follows each.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_core::tools::ToolContext;
use toolhost_mcp::McpClient;

use crate::support;

/// The fixture on a free port; killed on drop.
async fn start() -> (tokio::process::Child, u16) {
    support::node_fixture_on_port("task_hostile.cjs", &[]).await
}

async fn stats(port: u16) -> Value {
    support::fixture_stats(port).await
}

async fn client(port: u16, timeout_secs: u64) -> McpClient {
    support::client_2026(port, timeout_secs).await
}

async fn call(client: &McpClient, tool: &str) -> Result<String, String> {
    client
        .call_tool_output(tool, json!({}), &ToolContext::default())
        .await
        .map(|o| o.render)
        .map_err(|e| e.to_string())
}

/// A plain call and a task followed to its end, both still fine.
async fn good_calls(client: &McpClient) {
    assert_eq!(call(client, "ping").await.as_deref(), Ok("pong"));
    assert_eq!(call(client, "good").await.as_deref(), Ok("done"));
}

/// Whether the fixture was told to cancel `task`.
async fn cancelled(port: u16, task: &str) -> bool {
    stats(port).await["cancelled"]
        .as_array()
        .is_some_and(|c| c.iter().any(|t| t == task))
}

#[tokio::test]
async fn a_task_that_never_ends_is_polled_gently_and_cancelled_at_the_deadline() {
    let (_server, port) = start().await;
    let client = client(port, 2).await;
    let t0 = Instant::now();
    let e = call(&client, "stuck").await.unwrap_err();
    assert!(e.contains("did not answer"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    // Asked to poll every 0 ms for 2 s: at most one poll every 100 ms.
    let gets = stats(port).await["gets"]["task-1"].as_u64().unwrap_or(0);
    assert!((1..=25).contains(&gets), "{gets} polls in 2 s");
    assert!(cancelled(port, "task-1").await, "{}", stats(port).await);
    good_calls(&client).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_task_that_asks_forever_is_given_up_after_the_round_bound() {
    let (_server, port) = start().await;
    let client = client(port, 30).await;
    let e = call(&client, "asks").await.unwrap_err();
    assert!(e.contains("asked for input more than"), "{e}");
    let updates = stats(port).await["updates"]["task-1"].as_u64().unwrap_or(0);
    assert!((1..=16).contains(&updates), "{updates} answers sent");
    assert!(cancelled(port, "task-1").await, "{}", stats(port).await);
    good_calls(&client).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_tasks_bad_answers_are_clear_errors() {
    let (_server, port) = start().await;
    let client = client(port, 30).await;
    let e = call(&client, "bad_result").await.unwrap_err();
    assert!(e.contains("not a tool result"), "{e}");
    let e = call(&client, "other_id").await.unwrap_err();
    assert!(e.contains("about another task"), "{e}");
    // Given up, so cancelled; a task that ended on its own is not.
    assert!(cancelled(port, "task-2").await, "{}", stats(port).await);
    assert!(!cancelled(port, "task-1").await, "{}", stats(port).await);
    let e = call(&client, "fails").await.unwrap_err();
    assert!(e.contains("the task failed: boom"), "{e}");
    assert!(!e.contains('\u{1b}') && !e.contains('\u{7}'), "{e:?}");
    good_calls(&client).await;
    client.close().await.unwrap();
}
