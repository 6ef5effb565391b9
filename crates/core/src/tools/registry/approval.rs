//! Pipeline stage 3, the permission gate: the static policy, the permission hooks, then
//! for destructive calls a remembered approval (this session's, or an "always" of the
//! [`ApprovalStore`](crate::tools::ApprovalStore)) or the [`Approver`]. Each party's
//! decision is an event (`by`: `policy`, `hook:NAME`, `session`, `remembered`,
//! `approver`, `no_approver`), so the audit trail says who let a call through or
//! stopped it. See `docs/permissions.md`, "Who decides what".

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use serde_json::Value;

use super::entry::ToolEntry;
use super::pipeline::panic_message;
use super::{MAX_SESSION_APPROVALS, ToolRegistry, read};
use crate::tools::approvals::ApprovalAnswer;
use crate::tools::approvals::{ApprovalDecision, ApprovalRequest};
use crate::tools::base::ToolContext;
use crate::tools::error::ToolError;
use crate::tools::events::ToolEvent;
use crate::tools::hooks::{HookCall, HookVerdict};
use crate::tools::permission::{Permission, RiskLevel};

impl ToolRegistry {
    /// Runs the whole gate for one validated call; `Err` is the denial the model sees.
    pub(super) async fn gate(
        &self,
        entry: &ToolEntry,
        (call_id, inv): (&str, u64),
        args: &Value,
        ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        let call_id = (call_id, inv);
        // A served client's own permission levels narrow the host's policy: every level
        // the tool declares must be among them.
        if let Some(caller) = ctx.get::<crate::tools::share::Caller>()
            && let Some(allowed) = &caller.allowed
            && let Some(p) = entry.permissions.iter().find(|p| !allowed.contains(p))
        {
            let e = ToolError::PermissionDenied(
                entry.name.clone(),
                format!(
                    "requires the '{p}' permission, which is not among the levels the client \
                     `{}` is allowed ([serve.clients.{}] allowed)",
                    caller.id, caller.id
                ),
            );
            return Err(self.denied(entry, call_id, "client", e));
        }
        let (checker, hooks) = {
            let s = read(&self.inner.settings);
            (s.checker.clone(), s.hooks.clone())
        };
        if let Some(checker) = &checker {
            match checker.check(&entry.name, &entry.permissions) {
                Ok(()) => self.allowed(entry, call_id, "policy"),
                Err(e) => return Err(self.denied(entry, call_id, "policy", e)),
            }
        }
        let call = HookCall {
            call_id: call_id.0,
            tool: &entry.name,
            arguments: args,
            permissions: &entry.permissions,
            risk: entry.risk,
            source: &entry.metadata.source,
            context: ctx,
        };
        for hook in hooks.iter() {
            // A hook is outside code: if it panics, the answer is "no" (fail closed).
            let verdict = match AssertUnwindSafe(hook.check(&call)).catch_unwind().await {
                Ok(v) => v,
                Err(panic) => {
                    tracing::error!(hook = hook.name(), panic = %panic_message(&panic), "permission hook panicked; denying");
                    HookVerdict::Deny(format!("the permission hook {} failed", hook.name()))
                }
            };
            let by = format!("hook:{}", hook.name());
            match verdict {
                HookVerdict::Abstain => {}
                HookVerdict::Allow => self.allowed(entry, call_id, &by),
                HookVerdict::Deny(reason) => {
                    let e = ToolError::PermissionDenied(entry.name.clone(), reason);
                    return Err(self.denied(entry, call_id, &by, e));
                }
            }
        }
        if entry.risk == RiskLevel::Destructive {
            self.approve(entry, call_id, args, ctx).await?;
        }
        Ok(())
    }

    fn allowed(&self, entry: &ToolEntry, (call_id, inv): (&str, u64), by: &str) {
        self.emit(|| ToolEvent::Allowed {
            call_id: call_id.to_string(),
            invocation: inv,
            tool: entry.name.clone(),
            by: by.to_string(),
        });
    }

    fn denied(
        &self,
        entry: &ToolEntry,
        (call_id, inv): (&str, u64),
        by: &str,
        e: ToolError,
    ) -> ToolError {
        self.emit(|| ToolEvent::PermissionDenied {
            call_id: call_id.to_string(),
            invocation: inv,
            tool: entry.name.clone(),
            reason: e.to_string(),
            by: by.to_string(),
        });
        e
    }

