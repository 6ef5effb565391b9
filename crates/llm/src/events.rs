//! [`StreamEvent`]: what `LlmCycle::submit_stream_with_tools` reports while it runs.
//!
//! The order is part of the API contract (`docs/llm.md`, "Streaming events"). For a turn in which the model calls tools:
//!
//! ```text
//! Compacted?                           (before the request, when the budget forced it)
//! AssistantTextDelta*                  (text the model writes before its calls)
//! Usage?                               (when the provider reported usage)
//! ToolExecutionStarted   (one per call, in the model's order)
//! TurnComplete { ToolCalls }
//! ToolExecutionProgress* (while the batch runs, as the tools report)
//! ToolExecutionCompleted (one per call, in the model's order, after the batch ran)
//! ```
//!
//! and the final turn is `AssistantTextDelta* TurnComplete { Stop }` (or `Length`, ...),
//! followed by `AnswerRejected` and another turn when its answer broke the answer schema.
//! Every tool call gets exactly one `Started` and one `Completed`, including calls that were
//! invalid, denied, timed out, or skipped.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::compact::CompactionReport;
use crate::types::{FinishReason, Usage};

/// An event of a streaming tool loop.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum StreamEvent {
    /// More assistant text.
    AssistantTextDelta {
        /// The new text.
        text: String,
    },
    /// A tool call is about to run.
    ToolExecutionStarted {
        /// The call id.
        id: String,
        /// The tool name (after any repair by the invalid-call policy).
        tool_name: String,
        /// The arguments (a JSON string holding the raw text when they were not JSON).
        input: Value,
    },
    /// A tool call ended. `output` is exactly the text given to the model.
    ToolExecutionCompleted {
        /// The call id.
        id: String,
        /// The tool name.
        tool_name: String,
        /// `Ok(result text)` or `Err(error text)`.
        output: Result<String, String>,
        /// On failure, what kind (`ToolError::kind`: `panicked` for a tool that crashed,
        /// `timeout`, `permission_denied`, ...; `not_run` for a call answered without
        /// running), so a panic is told apart from a tool that reported an error.
        error_kind: Option<String>,
        /// How long the call took (zero for calls that never ran).
        #[serde(serialize_with = "ser_ms")]
        duration: Duration,
    },
    /// A running tool reported progress. The text comes from the tool (untrusted): it is
    /// cut to [`MAX_PROGRESS_MESSAGE_BYTES`]; escape it before printing. Reports that
    /// arrive faster than the stream is read are coalesced to the latest per call.
    ToolExecutionProgress {
        /// The call id.
        id: String,
        /// The tool name.
        tool_name: String,
        /// Progress so far.
        progress: f64,
        /// The total, when known.
        total: Option<f64>,
        /// The tool's message, if any.
        message: Option<String>,
    },
    /// The final answer broke `CycleConfig::answer_schema`: it goes back to the model
    /// with `problem`, and another turn follows (after this answer's `TurnComplete`).
    AnswerRejected {
        /// What is wrong with the answer (schema errors, or not JSON).
        problem: String,
    },
    /// The provider reported the token usage of the request just answered.
    Usage {
        /// This request.
        turn: Usage,
        /// Every request of this cycle so far, this one included.
        conversation: Usage,
    },
    /// The history passed the token budget and was compacted before the request.
    Compacted(CompactionReport),
    /// The model finished a turn.
    TurnComplete {
        /// Why.
        reason: FinishReason,
    },
}

/// The longest progress message an event carries, in bytes.
pub const MAX_PROGRESS_MESSAGE_BYTES: usize = 256;

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}
