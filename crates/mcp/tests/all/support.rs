//! Finding the peers, and small helpers.
#![allow(dead_code)]

use std::path::PathBuf;

use toolhost_mcp::McpTransport;

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

fn peers() -> PathBuf {
    root().join("target/peers/mcp")
}

/// A peer file from `var`, else its default install path. `None` (after a clear message)
/// when missing locally; a panic when missing in CI.
pub fn peer(var: &str, default: PathBuf) -> Option<PathBuf> {
    let path = std::env::var_os(var).map(PathBuf::from).unwrap_or(default);
    if path.exists() {
        return Some(path);
    }
    let msg = format!(
        "MCP test peer missing: {} (env {var}); install the peers with `cargo xtask peers`",
        path.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        panic!("{msg}");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

/// server-everything's entry script.
pub fn everything() -> Option<PathBuf> {
    peer(
        "TOOLHOST_MCP_EVERYTHING",
        peers().join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
    )
}

/// server-filesystem's entry script.
pub fn filesystem() -> Option<PathBuf> {
    peer(
        "TOOLHOST_MCP_FILESYSTEM",
        peers().join("node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"),
    )
}

/// A Python with the `mcp` package.
pub fn python() -> Option<PathBuf> {
    peer("TOOLHOST_MCP_PYTHON", peers().join("venv/bin/python"))
}

/// A fixture file.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// `node <script> args...` over stdio.
pub fn node(script: &std::path::Path, args: &[&str]) -> McpTransport {
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|s| s.to_string()));
    McpTransport::Stdio {
        command: "node".into(),
        args: all,
        env: Vec::new(),
    }
}

/// Logs to the test output when RUST_LOG is set.
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A free loopback port (bound then released).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Starts server-everything in Streamable HTTP mode on `port`; killed on drop.
pub fn spawn_node_http(script: &std::path::Path, port: u16) -> tokio::process::Child {
    tokio::process::Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// Waits (bounded, about 20 s) until something listens on the loopback port.
pub async fn wait_for_port(port: u16) {
    for _ in 0..400 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("nothing listens on 127.0.0.1:{port}");
}

/// Checks a report of `fixtures/py_client.py`: the tool is listed with a schema and
/// annotations, the call returned `structured`, and an unknown tool came back as
/// `isError: true` (not a JSON-RPC error).
pub fn check_python_report(report: &serde_json::Value, tool: &str, structured: &serde_json::Value) {
    let tools = report["tools"].as_array().expect("tools");
    let t = tools
        .iter()
        .find(|t| t["name"] == tool)
        .unwrap_or_else(|| panic!("{tool} not listed: {report}"));
    assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    assert!(t["annotations"]["readOnlyHint"].is_boolean(), "{t}");
    assert_eq!(&report["call"]["structuredContent"], structured, "{report}");
    assert_ne!(report["call"]["isError"], true, "{report}");
    assert_eq!(report["unknown"]["isError"], true, "{report}");
}

/// The real `python3` interpreter (not a pyenv shim, which would add variables of its own
/// to a cleared environment).
pub fn real_python3() -> String {
    std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "python3".into())
}
