//! `toolhost-core`: the tool core of toolhost.
//!
//! It knows nothing about WebAssembly, MCP or LLMs: those crates depend on it, never the
//! reverse. Most users want the `toolhost` crate, which re-exports this one.

pub mod secrets;
pub mod tools;

pub use tools::*;

/// Native tools from plain functions: see [`toolhost_macros`] and
/// `docs/writing-plugins.md`.
pub use toolhost_macros::{core_tool as tool, core_toolbox as toolbox};

#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __private;
