//! Pipeline stage 2: the arguments against the tool's JSON Schema (compiled once, at
//! registration). The error names each failing path and why, at most five of them.
//!
//! Models often write `null` for an optional parameter they mean to leave out (some
//! structured-output modes make every property required and nullable). When the
//! arguments fail only because of such nulls, the call goes ahead without them
//! ([`without_optional_nulls`]): a top-level property whose `null` the schema refuses,
//! and that it does not require, is dropped, and the rest must pass the schema. A
//! property whose schema allows `null` keeps it.

use serde_json::Value;

use super::entry::ToolEntry;

/// Why `args` fail `entry`'s schema, or `None` when they pass.
pub(super) fn validation_error(entry: &ToolEntry, args: &Value) -> Option<String> {
    const MAX_REPORTED: usize = 5;
    let mut msgs = Vec::new();
    let mut more = 0usize;
    // The secret values of the arguments as JSON text, to catch an error that quotes one
    // even when its instance path does not lead to it (jsonschema reports some
    // `additionalProperties: false` errors at the parent).
    let secrets = crate::tools::redact::secret_values(args);
    for err in entry.validator.iter_errors(args) {
        if msgs.len() < MAX_REPORTED {
            let path = err.instance_path().to_string();
            let at = if path.is_empty() {
                "at the top level".to_string()
            } else {
                format!("at '{path}'")
            };
            // A secret value is never echoed: mask the offending value when it sits
            // under a secret key or contains a credential, and scrub what remains.
            let plain = err.to_string();
            let mut text = if crate::tools::redact::pointer_has_secret_key(&path)
                || crate::tools::redact::value_has_secrets(err.instance())
                || secrets.iter().any(|s| plain.contains(s.as_str()))
            {
                err.masked_with(crate::tools::redact::REDACTED).to_string()
            } else {
                plain
            };
            for s in &secrets {
                if text.contains(s.as_str()) {
                    text = text.replace(s.as_str(), crate::tools::redact::REDACTED);
                }
            }
            let line = format!("{at}: {text}");
            msgs.push(crate::tools::redact::scrub_text(&line).into_owned());
        } else {
            more += 1;
        }
    }
    if msgs.is_empty() {
        return None;
    }
    let mut s = msgs.join("; ");
    if more > 0 {
        s.push_str(&format!("; and {more} more problem(s)"));
    }
    Some(s)
}

/// `args` without the top-level `null` values the schema refuses, for properties it does
/// not list as `required`, when that copy passes `entry`'s schema; else `None`.
pub(super) fn without_optional_nulls(entry: &ToolEntry, args: &Value) -> Option<Value> {
    let Value::Object(given) = args else {
        return None;
    };
    let required: Vec<&str> = entry
        .parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // The properties whose own `null` the schema refuses (an error at `/name` itself).
    let refused: Vec<String> = entry
        .validator
        .iter_errors(args)
        .filter(|e| e.instance().is_null())
        .filter_map(|e| {
            let path = e.instance_path().to_string();
            let name = path.strip_prefix('/')?;
            // One level deep only; `~0`/`~1` are a pointer's escapes of `~` and `/`.
            (!name.contains('/')).then(|| name.replace("~1", "/").replace("~0", "~"))
        })
        .filter(|name| !required.contains(&name.as_str()))
        .collect();
    if refused.is_empty() {
        return None;
    }
    let kept: serde_json::Map<String, Value> = given
        .iter()
        .filter(|(k, _)| !refused.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let kept = Value::Object(kept);
    entry.validator.is_valid(&kept).then_some(kept)
}
