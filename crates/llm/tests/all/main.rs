//! Integration tests of toolhost-llm, one binary: the tool loop over real HTTP on
//! 127.0.0.1 against a scripted axum server (replaying the model's choices, blocking and
//! SSE) and against the PyPI `fakellm` server.
//!
//! Only the model's choices are scripted; the provider, the loop, the registry pipeline
//! and the tools are the real ones.

mod answer;
mod anthropic;
mod caching;
mod choice;
mod eval;
mod fakellm;
mod history;
mod hooks;
mod scripted;
mod selection;
mod support;
mod wasm;
