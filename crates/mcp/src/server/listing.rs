//! How a registry tool is served in `tools/list`: its MCP definition ([`tool_of`]) and the
//! annotations derived from its permissions and risk level (`readOnlyHint` when it
//! declares nothing that writes, deletes or runs shell commands, `destructiveHint` for
//! Delete/Shell or an operator's destructive rating, `openWorldHint` for Network).

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;
use toolhost_core::tools::{Permission, RiskLevel, ServedHints, ToolEntry};

use crate::content::icon_to_mcp;

/// The MCP annotations derived from a tool's declared permissions.
pub fn annotations_for(name: &str, permissions: &[Permission]) -> ToolAnnotations {
    annotations_rated(name, permissions, RiskLevel::of(permissions))
}

/// The MCP annotations of a tool with these permissions and this risk level (which the
/// operator's rating may have raised above what the permissions say).
pub fn annotations_rated(
    name: &str,
    permissions: &[Permission],
    risk: RiskLevel,
) -> ToolAnnotations {
    let hints = ServedHints::rated(permissions, risk);
    ToolAnnotations::with_title(name)
        .read_only(hints.read_only)
        .destructive(hints.destructive)
        .open_world(hints.open_world)
}

/// The MCP definition of a registry tool.
pub(super) fn tool_of(entry: &ToolEntry) -> Tool {
    let schema: JsonObject = match entry.parameters() {
        Value::Object(m) => m.clone(),
        _ => JsonObject::new(),
    };
    let meta = entry.metadata();
    let mut tool = Tool::new(
        entry.name().to_string(),
        entry.description().to_string(),
        Arc::new(schema),
    )
    .with_annotations(annotations_rated(
        meta.title.as_deref().unwrap_or(entry.name()),
        entry.permissions(),
        entry.risk(),
    ));
    // Title, icons and output schema are served when the source gave them (a wrapped MCP
    // server's tool); native and WASM tools set none of them.
    if let Some(title) = &meta.title {
        tool = tool.with_title(title.clone());
    }
    if !meta.icons.is_empty() {
        tool = tool.with_icons(meta.icons.iter().map(icon_to_mcp).collect());
    }
    if let Some(Value::Object(o)) = &meta.output_schema {
        tool = tool.with_raw_output_schema(Arc::new(o.clone()));
    }
    // The source's `_meta` as it gave it (an MCP App's `ui.resourceUri`); the source
    // bounded it (crate::meta).
    if let Some(m) = &meta.meta {
        tool.meta = Some(rmcp::model::MetaObject(m.clone()));
    }
    tool
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_become_annotations() {
        let a = annotations_for("t", &[]);
        assert_eq!(
            (a.read_only_hint, a.destructive_hint, a.open_world_hint),
            (Some(true), Some(false), Some(false))
        );
        let a = annotations_for("t", &[Permission::Read, Permission::Network]);
        assert_eq!(
            (a.read_only_hint, a.destructive_hint, a.open_world_hint),
            (Some(true), Some(false), Some(true))
        );
        let a = annotations_for("t", &[Permission::Delete]);
        assert_eq!(
            (a.read_only_hint, a.destructive_hint),
            (Some(false), Some(true))
        );
        // A tool the operator rated destructive (an unannotated MCP tool) is served as
        // destructive, never as read-only, though it declares nothing.
        let a = annotations_rated("t", &[], RiskLevel::Destructive);
        assert_eq!(
            (a.read_only_hint, a.destructive_hint),
            (Some(false), Some(true))
        );
        let a = annotations_for("t", &[Permission::Write]);
        assert_eq!(
            (a.read_only_hint, a.destructive_hint),
            (Some(false), Some(false))
        );
    }
}
