//! Pipeline stage 2: arguments that fail the schema never run the tool, and the error
//! names the path and the reason.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use toolhost_core::tools::*;

#[tokio::test]
async fn invalid_arguments_give_a_path_and_reason_and_never_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let reg = ToolRegistry::new();
    reg.register(
        DynamicTool::builder("typed")
            .description("A tool with a typed schema")
            .parameters(json!({"type": "object", "properties": {
                "count": {"type": "integer", "minimum": 1},
                "name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}))
            .handler({
                let runs = runs.clone();
                move |_, _| {
                    let runs = runs.clone();
                    async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                        Ok(ToolOutput::text("ran"))
                    }
                }
            })
            .build_dyn(),
    )
    .unwrap();

    let inv = reg
        .invoke_recorded("typed", json!({"name": "x", "count": "three"}))
        .await;
    let msg = match inv.output {
        Err(ToolError::InvalidArguments(t, m)) => {
            assert_eq!(t, "typed");
            m
        }
        other => panic!("expected InvalidArguments, got {other:?}"),
    };
    assert!(msg.contains("'/count'") && msg.contains("integer"), "{msg}");

    let inv = reg
        .invoke_recorded("typed", json!({"count": 0, "extra": true}))
        .await;
    let msg = inv.output.unwrap_err().to_string();
    assert!(msg.contains("top level") && msg.contains("name"), "{msg}");
    assert!(msg.contains("'/count'"), "{msg}");
    assert!(
        reg.invoke_recorded("typed", json!("not an object"))
            .await
            .output
            .is_err()
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the tool must never run on invalid arguments"
    );

    assert!(
        reg.invoke_recorded("typed", json!({"name": "ok"}))
            .await
            .is_ok()
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
