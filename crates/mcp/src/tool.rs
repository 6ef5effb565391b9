//! [`McpTool`]: an MCP server's tool as a [`BaseTool`].
//!
//! - `parameters` is the tool's `inputSchema`.
//! - Annotations become permissions: `readOnlyHint` → Read, `destructiveHint` → Delete,
//!   `openWorldHint` → Network. Only hints the server sets to `true` count (the spec's
//!   defaults would make every unannotated tool destructive). They are untrusted hints for
//!   display and risk level; the host's policy still decides.
//! - Results: the text content (non-text blocks summarised) is the render text;
//!   `structuredContent`, when present, is the canonical value (else the text).
//! - `isError: true` becomes a recoverable `ToolError::ExecutionFailed`.

use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_core::tools::{
    BaseTool, Permission, ToolContext, ToolError, ToolMetadata, ToolOutput, ToolSource,
    registry::MIN_DESCRIPTION_CHARS,
};

use crate::client::McpClient;

/// The hints of an MCP tool's `annotations`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolAnnotations {
    /// A display title.
    pub title: Option<String>,
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    pub open_world: Option<bool>,
}

impl McpToolAnnotations {
    /// The permissions these hints suggest (see the module docs).
    pub fn permissions(&self) -> Vec<Permission> {
        let mut out = Vec::new();
        if self.read_only == Some(true) {
            out.push(Permission::Read);
        } else if self.destructive == Some(true) {
            out.push(Permission::Delete);
        }
        if self.open_world == Some(true) {
            out.push(Permission::Network);
        }
        out
    }
}

/// One tool as the server lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolInfo {
    /// The server's name for the tool.
    pub name: String,
    /// A display title.
    pub title: Option<String>,
    /// The description.
    pub description: Option<String>,
    /// `inputSchema`.
    pub input_schema: Value,
    /// `outputSchema`, if any.
    pub output_schema: Option<Value>,
    /// `annotations`, if any.
    pub annotations: Option<McpToolAnnotations>,
}

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
        self.info
            .annotations
            .as_ref()
            .map(McpToolAnnotations::permissions)
            .unwrap_or_default()
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata {
            tags: vec!["mcp".into()],
            category: String::new(),
            source: ToolSource::Mcp {
                server: self.client.server_name().to_string(),
            },
            version: None,
            // A little over the client's budget, so the client's own timeout (which sends
            // notifications/cancelled and reports McpTimeout) fires first.
            timeout: Some(self.client.timeout() + Duration::from_secs(1)),
        }
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.client
            .call_tool_output(&self.info.name, args, ctx)
            .await
            .map_err(|e| match e {
                // Name errors after the registry name the model used.
                ToolError::ExecutionFailed(_, msg) => {
                    ToolError::ExecutionFailed(self.name.clone(), msg)
                }
                other => other,
            })
    }
}

/// A registry-safe name (`^[a-zA-Z0-9_-]{1,64}$`): other characters become `_`, long names
/// are cut to 64.
pub fn registry_name(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if s.is_empty() {
        s.push('_');
    }
    s
}

/// Joins the content blocks into render text.
pub(crate) fn content_text(content: &[ContentBlock]) -> String {
    let parts: Vec<String> = content
        .iter()
        .map(|c| match c {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(i) => {
                format!("[image {} ({} base64 bytes)]", i.mime_type, i.data.len())
            }
            ContentBlock::Audio(a) => {
                format!("[audio {} ({} base64 bytes)]", a.mime_type, a.data.len())
            }
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { text, .. } => text.clone(),
                ResourceContents::BlobResourceContents { uri, .. } => format!("[resource {uri}]"),
                #[allow(unreachable_patterns)]
                _ => "[resource]".into(),
            },
            ContentBlock::ResourceLink(l) => format!("[resource link {}]", l.uri),
            #[allow(unreachable_patterns)]
            _ => "[unsupported content]".into(),
        })
        .collect();
    parts.join("\n")
}

/// Converts a `tools/call` result into a [`ToolOutput`] (or `ExecutionFailed` on `isError`).
pub(crate) fn output_from_result(tool: &str, r: CallToolResult) -> Result<ToolOutput, ToolError> {
    let text = content_text(&r.content);
    if r.is_error == Some(true) {
        let msg = if text.is_empty() {
            r.structured_content
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_else(|| "the MCP tool reported an error without details".into())
        } else {
            text
        };
        return Err(ToolError::ExecutionFailed(tool.to_string(), msg));
    }
    Ok(match r.structured_content {
        Some(structured) => {
            let render = if text.is_empty() {
                structured.to_string()
            } else {
                text
            };
            ToolOutput::new(structured, render)
        }
        None => ToolOutput::text(text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_registry_safe() {
        assert_eq!(registry_name("get-sum"), "get-sum");
        assert_eq!(registry_name("fs.read/file"), "fs_read_file");
        assert_eq!(registry_name(&"x".repeat(100)).len(), 64);
        assert_eq!(registry_name(""), "_");
    }

    #[test]
    fn annotations_map_to_permissions_only_when_set() {
        let a = McpToolAnnotations {
            read_only: Some(true),
            destructive: Some(true),
            open_world: Some(true),
            ..Default::default()
        };
        assert_eq!(a.permissions(), vec![Permission::Read, Permission::Network]);
        let d = McpToolAnnotations {
            destructive: Some(true),
            ..Default::default()
        };
        assert_eq!(d.permissions(), vec![Permission::Delete]);
        assert!(McpToolAnnotations::default().permissions().is_empty());
    }

    #[test]
    fn results_become_outputs_and_is_error_becomes_execution_failed() {
        let ok = CallToolResult::success(vec![ContentBlock::text("3")]);
        let out = output_from_result("t", ok).unwrap();
        assert_eq!(out.render, "3");
        let mut structured = CallToolResult::success(vec![ContentBlock::text("{\"sum\":3}")]);
        structured.structured_content = Some(serde_json::json!({"sum": 3}));
        let out = output_from_result("t", structured).unwrap();
        assert_eq!(out.canonical, serde_json::json!({"sum": 3}));
        let err = CallToolResult::error(vec![ContentBlock::text("boom")]);
        let e = output_from_result("t", err).unwrap_err();
        assert!(matches!(&e, ToolError::ExecutionFailed(t, m) if t == "t" && m == "boom"));
        assert!(e.is_recoverable());
    }
}