    fn decided(
        &self,
        entry: &ToolEntry,
        (call_id, inv): (&str, u64),
        decision: ApprovalDecision,
        by: &str,
        reason: Option<String>,
    ) {
        self.emit(|| ToolEvent::ApprovalDecided {
            call_id: call_id.to_string(),
            invocation: inv,
            tool: entry.name.clone(),
            decision,
            by: by.to_string(),
            reason,
        });
    }

    async fn approve(
        &self,
        entry: &ToolEntry,
        call_id: (&str, u64),
        args: &Value,
        ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        let session_key = (ctx.session_id().to_string(), entry.name.clone());
        let in_session = self
            .inner
            .session_allowed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&session_key);
        if in_session {
            self.decided(
                entry,
                call_id,
                ApprovalDecision::AllowSession,
                "session",
                None,
            );
            return Ok(());
        }
        let (approver, store) = {
            let s = read(&self.inner.settings);
            (s.approver.clone(), s.approvals.clone())
        };
        if let Some(rule) = store.covering(&entry.name, args) {
            let why = format!("allowed always for {}", rule.pattern.describe());
            self.decided(
                entry,
                call_id,
                ApprovalDecision::AllowAlways,
                "remembered",
                Some(why),
            );
            return Ok(());
        }
        let Some(approver) = approver else {
            let reason = "is destructive and needs an approval, but no approver is configured \
                          (set one with ToolRegistry::with_approver)";
            self.decided(entry, call_id, ApprovalDecision::Deny, "no_approver", None);
            let e = ToolError::PermissionDenied(entry.name.clone(), reason.into());
            return Err(self.denied(entry, call_id, "no_approver", e));
        };
        let request = ApprovalRequest {
            call_id: call_id.0.to_string(),
            tool: entry.name.clone(),
            arguments: args.clone(),
            risk: entry.risk,
            reason: approval_reason(entry),
        };
        self.emit(|| ToolEvent::ApprovalRequested {
            call_id: call_id.0.to_string(),
            invocation: call_id.1,
            tool: entry.name.clone(),
            input: args.clone(),
            risk: entry.risk,
        });
        // An approver is outside code (a UI, a webhook): if it panics, the answer is "no".
        let answer = match AssertUnwindSafe(approver.answer_in(&request, ctx))
            .catch_unwind()
            .await
        {
            Ok(a) => a,
            Err(panic) => {
                tracing::error!(tool = %entry.name, panic = %panic_message(&panic), "approver panicked; denying");
                ApprovalAnswer::from(ApprovalDecision::Deny)
            }
        };
        let ApprovalAnswer {
            decision,
            reason,
            pattern,
        } = answer;
        self.decided(entry, call_id, decision, "approver", reason.clone());
        match decision {
            ApprovalDecision::AllowOnce => Ok(()),
            ApprovalDecision::AllowSession => {
                let mut set = self
                    .inner
                    .session_allowed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                if set.len() >= MAX_SESSION_APPROVALS {
                    set.shift_remove_index(0);
                }
                set.insert(session_key);
                Ok(())
            }
            ApprovalDecision::AllowAlways => {
                // This call was approved either way; a store that cannot keep the rule
                // only means the next call asks again.
                if let Err(e) = store.remember(&entry.name, &pattern) {
                    tracing::warn!(tool = %entry.name, error = %e, "the approval will not be remembered");
                }
                Ok(())
            }
            ApprovalDecision::Deny => {
                let why = match reason {
                    Some(r) if !r.trim().is_empty() => {
                        format!("is destructive and the approver denied this call: {r}")
                    }
                    _ => "is destructive and the approver denied this call".to_string(),
                };
                let e = ToolError::PermissionDenied(entry.name.clone(), why);
                Err(self.denied(entry, call_id, "approver", e))
            }
        }
    }

    /// Forgets every "allow for this session" and "allow always" decision (the latter in
    /// the registry's approval store).
    pub fn reset_approvals(&self) {
        self.inner
            .session_allowed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        let store = read(&self.inner.settings).approvals.clone();
        if let Err(e) = store.forget_all() {
            tracing::warn!(error = %e, "cannot forget the remembered approvals");
        }
    }
}

/// Why an approval is asked: the rule that fired.
fn approval_reason(entry: &ToolEntry) -> String {
    let destructive: Vec<&str> = entry
        .permissions
        .iter()
        .filter(|p| p.risk() == RiskLevel::Destructive)
        .map(Permission::as_str)
        .collect();
    if destructive.is_empty() {
        format!(
            "'{}' is rated destructive by the operator's configuration",
            entry.name
        )
    } else {
        format!(
            "'{}' is destructive (declares {})",
            entry.name,
            destructive.join(", ")
        )
    }
}
