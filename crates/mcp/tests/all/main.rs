//! Integration tests of toolhost-mcp against real peers (one test binary).
//!
//! Peers are installed by `cargo xtask peers` (also run by `cargo xtask test`) under
//! `target/peers/mcp`; `peers_mcp::test_env()` exports their paths. A missing peer fails the
//! test under `CI=true`, and is reported (test skipped) locally.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approvals;
mod attribution;
mod auth_advice;
mod client_everything;
mod client_misbehaving;
mod client_peers;
mod content_everything;
mod content_hostile;
mod gateway;
mod http_auth;
mod http_limits;
mod keepalive;
mod listen_hostile;
mod names;
mod oauth_discovery;
mod sandbox;
mod server;
mod support;
mod task_hostile;
