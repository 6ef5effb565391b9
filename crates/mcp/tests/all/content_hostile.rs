//! A hostile MCP server (`fixtures/content_server.py`) attacks toolhost's content
//! handling: an image that is not base64, 10 000 blocks, blocks over the byte limit, a
//! `javascript:` icon, a giant output schema, structured content that breaks its output
//! schema, a MIME type carrying a terminal escape sequence. Each gets a typed outcome, in
//! the registry and as served by toolhost's MCP server, and a good call still works after.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use toolhost_core::tools::{ToolError, ToolRegistry};
use toolhost_mcp::{McpClient, McpServer, McpTransport};

use crate::support;

/// The byte limit of content the tests' registries use (the fixture sends 2 MiB).
const MAX_CONTENT_BYTES: usize = 1024 * 1024;

async fn hostile_registry() -> (ToolRegistry, McpClient) {
    let client = McpClient::new(
        "content",
        McpTransport::Stdio {
            command: support::real_python3(),
            args: vec![support::fixture("content_server.py").display().to_string()],
            env: Vec::new(),
        },
    )
    .with_timeout(20);
    client.connect().await.unwrap();
    let registry = ToolRegistry::new().with_max_content_bytes(MAX_CONTENT_BYTES);
    let reg = client.register_into(&registry).await.unwrap();
    // The giant output schema is refused at registration, named; the rest registers.
    assert!(!reg.names.contains(&"giant_schema".to_string()), "{reg:?}");
    assert_eq!(reg.problems.len(), 1, "{:?}", reg.problems);
    assert!(
        reg.problems[0].contains("giant_schema") && reg.problems[0].contains("output schema"),
        "{:?}",
        reg.problems
    );
    assert_eq!(reg.names.len(), 7, "{reg:?}");
    (registry, client)
}

async fn good_call_works(registry: &ToolRegistry) {
    let out = registry
        .invoke_recorded("good", json!({}))
        .await
        .output
        .unwrap();
    assert_eq!(out.canonical, json!({"n": 1}));
    assert_eq!(out.content.len(), 2);
    assert!(
        out.render.starts_with("a pixel:\n[image image/png"),
        "{}",
        out.render
    );
}

#[tokio::test]
async fn hostile_content_gets_typed_errors_in_the_registry() {
    let (registry, client) = hostile_registry().await;
    good_call_works(&registry).await;

    let err = |name: &'static str| {
        let registry = registry.clone();
        async move {
            registry
                .invoke_recorded(name, json!({}))
                .await
                .output
                .unwrap_err()
        }
    };
    let e = err("bad_base64").await;
    assert!(
        matches!(&e, ToolError::ExecutionFailed(n, m) if n == "bad_base64" && m.contains("not valid base64")),
        "{e}"
    );
    let e = err("many_blocks").await;
    assert!(
        matches!(&e, ToolError::LimitExceeded(_, m) if m.contains("10000 content blocks")),
        "{e}"
    );
    let e = err("over_bytes").await;
    assert!(
        matches!(&e, ToolError::LimitExceeded(_, m) if m.contains(&format!("limit of {MAX_CONTENT_BYTES}"))),
        "{e}"
    );
    let e = err("wrong_structured").await;
    assert!(
        matches!(&e, ToolError::ExecutionFailed(_, m) if m.contains("output schema") && m.contains("/temperature")),
        "{e}"
    );
    let e = err("bad_mime").await;
    assert!(
        matches!(&e, ToolError::ExecutionFailed(_, m) if m.contains("is not a MIME type")),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}') && text.contains("\\x1b"),
        "the escape sequence must be shown escaped: {text}"
    );

    // Icons: only the https one of `good` is kept; `js_icon` keeps none but still works.
    let good = registry.entry("good").unwrap();
    let icons = &good.metadata().icons;
    assert_eq!(icons.len(), 1, "{icons:?}");
    assert_eq!(icons[0].src, "https://example.com/good.png");
    assert!(
        registry
            .entry("js_icon")
            .unwrap()
            .metadata()
            .icons
            .is_empty()
    );
    let ok = registry
        .invoke_recorded("js_icon", json!({}))
        .await
        .output
        .unwrap();
    assert_eq!(ok.render, "ok");

    good_call_works(&registry).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn hostile_content_is_served_as_error_results_and_icons_filtered() {
    let (registry, upstream) = hostile_registry().await;
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let _ = McpServer::new(registry).serve_io(sr, sw).await;
    });
    let (cr, cw) = tokio::io::split(client_io);
    let client = ().serve((cr, cw)).await.unwrap();

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(!names.contains(&"giant_schema"), "{names:?}");
    let good = tools.iter().find(|t| t.name == "good").unwrap();
    assert_eq!(good.title.as_deref(), Some("Good Tool"));
    let icons = serde_json::to_value(&good.icons).unwrap();
    assert_eq!(
        icons,
        json!([{"src": "https://example.com/good.png", "mimeType": "image/png", "sizes": ["48x48"]}])
    );
    assert!(good.output_schema.is_some());
    let js = tools.iter().find(|t| t.name == "js_icon").unwrap();
    assert!(js.icons.is_none(), "{js:?}");

    let call = |name: &'static str| {
        let client = client.peer().clone();
        async move {
            client
                .call_tool(CallToolRequestParams::new(name))
                .await
                .unwrap()
        }
    };
    for (name, kind) in [
        ("bad_base64", "execution_failed"),
        ("many_blocks", "limit_exceeded"),
        ("over_bytes", "limit_exceeded"),
        ("wrong_structured", "execution_failed"),
        ("bad_mime", "execution_failed"),
    ] {
        let r = call(name).await;
        assert_eq!(r.is_error, Some(true), "{name}: {r:?}");
        let s = r.structured_content.clone().unwrap_or(Value::Null);
        assert_eq!(s["error"], kind, "{name}: {s}");
        // Nothing of the hostile payload is passed on: one text block, the error.
        assert_eq!(r.content.len(), 1, "{name}");
    }

    let r = call("good").await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert_eq!(r.structured_content, Some(json!({"n": 1})));
    let content = serde_json::to_value(&r.content).unwrap();
    assert_eq!(content[0], json!({"type": "text", "text": "a pixel:"}));
    assert_eq!(content[1]["type"], "image");
    assert_eq!(
        content[1]["annotations"],
        json!({"audience": ["user"], "priority": 0.5})
    );

    client.cancel().await.unwrap();
    upstream.close().await.unwrap();
}
