//! The definition of a tool as offered to a model: the OpenAI function-calling shape
//! (`{"type": "function", "function": {name, description, parameters}}`) that chat APIs
//! take. It is the registry's neutral export format; the LLM crate sends it as is and the
//! MCP server maps the same three fields onto an MCP `Tool`. The vocabulary (definition,
//! entry, spec, info) is explained in `docs/design.md`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An OpenAI-style tool definition (`{"type": "function", "function": {...}}`), as sent to
/// chat-completion APIs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function definition.
    pub function: FunctionDefinition,
    /// Example arguments (the tool's `ToolMetadata::input_examples`). Not part of the
    /// OpenAI wire shape: each provider sends them its own way, or not at all.
    #[serde(skip)]
    pub input_examples: Vec<Value>,
}

/// The function part of a [`ToolDefinition`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDefinition {
    /// The tool name.
    pub name: String,
    /// The description.
    pub description: String,
    /// The JSON Schema of the arguments.
    pub parameters: Value,
}
