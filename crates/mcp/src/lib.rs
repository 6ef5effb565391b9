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

// The items below need the `runtime` feature (everything but the stdio framing, which is
// all the fuzz targets build). Each carries its own `cfg` rather than one macro around
// them all: rustfmt does not enter a macro's body, so the modules declared inside one went
// unformatted and unchecked by `cargo fmt --check`.
#[cfg(feature = "runtime")]
pub mod approver;
#[cfg(feature = "runtime")]
pub mod attribution;
#[cfg(feature = "runtime")]
pub mod client;
#[cfg(feature = "runtime")]
pub mod config;
#[cfg(feature = "runtime")]
pub mod content;
#[cfg(feature = "runtime")]
pub mod downstream;
#[cfg(feature = "runtime")]
mod error;
#[cfg(feature = "runtime")]
pub mod form;
#[cfg(feature = "runtime")]
pub mod gateway;
#[cfg(feature = "runtime")]
pub mod info;
#[cfg(feature = "runtime")]
pub mod meta;
/// OAuth logins to HTTP servers, from their own crate.
#[cfg(feature = "runtime")]
pub use toolhost_oauth as oauth;
#[cfg(feature = "runtime")]
pub mod nesting;
#[cfg(feature = "runtime")]
pub mod rating;
#[cfg(feature = "runtime")]
pub mod rounds;
/// The OS sandbox of stdio servers, from its own crate (the one place unsafe code is
/// allowed).
#[cfg(feature = "runtime")]
pub use toolhost_sandbox as sandbox;
#[cfg(feature = "runtime")]
pub mod server;
#[cfg(feature = "runtime")]
pub mod skills;
#[cfg(feature = "runtime")]
mod sync;
#[cfg(feature = "runtime")]
mod task_asker;
#[cfg(feature = "runtime")]
pub mod tool;
#[cfg(feature = "runtime")]
mod trace;
#[cfg(feature = "runtime")]
pub use approver::ClientApprover;
#[cfg(feature = "runtime")]
pub use client::{DEFAULT_MCP_TIMEOUT, McpClient, McpProtocol, McpTransport};
#[cfg(feature = "runtime")]
pub use config::{McpConfig, McpServerConfig};
#[cfg(feature = "runtime")]
pub use downstream::{DownstreamClient, LocalUser};
#[cfg(feature = "runtime")]
pub use error::{
    McpClientError, McpConfigError, McpLoadError, McpServeError, McpServerProblem, McpTokenError,
};
#[cfg(feature = "runtime")]
pub use gateway::{Gateway, GatewayError, GatewayEvent};
#[cfg(feature = "runtime")]
pub use info::{McpToolAnnotations, McpToolInfo};
#[cfg(feature = "runtime")]
pub use oauth::LocalLogin;
#[cfg(feature = "runtime")]
pub use oauth::{LoginOptions, OAuthClientIdentity, OAuthError, OAuthStore};
#[cfg(feature = "runtime")]
pub use rating::{DEFAULT_UNRATED_RISK, McpToolRules, RatedBy, Rating};
#[cfg(feature = "runtime")]
pub use sandbox::{McpSandbox, McpSandboxError};
#[cfg(feature = "runtime")]
pub use server::McpServer;
#[cfg(feature = "runtime")]
pub use sync::{McpRegistered, ToolFilter};
#[cfg(feature = "runtime")]
pub use tool::McpTool;
