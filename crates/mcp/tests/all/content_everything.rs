//! Content blocks through toolhost: server-everything's non-text results (image, resource
//! links, embedded resources, annotated text) and its structured-content tool, called
//! directly with a plain rmcp client and through toolhost (McpClient → ToolRegistry →
//! McpServer over an in-process duplex pipe → rmcp client): the blocks must be the same
//! JSON, and `title`/`outputSchema` must pass through `tools/list`; its resources,
//! templates and prompts must pass through the gateway unchanged.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use toolhost_core::tools::ToolRegistry;
use toolhost_mcp::{McpClient, McpServer};

use crate::support;

/// A plain rmcp client of server-everything (stdio).
async fn direct(script: &std::path::Path) -> RunningService<RoleClient, ()> {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(script).arg("stdio");
    ().serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
}

/// A plain rmcp client of toolhost's MCP server, which serves a registry wrapping
/// server-everything. Returns the client and the wrapping McpClient (to close it).
async fn through_toolhost(script: &std::path::Path) -> (RunningService<RoleClient, ()>, McpClient) {
    let upstream = McpClient::new("everything", support::node(script, &["stdio"])).with_timeout(20);
    upstream.connect().await.unwrap();
    let registry = ToolRegistry::new();
    let reg = upstream.register_into(&registry).await.unwrap();
    assert!(reg.problems.is_empty(), "{:?}", reg.problems);
    let gateway = toolhost_mcp::Gateway::new();
    gateway.add(upstream.clone()).await;
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let _ = McpServer::new(registry)
            .with_gateway(gateway)
            .serve_io(sr, sw)
            .await;
    });
    let (cr, cw) = tokio::io::split(client_io);
    (().serve((cr, cw)).await.unwrap(), upstream)
}

async fn call(c: &RunningService<RoleClient, ()>, name: &str, args: Value) -> CallToolResult {
    let mut p = CallToolRequestParams::new(name.to_string());
    p.arguments = args.as_object().cloned();
    c.call_tool(p).await.unwrap()
}

/// `blocks` with server-everything's wall-clock time left out: its embedded resources
/// end "... created at 12:20:39 AM", made at each call, so two calls a second apart
/// differ there. A blob is compared decoded, up to that clock; everything else exactly.
fn without_clock(mut blocks: Value) -> Value {
    use base64::Engine as _;
    let before_clock = |s: &str| s.split(" created at ").next().unwrap_or(s).to_string();
    for block in blocks.as_array_mut().into_iter().flatten() {
        let Some(resource) = block.get_mut("resource").and_then(Value::as_object_mut) else {
            continue;
        };
        if let Some(Value::String(text)) = resource.get_mut("text") {
            *text = before_clock(text);
        }
        if let Some(Value::String(blob)) = resource.remove("blob") {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(&blob)
                .unwrap_or_else(|e| panic!("a blob that is not base64 ({e}): {blob}"));
            let decoded = before_clock(&String::from_utf8_lossy(&bytes));
            resource.insert(
                "blob (decoded, before its clock)".into(),
                Value::String(decoded),
            );
        }
    }
    blocks
}

fn find<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} not listed"))
}

#[tokio::test]
async fn non_text_blocks_and_structured_content_pass_through_toolhost_unchanged() {
    support::init_tracing();
    let Some(script) = support::everything() else {
        return;
    };
    let plain = direct(&script).await;
    let (wrapped, upstream) = through_toolhost(&script).await;

    let cases = [
        ("get-tiny-image", json!({})),
        ("get-resource-links", json!({"count": 4})),
        (
            "get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 2}),
        ),
        (
            "get-resource-reference",
            json!({"resourceType": "Blob", "resourceId": 3}),
        ),
        (
            "get-annotated-message",
            json!({"messageType": "success", "includeImage": true}),
        ),
        ("get-structured-content", json!({"location": "Chicago"})),
    ];
    for (name, args) in cases {
        let want = call(&plain, name, args.clone()).await;
        let got = call(&wrapped, name, args.clone()).await;
        assert_ne!(got.is_error, Some(true), "{name}: {got:?}");
        assert_eq!(
            without_clock(serde_json::to_value(&got.content).unwrap()),
            without_clock(serde_json::to_value(&want.content).unwrap()),
            "{name} {args}: the blocks differ"
        );
        assert!(
            !want.content.is_empty(),
            "{name}: server-everything returned nothing"
        );
    }
    // The image really is an image block, not a summary.
    let img = call(&wrapped, "get-tiny-image", json!({})).await;
    let img = serde_json::to_value(&img.content).unwrap();
    assert_eq!(img[1]["type"], "image", "{img}");
    assert_eq!(img[1]["mimeType"], "image/png", "{img}");

    // The structured-content tool: structuredContent as given, and its title and
    // outputSchema in tools/list.
    let want = call(
        &plain,
        "get-structured-content",
        json!({"location": "New York"}),
    )
    .await;
    let got = call(
        &wrapped,
        "get-structured-content",
        json!({"location": "New York"}),
    )
    .await;
    assert_eq!(got.structured_content, want.structured_content);
    assert_eq!(
        got.structured_content,
        Some(json!({"temperature": 33, "conditions": "Cloudy", "humidity": 82}))
    );
    let plain_tools = plain.list_all_tools().await.unwrap();
    let wrapped_tools = wrapped.list_all_tools().await.unwrap();
    for name in ["get-structured-content", "get-tiny-image"] {
        let (p, w) = (find(&plain_tools, name), find(&wrapped_tools, name));
        assert!(p.title.is_some(), "{name}: server-everything gives a title");
        assert_eq!(w.title, p.title, "{name}");
        assert_eq!(w.output_schema, p.output_schema, "{name}");
    }
    assert!(
        find(&wrapped_tools, "get-structured-content")
            .output_schema
            .is_some()
    );

    // Resources, templates and prompts pass through the gateway unchanged, in the
    // gateway's deterministic order (by URI, URI template, name).
    let mut plain_resources = plain.list_all_resources().await.unwrap();
    assert!(!plain_resources.is_empty());
    plain_resources.sort_by(|a, b| a.uri.cmp(&b.uri));
    assert_eq!(wrapped.list_all_resources().await.unwrap(), plain_resources);
    let mut plain_templates = plain.list_all_resource_templates().await.unwrap();
    plain_templates.sort_by(|a, b| a.uri_template.cmp(&b.uri_template));
    assert_eq!(
        wrapped.list_all_resource_templates().await.unwrap(),
        plain_templates
    );
    for r in plain_resources.iter().take(3) {
        let req = || rmcp::model::ReadResourceRequestParams::new(r.uri.clone());
        assert_eq!(
            wrapped.read_resource(req()).await.unwrap().contents,
            plain.read_resource(req()).await.unwrap().contents,
            "{}",
            r.uri
        );
    }
    let mut plain_prompts = plain.list_all_prompts().await.unwrap();
    assert!(!plain_prompts.is_empty());
    plain_prompts.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(wrapped.list_all_prompts().await.unwrap(), plain_prompts);
    let simple = plain_prompts
        .iter()
        .find(|p| {
            p.arguments
                .as_ref()
                .is_none_or(|a| a.iter().all(|x| x.required != Some(true)))
        })
        .expect("a prompt without required arguments");
    let req = || rmcp::model::GetPromptRequestParams::new(simple.name.clone());
    assert_eq!(
        wrapped.get_prompt(req()).await.unwrap().messages,
        plain.get_prompt(req()).await.unwrap().messages
    );

    plain.cancel().await.unwrap();
    wrapped.cancel().await.unwrap();
    upstream.close().await.unwrap();
}
