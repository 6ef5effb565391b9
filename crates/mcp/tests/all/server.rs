//! McpServer: a registry served over Streamable HTTP, driven by McpClient (rmcp) and by the
//! Python `mcp` client.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost_core::tools::{
    DynamicTool, Permission, ToolContext, ToolError, ToolOutput, ToolRegistry,
};
use toolhost_mcp::McpProtocol;
use toolhost_mcp::{McpClient, McpServeError, McpServer, McpTransport};

use crate::support;

fn registry(cancelled: Arc<AtomicBool>) -> ToolRegistry {
    let r = ToolRegistry::new();
    r.register(
        DynamicTool::builder("add")
            .description("Add two integers a and b")
            .parameters(json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}))
            .handler(|args, _ctx| async move {
                let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
                Ok(ToolOutput::json(json!(sum)))
            })
            .build_dyn(),
    )
    .unwrap();
    r.register(
        DynamicTool::builder("boom")
            .description("Always fails with an explanation")
            .handler(|_a, _c| async move { Err(ToolError::failed("boom", "it blew up")) })
            .build_dyn(),
    )
    .unwrap();
    r.register(
        DynamicTool::builder("fetch")
            .description("Pretends to fetch a URL (declares network)")
            .permissions(vec![Permission::Network])
            .handler(|_a, _c| async move { Ok(ToolOutput::json(json!({"status": 200}))) })
            .build_dyn(),
    )
    .unwrap();
    r.register(
        DynamicTool::builder("steps")
            .description("Reports three progress steps, then returns")
            .handler(|_a, ctx: ToolContext| async move {
                for i in 1..=3 {
                    ctx.report_progress(f64::from(i), Some(3.0), Some(format!("step {i}")));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Ok(ToolOutput::text("three steps"))
            })
            .build_dyn(),
    )
    .unwrap();
    r.register(
        DynamicTool::builder("wait_cancel")
            .description("Waits until the call is cancelled, and records it")
            .handler(move |_a, ctx: ToolContext| {
                let cancelled = cancelled.clone();
                async move {
                    // The registry may drop this future as soon as the call is cancelled:
                    // record the cancellation on drop as well.
                    struct Mark(Arc<AtomicBool>, ToolContext);
                    impl Drop for Mark {
                        fn drop(&mut self) {
                            if self.1.is_cancelled() {
                                self.0.store(true, Ordering::SeqCst);
                            }
                        }
                    }
                    let _mark = Mark(cancelled, ctx.clone());
                    ctx.cancellation_token().cancelled().await;
                    Ok(ToolOutput::text("cancelled"))
                }
            })
            .build_dyn(),
    )
    .unwrap();
    r
}

async fn start(registry: ToolRegistry) -> (SocketAddr, CancellationToken) {
    support::serve_http(McpServer::new(registry), "127.0.0.1:0", Default::default()).await
}

