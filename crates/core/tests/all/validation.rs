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

/// A `null` for an optional parameter whose schema does not allow it is left out, and the
/// tool gets the rest; a `null` for a required one is refused, as is a `null` that is not
/// the only problem; a schema that allows `null` gets it as it was.
#[tokio::test]
async fn a_null_for_an_optional_parameter_is_left_out() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let reg = ToolRegistry::new();
    reg.register(
        DynamicTool::builder("flags")
            .description("A tool with optional typed parameters")
            .parameters(json!({"type": "object", "properties": {
                "region": {"type": "string"},
                "verbose": {"type": "boolean"},
                "note": {"type": ["string", "null"]}}, "required": ["region"],
                "additionalProperties": false}))
            .handler({
                let seen = seen.clone();
                move |args, _| {
                    let seen = seen.clone();
                    async move {
                        seen.lock().unwrap().push(args);
                        Ok(ToolOutput::text("ran"))
                    }
                }
            })
            .build_dyn(),
    )
    .unwrap();

    let inv = reg
        .invoke_recorded(
            "flags",
            json!({"region": "eu", "verbose": null, "note": null}),
        )
        .await;
    assert!(inv.is_ok(), "{:?}", inv.output);
    assert_eq!(
        seen.lock().unwrap().pop().unwrap(),
        json!({"region": "eu", "note": null}),
        "only the null the schema refuses is left out"
    );

    // A required parameter's null is an error, as is a null beside another problem.
    for bad in [
        json!({"region": null}),
        json!({"region": "eu", "verbose": null, "extra": 1}),
        json!({"region": 7, "verbose": null}),
    ] {
        let inv = reg.invoke_recorded("flags", bad.clone()).await;
        assert!(
            matches!(inv.output, Err(ToolError::InvalidArguments(..))),
            "{bad}: {:?}",
            inv.output
        );
    }
    assert!(seen.lock().unwrap().is_empty(), "no invalid call may run");

    let inv = reg
        .invoke_recorded("flags", json!({"region": "eu", "verbose": true}))
        .await;
    assert!(inv.is_ok());
    assert_eq!(
        seen.lock().unwrap().pop().unwrap(),
        json!({"region": "eu", "verbose": true})
    );
}
