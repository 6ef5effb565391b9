//! Pipeline stage 5 on content blocks and output schemas: a tool that returns blocks
//! keeps them; blocks over the limits, malformed blocks and a canonical value that breaks
//! the declared output schema are refused with typed errors, and the next good call works.

use std::sync::Arc;

use serde_json::{Value, json};
use toolhost_core::tools::content::{ContentBlock, MediaContent};
use toolhost_core::tools::{DynamicTool, ToolError, ToolMetadata, ToolOutput, ToolRegistry};

/// A tool that returns whatever `make(args)` builds, with an output schema.
fn tool(name: &str, make: fn(&Value) -> ToolOutput) -> Arc<dyn toolhost_core::tools::BaseTool> {
    DynamicTool::builder(name)
        .description("Returns the content blocks the test asks for")
        .handler(move |args, _ctx| async move { Ok(make(&args)) })
        .build_dyn()
}

fn registry() -> ToolRegistry {
    let r = ToolRegistry::new()
        .with_max_content_blocks(100)
        .with_max_content_bytes(64 * 1024);
    r.register(tool("blocks", |args| {
        match args["kind"].as_str().unwrap_or("good") {
            "many" => ToolOutput::blocks(vec![ContentBlock::text("x"); 101]),
            "huge" => ToolOutput::blocks(vec![ContentBlock::image(
                "QUFB".repeat(20_000),
                "image/png",
            )]),
            "bad64" => ToolOutput::blocks(vec![ContentBlock::image("@@not base64@@", "image/png")]),
            "badmime" => ToolOutput::blocks(vec![ContentBlock::Audio(MediaContent {
                data: "QUFB".into(),
                mime_type: "audio/wav\u{1b}]0;pwned\u{7}".into(),
                annotations: None,
            })]),
            _ => ToolOutput::blocks(vec![
                ContentBlock::text("a picture:"),
                ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ]),
        }
    }))
    .unwrap();
    r.register_with(
        tool("weather", |args| {
            if args["kind"] == "bad" {
                ToolOutput::json(json!({"temperature": "hot"}))
            } else {
                ToolOutput::json(json!({"temperature": 22}))
            }
        }),
        ToolMetadata {
            output_schema: Some(json!({
                "type": "object",
                "properties": {"temperature": {"type": "number"}},
                "required": ["temperature"]
            })),
            ..Default::default()
        },
    )
    .unwrap();
    r
}

#[tokio::test]
async fn blocks_pass_and_hostile_blocks_are_refused_with_typed_errors() {
    let r = registry();
    let out = r.invoke_recorded("blocks", json!({})).await.output.unwrap();
    assert_eq!(out.content.len(), 2);
    assert_eq!(
        out.render,
        "a picture:\n[image image/png (12 base64 bytes)]"
    );

    let e = r
        .invoke_recorded("blocks", json!({"kind": "many"}))
        .await
        .output
        .unwrap_err();
    assert!(
        matches!(&e, ToolError::LimitExceeded(n, m) if n == "blocks" && m.contains("101 content blocks")),
        "{e}"
    );
    let e = r
        .invoke_recorded("blocks", json!({"kind": "huge"}))
        .await
        .output
        .unwrap_err();
    assert!(
        matches!(&e, ToolError::LimitExceeded(_, m) if m.contains("limit of 65536")),
        "{e}"
    );
    let e = r
        .invoke_recorded("blocks", json!({"kind": "bad64"}))
        .await
        .output
        .unwrap_err();
    assert!(
        matches!(&e, ToolError::ExecutionFailed(_, m) if m.contains("not valid base64")),
        "{e}"
    );
    let e = r
        .invoke_recorded("blocks", json!({"kind": "badmime"}))
        .await
        .output
        .unwrap_err();
    assert!(
        matches!(&e, ToolError::ExecutionFailed(_, m) if m.contains("is not a MIME type") && !m.contains('\u{1b}')),
        "{e}"
    );
    // The same tool still answers a good call.
    assert!(r.invoke_recorded("blocks", json!({})).await.output.is_ok());
}

#[tokio::test]
async fn a_canonical_value_that_breaks_the_output_schema_is_withheld() {
    let r = registry();
    let e = r
        .invoke_recorded("weather", json!({"kind": "bad"}))
        .await
        .output
        .unwrap_err();
    assert!(
        matches!(&e, ToolError::ExecutionFailed(n, m) if n == "weather" && m.contains("output schema") && m.contains("/temperature")),
        "{e}"
    );
    let out = r
        .invoke_recorded("weather", json!({}))
        .await
        .output
        .unwrap();
    assert_eq!(out.canonical, json!({"temperature": 22}));
}

#[test]
fn an_output_schema_that_does_not_compile_is_refused_at_registration() {
    let r = ToolRegistry::new();
    let e = r
        .register_with(
            tool("odd", |_| ToolOutput::text("x")),
            ToolMetadata {
                output_schema: Some(json!({"type": 12})),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(matches!(e, ToolError::InvalidDefinition(..)), "{e}");
}
