//! A wrapped server's `_meta`, bounded before toolhost passes it on (docs/mcp.md, "What
//! passes through"): the extension data that ties a tool to an MCP App (`ui.resourceUri`)
//! or carries a server's own fields must reach clients as the server wrote it, but it
//! comes from a server toolhost does not trust.
//!
//! - Keys of toolhost's own namespace (`io.toolhost/`) are dropped: only toolhost speaks
//!   there (who is asking, attribution.rs).
//! - An entry whose value is a script URI (`javascript:`, `vbscript:`, `data:text/html`,
//!   at any depth, whatever the case or leading blanks) is dropped: a client that follows
//!   a URI from `_meta` must never be handed one that runs code.
//! - The whole `_meta` is refused, with a warning, when it has more than
//!   [`MAX_META_KEYS`] keys at its top, more than [`MAX_META_DEPTH`] levels, or more than
//!   [`MAX_META_BYTES`] of JSON: a part of it would not be what the server sent, so none
//!   of it is passed on; the tool itself still is.

use rmcp::model::MetaObject;
use serde_json::{Map, Value};
use toolhost_core::tools::escape::escape_line;

/// Most keys at the top of a `_meta` passed on.
pub const MAX_META_KEYS: usize = 64;
/// Deepest nesting of a `_meta` passed on (objects and arrays).
pub const MAX_META_DEPTH: usize = 16;
/// Largest `_meta` passed on, as JSON.
pub const MAX_META_BYTES: usize = 16 * 1024;
/// toolhost's own `_meta` namespace.
pub const RESERVED_PREFIX: &str = "io.toolhost/";

/// `meta` bounded as the module docs say; `None` when nothing is left or it is refused.
/// `whose` names it in the warning (`server/tool`); it is called only then, so a call
/// result without `_meta` formats nothing.
pub fn meta_from_mcp(
    meta: Option<&Map<String, Value>>,
    whose: impl FnOnce() -> String,
) -> Option<Map<String, Value>> {
    let meta = meta.filter(|m| !m.is_empty())?;
    let refuse = |why: &str| {
        tracing::warn!(
            of = %escape_line(&whose()),
            "a wrapped server's _meta is not passed on: {why}"
        );
        None
    };
    if meta.len() > MAX_META_KEYS {
        return refuse(&format!("{} keys (at most {MAX_META_KEYS})", meta.len()));
    }
    if depth(meta) > MAX_META_DEPTH {
        return refuse(&format!("nested deeper than {MAX_META_DEPTH} levels"));
    }
    let size = serde_json::to_string(meta).map_or(usize::MAX, |s| s.len());
    if size > MAX_META_BYTES {
        return refuse(&format!("{size} bytes of JSON (at most {MAX_META_BYTES})"));
    }
    let kept: Map<String, Value> = meta
        .iter()
        .filter(|(k, _)| !k.starts_with(RESERVED_PREFIX))
        .filter_map(|(k, v)| clean(v).map(|v| (k.clone(), v)))
        .collect();
    (!kept.is_empty()).then_some(kept)
}

/// [`meta_from_mcp`] for rmcp's `_meta` objects (of resources, templates, prompts,
/// resource contents and results).
pub fn meta_object(meta: Option<MetaObject>, whose: impl FnOnce() -> String) -> Option<MetaObject> {
    let meta = meta?;
    meta_from_mcp(Some(&meta.0), whose).map(MetaObject)
}

/// How deep `m` nests (an object of scalars is 1).
fn depth(m: &Map<String, Value>) -> usize {
    fn of(v: &Value) -> usize {
        match v {
            Value::Object(m) => 1 + m.values().map(of).max().unwrap_or(0),
            Value::Array(a) => 1 + a.iter().map(of).max().unwrap_or(0),
            _ => 0,
        }
    }
    1 + m.values().map(of).max().unwrap_or(0)
}

/// `v` without the entries that are script URIs; `None` when `v` is one.
fn clean(v: &Value) -> Option<Value> {
    match v {
        Value::String(s) if is_script_uri(s) => None,
        Value::Object(m) => Some(Value::Object(
            m.iter()
                .filter_map(|(k, v)| clean(v).map(|v| (k.clone(), v)))
                .collect(),
        )),
        Value::Array(a) => Some(Value::Array(a.iter().filter_map(clean).collect())),
        other => Some(other.clone()),
    }
}

/// Whether `s` is a URI that runs script when followed. Browsers skip leading blanks and
/// control characters and ignore tabs and newlines inside the scheme, so those are
/// skipped here too before the scheme is compared.
fn is_script_uri(s: &str) -> bool {
    let scheme: String = s
        .trim_start_matches(|c: char| c.is_whitespace() || c.is_control())
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .take(16)
        .collect::<String>()
        .to_ascii_lowercase();
    ["javascript:", "vbscript:", "data:text/html"]
        .iter()
        .any(|p| scheme.starts_with(p))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn of(v: Value) -> Option<Value> {
        meta_from_mcp(v.as_object(), || "test/tool".into()).map(Value::Object)
    }

    #[test]
    fn an_app_link_passes_as_it_is_and_reserved_keys_do_not() {
        let ui = json!({"ui": {"resourceUri": "ui://app/view.html", "csp": {"connectDomains": ["https://api.example.com"]}}});
        assert_eq!(of(ui.clone()), Some(ui));
        assert_eq!(
            of(json!({"io.toolhost/source": "toolhost", "x": 1})),
            Some(json!({"x": 1}))
        );
        assert_eq!(of(json!({"io.toolhost/server": "me"})), None);
    }

    #[test]
    fn script_uris_are_dropped_however_they_are_written() {
        for uri in [
            "javascript:alert(1)",
            "  JavaScript:alert(1)",
            "\u{1}javascript:alert(1)",
            "java\tscript:alert(1)",
            "vbscript:msgbox",
            "data:text/html,<script>alert(1)</script>",
        ] {
            assert_eq!(
                of(json!({"ui": {"resourceUri": uri, "keep": "ui://a"}, "list": [uri, "ok"]})),
                Some(json!({"ui": {"keep": "ui://a"}, "list": ["ok"]})),
                "{uri:?}"
            );
        }
    }

    #[test]
    fn too_many_keys_too_deep_or_too_large_is_refused_whole() {
        let many: Map<String, Value> = (0..10_000).map(|i| (format!("k{i}"), json!(i))).collect();
        assert_eq!(meta_from_mcp(Some(&many), || "t".into()), None);
        let mut deep = json!("bottom");
        for _ in 0..40 {
            deep = json!({ "d": deep });
        }
        assert_eq!(of(deep), None);
        assert_eq!(of(json!({"big": "x".repeat(MAX_META_BYTES)})), None);
        assert_eq!(of(json!({})), None);
    }
}
