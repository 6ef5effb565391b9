//! The MCP App views of the registry's own tools (a WASM plugin's `NAME.ui/TOOL.html`,
//! `toolhost_core::tools::view`): listed in `resources/list` and read by `resources/read`
//! at their `ui://` URIs, for a client that sees their tool. A view is served from the
//! page read and digested when its plugin loaded, and only while its tool is offered, so
//! what a host renders is what the operator approved.

use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, Resource};
use serde_json::json;
use toolhost_core::tools::ToolRegistry;
use toolhost_core::tools::view::{AppView, VIEW_MIME_TYPE};

use super::clients::Identity;

/// The views of the tools `who` sees, one per URI.
fn seen(registry: &ToolRegistry, who: &Identity) -> Vec<(String, std::sync::Arc<AppView>)> {
    let mut out: Vec<(String, std::sync::Arc<AppView>)> = registry
        .entries()
        .iter()
        .filter(|e| who.sees(e.name()))
        .filter_map(|e| Some((e.name().to_string(), e.metadata().view.clone()?)))
        .collect();
    out.sort_by(|a, b| a.1.uri.cmp(&b.1.uri));
    out.dedup_by(|a, b| a.1.uri == b.1.uri);
    out
}

/// Whether any tool of the registry ships a view (so `serve` offers resources and the
/// MCP Apps extension).
pub(super) fn any(registry: &ToolRegistry) -> bool {
    registry
        .entries()
        .iter()
        .any(|e| e.metadata().view.is_some())
}

/// The views `who` may read, as resources.
pub(super) fn resources(registry: &ToolRegistry, who: &Identity) -> Vec<Resource> {
    seen(registry, who)
        .into_iter()
        .filter_map(|(tool, v)| {
            let value = json!({"uri": v.uri, "name": tool,
                "title": format!("The view of tool {tool}"),
                "mimeType": VIEW_MIME_TYPE, "size": v.html.len()});
            serde_json::from_value::<Resource>(value)
                .map_err(|e| tracing::warn!("view {}: {e}", v.uri))
                .ok()
        })
        .collect()
}

/// The view at `uri`, if a tool `who` sees ships it (`None`: not a view of toolhost's
/// own, so a wrapped server's resource may be meant).
pub(super) fn read(
    registry: &ToolRegistry,
    who: &Identity,
    uri: &str,
) -> Option<Result<ReadResourceResult, ErrorData>> {
    if !uri.starts_with("ui://") {
        return None;
    }
    let (_, view) = seen(registry, who)
        .into_iter()
        .find(|(_, v)| v.uri == uri)?;
    let value = json!({"contents": [{"uri": view.uri, "mimeType": VIEW_MIME_TYPE,
        "text": &*view.html}]});
    Some(
        serde_json::from_value::<ReadResourceResult>(value)
            .map_err(|e| ErrorData::internal_error(format!("view {uri}: {e}"), None)),
    )
}

/// The URIs of the registry's views, whoever sees them: a wrapped server's resource at
/// one of them is not passed on (the URI names toolhost's own). One pass over the
/// registry, so a long list of wrapped resources is checked against a set.
pub(super) fn own_uris(registry: &ToolRegistry) -> std::collections::HashSet<String> {
    registry
        .entries()
        .iter()
        .filter_map(|e| e.metadata().view.as_ref().map(|v| v.uri.clone()))
        .collect()
}
