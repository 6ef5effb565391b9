//! McpClient against `@modelcontextprotocol/server-everything` (stdio).

use serde_json::json;
use toolhost_core::tools::{ToolRegistry, ToolSource};
use toolhost_mcp::McpClient;

use crate::support;

#[tokio::test]
async fn stdio_lists_calls_and_registers_get_sum() {
    support::init_tracing();
    let Some(script) = support::everything() else {
        return;
    };
    let client = McpClient::new("everything", support::node(&script, &["stdio"])).with_timeout(20);
    client.connect().await.unwrap();
    assert_eq!(
        client.protocol_version().await.as_deref(),
        Some("2025-11-25")
    );

    let defs = client.list_tools().await.unwrap();
    let names: Vec<&str> = defs.iter().map(|d| d.function.name.as_str()).collect();
    assert!(names.contains(&"get-sum"), "{names:?}");
    assert!(names.contains(&"echo"), "{names:?}");

    let direct = client
        .call_tool("get-sum", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(direct.to_string().contains('5'), "{direct}");

    let registry = ToolRegistry::new();
    registry.register_all(client.clone().into_tools()).unwrap();
    let entry = registry.entry("get-sum").unwrap();
    assert_eq!(
        entry.source(),
        &ToolSource::Mcp {
            server: "everything".into()
        }
    );
    let inv = registry
        .invoke_recorded("get-sum", json!({"a": 40, "b": 2}))
        .await;
    let out = inv.output.unwrap();
    assert!(out.render.contains("42"), "{}", out.render);

    // Validation happens before the server sees anything.
    let bad = registry.invoke_recorded("get-sum", json!({"a": "x"})).await;
    assert_eq!(bad.output.unwrap_err().kind(), "invalid_arguments");
    client.close().await.unwrap();
}

#[tokio::test]
async fn progress_is_forwarded_and_slow_calls_time_out() {
    let Some(script) = support::everything() else {
        return;
    };
    let client = McpClient::new("everything", support::node(&script, &["stdio"])).with_timeout(20);
    client.connect().await.unwrap();

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let ctx = toolhost_core::tools::ToolContext::default().with_progress(tx);
    let out = client
        .call_tool_output(
            "trigger-long-running-operation",
            json!({"duration": 0.3, "steps": 3}),
            &ctx,
        )
        .await
        .unwrap();
    assert!(out.render.contains("completed"), "{}", out.render);
    let mut seen = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        seen.push((ev.progress, ev.total));
    }
    assert_eq!(
        seen,
        vec![(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );

    let quick = client
        .clone()
        .with_timeout_duration(std::time::Duration::from_millis(300));
    let err = quick
        .call_tool(
            "trigger-long-running-operation",
            json!({"duration": 5, "steps": 5}),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, toolhost_mcp::McpClientError::Timeout { .. }),
        "{err:?}"
    );
    // Same connection, still fine.
    let sum = client
        .call_tool("get-sum", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert!(sum.to_string().contains('2'));
    client.close().await.unwrap();
}

#[tokio::test]
async fn streamable_http_mode() {
    let Some(script) = support::everything() else {
        return;
    };
    let port = support::free_port();
    let _server = support::spawn_node_http(&script, port);
    let url = format!("http://127.0.0.1:{port}/mcp");
    support::wait_for_port(port).await;
    let client =
        McpClient::new("everything-http", toolhost_mcp::McpTransport::http(&url)).with_timeout(20);
    client.connect().await.unwrap();
    let defs = client.list_tools().await.unwrap();
    assert!(defs.iter().any(|d| d.function.name == "get-sum"));
    let registry = ToolRegistry::new();
    let reg = client.register_into(&registry).await.unwrap();
    assert!(reg.names.contains(&"get-sum".to_string()));
    let out = registry
        .invoke_recorded("get-sum", json!({"a": 20, "b": 22}))
        .await
        .output
        .unwrap();
    assert!(out.render.contains("42"), "{}", out.render);
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn into_tools_lists_by_itself_when_nothing_was_listed() {
    let Some(client) = support::everything_client("listed").await else {
        return;
    };
    // No `list_tools` first: the adapters still come, and answer.
    let tools = client.clone().into_tools();
    let registry = ToolRegistry::new();
    registry.register_all(tools).unwrap();
    support::sums_to_42(&registry).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn on_a_current_thread_runtime_into_listed_tools_is_the_way() {
    let Some(client) = support::everything_client("listed").await else {
        return;
    };
    // `into_tools` cannot wait here: nothing, with a warning, rather than a panic.
    assert!(client.clone().into_tools().is_empty());
    let tools = client.clone().into_listed_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name() == "echo"));
    // Listed now: `into_tools` serves from the cache.
    assert_eq!(client.clone().into_tools().len(), tools.len());
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_tool_of_a_client_never_connected_fails_as_not_initialized() {
    let client = McpClient::new(
        "never",
        toolhost_mcp::McpTransport::stdio("/nonexistent/never-started", Vec::<String>::new()),
    );
    let info = toolhost_mcp::McpToolInfo {
        name: "echo".into(),
        title: None,
        description: Some("Echo".into()),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        icons: Vec::new(),
        annotations: Some(toolhost_mcp::McpToolAnnotations {
            read_only: Some(true),
            ..Default::default()
        }),
        meta: None,
    };
    let registry = ToolRegistry::new();
    registry
        .register(std::sync::Arc::new(toolhost_mcp::McpTool::new(
            client,
            "echo".into(),
            info,
        )))
        .unwrap();
    let err = registry
        .invoke_recorded("echo", json!({"message": "hi"}))
        .await
        .output
        .unwrap_err();
    assert_eq!(err.kind(), "mcp_not_initialized", "{err}");
    assert!(err.to_string().contains("never"), "{err}");
}
