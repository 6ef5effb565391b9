//! [`McpTool`]: an MCP server's tool as a [`BaseTool`].
//!
//! - `parameters` is the tool's `inputSchema`.
//! - Permissions and risk come from the operator's rating of the server's tools
//!   ([`crate::rating`]): a per-tool or per-server rule, else the annotations
//!   (`readOnlyHint` → Read, `destructiveHint` → Delete, `openWorldHint` → Network; only
//!   hints set to `true` count), else the default risk floor (an approval is needed).
//! - Results: every content block is kept (`ToolOutput::content`; the registry bounds and
//!   checks them); the text blocks (other blocks summarised) are the render text;
//!   `structuredContent`, when present, is the canonical value (else the text).
//! - Metadata: the tool's `title`, filtered `icons` and `outputSchema` (which the registry
//!   compiles at registration and checks every result against).
//! - `isError: true` becomes a recoverable `ToolError::ExecutionFailed`.

use async_trait::async_trait;
use serde_json::Value;
use toolhost_core::tools::{
    BaseTool, Permission, ToolContext, ToolError, ToolMetadata, ToolOutput, ToolSource,
    registry::MIN_DESCRIPTION_CHARS,
};

use crate::client::McpClient;
use crate::info::McpToolInfo;

/// An MCP tool adapted to [`BaseTool`]. Calls go through the shared [`McpClient`].
#[derive(Debug)]
pub struct McpTool {
    client: McpClient,
    name: String,
    description: String,
    info: McpToolInfo,
}

impl McpTool {
    /// Adapts `info`, registering it as `name`.
    pub fn new(client: McpClient, name: String, info: McpToolInfo) -> Self {
        let base = info.description.clone().unwrap_or_default();
        let description = if base.trim().chars().count() < MIN_DESCRIPTION_CHARS {
            let lead = if base.trim().is_empty() {
                String::new()
            } else {
                format!("{} ", base.trim())
            };
            format!(
                "{lead}(tool '{}' of the MCP server '{}')",
                info.name,
                client.server_name()
            )
        } else {
            base
        };
        Self {
            client,
            name,
            description,
            info,
        }
    }

    /// The tool as the server lists it.
    pub fn info(&self) -> &McpToolInfo {
        &self.info
    }

    /// The server's name of the tool (the registry name may differ: `server__tool`).
    pub fn remote_name(&self) -> &str {
        &self.info.name
    }
}

#[async_trait]
impl BaseTool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        let mut schema = self.info.input_schema.clone();
        if let Some(obj) = schema.as_object_mut() {
            // Registry rule: an object schema. MCP always sends one, but be lenient.
            obj.entry("type")
                .or_insert_with(|| Value::String("object".into()));
        }
        schema
    }

    fn required_permissions(&self) -> Vec<Permission> {
        self.client.tool_rules().rate(&self.info).permissions
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata {
            tags: vec!["mcp".into()],
            category: String::new(),
            source: ToolSource::Mcp {
                server: self.client.server_name().to_string(),
            },
            version: None,
            timeout: Some(self.client.timeout()),
            risk: self.client.tool_rules().rate(&self.info).risk_floor,
            title: self.info.title.clone(),
            icons: self.info.icons.clone(),
            output_schema: self.info.output_schema.clone(),
            orchestrates: false,
            // The client bounds every request, question and task poll of the call by the
            // registry's deadline, sends `notifications/cancelled` and reports
            // `McpTimeout` itself.
            keeps_deadline: true,
            // MCP tool definitions carry no examples.
            input_examples: Vec::new(),
            meta: self.info.meta.clone(),
            // A wrapped server serves its own views (`ui://` resources, through the
            // gateway); toolhost holds none of them.
            view: None,
        }
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        // The MCP client reports in its own error type; here, where an MCP tool runs in
        // the registry, it becomes a `ToolError`, named after the registry name the model
        // used (the server's name may differ: `server__tool`).
        let redactor = self.client.redactor();
        self.client
            .call_tool_output(&self.info.name, args, ctx)
            .await
            .map(|out| redactor.output(out))
            .map_err(|e| match redactor.error(ToolError::from(e)) {
                ToolError::ExecutionFailed(_, msg) => {
                    ToolError::ExecutionFailed(self.name.clone(), msg)
                }
                ToolError::InvalidArguments(_, msg) => {
                    ToolError::InvalidArguments(self.name.clone(), msg)
                }
                ToolError::Cancelled(_) => ToolError::Cancelled(self.name.clone()),
                other => other,
            })
    }
}
