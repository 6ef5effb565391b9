//! [`McpClientError`] and [`McpServeError`]: the error enums at this crate's boundaries.
//!
//! The client's public methods follow seed 000 and return
//! [`ToolError`](toolhost_core::tools::ToolError); every [`McpClientError`] converts into one
//! (`McpTimeout` for timeouts, `McpNotInitialized` before `connect`, `McpError` otherwise).

use std::time::Duration;

use thiserror::Error;
use toolhost_core::tools::ToolError;

/// What went wrong talking to an MCP server.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum McpClientError {
    /// The server process could not be started.
    #[error("MCP server '{server}': cannot start `{command}`: {source}")]
    Spawn {
        /// The configured server name.
        server: String,
        /// The command line.
        command: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The `initialize` handshake failed.
    #[error("MCP server '{server}': handshake failed: {message}")]
    Handshake {
        /// The configured server name.
        server: String,
        /// What happened (including the server's last stderr lines, when known).
        message: String,
    },
    /// The connection closed (the server exited, crashed, or broke the framing).
    #[error("MCP server '{server}' closed the connection: {message}")]
    Closed {
        /// The configured server name.
        server: String,
        /// Why, as far as it is known.
        message: String,
    },
    /// A request got no answer in time; `notifications/cancelled` was sent.
    #[error(
        "MCP server '{server}' did not answer {what} within {ms} ms; the request was cancelled",
        ms = timeout.as_millis()
    )]
    Timeout {
        /// The configured server name.
        server: String,
        /// The request (`tools/call get-sum`, `initialize`, ...).
        what: String,
        /// The time budget.
        timeout: Duration,
    },
    /// The server answered with a JSON-RPC error or an unexpected message.
    #[error("MCP server '{server}' rejected {what}: {message}")]
    Protocol {
        /// The configured server name.
        server: String,
        /// The request.
        what: String,
        /// The server's error.
        message: String,
    },
    /// The client was used before `connect()` (or after `close()`).
    #[error("MCP server '{0}': not connected; call connect() first")]
    NotConnected(String),
    /// The server is down and the reconnect back-off has not elapsed yet.
    #[error("MCP server '{server}' is down ({message}); next reconnect attempt in {ms} ms", ms = retry_in.as_millis())]
    BackingOff {
        /// The configured server name.
        server: String,
        /// The last failure.
        message: String,
        /// Time until the next attempt.
        retry_in: Duration,
    },
    /// The transport configuration is invalid (bad URL, bad header).
    #[error("MCP server '{server}': invalid configuration: {message}")]
    Config {
        /// The configured server name.
        server: String,
        /// What is wrong.
        message: String,
    },
}

impl From<McpClientError> for ToolError {
    fn from(e: McpClientError) -> Self {
        match e {
            McpClientError::Timeout { .. } => ToolError::McpTimeout(e.to_string()),
            McpClientError::NotConnected(_) => ToolError::McpNotInitialized(e.to_string()),
            other => ToolError::McpError(other.to_string()),
        }
    }
}

/// What went wrong serving the registry as an MCP server.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum McpServeError {
    /// The HTTP listener could not bind.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Binding a non-loopback address without opting in.
    #[error(
        "refusing to listen on {0}: it is not a loopback address; MCP over HTTP has no \
         authentication here, so bind 127.0.0.1 (or pass --allow-remote explicitly)"
    )]
    NotLoopback(String),
    /// The client never completed the handshake, or the transport failed.
    #[error("MCP session failed: {0}")]
    Session(String),
    /// An I/O error of the server loop.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
