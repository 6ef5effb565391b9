//! # toolhost
//!
//! A Rust host for LLM tools. Tools are WebAssembly components (the WIT world `tool` in
//! `wit/`), native Rust tools, or tools of external MCP servers; all of them sit in one
//! [`tools::ToolRegistry`] behind the same validation, permission, approval, timeout and
//! rendering pipeline. The automatic LLM tool loop ([`llm`]) drives them from an
//! OpenAI-compatible chat API, and `toolhost serve` exposes the registry as an MCP server.
//!
//! The workspace is split into crates so that the dependency rule of the design
//! (`llm` → `tools` ← `wasm`, `mcp`) is enforced by the compiler, and so that each part
//! builds and tests on its own:
//!
//! | module here | crate | what |
//! |---|---|---|
//! | [`tools`] | `toolhost-core` | BaseTool, ToolRegistry, permissions, approvals, events |
//! | [`wasm`] | `toolhost-wasm` | the component runtime, sandbox, limits, plugin loader |
//! | [`mcp`] | `toolhost-mcp` | McpClient and the MCP server |
//! | [`llm`] | `toolhost-llm` | ChatProvider, the OpenAI-compatible provider, LlmCycle |

/// The tool API (re-exported from `toolhost-core`), plus the MCP client types a tool user
/// needs beside it: [`McpClient`](tools::McpClient) and the tool adapter. The public API
/// contract promises `use toolhost::tools::McpClient`; everything else of MCP (the server,
/// the config, stdio limits) is under [`mcp`].
pub mod tools {
    pub use toolhost_core::tools::*;
    pub use toolhost_mcp::{
        DEFAULT_MCP_TIMEOUT, McpClient, McpClientError, McpRegistered, McpTool, McpToolAnnotations,
        McpToolInfo, McpTransport,
    };
}

/// Native tools from plain functions and from the methods of a type that holds state:
/// `#[toolhost::tool]` and `#[toolhost::toolbox]` (`docs/writing-plugins.md`).
pub use toolhost_macros::{tool, toolbox};

#[doc(hidden)]
pub use toolhost_core::__private;

pub use toolhost_code as code;
pub use toolhost_llm as llm;
pub use toolhost_mcp as mcp;
pub use toolhost_wasm as wasm;

pub use host::Host;

pub mod admin;
pub mod approvals;
pub mod config;
pub mod console;
pub mod host;
pub mod loader;
pub mod permissions;
pub mod reload;
pub mod skills;
pub mod telemetry;
pub mod trust;
