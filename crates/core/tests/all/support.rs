//! Helpers shared by the core integration tests.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use toolhost_core::tools::*;

pub fn obj_schema() -> Value {
    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
}

/// A tool that counts its executions and echoes `text`.
pub fn counting_tool(
    name: &str,
    perms: Vec<Permission>,
    runs: Arc<AtomicUsize>,
) -> Arc<dyn BaseTool> {
    DynamicTool::builder(name)
        .description("Echo the text back and count the call")
        .parameters(obj_schema())
        .permissions(perms)
        .handler(move |args, _ctx| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::json(args["text"].clone()))
            }
        })
        .build_dyn()
}
