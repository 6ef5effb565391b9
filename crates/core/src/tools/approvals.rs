//! Approvals with a scope: the [`Approver`] that decides a destructive call at run time,
//! what it is asked ([`ApprovalRequest`]) and answers ([`ApprovalAnswer`]), and where
//! "allow always" is kept ([`ApprovalStore`]).
//!
//! A destructive call is approved for one of four scopes (`docs/permissions.md`,
//! "Approvals"):
//! - **once**: this call only;
//! - **session**: every later call of the same tool in the same session
//!   ([`ToolContext::session_id`](crate::tools::ToolContext::session_id)), for the life of
//!   the registry;
//! - **always**: every later call of the tool whose arguments match an [`ArgPattern`],
//!   kept by the registry's [`ApprovalStore`] (in memory by default; the CLI keeps them in
//!   a file in the user's data folder, listed and revoked with `toolhost approvals`);
//! - **deny**, with an optional reason that reaches the model and the audit trail.

use std::collections::BTreeMap;
use std::sync::Mutex;

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use async_trait::async_trait;

use crate::tools::base::ToolContext;
use crate::tools::permission::RiskLevel;

/// What an [`Approver`] is asked to decide.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalRequest {
    /// The call id of the invocation waiting for the decision.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The validated arguments.
    pub arguments: Value,
    /// The tool's risk level.
    pub risk: RiskLevel,
    /// Why an approval is needed (which rule fired).
    pub reason: String,
}

/// An approver's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this call only.
    AllowOnce,
    /// Run this call and every later call of the same tool in the same session.
    AllowSession,
    /// Run this call and every later call of the same tool (whose arguments match the
    /// answer's pattern, see [`ApprovalAnswer`]) without asking again; kept by the
    /// registry's [`ApprovalStore`](crate::tools::ApprovalStore).
    AllowAlways,
    /// Do not run.
    Deny,
}

/// Decides destructive calls at run time: a UI prompt, a CLI question, a webhook, a test.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Asks for a decision. Called before the tool runs; the call waits for the answer.
    async fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision;

    /// The full answer: the decision, a reason for a deny, and the arguments an "allow
    /// always" covers. The registry calls this; the default wraps
    /// [`approve`](Approver::approve) (no reason; "always" covers every call of the tool).
    async fn answer(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.approve(request).await.into()
    }

    /// The answer for a call made in `ctx`: an approver that asks whoever made the call
    /// (e.g. the MCP client of `serve`, through a typed inbound value of the context)
    /// overrides this. The registry calls this; the default is
    /// [`answer`](Approver::answer).
    async fn answer_in(&self, request: &ApprovalRequest, ctx: &ToolContext) -> ApprovalAnswer {
        let _ = ctx;
        self.answer(request).await
    }
}

/// An [`Approver`] that always gives the same answer (for scripts, tests and `--yes`).
#[derive(Debug, Clone, Copy)]
pub struct StaticApprover(pub ApprovalDecision);

#[async_trait]
impl Approver for StaticApprover {
    async fn approve(&self, _request: &ApprovalRequest) -> ApprovalDecision {
        self.0
    }
}

/// An approver's full answer: the decision, a reason (for a deny), and for "always" the
/// arguments it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAnswer {
    /// The decision.
    pub decision: ApprovalDecision,
    /// Why (shown to the model on a deny, and recorded).
    pub reason: Option<String>,
    /// For [`ApprovalDecision::AllowAlways`]: the calls it covers (empty: every call of
    /// the tool).
    pub pattern: ArgPattern,
}

impl From<ApprovalDecision> for ApprovalAnswer {
    fn from(decision: ApprovalDecision) -> Self {
        ApprovalAnswer {
            decision,
            reason: None,
            pattern: ArgPattern::default(),
        }
    }
}

/// The arguments a remembered approval covers: for each named argument, a glob pattern
/// its value must match (a string argument as is, any other value as its JSON text);
/// arguments not named may be anything. Empty: any arguments.
///
/// `{"path": "/tmp/**"}` covers `{"path": "/tmp/a/b", "force": true}` but not
/// `{"path": "/home/x"}` nor `{}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ArgPattern(pub BTreeMap<String, String>);

/// A pattern of an [`ArgPattern`] that is not a valid glob.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("argument pattern {argument:?} = {pattern:?} is not a valid glob: {why}")]
pub struct ArgPatternError {
    /// The argument name.
    pub argument: String,
    /// The pattern.
    pub pattern: String,
    /// The parser's message.
    pub why: String,
}

impl ArgPattern {
    /// Checks every pattern compiles.
    pub fn validate(&self) -> Result<(), ArgPatternError> {
        self.matchers().map(|_| ())
    }

