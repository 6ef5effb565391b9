//! One call and its record: [`ToolCall`] goes in, [`ToolInvocation`] comes out of every
//! path through the pipeline.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::base::ToolOutput;
use crate::tools::error::ToolError;

/// One requested call: an id (the model's `tool_call_id`, or any unique string), a tool
/// name and JSON arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id. Empty means "let the registry generate one".
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments.
    pub arguments: Value,
}

impl ToolCall {
    /// A call with a generated id.
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: String::new(),
            name: name.into(),
            arguments,
        }
    }

    /// A call with this id.
    pub fn with_id(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// The record of one invocation. Every path through the pipeline produces one.
#[derive(Debug)]
pub struct ToolInvocation {
    /// The call id.
    pub call_id: String,
    /// The tool name as requested.
    pub tool_name: String,
    /// The arguments as received.
    pub input: Value,
    /// The rendered output (render text already truncated), or the error.
    pub output: Result<ToolOutput, ToolError>,
    /// Wall time of the whole pipeline.
    pub duration: Duration,
    /// Whether the render text was truncated.
    pub truncated: bool,
    /// Result values the tool stored in its context for the host (never shown to the model).
    pub extensions: http::Extensions,
}

impl ToolInvocation {
    /// The text to give the model: the render text, or the error message.
    pub fn model_text(&self) -> String {
        match &self.output {
            Ok(out) => out.render.clone(),
            Err(e) => format!("Error: {e}"),
        }
    }

    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        self.output.is_ok()
    }
}
