//! The tool system: the one API every tool source plugs into.
//!
//! The modules: [`base`] (BaseTool, ToolContext, ToolOutput), [`content`] (the content
//! blocks of a result and their checks), [`error`] (ToolError),
//! [`permission`] (Permission, PermissionConfig, PermissionChecker, risk levels and
//! approvals), [`hooks`] (the permission hook chain and the shipped hooks),
//! [`approvals`] (approval scopes and the store of "always" decisions), [`registry`] (ToolRegistry and the invocation pipeline), [`definition`]
//! (the definition offered to a model), [`typed`] (typed `Tool` and closure
//! `DynamicTool`), [`render`] (truncation), [`view`] (an MCP App view a tool ships), [`events`] (pipeline events and the per-event
//! sink), [`audit`] (the audit trail: one record per call, a rotating file), [`redact`] (what counts as a secret, for the audit and for error texts),
//! and [`escape`] (untrusted text for a terminal). The review of tool definitions that
//! `toolhost lint` and `toolhost approve` show is the crate `toolhost-lint`, over
//! [`shown`]. `docs/design.md` describes the API
//! contract these make up.
//!
//! `McpClient` lives in the `toolhost-mcp` crate and is re-exported from
//! `toolhost::tools` (`use toolhost::tools::McpClient`), part of the public API contract.

pub mod approvals;
pub mod audit;
pub mod base;
pub mod content;
pub mod definition;
pub mod error;
pub mod escape;
pub mod events;
pub mod hooks;
pub mod logsink;
pub mod permission;
pub mod redact;
pub mod registry;
pub mod render;
pub mod share;
pub mod shown;
pub mod typed;
pub mod view;
pub mod visible;

pub use approvals::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, ApprovalStore, ApprovalStoreError, Approver,
    ArgPattern, MemoryApprovals, RememberedApproval, StaticApprover,
};
pub use audit::{AuditLog, AuditRecord, RotatingFile};
pub use base::{BaseTool, Icon, ProgressEvent, ToolContext, ToolMetadata, ToolOutput, ToolSource};
pub use content::{ContentBlock, ContentError, ContentLimits};
pub use definition::{FunctionDefinition, ToolDefinition};
pub use error::ToolError;
pub use events::{JsonlAuditSink, ResultDigest, ToolEvent, ToolEventListener, redact_secrets};
pub use hooks::{
    DenyHosts, DenyPaths, HookCall, HookConfigError, HookVerdict, PermissionHook, RateLimit,
    RateRule,
};
pub use logsink::{ToolLogLevel, ToolLogSink};
pub use permission::{
    Capability, Permission, PermissionChecker, PermissionConfig, RiskLevel, ServedHints,
};
pub use registry::{
    LoadingGuard, MAX_INPUT_EXAMPLES, NameClash, NameFollower, Naming, QUALIFIER, Registration,
    RegistrationGuard, ToolCall, ToolEntry, ToolInvocation, ToolRegistry, ToolStats,
    contested_names, is_valid_tool_name, qualified_name, safe_name,
};
pub use render::{DEFAULT_MAX_TOOL_RESULT_BYTES, json_kind, truncate_render};
pub use share::{Caller, Holdings, Refusal, Share, Slot, Slots};
pub use typed::{DynamicTool, DynamicToolBuilder, Tool, TypedTool, schema_for};
pub use view::AppView;
pub use visible::Visible;
