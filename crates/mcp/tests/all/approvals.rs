//! Approvals over MCP: a destructive call made through `McpServer` is put to the client's
//! user as an elicitation (`ClientApprover`), over real HTTP to real rmcp clients. The
//! tool writes a marker file, so "did not run" is checked on disk.
//!
//! The user's answers are scripted (a person's choices, like a model's, are the one thing
//! a test makes up); everything else is real: the server, the registry's approval path,
//! the elicitation on the wire.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, Implementation,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use toolhost_core::tools::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, ArgPattern, DynamicTool,
    Permission, ToolOutput, ToolRegistry,
};
use toolhost_mcp::{ClientApprover, McpServer};

/// The client's user: answers in order, and what they were asked.
#[derive(Clone, Default)]
struct User {
    elicits: bool,
    answers: Arc<Mutex<VecDeque<(ElicitationAction, Value)>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for User {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        if self.elicits {
            caps.elicitation = Some(ElicitationCapability::default());
        }
        ClientConfig::new(caps, Implementation::new("approvals-test", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let v = serde_json::to_value(&request).unwrap();
        self.asked
            .lock()
            .unwrap()
            .push(v["message"].as_str().unwrap_or_default().to_string());
        let (action, content) = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or((ElicitationAction::Cancel, Value::Null));
        let mut r = ElicitResult::new(action);
        r.content = (!content.is_null()).then_some(content);
        Ok(r)
    }
}

/// The fallback for clients that cannot be asked: denies, saying so.
struct Nobody;

#[async_trait::async_trait]
impl Approver for Nobody {
    async fn approve(&self, _request: &ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::Deny
    }

    async fn answer(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer {
            decision: ApprovalDecision::Deny,
            reason: Some("nobody to ask (fallback)".into()),
            pattern: ArgPattern::default(),
        }
    }
}

async fn connect(url: &str, user: User) -> RunningService<RoleClient, User> {
    user.serve(StreamableHttpClientTransport::from_uri(url.to_string()))
        .await
        .unwrap()
}

async fn wipe(
    client: &RunningService<RoleClient, User>,
    path: &Path,
    note: &str,
) -> CallToolResult {
    let mut p = CallToolRequestParams::new("wipe");
    p.arguments = json!({"path": path.display().to_string(), "note": note})
        .as_object()
        .cloned();
    client.peer().call_tool(p).await.unwrap()
}

fn text(r: &CallToolResult) -> String {
    serde_json::to_string(&r.content).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destructive_call_is_put_to_the_clients_user() {
    let dir = toolhost_testkit::temp_dir("mcp-approvals");
    let registry =
        ToolRegistry::new().with_approver(Arc::new(ClientApprover::new(Arc::new(Nobody))));
    registry
        .register(
            DynamicTool::builder("wipe")
                .description("Writes a marker file at the given path (a destructive test tool)")
                .parameters(json!({"type": "object", "properties": {"path": {"type": "string"}, "note": {"type": "string"}}, "required": ["path"]}))
                .permissions(vec![Permission::Delete])
                .handler(|args, _ctx| async move {
                    let path = args["path"].as_str().unwrap_or_default().to_string();
                    std::fs::write(&path, "ran").map_err(|e| toolhost_core::tools::ToolError::failed("wipe", e.to_string()))?;
                    Ok(ToolOutput::text("wiped"))
                })
                .build_dyn(),
        )
        .unwrap();
    let (addr, stop) =
        crate::support::serve_http(McpServer::new(registry), "127.0.0.1:0", Default::default())
            .await;
    let url = format!("http://{addr}/mcp");

    let user = User {
        elicits: true,
        ..Default::default()
    };
    {
        let mut a = user.answers.lock().unwrap();
        a.push_back((ElicitationAction::Accept, json!({"decision": "once"})));
        a.push_back((
            ElicitationAction::Accept,
            json!({"decision": "deny", "reason": "not that folder"}),
        ));
        a.push_back((ElicitationAction::Decline, Value::Null));
        a.push_back((ElicitationAction::Cancel, Value::Null));
        a.push_back((ElicitationAction::Accept, json!({"decision": "session"})));
    }
    let a = connect(&url, user.clone()).await;

    // Once: asked, runs.
    let m1 = dir.join("once");
    let r = wipe(&a, &m1, "first").await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert!(m1.exists());
    // Deny with a reason: asked, does not run, the reason reaches the caller.
    let m2 = dir.join("denied");
    let r = wipe(&a, &m2, "second").await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("not that folder"), "{}", text(&r));
    assert!(!m2.exists());
    // Decline: does not run.
    let m3 = dir.join("declined");
    let r = wipe(&a, &m3, "third").await;
    assert!(
        text(&r).contains("declined by the MCP client's user"),
        "{}",
        text(&r)
    );
    assert!(!m3.exists());
    // Hostile arguments (a terminal escape, 100 KB): the question shows them escaped and
    // cut; the user cancels, nothing runs.
    let m6 = dir.join("hostile");
    let note = format!("\u{1b}]0;pwned\u{7}{}", "z".repeat(100_000));
    let r = wipe(&a, &m6, &note).await;
    assert_eq!(r.is_error, Some(true));
    assert!(!m6.exists());
    let asked = user.asked.lock().unwrap().last().cloned().unwrap();
    assert!(text(&r).contains("dismissed"), "{}", text(&r));
    assert!(
        !asked.contains('\u{1b}') && !asked.contains('\u{7}'),
        "{asked:?}"
    );
    assert!(
        asked.contains("\\u001b]0;pwned"),
        "{}",
        &asked[..300.min(asked.len())]
    );
    assert!(asked.len() < 3000, "{} bytes asked", asked.len());
    assert!(asked.contains("Tool: \"wipe\"") && asked.contains("Destructive"));

    // For the session: asked once, then not again.
    let m4 = dir.join("session-1");
    let m5 = dir.join("session-2");
    assert_eq!(wipe(&a, &m4, "fourth").await.is_error, Some(false));
    assert_eq!(wipe(&a, &m5, "fifth").await.is_error, Some(false));
    assert!(m4.exists() && m5.exists());
    assert_eq!(
        user.asked.lock().unwrap().len(),
        5,
        "the session approval asked again"
    );

    // A client that takes no elicitations gets the fallback's answer; another client's
    // session approval does not cover it.
    let other = User::default();
    let b = connect(&url, other.clone()).await;
    let m7 = dir.join("other-client");
    let r = wipe(&b, &m7, "other").await;
    assert!(
        text(&r).contains("nobody to ask (fallback)"),
        "{}",
        text(&r)
    );
    assert!(!m7.exists());
    assert!(other.asked.lock().unwrap().is_empty());

    // The first client's session approval still holds.
    let m8 = dir.join("session-3");
    assert_eq!(wipe(&a, &m8, "again").await.is_error, Some(false));
    assert!(m8.exists());

    let _ = a.cancel().await;
    let _ = b.cancel().await;
    stop.cancel();
}