async fn eventually(mut cond: impl AsyncFnMut() -> bool) -> bool {
    for _ in 0..200 {
        if cond().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn http_server_lists_calls_reports_errors_progress_cancel_and_list_changed() {
    lists_calls_and_follows_changes(McpProtocol::Initialize).await;
}

/// The same at the 2026-07-28 revision: stateless requests, and the list change reaches
/// the client through its `subscriptions/listen`.
#[tokio::test]
async fn at_2026_07_28_the_client_follows_list_changes_through_listen() {
    lists_calls_and_follows_changes(McpProtocol::Discover).await;
}

async fn lists_calls_and_follows_changes(protocol: McpProtocol) {
    let cancelled = Arc::new(AtomicBool::new(false));
    let reg = registry(cancelled.clone());
    let (addr, stop) = start(reg.clone()).await;
    let client = McpClient::new("self", McpTransport::http(format!("http://{addr}/mcp")))
        .with_timeout(10)
        .with_protocol(protocol);
    client.connect().await.unwrap();
    let expected = match protocol {
        McpProtocol::Discover => "2026-07-28",
        _ => "2025-11-25",
    };
    assert_eq!(client.protocol_version().await.as_deref(), Some(expected));

    // tools/list: schemas and annotations derived from permissions.
    let tools = client.tools().await.unwrap();
    let add = tools.iter().find(|t| t.name == "add").unwrap();
    assert_eq!(add.input_schema["required"], json!(["a", "b"]));
    let a = add.annotations.clone().unwrap();
    assert_eq!(
        (a.read_only, a.destructive, a.open_world),
        (Some(true), Some(false), Some(false))
    );
    let fetch = tools.iter().find(|t| t.name == "fetch").unwrap();
    assert_eq!(fetch.annotations.clone().unwrap().open_world, Some(true));

    // tools/call: structuredContent + text.
    let out = client
        .call_tool_output("add", json!({"a": 2, "b": 3}), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!(out.canonical, json!({"result": 5}));
    assert_eq!(out.render, "5");

    // Tool errors, invalid arguments and unknown tools come back as isError results.
    for (name, args, needle) in [
        ("boom", json!({}), "it blew up"),
        ("add", json!({"a": "x"}), "invalid arguments"),
        ("no_such_tool", json!({}), "not registered"),
    ] {
        match client.call_tool(name, args).await {
            Err(toolhost_mcp::McpClientError::ToolFailed { message, .. }) => {
                assert!(message.contains(needle), "{message}")
            }
            other => panic!("{name}: expected an isError result, got {other:?}"),
        }
    }

    // Progress.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let ctx = ToolContext::default().with_progress(tx);
    let out = client
        .call_tool_output("steps", json!({}), &ctx)
        .await
        .unwrap();
    assert_eq!(out.render, "three steps");
    let mut got = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        got.push(ev.progress);
    }
    assert_eq!(got, vec![1.0, 2.0, 3.0]);

    // Cancellation reaches the tool's context.
    let ctx = ToolContext::default();
    let token = ctx.cancellation_token().clone();
    let call = client.call_tool_output("wait_cancel", json!({}), &ctx);
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel();
    };
    let (res, ()) = tokio::join!(call, canceller);
    assert!(
        matches!(res, Err(toolhost_mcp::McpClientError::Cancelled { .. })),
        "{res:?}"
    );
    assert!(eventually(async || cancelled.load(Ordering::SeqCst)).await);

    // list_changed when the registry changes.
    reg.register(
        DynamicTool::builder("late")
            .description("A tool registered after the client connected")
            .handler(|_a, _c| async move { Ok(ToolOutput::text("late")) })
            .build_dyn(),
    )
    .unwrap();
    assert!(
        eventually(async || client
            .tools()
            .await
            .is_ok_and(|t| t.iter().any(|t| t.name == "late")))
        .await
    );
    client.close().await.unwrap();
    stop.cancel();
}

async fn raw_post(addr: SocketAddr, host: &str, origin: Option<&str>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(o) = origin {
        req.push_str(&format!("Origin: {o}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf).to_string();
    text.lines().next().unwrap_or_default().to_string()
}

#[tokio::test]
async fn http_validates_host_and_origin_and_binds_loopback_only() {
    let (addr, stop) = start(registry(Arc::default())).await;
    let host = format!("127.0.0.1:{}", addr.port());
    let ok = raw_post(addr, &host, None).await;
    assert!(ok.contains(" 200"), "{ok}");
    let ok = raw_post(
        addr,
        &host,
        Some(&format!("http://localhost:{}", addr.port())),
    )
    .await;
    assert!(ok.contains(" 200"), "{ok}");
    let evil_origin = raw_post(addr, &host, Some("http://evil.example")).await;
    assert!(evil_origin.contains(" 403"), "{evil_origin}");
    let evil_host = raw_post(addr, "evil.example", None).await;
    assert!(
        evil_host.contains(" 403") || evil_host.contains(" 421"),
        "{evil_host}"
    );
    stop.cancel();

    let err = McpServer::new(ToolRegistry::new())
        .serve_http(
            "0.0.0.0:0".parse().unwrap(),
            false,
            CancellationToken::new(),
            |_| {},
        )
        .await
        .unwrap_err();
    assert!(matches!(err, McpServeError::NotLoopback(_)), "{err}");
}

#[tokio::test]
async fn python_mcp_client_lists_and_calls_over_http() {
    let Some(python) = support::python() else {
        return;
    };
    let (addr, stop) = start(registry(Arc::default())).await;
    let out = tokio::process::Command::new(&python)
        .arg(support::fixture("py_client.py"))
        .arg("http")
        .arg(format!("http://{addr}/mcp"))
        .env("CALL_TOOL", "add")
        .env("CALL_ARGS", r#"{"a": 40, "b": 2}"#)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    support::check_python_report(&report, "add", &json!({"result": 42}));
    stop.cancel();
}
