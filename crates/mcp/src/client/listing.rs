//! Listing a wrapped server's tools within bounds: a server is not trusted, and what it
//! lists is what toolhost holds (in the tool cache, the registry and `serve`'s own
//! `tools/list`). `tools/list` is paged through here, page by page, rather than with
//! rmcp's `list_all_tools`, which would fetch every page first:
//!
//! - at most [`ToolLimits::max_tools`] tools (`max_tools` of `[mcp.servers.NAME]`,
//!   default [`DEFAULT_MAX_TOOLS`]): the first ones listed are kept, and no page is
//!   fetched once a tool past the limit is seen;
//! - at most [`MAX_TOOL_PAGES`] pages (a server answering empty pages with a cursor
//!   forever stops there), all of them within the client's timeout;
//! - each tool at most [`MAX_TOOL_BYTES`] of JSON and [`MAX_TOOL_DEPTH`] levels deep,
//!   else it is refused by name and the others are kept;
//! - at most [`ToolLimits::max_bytes`] of definitions in all (`max_tools_bytes`, default
//!   [`DEFAULT_MAX_TOOLS_BYTES`]); the tool that would pass it and the rest are dropped.
//!
//! Each limit reached is one warning naming the server and the limit.

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde_json::Value;

use super::McpClient;
use crate::info::McpToolInfo;
use crate::stdio::{shown, warn_too_deep};

pub use crate::stdio::MAX_TOOL_DEPTH;

/// The most tools of one server toolhost keeps by default: 1,000. Real servers list tens;
/// a server listing 50,000 made toolhost's own `tools/list` 11 MB. An operator who wraps
/// a larger server raises `max_tools` for it.
pub const DEFAULT_MAX_TOOLS: usize = 1_000;

/// The most bytes of tool definitions (as JSON) of one server toolhost keeps by default:
/// 8 MiB, room for a thousand large tools; what is held in memory is a small multiple of
/// it. `max_tools_bytes` of `[mcp.servers.NAME]` changes it.
pub const DEFAULT_MAX_TOOLS_BYTES: usize = 8 * 1024 * 1024;

/// The largest definition of one tool, as JSON: 64 KiB (the limit `outputSchema` already
/// had). A real tool's definition is a few KiB; a larger one is refused by name.
pub const MAX_TOOL_BYTES: usize = 64 * 1024;

/// The most `tools/list` pages followed: 1,000. Every request of them shares the client's
/// timeout; a server answering empty pages with a cursor forever stops here.
pub const MAX_TOOL_PAGES: usize = 1_000;

/// How much of one server's tool list toolhost keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolLimits {
    /// The most tools (the first ones listed are kept).
    pub max_tools: usize,
    /// The most bytes of definitions in all, as JSON.
    pub max_bytes: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            max_tools: DEFAULT_MAX_TOOLS,
            max_bytes: DEFAULT_MAX_TOOLS_BYTES,
        }
    }
}

impl McpClient {
    /// Sets how much of the server's tool list is kept (`max_tools` and
    /// `max_tools_bytes` of `[mcp.servers.NAME]`).
    pub fn with_tool_limits(mut self, limits: ToolLimits) -> Self {
        std::sync::Arc::make_mut(&mut self.cfg).tool_limits = limits;
        self
    }

    /// How much of the server's tool list is kept.
    pub fn tool_limits(&self) -> ToolLimits {
        self.cfg.tool_limits
    }

