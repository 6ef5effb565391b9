//! The gateway against a hostile wrapped server (`fixtures/gateway_hostile.cjs`) beside a
//! good one (the conformance fixture, `cli/tests/fixtures/suite_server.cjs`), both real
//! node processes, served by a real `McpServer` over HTTP to a real rmcp client.
//!
//! The hostile server lists resources forever, takes the good server's URI and prompt
//! names, offers a 40-expression template, floods logs (one of 1 MB) and resource updates,
//! asks for sampling outside any call and while calls of two clients are in flight, and
//! fails with a 1 MB error, and serves an 8 MiB view. Each attack is bounded
//! or refused, and the good server's resources, prompts and tools still work after it.

#![allow(deprecated)] // logging and resources/subscribe: the 2025-11-25 protocol

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, CreateMessageRequestParams,
    CreateMessageResult, GetPromptRequestParams, Implementation, LoggingLevel,
    LoggingMessageNotificationParam, ReadResourceRequestParams, ResourceContents,
    ResourceUpdatedNotificationParam, SamplingCapability, SamplingMessage, SetLevelRequestParams,
    SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::transport::StreamableHttpClientTransport;
use toolhost_core::tools::ToolRegistry;
use toolhost_mcp::{Gateway, McpClient, McpServer, McpTransport};
use toolhost_testkit::peers;

/// A client that records what the gateway passes on, and answers sampling with a canned
/// model reply (a model's choice: the one thing a test may make up).
#[derive(Clone, Default)]
struct Seen {
    logs: Arc<Mutex<Vec<LoggingMessageNotificationParam>>>,
    updated: Arc<Mutex<Vec<String>>>,
    sampled: Arc<std::sync::atomic::AtomicUsize>,
}

impl rmcp::ClientHandler for Seen {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.sampling = Some(SamplingCapability::default());
        ClientConfig::new(caps, Implementation::new("gateway-test", "1.0.0"))
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(params);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.updated.lock().unwrap().push(params.uri);
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        self.sampled
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text("canned"),
            "test-model".into(),
        ))
    }
}

fn node_client(suite: &peers::Suite, name: &str, script: std::path::PathBuf) -> McpClient {
    McpClient::new(
        name,
        McpTransport::Stdio {
            command: suite.node().display().to_string(),
            args: vec![script.display().to_string()],
            env: vec![("NODE_PATH".into(), suite.modules().display().to_string())],
        },
    )
    .with_timeout(30)
    // Test fixtures: their tools are rated read-only, so they run without approvals.
    .with_tool_rules(toolhost_mcp::McpToolRules {
        default_risk: toolhost_core::tools::RiskLevel::ReadOnly,
        ..Default::default()
    })
}

