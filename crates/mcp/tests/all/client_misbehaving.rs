//! McpClient against the deliberately misbehaving fixture server (crash, hang, garbage,
//! giant line, wrong ids, list_changed, cleared env, noisy stderr).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use toolhost_core::tools::{
    ApprovalDecision, DynamicTool, Permission, RiskLevel, StaticApprover, ToolError, ToolOutput,
    ToolRegistry,
};
use toolhost_mcp::McpClientError;
use toolhost_mcp::{McpClient, McpProtocol, McpTransport, StdioLimits};

use crate::support;

fn temp_log(tag: &str) -> PathBuf {
    toolhost_testkit::temp_dir(&format!("mcp-{tag}")).join("log.txt")
}

fn misbehaving(log: &std::path::Path, extra_env: &[(&str, &str)]) -> McpClient {
    let mut env = vec![("MISBEHAVE_LOG".to_string(), log.display().to_string())];
    env.extend(
        extra_env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    McpClient::new(
        "misbehaving",
        McpTransport::Stdio {
            command: support::real_python3(),
            args: vec![
                support::fixture("misbehaving_server.py")
                    .display()
                    .to_string(),
            ],
            env,
        },
    )
    .with_timeout_duration(Duration::from_secs(5))
}

fn log_lines(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// Waits (bounded) until `cond` holds; the assertion is on the condition, not the time.
async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cond()
}

#[tokio::test]
async fn child_env_is_cleared_except_listed_vars() {
    let log = temp_log("env");
    let client = misbehaving(&log, &[("ONLY_THIS", "1")]);
    client.connect().await.unwrap();
    let out = client.call_tool("env", json!({})).await.unwrap();
    let names: Vec<String> = serde_json::from_value(out["names"].clone()).unwrap();
    assert!(names.contains(&"ONLY_THIS".to_string()), "{names:?}");
    assert!(names.contains(&"MISBEHAVE_LOG".to_string()), "{names:?}");
    // The host certainly has PATH and HOME (or CARGO_*): none of them leaks through.
    for n in &names {
        assert!(
            ["ONLY_THIS", "MISBEHAVE_LOG", "LC_CTYPE"].contains(&n.as_str()),
            "unexpected variable {n} in the child's environment: {names:?}"
        );
    }
    client.close().await.unwrap();
}

#[tokio::test]
async fn stderr_is_forwarded_with_caps() {
    let log = temp_log("noisy");
    let client = misbehaving(&log, &[]);
    client.connect().await.unwrap();
    let out = client.call_tool("noisy", json!({})).await.unwrap();
    assert_eq!(out, json!("done"));
    let tail = client.stderr_tail().await;
    assert!(!tail.is_empty());
    assert!(
        tail.len() <= StdioLimits::default().stderr_tail_lines,
        "{}",
        tail.len()
    );
    assert!(tail.iter().all(|l| l.chars().count() <= 300));
    // The 100 000-byte line was cut, and marked as cut.
    assert!(tail.iter().any(|l| l.starts_with("LLLL")), "{tail:?}");
    client.close().await.unwrap();
}

#[tokio::test]
async fn crash_mid_call_gives_structured_error_then_reconnects() {
    let log = temp_log("crash");
    let client = misbehaving(&log, &[]);
    client.connect().await.unwrap();
    let err = client.call_tool("crash", json!({})).await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, McpClientError::Closed { .. }), "{err:?}");
    assert!(msg.contains("exited"), "{msg}");
    assert!(
        msg.contains("simulated fatal error"),
        "stderr tail missing: {msg}"
    );
    // In the registry it is a link failure, which stops an LLM loop.
    let err = ToolError::from(err);
    assert!(matches!(err, ToolError::McpError(_)), "{err:?}");
    assert!(!err.is_recoverable());

    // The next call reconnects (a second process starts) and works.
    let out = client
        .call_tool("echo", json!({"text": "back"}))
        .await
        .unwrap();
    assert_eq!(out, json!({"text": "back"}));
    assert_eq!(client.reconnect_count(), 1);
    assert_eq!(log_lines(&log).iter().filter(|l| *l == "start").count(), 2);
    client.close().await.unwrap();
}

