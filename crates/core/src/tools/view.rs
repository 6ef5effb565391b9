//! An MCP App view a tool ships (the `io.modelcontextprotocol/ui` extension): an HTML page
//! a host renders in a sandboxed frame beside the tool's results, whose own `tools/call`
//! requests reach the tool through the host. A WASM plugin ships one per tool as
//! `NAME.ui/TOOL.html` beside `NAME.wasm` (docs/writing-plugins.md, "A view for a tool (MCP Apps)").
//!
//! The view is part of what a client is shown of its tool: the approval pins its digest
//! with the tool's definition ([`crate::tools::shown::ShownTool::view`]), so a changed
//! view withholds the tool until approved again.

use std::sync::Arc;

use serde_json::{Map, Value, json};

/// The MIME type of an MCP App's view (`text/html` with the `mcp-app` profile).
pub const VIEW_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The extension id of MCP Apps, which a server offering views declares.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// One tool's view: where it is served, its page and the page's digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppView {
    /// The `ui://` URI it is served at (`ui://PLUGIN/TOOL.html`).
    pub uri: String,
    /// The page (UTF-8 HTML, read and checked at load).
    pub html: Arc<str>,
    /// "sha256:HEX" of the page's bytes.
    pub digest: String,
}

impl AppView {
    /// The tool's `_meta` that ties it to this view (`ui.resourceUri`).
    pub fn tool_meta(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("ui".into(), json!({ "resourceUri": self.uri }));
        m
    }
}
