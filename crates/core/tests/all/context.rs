//! The call context (values in, results out) and the events and audit log.

use std::sync::Arc;

use serde_json::{Value, json};
use toolhost_core::tools::*;

#[derive(Clone, Debug, PartialEq)]
struct ApiToken(String);
#[derive(Clone, Debug, PartialEq)]
struct RowsScanned(u64);

#[tokio::test]
async fn context_values_flow_in_and_result_values_flow_out() {
    let reg = ToolRegistry::new();
    reg.register(
        DynamicTool::builder("authed")
            .description("Needs an API token from the host")
            .handler(|_, ctx| async move {
                let token = ctx.require::<ApiToken>()?.0.clone();
                ctx.insert_result(RowsScanned(42));
                Ok(ToolOutput::text(format!("used {}", token.len())))
            })
            .build_dyn(),
    )
    .unwrap();
    let ctx = ToolContext::new("s", "t").with(ApiToken("abc".into()));
    let inv = reg
        .invoke_call(ToolCall::new("authed", json!({})), &ctx)
        .await;
    assert_eq!(inv.output.as_ref().unwrap().render, "used 3");
    assert_eq!(inv.extensions.get::<RowsScanned>(), Some(&RowsScanned(42)));
    // Without the value the tool gets a clear error.
    let inv = reg.invoke_recorded("authed", json!({})).await;
    assert!(inv.output.unwrap_err().to_string().contains("ApiToken"));
}

#[tokio::test]
async fn events_and_audit_log_with_redaction() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let reg = ToolRegistry::new();
    reg.add_listener(Arc::new(JsonlAuditSink::open(&audit).unwrap()));
    reg.register(
        DynamicTool::builder("login")
            .description("Log in with a user name and password")
            .parameters(json!({"type": "object", "properties": {"user": {"type": "string"}, "password": {"type": "string"}}}))
            .handler(|_, _| async { Ok(ToolOutput::text("welcome")) })
            .build_dyn(),
    )
    .unwrap();
    let mut rx = reg.subscribe();
    reg.invoke_call(
        ToolCall::with_id(
            "c-9",
            "login",
            json!({"user": "bob", "password": "hunter2"}),
        ),
        &ToolContext::default(),
    )
    .await;
    let first = rx.recv().await.unwrap();
    let second = rx.recv().await.unwrap();
    assert!(matches!(first, ToolEvent::Started { ref call_id, .. } if call_id == "c-9"));
    assert!(matches!(second, ToolEvent::Completed { ok: true, .. }));

    let text = std::fs::read_to_string(&audit).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["event"], "started");
    assert_eq!(lines[0]["input"]["user"], "bob");
    assert_eq!(lines[0]["input"]["password"], "[REDACTED]");
    assert!(!text.contains("hunter2"));
    assert_eq!(lines[1]["event"], "completed");
    assert!(lines[1]["duration"].as_f64().unwrap() >= 0.0);
}