    /// The server's tools within this client's [`ToolLimits`], page by page.
    pub(super) async fn list_bounded(
        &self,
        peer: &Peer<RoleClient>,
    ) -> Result<(Vec<McpToolInfo>, Vec<String>), ServiceError> {
        let mut kept = Kept::new(&self.cfg.server, self.cfg.tool_limits);
        // A server that does not declare tools offers none, and need not answer
        // `tools/list` (a server of skills or resources only): it is wrapped with no tools
        // rather than failing to load.
        if peer
            .peer_info()
            .is_some_and(|i| i.capabilities.tools.is_none())
        {
            return Ok((kept.tools, kept.refused));
        }
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_TOOL_PAGES {
            let params = cursor
                .take()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = peer.list_tools(params).await?;
            for tool in page.tools {
                if !kept.offer(tool) {
                    return Ok((kept.tools, kept.refused));
                }
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok((kept.tools, kept.refused)),
            }
        }
        let server = &self.cfg.server;
        tracing::warn!(
            server = %server,
            "MCP server `{server}` lists tools on more than {MAX_TOOL_PAGES} pages; only \
             the tools of the first {MAX_TOOL_PAGES} are used (MAX_TOOL_PAGES)"
        );
        Ok((kept.tools, kept.refused))
    }
}

/// The tools kept so far of one listing, and what they weigh.
pub(crate) struct Kept<'a> {
    server: &'a str,
    limits: ToolLimits,
    /// How many tools the server listed so far.
    seen: usize,
    bytes: usize,
    pub(crate) tools: Vec<McpToolInfo>,
    /// The tools refused by name, each with why (for the registration report).
    pub(crate) refused: Vec<String>,
}

impl<'a> Kept<'a> {
    pub(crate) fn new(server: &'a str, limits: ToolLimits) -> Self {
        Self {
            server,
            limits,
            seen: 0,
            bytes: 0,
            tools: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// Takes in the next listed tool, or refuses it by name; `false` once the listing
    /// is to stop (the server listed more than `max_tools`, or its definitions passed
    /// the byte budget).
    pub(crate) fn offer(&mut self, tool: Tool) -> bool {
        let server = self.server;
        let ToolLimits {
            max_tools,
            max_bytes,
        } = self.limits;
        self.seen += 1;
        if self.seen > max_tools {
            tracing::warn!(
                server = %server,
                "MCP server `{server}` lists more than {max_tools} tools; only the first \
                 {max_tools} are used (max_tools)"
            );
            return false;
        }
        let depth = [
            Some(depth_of_map(&tool.input_schema)),
            tool.output_schema.as_deref().map(depth_of_map),
            tool.meta.as_ref().map(|m| depth_of_map(&m.0)),
        ];
        if depth.into_iter().flatten().any(|d| d > MAX_TOOL_DEPTH) {
            warn_too_deep(server, &tool.name);
            self.refused.push(format!(
                "tool '{}': refused: its definition nests deeper than {MAX_TOOL_DEPTH} levels",
                shown(&tool.name)
            ));
            return true;
        }
        let size = json_size(&tool);
        if size > MAX_TOOL_BYTES {
            tracing::warn!(
                server = %server,
                tool = %shown(&tool.name),
                "MCP server `{server}`: tool `{}` refused: its definition is {size} bytes, \
                 more than {MAX_TOOL_BYTES} (MAX_TOOL_BYTES); the server's other tools are \
                 kept",
                shown(&tool.name)
            );
            // Name the part that makes it large when one part alone passes the limit.
            let part = [
                ("input schema", Some(&tool.input_schema)),
                ("output schema", tool.output_schema.as_ref()),
            ]
            .into_iter()
            .filter_map(|(what, m)| Some((what, serde_json::to_vec(&**m?).ok()?.len())))
            .find(|(_, n)| *n > MAX_TOOL_BYTES)
            .map(|(what, n)| format!(" (its {what} alone is {n} bytes)"))
            .unwrap_or_default();
            self.refused.push(format!(
                "tool '{}': refused: its definition is {size} bytes, more than \
                 {MAX_TOOL_BYTES}{part}",
                shown(&tool.name)
            ));
            return true;
        }
        if self.bytes + size > max_bytes {
            tracing::warn!(
                server = %server,
                "MCP server `{server}`: its tool definitions pass {max_bytes} bytes \
                 (max_tools_bytes) at tool `{}`; that tool and the ones after it are \
                 dropped, {} tools are used",
                shown(&tool.name),
                self.tools.len()
            );
            return false;
        }
        self.bytes += size;
        self.tools.push(McpToolInfo::from(tool));
        true
    }
}

/// The length of `tool` as JSON, counted without building the text.
fn json_size(tool: &Tool) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Serialising a parsed tool into a counter cannot fail; were it to, the tool counts
    // as too large.
    match serde_json::to_writer(&mut count, tool) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// How deep `map` nests as a JSON object (`{}` is 1), walked without recursion.
fn depth_of_map(map: &serde_json::Map<String, Value>) -> usize {
    let mut deepest = 1;
    let mut stack: Vec<(&Value, usize)> = map.values().map(|v| (v, 2)).collect();
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Object(m) => {
                deepest = deepest.max(d);
                stack.extend(m.values().map(|v| (v, d + 1)));
            }
            Value::Array(a) => {
                deepest = deepest.max(d);
                stack.extend(a.iter().map(|v| (v, d + 1)));
            }
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, schema: Value) -> Tool {
        let Value::Object(map) = schema else {
            panic!("an object schema")
        };
        Tool::new(name.to_string(), "A tool of the tests.", map)
    }

    fn nested(levels: usize) -> Value {
        let mut v = serde_json::json!({"type": "string"});
        for _ in 0..levels {
            v = serde_json::json!({"type": "array", "items": v});
        }
        v
    }

    #[test]
    fn the_first_max_tools_are_kept_and_the_listing_stops_past_them() {
        let mut kept = Kept::new(
            "s",
            ToolLimits {
                max_tools: 3,
                ..ToolLimits::default()
            },
        );
        for i in 0..3 {
            assert!(kept.offer(tool(&format!("t{i}"), serde_json::json!({}))));
        }
        assert!(!kept.offer(tool("t3", serde_json::json!({}))));
        let names: Vec<_> = kept.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["t0", "t1", "t2"]);
    }

