//! Progressive discovery: in [`Discovery::Search`] mode `tools/list` holds two tools of
//! the server's own, `search_tools` and `call_tool`, plus the operator's pinned tools,
//! instead of every tool of the registry (docs/mcp.md, "Progressive discovery").
//!
//! - `search_tools {query, limit}` ranks the tools this client may see (a
//!   [`LiveIndex`] of the registry, current through reloads and wrapped servers' list
//!   changes) and returns their full definitions, as `tools/list` would have served
//!   them.
//! - `call_tool {name, arguments}` is unwrapped into the `tools/call` it stands for
//!   before anything else looks at the request: visibility, task support, approvals put
//!   to the client, the client's share of the execution slots, the audit trail and the
//!   request's span all see the inner tool, exactly as a direct call of it.
//! - A direct `tools/call` of a tool found by search works as well: the list is what
//!   is shown, not what may be called.
//! - When the client may call code mode's `run_code`, the answer also holds the tools
//!   found as TypeScript declarations (`typescript`), the form a script calls them in.
//! - Both names are the server's in this mode: a registry tool named `search_tools` or
//!   `call_tool` is reached through `call_tool`.

use std::collections::BTreeSet;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use toolhost_core::tools::ToolError;
use toolhost_search::{LiveIndex, MAX_LIMIT, MAX_QUERY_BYTES, Query, declarations};

use super::clients::Identity;
use super::listing::tool_of;

/// The name of the search tool of [`Discovery::Search`] mode.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The name of the call-through tool of [`Discovery::Search`] mode.
pub const CALL_TOOL: &str = "call_tool";

/// Code mode's tool (`toolhost-code`): when a client may call it, `search_tools` answers
/// with the TypeScript declarations its scripts call the tools found by.
const RUN_CODE: &str = "run_code";

/// The most bytes of declarations one `search_tools` answer carries (50 tools at most;
/// those past it are named, not declared).
const DECLARATIONS_BUDGET: usize = 32 << 10;

/// What `tools/list` shows.
#[derive(Debug, Clone, Default)]
pub enum Discovery {
    /// Every tool the client may see (the default).
    #[default]
    All,
    /// `search_tools`, `call_tool` and these pinned tools (those the client may see).
    Search {
        /// Tool names always listed.
        pinned: BTreeSet<String>,
    },
}

/// The state of search mode in a server: the pinned names and the live index.
#[derive(Debug, Clone)]
pub(super) struct SearchMode {
    pinned: Arc<BTreeSet<String>>,
    index: LiveIndex,
}

impl SearchMode {
    pub(super) fn new(pinned: BTreeSet<String>, index: LiveIndex) -> Self {
        Self {
            pinned: Arc::new(pinned),
            index,
        }
    }

    /// Whether `name` is one of the pinned tools.
    pub(super) fn is_pinned(&self, name: &str) -> bool {
        self.pinned.contains(name)
    }

    /// The definitions of this mode's own tools.
    pub(super) fn own_tools() -> [Tool; 2] {
        [search_tools_tool(), call_tool_tool()]
    }

    /// The definition of one of this mode's own tools.
    pub(super) fn own_tool(name: &str) -> Option<Tool> {
        Self::own_tools().into_iter().find(|t| t.name == name)
    }

    /// Answers `search_tools` for `who`.
    pub(super) fn search(&self, arguments: Option<&JsonObject>, who: &Identity) -> CallToolResult {
        let empty = JsonObject::new();
        let args = arguments.unwrap_or(&empty);
        let query = match args.get("query") {
            Some(Value::String(q)) => q.as_str(),
            Some(_) => return invalid(SEARCH_TOOLS, "`query` must be a string"),
            None => {
                return invalid(
                    SEARCH_TOOLS,
                    "`query` is required: describe the task or name the tool",
                );
            }
        };
        let limit = match args.get("limit") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(n) => Some(n),
                None => {
                    return invalid(
                        SEARCH_TOOLS,
                        &format!("`limit` must be a whole number from 1 to {MAX_LIMIT}"),
                    );
                }
            },
        };
        let query = match Query::new(query, limit) {
            Ok(q) => q,
            Err(e) => return invalid(SEARCH_TOOLS, &e.to_string()),
        };
        let index = self.index.current();
        let hits = index.search(&query, |name| who.sees(name));
        let tools: Vec<Value> = hits
            .iter()
            .filter_map(|h| index.entry(&h.name))
            .filter_map(|e| serde_json::to_value(tool_of(e)).ok())
            .collect();
        let mut answer = json!({ "tools": &tools });
        // With code mode on for this client, the tools found come as TypeScript too: a
        // script calls them as `tools.NAME(args)`, and writes that best from a signature.
        if who.sees(RUN_CODE) && index.entry(RUN_CODE).is_some() {
            let found = hits
                .iter()
                .filter(|h| h.name != RUN_CODE)
                .filter_map(|h| index.entry(&h.name))
                .map(|e| &**e);
            answer["typescript"] = json!(declarations(found, DECLARATIONS_BUDGET));
        }
        let text = if tools.is_empty() {
            "No tool matches this query. Try other words: what the task does, or the kind \
             of thing it works on."
                .to_string()
        } else {
            answer.to_string()
        };
        let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
        r.structured_content = Some(answer);
        r
    }
}

