//! [`ClientApprover`]: a call that needs an approval, made by an MCP client of `serve`, is
//! put to that client's user as an elicitation (`elicitation/create`, a form with the
//! tool, its risk, why it needs an approval and its arguments), when the client declared
//! form elicitation. The answer is the registry's approval like any other (events, audit,
//! "allow for this session"); a client that cannot be asked gets the fallback approver's
//! answer (`serve`: a deny naming `toolhost approvals add`).
//!
//! - The user may allow once or for the session, or deny with a reason. "Always" is not
//!   offered: a lasting rule is the operator's (`toolhost approvals add`), not a remote
//!   client's.
//! - The arguments come from a model and are shown to a person: they go as JSON (control
//!   characters escaped), cut to [`MAX_SHOWN_ARGUMENT_BYTES`]. The user's reason is cut to
//!   [`MAX_REASON_CHARS`].
//! - The message starts with [`APPROVAL_MARKER`] (`toolhost approval:`) and `_meta` names
//!   toolhost as the source (`io.toolhost/source: "toolhost"`); a wrapped server's
//!   requests never can ([`crate::attribution`]), so the user can tell them apart.
//! - A 2026-07-28 client is asked by an `input_required` round: the call is dropped before
//!   it ran and runs again, from the start, when the client retries with its answer
//!   (`rounds.rs`).
//! - Declining, cancelling, an unknown answer, an error or no answer within the timeout all
//!   deny.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use serde_json::{Value, json};
use toolhost_core::tools::render::head;
use toolhost_core::tools::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, ArgPattern, ToolContext,
};

use crate::DownstreamClient;
use crate::attribution::{APPROVAL_MARKER, SOURCE_META_KEY, SOURCE_TOOLHOST};
use crate::rounds::APPROVAL_INPUT_KEY;

/// The most bytes of a call's arguments (as JSON) shown in the question.
pub const MAX_SHOWN_ARGUMENT_BYTES: usize = 2000;
/// The most characters of the user's reason kept.
pub const MAX_REASON_CHARS: usize = 500;
/// How long the user has to answer, by default.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

/// Asks the MCP client's user; falls back to another approver when it cannot.
pub struct ClientApprover {
    fallback: Arc<dyn Approver>,
    timeout: Duration,
}

impl std::fmt::Debug for ClientApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientApprover")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ClientApprover {
    /// Asks the client when it can, else `fallback`.
    pub fn new(fallback: Arc<dyn Approver>) -> Self {
        Self {
            fallback,
            timeout: DEFAULT_APPROVAL_TIMEOUT,
        }
    }

    /// Sets how long the user has to answer.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

fn cut(s: &str, max_bytes: usize) -> String {
    let h = head(s, max_bytes);
    if h.len() < s.len() {
        format!("{h}… ({} bytes in all)", s.len())
    } else {
        s.to_string()
    }
}

/// The elicitation put to the user.
fn question(request: &ApprovalRequest) -> Option<ElicitRequestParams> {
    // serde_json escapes control characters: nothing the model wrote can drive the
    // client's terminal or rewrite the question.
    let args = cut(&request.arguments.to_string(), MAX_SHOWN_ARGUMENT_BYTES);
    let message = format!(
        "{APPROVAL_MARKER} toolhost itself (not an MCP server it wraps) asks you to approve \
         a tool call.\n\
         Tool: {tool}\nRisk: {risk:?}\nWhy it needs an approval: {reason}\nArguments: {args}",
        tool = Value::String(request.tool.clone()),
        risk = request.risk,
        reason = request.reason,
    );
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "_meta": {SOURCE_META_KEY: SOURCE_TOOLHOST},
        "requestedSchema": {
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "title": "Decision",
                    "enum": ["once", "session", "deny"],
                    "enumNames": ["Allow this call", "Allow this tool for this session", "Deny"],
                },
                "reason": {
                    "type": "string",
                    "title": "Reason (for a deny; the model sees it)",
                },
            },
            "required": ["decision"],
        },
    }))
    .map_err(|e| tracing::error!("approval question: {e}"))
    .ok()
}

fn deny(reason: String) -> ApprovalAnswer {
    ApprovalAnswer {
        decision: ApprovalDecision::Deny,
        reason: Some(reason),
        pattern: ArgPattern::default(),
    }
}