    #[test]
    fn a_too_deep_or_too_large_tool_is_refused_and_the_rest_kept() {
        let mut kept = Kept::new("s", ToolLimits::default());
        // `{"type":"object","properties":{"x": <31 levels>}}`: 33 levels, refused.
        assert!(kept.offer(tool(
            "deep",
            serde_json::json!({"type": "object", "properties": {"x": nested(30)}})
        )));
        // 32 levels: kept.
        assert!(kept.offer(tool(
            "edge",
            serde_json::json!({"type": "object", "properties": {"x": nested(29)}})
        )));
        let mut out = tool("deep_out", serde_json::json!({}));
        out.output_schema = Some(std::sync::Arc::new(
            serde_json::from_value(serde_json::json!({"x": nested(40)})).unwrap(),
        ));
        assert!(kept.offer(out));
        let big = "x".repeat(MAX_TOOL_BYTES);
        assert!(kept.offer(tool("huge", serde_json::json!({"description": big}))));
        assert!(kept.offer(tool("fine", serde_json::json!({}))));
        let names: Vec<_> = kept.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["edge", "fine"]);
    }

    #[test]
    fn the_byte_budget_drops_the_tool_that_passes_it_and_stops() {
        let one = json_size(&tool("t0", serde_json::json!({})));
        let mut kept = Kept::new(
            "s",
            ToolLimits {
                max_tools: 100,
                max_bytes: one * 2 + one / 2,
            },
        );
        assert!(kept.offer(tool("t0", serde_json::json!({}))));
        assert!(kept.offer(tool("t1", serde_json::json!({}))));
        assert!(!kept.offer(tool("t2", serde_json::json!({}))));
        assert_eq!(kept.tools.len(), 2);
    }

    #[test]
    fn depth_counts_objects_and_arrays() {
        let m = |v: Value| match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        assert_eq!(depth_of_map(&m(serde_json::json!({}))), 1);
        assert_eq!(depth_of_map(&m(serde_json::json!({"a": [1, {"b": 2}]}))), 3);
        assert_eq!(depth_of_map(&m(serde_json::json!({"a": nested(5)}))), 7);
    }
}
