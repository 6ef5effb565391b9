//! Pending loads: while a load is pending, a call of an unknown tool waits until the tool
//! is registered (or every load finished, or the wait timed out); once nothing is
//! pending, an unknown tool fails with `NotFound` at once.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use serde_json::json;
use toolhost_core::tools::*;

use crate::support::*;

#[tokio::test]
async fn a_call_waits_for_a_tool_that_is_still_loading() {
    let reg = ToolRegistry::new();
    let guard = reg.begin_loading();
    assert!(reg.is_loading());
    let late = reg.clone();
    let runs = Arc::new(AtomicUsize::new(0));
    let r2 = runs.clone();
    let loader = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        late.register(counting_tool("echo", vec![], r2)).unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(guard);
    });
    let inv = reg.invoke_recorded("echo", json!({"text": "hi"})).await;
    assert_eq!(inv.output.unwrap().canonical, json!("hi"));
    // Another unknown name waits until the load is over, then is not found.
    let inv = reg.invoke_recorded("nope", json!({})).await;
    assert!(matches!(inv.output, Err(ToolError::NotFound(_))), "{inv:?}");
    loader.await.unwrap();
    assert!(!reg.is_loading());
    reg.loaded().await;
}

#[tokio::test]
async fn without_pending_loads_an_unknown_tool_fails_at_once() {
    let reg = ToolRegistry::new().with_timeout(Duration::from_secs(3600));
    {
        let _done = reg.begin_loading();
    }
    let inv = tokio::time::timeout(
        Duration::from_secs(5),
        reg.invoke_recorded("nope", json!({})),
    )
    .await
    .expect("no wait without a pending load");
    assert!(matches!(inv.output, Err(ToolError::NotFound(_))), "{inv:?}");
}

#[tokio::test]
async fn the_wait_is_bounded_by_the_callers_deadline_and_cancellation() {
    let reg = ToolRegistry::new();
    let _pending = reg.begin_loading();
    let ctx = ToolContext::default()
        .with_deadline(tokio::time::Instant::now() + Duration::from_millis(50));
    let inv = reg
        .invoke_call(ToolCall::new("nope", json!({})), &ctx)
        .await;
    let err = inv.output.unwrap_err();
    assert_eq!(err.kind(), "other", "{err}");
    assert!(err.to_string().contains("still loading"), "{err}");

    let token = tokio_util::sync::CancellationToken::new();
    let ctx = ToolContext::default().with_cancellation(token.clone());
    token.cancel();
    let inv = reg
        .invoke_call(ToolCall::new("nope", json!({})), &ctx)
        .await;
    assert!(
        matches!(inv.output, Err(ToolError::Cancelled(_))),
        "{inv:?}"
    );
}
