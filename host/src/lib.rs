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

/// The tool API (re-exported from `toolhost-core`), plus [`McpClient`](tools::McpClient)
/// as seed 000 expects it here.
pub mod tools {
    pub use toolhost_core::tools::*;
    pub use toolhost_mcp::*;
}

pub use toolhost_llm as llm;
pub use toolhost_mcp as mcp;
pub use toolhost_wasm as wasm;

pub mod config;
pub mod loader;
pub mod trust;