/// The `tools/call` a `call_tool` request stands for: the inner tool's name and
/// arguments, or the error result to answer with.
pub(super) fn unwrap_call(
    arguments: Option<JsonObject>,
) -> Result<(String, Option<JsonObject>), CallToolResult> {
    let mut args = arguments.unwrap_or_default();
    let name = match args.remove("name") {
        Some(Value::String(n)) if !n.is_empty() => n,
        Some(_) => {
            return Err(invalid(
                CALL_TOOL,
                "`name` must be a tool's name (a non-empty string)",
            ));
        }
        None => {
            return Err(invalid(
                CALL_TOOL,
                "`name` is required: the name of a tool `search_tools` returned",
            ));
        }
    };
    let inner = match args.remove("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) => Some(o),
        Some(_) => return Err(invalid(CALL_TOOL, "`arguments` must be an object")),
    };
    if let Some(extra) = args.keys().next() {
        return Err(invalid(
            CALL_TOOL,
            &format!(
                "unknown field `{}`: call_tool takes `name` and `arguments`",
                toolhost_core::tools::escape::escape_line(extra)
            ),
        ));
    }
    Ok((name, inner))
}

/// An invalid-arguments result of one of this mode's own tools.
fn invalid(tool: &str, message: &str) -> CallToolResult {
    let e = ToolError::InvalidArguments(tool.to_string(), message.to_string());
    super::calls::error_result(e.kind(), e.to_string())
}

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(o) => Arc::new(o),
        _ => Arc::new(JsonObject::new()),
    }
}

fn search_tools_tool() -> Tool {
    Tool::new(
        SEARCH_TOOLS,
        "Find the tools for a task among every tool this server offers, which are not \
         listed here. Describe what you want to do in a few words (or give a tool's exact \
         name); the best matches come back with their full definitions (name, \
         description, input schema). Then call one with `call_tool`.",
        object(json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What the task does, in a few words, or a tool's name",
                    "maxLength": MAX_QUERY_BYTES
                },
                "limit": {
                    "type": "integer",
                    "description": "How many tools to return at most (default 8)",
                    "minimum": 1,
                    "maximum": MAX_LIMIT
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })),
    )
    .with_annotations(
        ToolAnnotations::with_title("Search tools")
            .read_only(true)
            .destructive(false)
            .open_world(false),
    )
}

fn call_tool_tool() -> Tool {
    Tool::new(
        CALL_TOOL,
        "Call a tool found with `search_tools`, by its name, with arguments that follow \
         its input schema. The call is checked, approved and run exactly as if the tool \
         had been called directly.",
        object(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name"},
                "arguments": {
                    "type": "object",
                    "description": "The tool's arguments, as its input schema describes"
                }
            },
            "required": ["name"],
            "additionalProperties": false
        })),
    )
    .with_annotations(ToolAnnotations::with_title("Call a tool"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_through_is_unwrapped_or_refused_with_a_reason() {
        let args = |v: Value| v.as_object().cloned();
        let (name, inner) =
            unwrap_call(args(json!({"name": "add", "arguments": {"x": 1}}))).unwrap();
        assert_eq!((name.as_str(), inner), ("add", args(json!({"x": 1}))));
        let (_, inner) = unwrap_call(args(json!({"name": "t"}))).unwrap();
        assert_eq!(inner, None);
        for (bad, why) in [
            (json!({}), "required"),
            (json!({"name": 3}), "non-empty string"),
            (json!({"name": ""}), "non-empty string"),
            (json!({"name": "t", "arguments": [1]}), "must be an object"),
            (
                json!({"name": "t", "extra\u{1b}[31m": 1}),
                "unknown field `extra\\x1b[31m`",
            ),
        ] {
            let r = unwrap_call(args(bad.clone())).unwrap_err();
            assert_eq!(r.is_error, Some(true));
            let message = r.structured_content.as_ref().unwrap()["message"].clone();
            let text = message.as_str().unwrap();
            assert!(text.contains(why), "{bad}: {text}");
            assert!(!text.contains('\u{1b}'), "{text}");
        }
        assert!(unwrap_call(None).is_err());
    }
}
