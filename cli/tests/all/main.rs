//! Integration tests of the `toolhost` command, one binary (each test binary links the
//! whole host, wasmtime included, and starts on its own): every test runs the real
//! command built by cargo (`CARGO_BIN_EXE_toolhost`) against compiled plugins and real
//! peers. `cargo test -p toolhost-cli --test all MODULE::` runs one file's tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audit;
mod cli;
mod conformance;
mod console;
mod console_browser;
mod console_judge;
mod console_servers;
mod deploy;
mod discovery;
mod elicit_terminal;
mod evals;
mod gateway_lists;
mod langs;
mod lifecycle;
mod lint;
mod listen_2026;
mod llm_cli;
mod mcp_apps;
mod nesting;
mod oauth_hostile;
mod permissions;
mod plugin_logs;
mod publish;
mod reload;
mod replicas;
mod secrets;
mod serve;
mod serve_auth;
mod skills;
mod soak;
mod tasks;
mod tenants;
mod trust;
mod wrapped_bounds;

/// `toolhost serve --stdio` with `config`, no audit, the plugins of `plugins` (its stderr
/// dropped), as a JSON-RPC client over its pipes.
pub(crate) fn serve_stdio(
    config: &std::path::Path,
    plugins: &std::path::Path,
) -> toolhost_testkit::jsonrpc::StdioClient {
    toolhost_testkit::jsonrpc::StdioClient::spawn(
        std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["serve", "--stdio", "--no-audit", "--config"])
            .arg(config)
            .arg("--plugins")
            .arg(plugins)
            .stderr(std::process::Stdio::null()),
    )
}
