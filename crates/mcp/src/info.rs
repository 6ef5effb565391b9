//! What an MCP server tells us, as plain data: [`McpToolInfo`] (a tool as the server lists
//! it: title, icons, schemas, [`McpToolAnnotations`], its bounded `_meta`), the conversion of a `tools/call`
//! result into a [`ToolOutput`] (its content blocks kept, `structuredContent` as the
//! canonical value), and the registry-safe form of a server's tool name.
//!
//! Annotations are untrusted hints: what they mean as permissions is decided by
//! [`Permission::from_mcp_hints`] (`docs/design.md`, "Permissions"). Icons are filtered
//! ([`crate::content::icons_from_mcp`]); the output schema is checked when the tool is
//! registered and the result blocks at every call (the registry's stage 5).

use rmcp::model::CallToolResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_core::tools::content::{ContentBlock, render_blocks};
use toolhost_core::tools::{Icon, Permission, ToolOutput};

use crate::content::{block_from_mcp, icons_from_mcp};
use crate::error::McpClientError;

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
        Permission::from_mcp_hints(self.read_only, self.destructive, self.open_world)
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
    /// `icons`, filtered: at most [`crate::content::MAX_ICONS`], only `https:` and
    /// `data:image/...` sources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// `annotations`, if any.
    pub annotations: Option<McpToolAnnotations>,
    /// `_meta`, bounded ([`crate::meta::meta_from_mcp`]): passed on in `tools/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, Value>>,
}

impl From<rmcp::model::Tool> for McpToolInfo {
    fn from(t: rmcp::model::Tool) -> Self {
        let meta = crate::meta::meta_from_mcp(t.meta.as_ref().map(|m| &m.0), || t.name.to_string());
        McpToolInfo {
            name: t.name.to_string(),
            title: t.title,
            description: t.description.map(|d| d.to_string()),
            input_schema: Value::Object((*t.input_schema).clone()),
            output_schema: t.output_schema.map(|s| Value::Object((*s).clone())),
            icons: icons_from_mcp(t.icons),
            annotations: t.annotations.map(|a| McpToolAnnotations {
                title: a.title,
                read_only: a.read_only_hint,
                destructive: a.destructive_hint,
                idempotent: a.idempotent_hint,
                open_world: a.open_world_hint,
            }),
            meta,
        }
    }
}

/// Converts a `tools/call` result into a [`ToolOutput`] (or [`McpClientError::ToolFailed`]
/// on `isError`).
pub(crate) fn output_from_result(
    server: &str,
    tool: &str,
    r: CallToolResult,
) -> Result<ToolOutput, McpClientError> {
    // The result's `_meta` passes on, bounded (crate::meta).
    let meta =
        crate::meta::meta_from_mcp(r.meta.as_ref().map(|m| &m.0), || format!("{server}/{tool}"));
    let blocks: Vec<ContentBlock> = r.content.into_iter().map(block_from_mcp).collect();
    let text = render_blocks(&blocks);
    if r.is_error == Some(true) {
        let msg = if text.is_empty() {
            r.structured_content
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_else(|| "the MCP tool reported an error without details".into())
        } else {
            text
        };
        return Err(McpClientError::ToolFailed {
            server: server.to_string(),
            tool: tool.to_string(),
            message: msg,
        });
    }
    Ok(match r.structured_content {
        Some(structured) => {
            let render = if text.is_empty() {
                structured.to_string()
            } else {
                text
            };
            ToolOutput::new(structured, render)
                .with_content(blocks)
                .with_meta(meta)
        }
        None => ToolOutput::text(text).with_content(blocks).with_meta(meta),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_core::tools::ToolError;

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
        use rmcp::model::ContentBlock;
        let ok = CallToolResult::success(vec![ContentBlock::text("3")]);
        let out = output_from_result("s", "t", ok).unwrap();
        assert_eq!(out.render, "3");
        assert_eq!(
            out.content,
            vec![toolhost_core::tools::ContentBlock::text("3")]
        );
        let mut structured = CallToolResult::success(vec![ContentBlock::text("{\"sum\":3}")]);
        structured.structured_content = Some(serde_json::json!({"sum": 3}));
        let out = output_from_result("s", "t", structured).unwrap();
        assert_eq!(out.canonical, serde_json::json!({"sum": 3}));
        let err = CallToolResult::error(vec![ContentBlock::text("boom")]);
        let e = output_from_result("s", "t", err).unwrap_err();
        assert!(
            matches!(&e, McpClientError::ToolFailed { tool, message, .. } if tool == "t" && message == "boom")
        );
        let e = ToolError::from(e);
        assert!(matches!(&e, ToolError::ExecutionFailed(t, m) if t == "t" && m == "boom"));
        assert!(e.is_recoverable());
    }
}
