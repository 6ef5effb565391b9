//! McpClient against server-filesystem and a small server written with the Python `mcp`
//! package.

use serde_json::json;
use toolhost_core::tools::{Permission, ToolError, ToolRegistry};
use toolhost_mcp::{McpClient, McpTransport};

use crate::support;

#[tokio::test]
async fn filesystem_server_reads_a_file_through_the_registry() {
    let Some(script) = support::filesystem() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("toolhost-mcp-fs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let file = dir.join("hello.txt");
    std::fs::write(&file, "hello from toolhost").unwrap();

    let client =
        McpClient::new("fs", support::node(&script, &[dir.to_str().unwrap()])).with_timeout(20);
    client.connect().await.unwrap();
    let registry = ToolRegistry::new();
    let reg = client.register_into(&registry).await.unwrap();
    assert!(reg.problems.is_empty(), "{:?}", reg.problems);
    assert!(registry.contains("read_text_file"), "{:?}", reg.names);
    // readOnlyHint → Read.
    assert!(
        registry
            .entry("read_text_file")
            .unwrap()
            .permissions()
            .contains(&Permission::Read)
    );
    let out = registry
        .invoke_recorded("read_text_file", json!({"path": file.to_str().unwrap()}))
        .await
        .output
        .unwrap();
    assert!(out.render.contains("hello from toolhost"), "{}", out.render);

    // Outside the allowed directory: the server refuses, as a tool error.
    let outside = registry
        .invoke_recorded("read_text_file", json!({"path": "/etc/hostname"}))
        .await;
    let err = outside.output.unwrap_err();
    assert!(err.is_recoverable(), "{err:?}");
    client.close().await.unwrap();
}

#[tokio::test]
async fn python_mcp_server_structured_results_and_is_error() {
    let Some(python) = support::python() else {
        return;
    };
    let client = McpClient::new(
        "py",
        McpTransport::Stdio {
            command: python.display().to_string(),
            args: vec![support::fixture("py_server.py").display().to_string()],
            env: Vec::new(),
        },
    )
    .with_timeout(30);
    client.connect().await.unwrap();
    let tools = client.tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["add", "shout", "fail"]);

    let out = client
        .call_tool_output("add", json!({"a": 2, "b": 3}), &Default::default())
        .await
        .unwrap();
    assert_eq!(out.canonical, json!({"result": 5}));
    assert_eq!(out.render, "5");

    let err = client
        .call_tool("fail", json!({"reason": "no luck"}))
        .await
        .unwrap_err();
    match &err {
        toolhost_mcp::McpClientError::ToolFailed { tool, message, .. } => {
            assert_eq!(tool, "fail");
            assert!(message.contains("fail"), "{message}");
        }
        other => panic!("expected ToolFailed, got {other:?}"),
    }
    // In the registry: a recoverable ExecutionFailed.
    let err = ToolError::from(err);
    assert!(matches!(&err, ToolError::ExecutionFailed(t, _) if t == "fail"));
    assert!(err.is_recoverable());
    client.close().await.unwrap();
}
