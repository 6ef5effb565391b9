//! Finding the peers, and small helpers.
#![allow(dead_code)]

use std::path::PathBuf;

use toolhost_mcp::McpTransport;

pub use toolhost_testkit::peers::{everything, filesystem, python};
pub use toolhost_testkit::{free_port, wait_for_port};

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

/// `node FIXTURE ARGS... PORT` (a raw-HTTP fixture of `tests/fixtures`) on a free port,
/// once it listens; killed on drop.
pub async fn node_fixture_on_port(name: &str, args: &[&str]) -> (tokio::process::Child, u16) {
    let port = free_port();
    let child = tokio::process::Command::new("node")
        .arg(fixture(name))
        .args(args)
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_for_port(port).await;
    (child, port)
}

/// What a raw-HTTP fixture on `port` counted (its `GET /stats`).
pub async fn fixture_stats(port: u16) -> serde_json::Value {
    reqwest::get(format!("http://127.0.0.1:{port}/stats"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A client of the 2026-07-28 server on `port` (`/mcp`), `timeout_secs` a request,
/// connected and checked to speak that revision.
pub async fn client_2026(port: u16, timeout_secs: u64) -> toolhost_mcp::McpClient {
    let client = toolhost_mcp::McpClient::new(
        "hostile",
        McpTransport::http(format!("http://127.0.0.1:{port}/mcp")),
    )
    .with_timeout(timeout_secs)
    .with_protocol(toolhost_mcp::McpProtocol::Discover);
    client.connect().await.unwrap();
    assert_eq!(
        client.protocol_version().await.as_deref(),
        Some("2026-07-28")
    );
    client
}

/// Logs to the test output when RUST_LOG is set.
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
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

/// Serves `server` over Streamable HTTP on `bind` (e.g. `127.0.0.1:0`) with `options`, in
/// the background; returns the bound address and the token that stops it.
pub async fn serve_http(
    server: toolhost_mcp::McpServer,
    bind: &str,
    options: toolhost_mcp::server::HttpServeOptions,
) -> (std::net::SocketAddr, tokio_util::sync::CancellationToken) {
    let stop = tokio_util::sync::CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let s = stop.clone();
    let bind: std::net::SocketAddr = bind.parse().unwrap();
    tokio::spawn(async move {
        let r = server
            .serve_http_opts(bind, options, s, |a| {
                let _ = tx.send(a);
            })
            .await;
        if let Err(e) = r {
            eprintln!("serve_http_opts: {e}");
        }
    });
    (rx.await.unwrap(), stop)
}

/// A client of server-everything (stdio) under the configured name `name`, connected;
/// `None` (a panic in CI) when the peer is not installed.
pub async fn everything_client(name: &str) -> Option<toolhost_mcp::McpClient> {
    let script = everything()?;
    let client = toolhost_mcp::McpClient::new(name, node(&script, &["stdio"])).with_timeout(20);
    client.connect().await.unwrap();
    Some(client)
}

/// Calls server-everything's `get-sum` (40 + 2) through `registry` and checks the answer.
pub async fn sums_to_42(registry: &toolhost_core::tools::ToolRegistry) {
    let out = registry
        .invoke_recorded("get-sum", serde_json::json!({"a": 40, "b": 2}))
        .await
        .output
        .unwrap();
    assert!(out.render.contains("42"), "{}", out.render);
}
