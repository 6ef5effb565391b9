//! [`ToolError`]: the one error type every tool, adapter and pipeline stage returns.
//!
//! The variants are part of the API contract (`docs/design.md`, "Errors"): `NotFound`,
//! `ExecutionFailed`, `InvalidArguments`,
//! `PermissionDenied`, `McpError`, `McpNotInitialized`, `McpTimeout`, `Io`, `Other`) and add
//! the few cases a production host needs to tell apart: `Timeout`, `Cancelled`,
//! `LimitExceeded` (sandbox limits), `DuplicateTool` and `InvalidDefinition`
//! (registration-time checks).
//!
//! Every message is written for the model as much as for a person: it says what happened
//! and what to do next, because recoverable errors are fed back to the LLM verbatim.

use std::time::Duration;

use thiserror::Error;

/// The error type of the tool system.
///
/// Use [`ToolError::is_recoverable`] to decide whether an automatic tool loop should feed
/// the error back to the model (it can fix its arguments or try another way) or stop.
#[derive(Error, Debug)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool with this name is registered.
    #[error("tool '{0}' is not registered; call one of the tools listed in the tool definitions")]
    NotFound(String),

    /// The tool ran and failed. The message comes from the tool.
    #[error("tool '{0}' failed: {1}")]
    ExecutionFailed(String, String),

    /// The tool panicked: a bug in the tool, caught by the registry (the host goes on).
    #[error("tool '{0}' crashed (panic: {1})")]
    Panicked(String, String),

    /// The arguments did not match the tool's parameter schema, or were not JSON.
    #[error(
        "invalid arguments for tool '{0}': {1}. Fix the arguments to match the tool's parameter schema and call it again"
    )]
    InvalidArguments(String, String),

    /// The permission gate (policy or approval) refused the call. The tool did not run.
    #[error("permission denied: tool '{0}' {1}")]
    PermissionDenied(String, String),

    /// The MCP link failed (transport, protocol or server error).
    #[error("MCP error: {0}")]
    McpError(String),

    /// An MCP client was used before `connect()` succeeded.
    #[error("MCP client not initialized: {0}")]
    McpNotInitialized(String),

    /// An MCP request got no answer in time; the request was cancelled.
    #[error("MCP request timed out: {0}")]
    McpTimeout(String),

    /// An I/O error outside any tool's control (environment trouble).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),

    /// The tool did not finish within its time budget and was stopped.
    #[error("tool '{0}' timed out after {ms} ms and was stopped; try smaller input or a narrower request", ms = .1.as_millis())]
    Timeout(String, Duration),

    /// The call was cancelled by the caller before it finished.
    #[error("tool '{0}' was cancelled")]
    Cancelled(String),

    /// A sandbox limit stopped the tool: fuel, memory, stack, output size.
    #[error("tool '{0}' was stopped: {1}")]
    LimitExceeded(String, String),

    /// A tool with this name is already registered.
    #[error("a tool named '{0}' is already registered; unregister it first or pick another name")]
    DuplicateTool(String),

    /// A tool definition failed the registration checks (name, description, schema).
    #[error("invalid definition for tool '{0}': {1}")]
    InvalidDefinition(String, String),

    /// Anything else. Fed back to the model, conservatively.
    #[error("{0}")]
    Other(String),
}

impl ToolError {
    /// Whether an automatic tool loop should report this error to the model and carry on
    /// (`true`), or stop the loop (`false`).
    ///
    /// The table in `docs/design.md` ("Errors"): execution failures (a panic included),
    /// invalid arguments and `Other` are
    /// recoverable; `NotFound`, permission denials, MCP link failures and I/O errors are
    /// not. Of the added variants, a timeout or a sandbox limit is recoverable (the model can
    /// ask for less); cancellation and registration errors are not.
    pub fn is_recoverable(&self) -> bool {
        matches!(
            self,
            ToolError::ExecutionFailed(..)
                | ToolError::Panicked(..)
                | ToolError::InvalidArguments(..)
                | ToolError::Other(_)
                | ToolError::Timeout(..)
                | ToolError::LimitExceeded(..)
        )
    }

    /// A short, stable, machine-readable name of the variant (`"not_found"`,
    /// `"permission_denied"`, ...), used in events, audit lines and MCP error payloads.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolError::NotFound(_) => "not_found",
            ToolError::ExecutionFailed(..) => "execution_failed",
            ToolError::Panicked(..) => "panicked",
            ToolError::InvalidArguments(..) => "invalid_arguments",
            ToolError::PermissionDenied(..) => "permission_denied",
            ToolError::McpError(_) => "mcp_error",
            ToolError::McpNotInitialized(_) => "mcp_not_initialized",
            ToolError::McpTimeout(_) => "mcp_timeout",
            ToolError::Io(_) => "io",
            ToolError::Timeout(..) => "timeout",
            ToolError::Cancelled(_) => "cancelled",
            ToolError::LimitExceeded(..) => "limit_exceeded",
            ToolError::DuplicateTool(_) => "duplicate_tool",
            ToolError::InvalidDefinition(..) => "invalid_definition",
            ToolError::Other(_) => "other",
        }
    }

    /// Shorthand for [`ToolError::ExecutionFailed`].
    pub fn failed(tool: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError::ExecutionFailed(tool.into(), message.into())
    }

    /// Shorthand for [`ToolError::InvalidArguments`].
    pub fn invalid_args(tool: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError::InvalidArguments(tool.into(), message.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recoverability_follows_the_documented_table() {
        assert!(ToolError::failed("t", "x").is_recoverable());
        assert!(ToolError::invalid_args("t", "x").is_recoverable());
        assert!(ToolError::Other("x".into()).is_recoverable());
        assert!(!ToolError::NotFound("t".into()).is_recoverable());
        assert!(!ToolError::PermissionDenied("t".into(), "x".into()).is_recoverable());
        assert!(!ToolError::McpError("x".into()).is_recoverable());
        assert!(!ToolError::McpTimeout("x".into()).is_recoverable());
        assert!(!ToolError::Io(std::io::Error::other("x")).is_recoverable());
        assert!(ToolError::Timeout("t".into(), Duration::from_millis(5)).is_recoverable());
        assert!(!ToolError::Cancelled("t".into()).is_recoverable());
    }

    #[test]
    fn messages_are_english_and_actionable() {
        let e = ToolError::Timeout("slow".into(), Duration::from_millis(200));
        assert_eq!(
            e.to_string(),
            "tool 'slow' timed out after 200 ms and was stopped; try smaller input or a narrower request"
        );
        assert!(
            ToolError::NotFound("x".into())
                .to_string()
                .contains("not registered")
        );
    }
}
