//! `toolhost-mcp`: MCP both ways, over the `rmcp` crate.
//!
//! - [`McpClient`] connects to an MCP server (stdio child process or Streamable HTTP) and
//!   turns its tools into registry tools ([`McpTool`]), kept in sync on `list_changed`.
//! - [`server`] serves a [`ToolRegistry`](toolhost_core::tools::ToolRegistry) as an MCP
//!   server over stdio or Streamable HTTP.
//! - [`gateway`] gathers what the wrapped servers offer besides tools (resources,
//!   prompts, completions, logs) for the server to pass on.
//! - [`downstream`] is whoever is behind a call: the client of `serve` or the person at
//!   the CLI's terminal, asked a wrapped server's sampling, elicitation and roots; [`form`]
//!   turns an elicitation's schema into questions and typed answers into values.
//! - [`attribution`] tags what a wrapped server asks of a person with its name, so it
//!   cannot pass for toolhost's own approvals, and refuses forms asking for secrets.
//! - [`oauth`] logs in to HTTP servers that want OAuth 2.1 and stores their credentials.
//! - [`sandbox`] confines a stdio server that declares `sandbox = { ... }` (Linux: Landlock
//!   and seccomp; see docs/permissions.md, "Sandboxed MCP servers").
//!
//! The `toolhost` crate re-exports the client types from `toolhost::tools`, so
//! `use toolhost::tools::McpClient` works (part of the public API contract,
//! `docs/design.md`); the rest is under `toolhost::mcp`.
//!
//! Feature `runtime` (on by default) is all of the above. Without it the crate is only
//! [`stdio`]'s framing of a server's output (the line guard under rmcp's JSON-RPC codec):
//! the fuzz targets build it that way, so their instrumented build compiles no HTTP stack,
//! TLS or OAuth.

// Its child-process helpers serve the client, which needs `runtime`; without it only the
// framing is used.
#[cfg_attr(not(feature = "runtime"), allow(dead_code))]
pub mod stdio;
pub use stdio::StdioLimits;

/// Its items only with the `runtime` feature (on by default): everything but the stdio
/// framing, which is all the fuzz targets build.
macro_rules! runtime {
    ($($item:item)*) => { $(#[cfg(feature = "runtime")] $item)* };
}

runtime! {
    pub mod approver;
    pub mod attribution;
    pub mod client;
    pub mod config;
    pub mod content;
    pub mod downstream;
    mod error;
    pub mod form;
    pub mod gateway;
    pub mod info;
    pub mod oauth;
    pub mod rating;
    pub mod rounds;
    pub mod sandbox;
    pub mod server;
    mod sync;
    pub mod tool;
    mod trace;
    pub use approver::ClientApprover;
    pub use client::{DEFAULT_MCP_TIMEOUT, McpClient, McpTransport};
    pub use config::{McpConfig, McpProtocol, McpServerConfig};
    pub use downstream::{DownstreamClient, LocalLogin, LocalUser};
    pub use error::{
        McpClientError, McpConfigError, McpLoadError, McpServeError, McpServerProblem, McpTokenError,
    };
    pub use gateway::{Gateway, GatewayError, GatewayEvent};
    pub use info::{McpToolAnnotations, McpToolInfo};
    pub use oauth::{LoginOptions, OAuthClientIdentity, OAuthError, OAuthStore};
    pub use rating::{DEFAULT_UNRATED_RISK, McpToolRules, RatedBy, Rating};
    pub use sandbox::{McpSandbox, McpSandboxError};
    pub use server::McpServer;
    pub use sync::{McpRegistered, ToolFilter};
    pub use tool::McpTool;
}