#[tokio::test]
async fn hanging_server_hits_timeout_and_gets_cancelled() {
    let log = temp_log("hang");
    let client = misbehaving(&log, &[]).with_timeout_duration(Duration::from_millis(800));
    client.connect().await.unwrap();
    let err = client.call_tool("hang", json!({})).await.unwrap_err();
    assert!(matches!(err, McpClientError::Timeout { .. }), "{err:?}");
    assert!(matches!(ToolError::from(err), ToolError::McpTimeout(_)));
    // notifications/cancelled reached the server.
    assert!(
        eventually(|| log_lines(&log).iter().any(|l| l.starts_with("cancelled"))).await,
        "{:?}",
        log_lines(&log)
    );
    // The connection is still usable.
    let out = client
        .call_tool("echo", json!({"text": "alive"}))
        .await
        .unwrap();
    assert_eq!(out["text"], "alive");
    assert_eq!(client.reconnect_count(), 0);
    client.close().await.unwrap();
}

#[tokio::test]
async fn cancelling_the_context_sends_cancelled() {
    let log = temp_log("ctxcancel");
    let client = misbehaving(&log, &[]);
    client.connect().await.unwrap();
    let ctx = toolhost_core::tools::ToolContext::default();
    let token = ctx.cancellation_token().clone();
    let call = client.call_tool_output("hang", json!({}), &ctx);
    let cancel = async {
        assert!(eventually(|| log_lines(&log).iter().any(|l| l == "hanging")).await);
        token.cancel();
    };
    let (res, ()) = tokio::join!(call, cancel);
    assert!(
        matches!(&res, Err(McpClientError::Cancelled { tool, .. }) if tool == "hang"),
        "{res:?}"
    );
    assert!(eventually(|| log_lines(&log).iter().any(|l| l.starts_with("cancelled"))).await);
    client.close().await.unwrap();
}

