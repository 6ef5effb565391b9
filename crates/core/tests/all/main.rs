//! Integration tests of the tool core, one module per concern: the registry, each stage of
//! the pipeline (`docs/design.md`, "The pipeline"), the context and the events.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audit;
mod content;
mod context;
mod execution;
mod hooks;
mod kinds;
mod loading;
mod permissions;
mod registration;
mod support;
mod validation;