    fn matchers(&self) -> Result<Vec<(&str, GlobMatcher)>, ArgPatternError> {
        self.0
            .iter()
            .map(|(arg, p)| {
                Glob::new(p)
                    .map(|g| (arg.as_str(), g.compile_matcher()))
                    .map_err(|e| ArgPatternError {
                        argument: arg.clone(),
                        pattern: p.clone(),
                        why: e.kind().to_string(),
                    })
            })
            .collect()
    }

    /// Whether `args` fall under this pattern. An invalid pattern matches nothing.
    pub fn matches(&self, args: &Value) -> bool {
        let Ok(matchers) = self.matchers() else {
            return false;
        };
        matchers.iter().all(|(arg, m)| match args.get(arg) {
            Some(Value::String(s)) => m.is_match(s),
            Some(other) => m.is_match(other.to_string()),
            None => false,
        })
    }

    /// `path=/tmp/**, force=true`, or `any arguments`.
    pub fn describe(&self) -> String {
        if self.0.is_empty() {
            return "any arguments".into();
        }
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// An "allow always" decision as kept by an [`ApprovalStore`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RememberedApproval {
    /// The tool name.
    pub tool: String,
    /// The calls it covers.
    #[serde(default)]
    pub pattern: ArgPattern,
    /// When it was given (RFC 3339), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// A store that could not keep a decision.
#[derive(Debug, thiserror::Error)]
#[error("cannot record the approval: {0}")]
pub struct ApprovalStoreError(pub String);

/// Where "allow always" decisions live.
pub trait ApprovalStore: Send + Sync {
    /// The remembered approval that covers this call, if any.
    fn covering(&self, tool: &str, args: &Value) -> Option<RememberedApproval>;
    /// Remembers "always" for `tool` on calls matching `pattern`.
    fn remember(&self, tool: &str, pattern: &ArgPattern) -> Result<(), ApprovalStoreError>;
    /// Forgets every decision.
    fn forget_all(&self) -> Result<(), ApprovalStoreError>;
}

/// The default store: decisions last as long as the registry.
#[derive(Debug, Default)]
pub struct MemoryApprovals {
    rules: Mutex<Vec<RememberedApproval>>,
}

impl ApprovalStore for MemoryApprovals {
    fn covering(&self, tool: &str, args: &Value) -> Option<RememberedApproval> {
        let rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        rules
            .iter()
            .find(|r| r.tool == tool && r.pattern.matches(args))
            .cloned()
    }

    fn remember(&self, tool: &str, pattern: &ArgPattern) -> Result<(), ApprovalStoreError> {
        pattern
            .validate()
            .map_err(|e| ApprovalStoreError(e.to_string()))?;
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        let rule = RememberedApproval {
            tool: tool.to_string(),
            pattern: pattern.clone(),
            at: None,
        };
        if !rules.contains(&rule) {
            rules.push(rule);
        }
        Ok(())
    }

    fn forget_all(&self) -> Result<(), ApprovalStoreError> {
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pattern(pairs: &[(&str, &str)]) -> ArgPattern {
        ArgPattern(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn patterns_match_named_arguments_only() {
        let p = pattern(&[("path", "/tmp/**")]);
        assert!(p.matches(&json!({"path": "/tmp/a/b", "force": true})));
        assert!(!p.matches(&json!({"path": "/home/x"})));
        assert!(!p.matches(&json!({})));
        let n = pattern(&[("count", "1*")]);
        assert!(n.matches(&json!({"count": 12})));
        assert!(ArgPattern::default().matches(&json!({"anything": 1})));
        assert_eq!(ArgPattern::default().describe(), "any arguments");
    }

    #[test]
    fn an_invalid_pattern_matches_nothing_and_is_refused() {
        let p = pattern(&[("path", "a[")]);
        assert!(!p.matches(&json!({"path": "a["})));
        assert!(p.validate().is_err());
        let store = MemoryApprovals::default();
        assert!(store.remember("t", &p).is_err());
        assert!(store.covering("t", &json!({"path": "a["})).is_none());
    }

    #[test]
    fn memory_store_remembers_per_tool() {
        let store = MemoryApprovals::default();
        store
            .remember("del", &pattern(&[("path", "/tmp/*")]))
            .unwrap();
        assert!(store.covering("del", &json!({"path": "/tmp/x"})).is_some());
        assert!(store.covering("del", &json!({"path": "/etc/x"})).is_none());
        assert!(
            store
                .covering("other", &json!({"path": "/tmp/x"}))
                .is_none()
        );
        store.forget_all().unwrap();
        assert!(store.covering("del", &json!({"path": "/tmp/x"})).is_none());
    }
}