/// The registry's answer for the user's.
fn answer_of(action: ElicitationAction, content: Option<&Value>) -> ApprovalAnswer {
    let reason = content
        .and_then(|c| c.get("reason"))
        .and_then(Value::as_str)
        .map(|r| r.chars().take(MAX_REASON_CHARS).collect::<String>())
        .filter(|r| !r.trim().is_empty());
    match action {
        ElicitationAction::Accept => {
            let decision = match content
                .and_then(|c| c.get("decision"))
                .and_then(Value::as_str)
            {
                Some("once") => ApprovalDecision::AllowOnce,
                Some("session") => ApprovalDecision::AllowSession,
                Some("deny") => {
                    return deny(
                        reason.unwrap_or_else(|| "denied by the MCP client's user".into()),
                    );
                }
                other => {
                    return deny(format!(
                        "the MCP client answered the approval with an unknown decision {}",
                        cut(&format!("{other:?}"), 100)
                    ));
                }
            };
            ApprovalAnswer {
                decision,
                reason: Some("approved by the MCP client's user".into()),
                pattern: ArgPattern::default(),
            }
        }
        ElicitationAction::Decline => {
            deny(reason.unwrap_or_else(|| "declined by the MCP client's user".into()))
        }
        ElicitationAction::Cancel => deny("the MCP client's user dismissed the approval".into()),
        // `ElicitationAction` is non-exhaustive: anything else is no approval.
        _ => deny("the MCP client answered the approval with an unknown action".into()),
    }
}

#[async_trait]
impl Approver for ClientApprover {
    async fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.fallback.approve(request).await
    }

    async fn answer(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.fallback.answer(request).await
    }

    async fn answer_in(&self, request: &ApprovalRequest, ctx: &ToolContext) -> ApprovalAnswer {
        let Some(client) = ctx
            .get::<DownstreamClient>()
            .filter(|c| c.supports_elicitation())
        else {
            return self.fallback.answer_in(request, ctx).await;
        };
        let Some(params) = question(request) else {
            return self.fallback.answer_in(request, ctx).await;
        };
        match client
            .elicit_before_running(APPROVAL_INPUT_KEY, params, self.timeout)
            .await
        {
            Ok(r) => answer_of(r.action, r.content.as_ref()),
            Err(e) => deny(format!(
                "could not ask the MCP client's user: {}",
                cut(&e.message, 300)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_core::tools::RiskLevel;

    #[test]
    fn the_question_escapes_and_bounds_the_arguments() {
        let request = ApprovalRequest {
            call_id: "c".into(),
            tool: "rm".into(),
            arguments: json!({"path": format!("\u{1b}[2J{}", "x".repeat(10_000))}),
            risk: RiskLevel::Destructive,
            reason: "destructive".into(),
        };
        let q = serde_json::to_value(question(&request).unwrap()).unwrap();
        let message = q["message"].as_str().unwrap();
        assert!(!message.contains('\u{1b}'), "{message}");
        assert!(message.contains("\\u001b[2J"));
        assert!(
            message.len() < MAX_SHOWN_ARGUMENT_BYTES + 400,
            "{}",
            message.len()
        );
        assert_eq!(q["requestedSchema"]["required"], json!(["decision"]));
        assert!(message.starts_with(APPROVAL_MARKER), "{message}");
        assert_eq!(q["_meta"][SOURCE_META_KEY], SOURCE_TOOLHOST);
    }

    #[test]
    fn only_a_clear_allow_allows() {
        let a = |action, content: Value| answer_of(action, Some(&content)).decision;
        assert_eq!(
            a(ElicitationAction::Accept, json!({"decision": "once"})),
            ApprovalDecision::AllowOnce
        );
        assert_eq!(
            a(ElicitationAction::Accept, json!({"decision": "session"})),
            ApprovalDecision::AllowSession
        );
        assert_eq!(
            a(ElicitationAction::Accept, json!({"decision": "always"})),
            ApprovalDecision::Deny
        );
        assert_eq!(
            a(ElicitationAction::Accept, json!({})),
            ApprovalDecision::Deny
        );
        assert_eq!(
            a(ElicitationAction::Decline, json!({})),
            ApprovalDecision::Deny
        );
        assert_eq!(
            a(ElicitationAction::Cancel, json!({"decision": "once"})),
            ApprovalDecision::Deny
        );
        let r = answer_of(
            ElicitationAction::Accept,
            Some(&json!({"decision": "deny", "reason": "y".repeat(5000)})),
        );
        assert_eq!(r.decision, ApprovalDecision::Deny);
        assert_eq!(r.reason.unwrap().chars().count(), MAX_REASON_CHARS);
    }
}
