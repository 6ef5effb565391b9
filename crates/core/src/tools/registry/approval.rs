//! Pipeline stage 3, second half: destructive calls ask the [`Approver`]; "allow always"
//! is remembered per tool name until [`ToolRegistry::reset_approvals`].

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;

use super::ToolRegistry;
use super::entry::ToolEntry;
use super::pipeline::panic_message;
use crate::tools::error::ToolError;
use crate::tools::events::ToolEvent;
use crate::tools::permission::{
    ApprovalDecision, ApprovalRequest, Approver, Permission, RiskLevel,
};

impl ToolRegistry {
    pub(super) async fn approve(
        &self,
        entry: &ToolEntry,
        call_id: &str,
        args: &Value,
        approver: Option<Arc<dyn Approver>>,
    ) -> Result<(), ToolError> {
        let remembered = self
            .inner
            .always_allowed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&entry.name);
        if remembered {
            self.emit(|| ToolEvent::ApprovalDecided {
                call_id: call_id.to_string(),
                tool: entry.name.clone(),
                decision: ApprovalDecision::AllowAlways,
                by: "remembered".into(),
            });
            return Ok(());
        }
        let Some(approver) = approver else {
            self.emit(|| ToolEvent::ApprovalDecided {
                call_id: call_id.to_string(),
                tool: entry.name.clone(),
                decision: ApprovalDecision::Deny,
                by: "no_approver".into(),
            });
            return Err(ToolError::PermissionDenied(
                entry.name.clone(),
                "is destructive and needs an approval, but no approver is configured \
                 (set one with ToolRegistry::with_approver)"
                    .into(),
            ));
        };
        let request = ApprovalRequest {
            call_id: call_id.to_string(),
            tool: entry.name.clone(),
            arguments: args.clone(),
            risk: entry.risk,
            reason: format!(
                "'{}' is destructive (declares {})",
                entry.name,
                entry
                    .permissions
                    .iter()
                    .filter(|p| p.risk() == RiskLevel::Destructive)
                    .map(Permission::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        self.emit(|| ToolEvent::ApprovalRequested {
            call_id: call_id.to_string(),
            tool: entry.name.clone(),
            input: args.clone(),
            risk: entry.risk,
        });
        // An approver is outside code (a UI, a webhook): if it panics, the answer is "no".
        let decision = match AssertUnwindSafe(approver.approve(&request))
            .catch_unwind()
            .await
        {
            Ok(d) => d,
            Err(panic) => {
                tracing::error!(tool = %entry.name, panic = %panic_message(&panic), "approver panicked; denying");
                ApprovalDecision::Deny
            }
        };
        self.emit(|| ToolEvent::ApprovalDecided {
            call_id: call_id.to_string(),
            tool: entry.name.clone(),
            decision,
            by: "approver".into(),
        });
        match decision {
            ApprovalDecision::AllowOnce => Ok(()),
            ApprovalDecision::AllowAlways => {
                self.inner
                    .always_allowed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(entry.name.clone());
                Ok(())
            }
            ApprovalDecision::Deny => Err(ToolError::PermissionDenied(
                entry.name.clone(),
                "is destructive and the approver denied this call".into(),
            )),
        }
    }

    /// Forgets every "allow always" decision.
    pub fn reset_approvals(&self) {
        self.inner
            .always_allowed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}
