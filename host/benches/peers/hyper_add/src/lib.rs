//! The `add` tool for hyper-mcp, the Extism-based MCP server the MCP benchmark compares
//! `toolhost serve --stdio` against: the same kind of tool as the `calc` example's `add`
//! and server-everything's `get-sum` (two integers in, their sum out as text).
//!
//! hyper-mcp's "v2" plugin interface (hyper-mcp 0.8.3, `src/plugin.rs`): the host calls the
//! export `list_tools` with `{"context": …}` and expects an MCP `ListToolsResult`, and
//! `call_tool` with `{"request": CallToolRequestParams, "context": …}` and expects an MCP
//! `CallToolResult`, all as JSON. hyper-mcp names the tool `PLUGIN-add` to its clients,
//! where PLUGIN is the plugin's key in its config file.

use extism_pdk::{FnResult, Json, plugin_fn};
use serde_json::{Value, json};

/// Lists the one tool, `add`, with the JSON Schema of its arguments.
#[plugin_fn]
pub fn list_tools(Json(_input): Json<Value>) -> FnResult<Json<Value>> {
    Ok(Json(json!({
        "tools": [{
            "name": "add",
            "description": "Add two integers a and b",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "a": {"type": "integer"},
                    "b": {"type": "integer"}
                },
                "required": ["a", "b"]
            }
        }]
    })))
}

/// Runs `add`: the sum of the integers `a` and `b` as text, or an error result (not a
/// trap) for an unknown tool, missing or non-integer arguments, or an overflowing sum.
#[plugin_fn]
pub fn call_tool(Json(input): Json<Value>) -> FnResult<Json<Value>> {
    let request = &input["request"];
    let name = request["name"].as_str().unwrap_or_default();
    let args = &request["arguments"];
    let outcome = if name != "add" {
        Err(format!("unknown tool {name:?}: this plugin has only `add`"))
    } else {
        match (args["a"].as_i64(), args["b"].as_i64()) {
            (Some(a), Some(b)) => a
                .checked_add(b)
                .map(|sum| sum.to_string())
                .ok_or_else(|| format!("{a} + {b} overflows a 64-bit integer")),
            _ => Err("`a` and `b` must both be integers".to_string()),
        }
    };
    let (text, is_error) = match outcome {
        Ok(sum) => (sum, false),
        Err(message) => (message, true),
    };
    Ok(Json(json!({
        "content": [{"type": "text", "text": text}],
        "isError": is_error
    })))
}
