//! `toolhost-core`: the tool core of toolhost.
//!
//! It knows nothing about WebAssembly, MCP or LLMs: those crates depend on it, never the
//! reverse. Most users want the `toolhost` crate, which re-exports this one.

pub mod tools;

pub use tools::*;
