//! `toolhost-mcp`: MCP both ways, over the `rmcp` crate.
//!
//! - [`McpClient`] connects to an MCP server (stdio child process or Streamable HTTP) and
//!   turns its tools into registry tools ([`McpTool`]), kept in sync on `list_changed`.
//! - [`server`] serves a [`ToolRegistry`](toolhost_core::tools::ToolRegistry) as an MCP
//!   server over stdio or Streamable HTTP.
//!
//! The `toolhost` crate re-exports this crate's root from `toolhost::tools`, so seed 000's
//! `use toolhost::tools::McpClient` works. Module names therefore avoid core's (`error` is
//! private; its types are exported here), so `toolhost::tools::error` stays unambiguous.

pub mod client;
pub mod config;
mod error;
pub mod server;
pub mod stdio;
pub mod tool;

pub use client::{DEFAULT_MCP_TIMEOUT, McpClient, McpRegistered, McpTransport, ToolFilter};
pub use config::{McpConfig, McpServerConfig};
pub use error::{McpClientError, McpServeError};
pub use server::McpServer;
pub use stdio::StdioLimits;
pub use tool::{McpTool, McpToolAnnotations, McpToolInfo};