fn text_of(r: &rmcp::model::ReadResourceResult) -> String {
    match &r.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => format!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_wrapped_server_is_bounded_and_the_good_one_still_works() {
    let Some(suite) = peers::suite() else { return };
    let good = node_client(
        &suite,
        "good",
        toolhost_testkit::workspace_root().join("cli/tests/fixtures/suite_server.cjs"),
    );
    let evil = node_client(
        &suite,
        "hostile",
        crate::support::fixture("gateway_hostile.cjs"),
    );
    let registry = ToolRegistry::new();
    let gateway = Gateway::new();
    for c in [&good, &evil] {
        c.connect().await.unwrap();
        c.register_into(&registry).await.unwrap();
        gateway.add(c.clone()).await;
    }

    let (addr, stop) = crate::support::serve_http(
        McpServer::new(registry).with_gateway(gateway),
        "127.0.0.1:0",
        Default::default(),
    )
    .await;
    let seen = Seen::default();
    let client = seen
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(format!(
            "http://{addr}/mcp"
        )))
        .await
        .unwrap();
    let peer = client.peer().clone();

    // The App extension a wrapped server offers is offered by the gateway as it is, beside
    // toolhost's own (tasks); an extension toolhost does not know it passes on is not.
    let extensions = peer
        .peer_info()
        .and_then(|i| i.capabilities.extensions.clone())
        .unwrap_or_default();
    assert_eq!(
        extensions
            .get("io.modelcontextprotocol/ui")
            .map(|s| serde_json::Value::Object(s.clone())),
        Some(serde_json::json!({"mimeTypes": ["text/html;profile=mcp-app"]}))
    );
    assert!(
        !extensions.contains_key("example.com/unknown"),
        "{extensions:?}"
    );
    assert!(
        extensions.contains_key(rmcp::model::TASKS_EXTENSION_ID),
        "{extensions:?}"
    );

    // Tools' `_meta` passes as the server wrote it (an MCP App's link), without toolhost's
    // reserved keys and script URIs; a `_meta` of 1,000 keys is refused whole, and its
    // tool is still listed; one of 10,000 keys makes a definition over the client's
    // per-tool bound, and that tool is not listed at all.
    let tools = peer.list_all_tools().await.unwrap();
    assert!(!tools.iter().any(|t| t.name == "meta_flood"));
    let meta_of = |name: &str| {
        let t = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        t.meta
            .as_ref()
            .map(|m| serde_json::Value::Object(m.0.clone()))
    };
    assert_eq!(
        meta_of("app_view"),
        Some(
            serde_json::json!({"ui": {"resourceUri": "ui://gateway-hostile/view.html", "csp": {"connectDomains": ["https://api.example.com"]}}})
        )
    );
    assert_eq!(meta_of("meta_wide"), None);
    assert_eq!(
        meta_of("meta_script"),
        Some(serde_json::json!({"ui": {}, "links": ["ui://gateway-hostile/ok.html"]}))
    );

    // A result's `_meta` passes the same way: the view's state, without the forged key
    // and the script URI; the content and structured content as the server sent them.
    let shown = peer
        .call_tool(CallToolRequestParams::new("app_view"))
        .await
        .unwrap();
    assert_eq!(
        shown.meta.map(|m| serde_json::Value::Object(m.0)),
        Some(serde_json::json!({"ui": {"viewState": {"page": 2}}}))
    );
    assert_eq!(
        shown.structured_content,
        Some(serde_json::json!({"shown": true}))
    );

    // Endless pagination: bounded per server, and the listing answers.
    let t0 = Instant::now();
    let resources = peer.list_all_resources().await.unwrap();
    let evil_count = resources
        .iter()
        .filter(|r| r.uri.starts_with("evil://r/"))
        .count();
    assert!(
        evil_count > 0 && evil_count <= toolhost_mcp::client::MAX_ITEMS,
        "{evil_count} resources of the endless list"
    );
    eprintln!(
        "endless list cut at {evil_count} items in {:?}",
        t0.elapsed()
    );

    // A `ui://` view's `_meta` passes bounded, listed and read: its CSP as the server
    // wrote it, without the forged key and the script URI; its HTML as it is.
    let view_meta = serde_json::json!({"ui": {"csp": {"connectDomains": ["https://api.example.com"]}, "prefersBorder": true}});
    let view = resources
        .iter()
        .find(|r| r.uri == "ui://gateway-hostile/view.html")
        .expect("the view is listed");
    assert_eq!(
        view.meta.clone().map(|m| serde_json::Value::Object(m.0)),
        Some(view_meta.clone())
    );
    let read_view = peer
        .read_resource(ReadResourceRequestParams::new(
            "ui://gateway-hostile/view.html",
        ))
        .await
        .unwrap();
    match &read_view.contents[0] {
        ResourceContents::TextResourceContents { text, meta, .. } => {
            assert_eq!(text, "<!doctype html><p>view</p>");
            assert_eq!(
                meta.clone().map(|m| serde_json::Value::Object(m.0)),
                Some(view_meta)
            );
        }
        other => panic!("{other:?}"),
    }

    // A view of 8 MiB is past the client's line bound: that read fails with an error
    // saying so (the connection to that server is closed, as for any line past the
    // bound), and the view beside it is read whole again (over a new connection).
    let huge = peer
        .read_resource(ReadResourceRequestParams::new(
            "ui://gateway-hostile/huge.html",
        ))
        .await;
    let err = huge.expect_err("an 8 MiB view passed").to_string();
    assert!(err.contains("bytes") || err.contains("line"), "{err}");
    let again = peer
        .read_resource(ReadResourceRequestParams::new(
            "ui://gateway-hostile/view.html",
        ))
        .await
        .unwrap();
    assert_eq!(text_of(&again), "<!doctype html><p>view</p>");

    // A URI both servers list belongs to neither: it is renamed for each (the rule is
    // decided on the set, not on the servers' names or order), and both stay reachable.
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert!(!uris.contains(&"test://static-text"), "{uris:?}");
    assert!(
        uris.contains(&"toolhost://hostile/test://static-text")
            && uris.contains(&"toolhost://good/test://static-text"),
        "{:?}",
        uris.iter()
            .filter(|u| !u.starts_with("evil://r/"))
            .collect::<Vec<_>>()
    );
    let read = |uri: &str| {
        let peer = peer.clone();
        let uri = uri.to_string();
        async move {
            peer.read_resource(ReadResourceRequestParams::new(uri))
                .await
        }
    };
    assert_eq!(
        text_of(&read("toolhost://good/test://static-text").await.unwrap()),
        "This is the content of the static text resource."
    );
    let impostor = read("toolhost://hostile/test://static-text").await.unwrap();
    assert_eq!(text_of(&impostor), "evil content of test://static-text");
    if let ResourceContents::TextResourceContents { uri, .. } = &impostor.contents[0] {
        assert_eq!(
            uri, "toolhost://hostile/test://static-text",
            "contents carry the served URI"
        );
    }

    // A URI nobody lists, against a 40-expression template: refused at once, not matched
    // by backtracking.
    let t0 = Instant::now();
    let err = read(&format!("evil://t/{}", "v".repeat(50_000)))
        .await
        .unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(
        err.to_string().contains("no wrapped MCP server offers"),
        "{err}"
    );

    // Prompts: a name both offer is `server__name` for each.
    let prompts = peer.list_all_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains(&"good__test_simple_prompt")
            && names.contains(&"hostile__test_simple_prompt")
            && !names.contains(&"test_simple_prompt"),
        "{names:?}"
    );
    let got = peer
        .get_prompt(GetPromptRequestParams::new("good__test_simple_prompt"))
        .await
        .unwrap();
    assert!(format!("{:?}", got.messages).contains("This is a simple prompt for testing."));

    // A 1 MB error `data` does not come through; the code and message (named) do.
    let err = peer
        .get_prompt(GetPromptRequestParams::new("evil_error"))
        .await
        .unwrap_err();
    let text = format!("{err:?}");
    assert!(
        text.contains("-32099") && text.contains("MCP server 'hostile'"),
        "{}",
        &text[..text.len().min(500)]
    );
    assert!(
        text.len() < 10_000,
        "the error data came through: {} bytes",
        text.len()
    );

    // Sampling asked outside any call: refused, nobody to ask.
    let last = text_of(&read("evil://last-sampling").await.unwrap());
    assert!(
        last.starts_with("refused:") && last.contains("nobody to ask"),
        "{last}"
    );

    // Floods: logs are rate-limited and cut, updates of unsubscribed URIs go nowhere.
    peer.set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap();
    let t0 = Instant::now();
    let flooded = peer
        .call_tool(CallToolRequestParams::new("flood"))
        .await
        .unwrap();
    assert_eq!(flooded.is_error, Some(false), "{flooded:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let elapsed = t0.elapsed().as_secs_f64();
    let logs = seen.logs.lock().unwrap().clone();
    eprintln!(
        "{} of 5000 flooded log messages passed in {elapsed:.2} s",
        logs.len()
    );
    let cap =
        toolhost_mcp::server::LOG_BURST + toolhost_mcp::server::LOG_PER_SECOND * elapsed + 1.0;
    assert!(
        !logs.is_empty() && (logs.len() as f64) <= cap,
        "{} log messages passed in {elapsed:.2} s (cap {cap:.0})",
        logs.len()
    );
    assert!(
        logs.iter()
            .all(|l| l.logger.as_deref() == Some("hostile/evil"))
    );
    assert!(
        logs.iter()
            .all(|l| l.data.to_string().len() <= toolhost_mcp::server::MAX_LOG_DATA_BYTES + 100)
    );
    assert!(
        seen.updated.lock().unwrap().is_empty(),
        "updates for URIs nobody subscribed to"
    );

    // The good server still works: a subscription gets its update, its tool and sampling
    // (in a call) work.
    peer.subscribe(SubscribeRequestParams::new("test://watched-resource"))
        .await
        .unwrap();
    let mut updated = false;
    for _ in 0..100 {
        if seen
            .updated
            .lock()
            .unwrap()
            .iter()
            .any(|u| u == "test://watched-resource")
        {
            updated = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(updated, "no resources/updated for the subscribed URI");
    let mut call = CallToolRequestParams::new("test_sampling");
    call.arguments = Some(
        serde_json::json!({"prompt": "hi"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let sampled = peer.call_tool(call).await.unwrap();
    assert!(
        format!("{:?}", sampled.content).contains("LLM response: canned"),
        "{sampled:?}"
    );

    // Calls of two clients in flight on the hostile server when it asks for sampling: the
    // request names no call, so it is refused rather than shown to the wrong user.
    let other = Seen::default();
    let second = other
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(format!(
            "http://{addr}/mcp"
        )))
        .await
        .unwrap();
    let before = seen.sampled.load(std::sync::atomic::Ordering::SeqCst);
    let (a, b) = tokio::join!(
        peer.call_tool(CallToolRequestParams::new("ask_later")),
        second
            .peer()
            .call_tool(CallToolRequestParams::new("ask_later"))
    );
    for r in [a.unwrap(), b.unwrap()] {
        let text = format!("{:?}", r.content);
        assert!(
            text.contains("refused") && text.contains("several clients"),
            "{text}"
        );
    }
    assert_eq!(
        seen.sampled.load(std::sync::atomic::Ordering::SeqCst),
        before
    );
    assert_eq!(other.sampled.load(std::sync::atomic::Ordering::SeqCst), 0);
    // One client alone: its user is asked.
    let alone = peer
        .call_tool(CallToolRequestParams::new("ask_later"))
        .await
        .unwrap();
    assert!(
        format!("{:?}", alone.content).contains("answered"),
        "{alone:?}"
    );
    let _ = second.cancel().await;

    let _ = client.cancel().await;
    stop.cancel();
    let _ = good.close().await;
    let _ = evil.close().await;
}
