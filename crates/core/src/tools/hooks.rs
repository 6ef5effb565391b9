//! Permission hooks: an ordered chain of independent checks that may veto a call.
//!
//! Stage 3 of the pipeline (`docs/permissions.md`, "Who decides what") runs, in order:
//! the static policy ([`PermissionChecker`](crate::tools::PermissionChecker)), then every
//! [`PermissionHook`] in the order they were added, then the risk gate and the approver.
//! A hook answers [`HookVerdict::Allow`], [`HookVerdict::Deny`] with a reason, or
//! [`HookVerdict::Abstain`]. **Any deny wins** and ends the chain (bail semantics): the
//! tool does not run, and the reason reaches the model (in the error) and the audit
//! trail (in [`ToolEvent::PermissionDenied`](crate::tools::ToolEvent) with `by =
//! "hook:NAME"`). An allow is not an approval: it says "no objection from me", it is
//! recorded, and the later stages still apply. A hook that panics denies (fail closed).
//!
//! Adding a check never means touching the pipeline: implement the trait and call
//! [`ToolRegistry::add_permission_hook`](crate::tools::ToolRegistry::add_permission_hook).
//! The hooks shipped here are driven by the host's `[permissions]` config:
//! [`DenyPaths`] (path patterns no argument may name), [`DenyHosts`] (hosts no network
//! tool may be pointed at) and [`RateLimit`] (calls per tool per time window).

mod builtin;

use async_trait::async_trait;
use serde_json::Value;

use crate::tools::base::{ToolContext, ToolSource};
use crate::tools::permission::{Permission, RiskLevel};

pub use builtin::{DenyHosts, DenyPaths, EVERY_TOOL, HookConfigError, RateLimit, RateRule};

/// What a hook sees of one call: everything it needs to decide, nothing it could change.
#[derive(Debug, Clone, Copy)]
pub struct HookCall<'a> {
    /// The call id.
    pub call_id: &'a str,
    /// The tool's registered name.
    pub tool: &'a str,
    /// The validated arguments (`{}` for a call without arguments).
    pub arguments: &'a Value,
    /// The permissions the tool declares (after any operator override).
    pub permissions: &'a [Permission],
    /// The tool's risk level.
    pub risk: RiskLevel,
    /// Where the tool comes from.
    pub source: &'a ToolSource,
    /// The caller's context (session, trace, inbound values).
    pub context: &'a ToolContext,
}

/// A hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookVerdict {
    /// No objection (recorded; later stages still apply).
    Allow,
    /// Veto, with the reason given to the model and the audit trail.
    Deny(String),
    /// No opinion on this call.
    Abstain,
}

/// One independent check of the permission chain.
#[async_trait]
pub trait PermissionHook: Send + Sync {
    /// A short stable name for the audit trail and error messages (`deny_paths`, …).
    fn name(&self) -> &str;

    /// Decides one call. Keep it fast: the call waits for it.
    async fn check(&self, call: &HookCall<'_>) -> HookVerdict;
}
