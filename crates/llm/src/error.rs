//! [`LlmError`]: every way a provider request or the tool loop can fail.
//!
//! Errors that end the tool loop part-way carry the trajectory (every message up to and
//! including the tool messages of the last turn), so a caller can log it, show it, or
//! resubmit it: the history is always valid, because each assistant tool call has been
//! answered by exactly one tool message before the error is returned.

use std::time::Duration;

use thiserror::Error;
use toolhost_core::tools::ToolError;

use crate::types::ChatMessage;

/// The error type of the LLM layer.
#[derive(Error, Debug)]
#[non_exhaustive]
pub enum LlmError {
    /// The provider is misconfigured (a bad base URL, a header that is not valid).
    #[error("provider configuration: {0}")]
    Config(String),

    /// The request never got an HTTP answer (connection refused, reset, DNS, TLS).
    #[error("cannot reach the model server at {url}: {message}")]
    Transport {
        /// The URL requested.
        url: String,
        /// What went wrong.
        message: String,
    },

    /// The server answered with an error status (after any retries).
    #[error("the model server answered HTTP {status} (after {attempts} attempt(s)): {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The start of the response body (the server's error message, usually).
        body: String,
        /// How many requests were sent.
        attempts: u32,
    },

    /// The server's answer was not the Chat Completions shape.
    #[error("cannot understand the model server's answer: {0}")]
    Decode(String),

    /// The answer had no choices, or a stream ended before the model finished.
    #[error("the model server returned an incomplete answer: {0}")]
    Incomplete(String),

    /// The model request timed out.
    #[error("the model server did not answer within {0:?}")]
    Timeout(Duration),

    /// The loop asked the model `max_turns` times and it still wanted tools.
    #[error(
        "the tool loop reached max_turns ({max_turns}) and the model still wants tools; raise CycleConfig::max_turns or simplify the task"
    )]
    MaxTurns {
        /// The limit that was reached.
        max_turns: usize,
        /// The trajectory.
        messages: Vec<ChatMessage>,
    },

    /// The final answer broke `CycleConfig::answer_schema` after every repair.
    #[error(
        "the model's answer does not meet the required JSON Schema after the repairs allowed: {problem}"
    )]
    InvalidAnswer {
        /// What is wrong with the last answer.
        problem: String,
        /// The trajectory.
        messages: Vec<ChatMessage>,
    },

    /// A tool failed in a way the model cannot fix (permission denied, MCP link down,
    /// I/O trouble, cancelled): the loop stopped. See `ToolError::is_recoverable`.
    #[error("tool '{tool}' (call {call_id}) failed and stopped the loop: {error}")]
    ToolFailed {
        /// The tool name.
        tool: String,
        /// The call id.
        call_id: String,
        /// The tool error.
        #[source]
        error: Box<ToolError>,
        /// The trajectory.
        messages: Vec<ChatMessage>,
    },

    /// The invalid-tool-call policy chose `Fail` for a call to an unknown tool or with
    /// arguments that are not JSON.
    #[error("invalid tool call '{tool}' (call {call_id}): {problem}")]
    InvalidToolCall {
        /// The tool name the model used.
        tool: String,
        /// The call id.
        call_id: String,
        /// What was wrong.
        problem: String,
        /// The trajectory.
        messages: Vec<ChatMessage>,
    },

    /// The invalid-tool-call policy chose `Stop`.
    #[error("the tool loop was stopped: {reason}")]
    Stopped {
        /// The policy's reason.
        reason: String,
        /// The trajectory.
        messages: Vec<ChatMessage>,
    },

    /// The caller cancelled the loop (through the cycle's cancellation token).
    #[error("the tool loop was cancelled")]
    Cancelled {
        /// The trajectory.
        messages: Vec<ChatMessage>,
    },
}

impl LlmError {
    /// The trajectory carried by loop errors, if any.
    pub fn trajectory(&self) -> Option<&[ChatMessage]> {
        match self {
            LlmError::MaxTurns { messages, .. }
            | LlmError::InvalidAnswer { messages, .. }
            | LlmError::ToolFailed { messages, .. }
            | LlmError::InvalidToolCall { messages, .. }
            | LlmError::Stopped { messages, .. }
            | LlmError::Cancelled { messages } => Some(messages),
            _ => None,
        }
    }

    /// Whether retrying the same request later may succeed (transport trouble, 429, 5xx,
    /// timeouts).
    pub fn is_transient(&self) -> bool {
        match self {
            LlmError::Transport { .. } | LlmError::Timeout(_) => true,
            LlmError::Http { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}