#[tokio::test]
async fn garbage_lines_are_skipped() {
    let log = temp_log("garbage");
    let client = misbehaving(&log, &[]);
    client.connect().await.unwrap();
    let out = client.call_tool("garbage", json!({})).await.unwrap();
    assert_eq!(out, json!("after garbage"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn giant_line_is_an_error_with_bounded_buffering() {
    let log = temp_log("giant");
    let limits = StdioLimits {
        max_line_bytes: 1024 * 1024,
        ..StdioLimits::default()
    };
    let client = misbehaving(&log, &[("MISBEHAVE_GIANT_BYTES", "33554432")]).with_limits(limits);
    client.connect().await.unwrap();
    let err = client.call_tool("giant", json!({})).await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, McpClientError::Closed { .. }), "{err:?}");
    assert!(msg.contains("longer than 1048576 bytes"), "{msg}");
    // The host stopped reading at the limit: the server could not push its 32 MiB.
    assert!(!log_lines(&log).iter().any(|l| l == "giant sent 33554432"));
    // And the next call gets a fresh process.
    let out = client
        .call_tool("echo", json!({"text": "ok"}))
        .await
        .unwrap();
    assert_eq!(out["text"], "ok");
    client.close().await.unwrap();
}

#[tokio::test]
async fn replies_with_wrong_ids_are_dropped() {
    let log = temp_log("wrongid");
    let client = misbehaving(&log, &[]).with_timeout_duration(Duration::from_millis(800));
    client.connect().await.unwrap();
    let out = client.call_tool("wrong_id", json!({})).await.unwrap();
    assert_eq!(out, json!("right answer"));
    let err = client.call_tool("only_wrong", json!({})).await.unwrap_err();
    assert!(matches!(err, McpClientError::Timeout { .. }), "{err:?}");
    assert!(matches!(ToolError::from(err), ToolError::McpTimeout(_)));
    client.close().await.unwrap();
}

#[tokio::test]
async fn registry_gets_namespaced_collisions_permissions_and_list_changed_updates() {
    let log = temp_log("registry");
    let registry = ToolRegistry::new();
    registry
        .register(
            DynamicTool::builder("echo")
                .description("A native echo tool that was here first")
                .handler(|_a, _c| async move { Ok(ToolOutput::text("native")) })
                .build_dyn(),
        )
        .unwrap();
    let client = misbehaving(&log, &[]);
    client.connect().await.unwrap();
    let reg = client.register_into(&registry).await.unwrap();
    assert!(reg.problems.is_empty(), "{:?}", reg.problems);
    assert!(
        reg.names.contains(&"misbehaving__echo".to_string()),
        "{:?}",
        reg.names
    );
    assert!(reg.names.contains(&"hang".to_string()));

    // Both tools work, each under its name.
    let native = registry
        .invoke_recorded("echo", json!({}))
        .await
        .output
        .unwrap();
    assert_eq!(native.render, "native");
    let remote = registry
        .invoke_recorded("misbehaving__echo", json!({"text": "hi"}))
        .await
        .output
        .unwrap();
    assert_eq!(remote.canonical, json!({"text": "hi"}));

    // Annotations became permission hints.
    let e = registry.entry("misbehaving__echo").unwrap();
    assert_eq!(e.permissions(), &[Permission::Read]);
    let c = registry.entry("crash").unwrap();
    assert_eq!(c.permissions(), &[Permission::Delete]);
    // ... which the policy acts on: destructive without an approver is denied, unrun.
    let denied = registry.invoke_recorded("crash", json!({})).await;
    assert_eq!(denied.output.unwrap_err().kind(), "permission_denied");
    assert_eq!(client.reconnect_count(), 0);

    // `change` is not annotated: unrated, it needs an approval (none here), unrun.
    let unrated = registry.invoke_recorded("change", json!({})).await;
    assert_eq!(unrated.output.unwrap_err().kind(), "permission_denied");
    assert!(!registry.contains("extra"));
    assert_eq!(
        registry.entry("change").unwrap().risk(),
        RiskLevel::Destructive
    );

    // tools/list_changed updates the registry (`change` approved once).
    registry.set_approver(Some(std::sync::Arc::new(StaticApprover(
        ApprovalDecision::AllowOnce,
    ))));
    registry
        .invoke_recorded("change", json!({}))
        .await
        .output
        .unwrap();
    assert!(
        eventually(|| registry.contains("extra")).await,
        "{:?}",
        registry.list_tools()
    );
    client.close().await.unwrap();
}

/// `protocol = "auto"` against a server that never answers `server/discover`:
/// the start falls back to 2025-11-25 once, and the reconnection after a crash goes there
/// at once (the server is asked `server/discover` a single time in three processes).
#[tokio::test]
async fn auto_falls_back_once_for_a_server_silent_to_discover_and_remembers_it() {
    let log = temp_log("silent-discover");
    let client = misbehaving(&log, &[("MISBEHAVE_SILENT_DISCOVER", "1")])
        .with_protocol(McpProtocol::Auto)
        .with_timeout_duration(Duration::from_secs(2));
    client.connect().await.unwrap();
    let out = client
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(out, json!({"text": "hi"}));
    let err = client.call_tool("crash", json!({})).await.unwrap_err();
    assert!(matches!(err, McpClientError::Closed { .. }), "{err:?}");
    let out = client
        .call_tool("echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(out, json!({"text": "again"}));
    let lines = log_lines(&log);
    assert_eq!(
        lines.iter().filter(|l| *l == "discover").count(),
        1,
        "{lines:?}"
    );
    assert_eq!(
        lines.iter().filter(|l| *l == "start").count(),
        3,
        "{lines:?}"
    );
    client.close().await.unwrap();
}
