//! The tool system: the one API every tool source plugs into.
//!
//! Laid out as seed 000 lays it out: [`base`] (BaseTool, ToolContext, ToolOutput),
//! [`error`] (ToolError), [`permission`] (Permission, PermissionConfig, PermissionChecker,
//! risk levels and approvals), [`registry`] (ToolRegistry and the invocation pipeline),
//! plus [`typed`] (typed `Tool` and closure `DynamicTool`), [`render`] (truncation),
//! [`events`] (pipeline events and the audit sink), [`redact`] (what counts as a secret,
//! for the audit and for error texts) and [`escape`] (untrusted text for a terminal).
//!
//! `McpClient` lives in the `toolhost-mcp` crate and is re-exported from
//! `toolhost::tools`, as seed 000 expects (`use toolhost::tools::McpClient`).

pub mod base;
pub mod error;
pub mod escape;
pub mod events;
pub mod permission;
pub mod redact;
pub mod registry;
pub mod render;
pub mod typed;

pub use base::{BaseTool, ProgressEvent, ToolContext, ToolMetadata, ToolOutput, ToolSource};
pub use error::ToolError;
pub use events::{JsonlAuditSink, ToolEvent, ToolEventListener, redact_secrets};
pub use permission::{
    ApprovalDecision, ApprovalRequest, Approver, Permission, PermissionChecker, PermissionConfig,
    RiskLevel, StaticApprover,
};
pub use registry::{
    FunctionDefinition, Registration, RegistrationGuard, ToolCall, ToolDefinition, ToolEntry,
    ToolInvocation, ToolRegistry, ToolStats, is_valid_tool_name,
};
pub use render::{DEFAULT_MAX_TOOL_RESULT_BYTES, truncate_render};
pub use typed::{DynamicTool, DynamicToolBuilder, Tool, TypedTool, schema_for};
