//! TypeScript declarations of tools, for code mode: a script calls `tools.NAME(args)`,
//! and a model writes that call best from a typed signature (`search_tools` answers and
//! the `run_code` offer of the LLM loop show them; docs/code-mode.md).
//!
//! Hand-written rather than a crate: the converters that exist are JavaScript
//! (json-schema-to-typescript) or generate Rust (typify); what is needed here is a small,
//! bounded, one-way rendering of the common JSON Schema keywords, where anything else is
//! `unknown`.
//!
//! Definitions come from plugin authors and MCP servers, neither trusted, so:
//! - every name that is not a plain identifier is a JSON string literal, and a
//!   description is one line inside `/** */` with `*/` broken and control characters
//!   dropped: nothing a definition holds can end a comment or a type early;
//! - nesting past [`MAX_DEPTH`] is `unknown`, unions past [`MAX_VARIANTS`] are cut,
//!   descriptions are cut at [`MAX_DOC_CHARS`], and one tool's declaration past
//!   [`MAX_DECLARATION_BYTES`] falls back to an untyped signature.

use serde_json::Value;
use toolhost_core::tools::ToolEntry;

/// Deepest schema nesting rendered as a type (deeper is `unknown`).
pub const MAX_DEPTH: usize = 6;
/// Most members of a union (`enum`, `anyOf`, `oneOf`, a list of types) rendered.
pub const MAX_VARIANTS: usize = 16;
/// Most characters of a description shown in a comment.
pub const MAX_DOC_CHARS: usize = 200;
/// Largest declaration of one tool; a larger one is shown as `(args: object)`.
pub const MAX_DECLARATION_BYTES: usize = 4096;

/// The declaration of one tool as a member of `tools`: a doc comment, then
/// `name(args: {...}): Promise<...>;`.
pub fn declaration(entry: &ToolEntry) -> String {
    declare(
        entry.name(),
        entry.description(),
        entry.parameters(),
        entry.metadata().output_schema.as_ref(),
    )
}

/// [`declaration`] from the parts of a definition.
pub fn declare(name: &str, description: &str, input: &Value, output: Option<&Value>) -> String {
    let mut out = String::new();
    push_doc(&mut out, description, "");
    let key = key(name);
    let args = ts_type(input, 0, "");
    let result = output.map_or_else(|| "unknown".to_string(), |o| ts_type(o, 0, ""));
    let full = format!("{key}(args: {args}): Promise<{result}>;");
    if out.len() + full.len() > MAX_DECLARATION_BYTES {
        out.push_str(&format!(
            "{key}(args: Record<string, unknown>): Promise<unknown>; // schema too large to show"
        ));
    } else {
        out.push_str(&full);
    }
    out
}

/// `declare const tools: { ... };` over `entries`, members in the order given, within
/// `budget` bytes: the tools that do not fit are named in a closing comment (as many
/// names as fit), so a model still knows they exist.
pub fn declarations<'a>(entries: impl IntoIterator<Item = &'a ToolEntry>, budget: usize) -> String {
    let mut out = String::from("declare const tools: {\n");
    let mut left_out: Vec<&str> = Vec::new();
    for entry in entries {
        let member = declaration(entry);
        if left_out.is_empty() && out.len() + member.len() + 8 <= budget {
            for line in member.lines() {
                out.push_str("  ");
                out.push_str(line);
                out.push('\n');
            }
        } else {
            left_out.push(entry.name());
        }
    }
    if !left_out.is_empty() {
        let mut names = String::new();
        let mut shown = 0;
        for name in &left_out {
            let k = key(name);
            if out.len() + names.len() + k.len() + 64 > budget.saturating_add(1024) {
                break;
            }
            if shown > 0 {
                names.push_str(", ");
            }
            names.push_str(&k);
            shown += 1;
        }
        out.push_str(&format!(
            "  // {} more tools, not declared here for room: {names}{}\n",
            left_out.len(),
            if shown < left_out.len() { ", ..." } else { "" }
        ));
    }
    out.push_str("};\n");
    out
}

/// A member name: the name itself when it is a plain identifier, else a JSON string.
fn key(name: &str) -> String {
    let mut chars = name.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if plain {
        name.to_string()
    } else {
        literal(&Value::String(name.to_string()))
    }
}

/// A JSON value as a TypeScript literal (JSON's escaping; U+2028 and U+2029, which end a
/// line in older JavaScript, escaped too).
fn literal(v: &Value) -> String {
    v.to_string()
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// Appends `text` as a one-line doc comment (nothing for empty text).
fn push_doc(out: &mut String, text: &str, indent: &str) {
    let mut line = String::new();
    let mut chars = 0;
    let mut last_space = true;
    for c in text.chars() {
        if chars >= MAX_DOC_CHARS {
            line.push('…');
            break;
        }
        let c = if c.is_whitespace() { ' ' } else { c };
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
            continue;
        }
        if c == ' ' && last_space {
            continue;
        }
        // `*/` would end the comment: a zero-width space keeps the two apart.
        if c == '/' && line.ends_with('*') {
            line.push('\u{200b}');
        }
        last_space = c == ' ';
        line.push(c);
        chars += 1;
    }
    let line = line.trim_end();
    if !line.is_empty() {
        out.push_str(&format!("{indent}/** {line} */\n"));
    }
}

/// The TypeScript type of a JSON Schema, `indent` being that of the line it starts on.
fn ts_type(schema: &Value, depth: usize, indent: &str) -> String {
    if depth > MAX_DEPTH {
        return "unknown".into();
    }
    let Value::Object(s) = schema else {
        // `true` (anything) and anything that is not a schema object.
        return "unknown".into();
    };
    if let Some(c) = s.get("const") {
        return literal(c);
    }
    if let Some(Value::Array(values)) = s.get("enum") {
        return union(values.iter().map(literal));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(variants)) = s.get(key) {
            return union(variants.iter().map(|v| ts_type(v, depth + 1, indent)));
        }
    }
    match s.get("type") {
        Some(Value::String(t)) => of_type(t, s, depth, indent),
        Some(Value::Array(types)) => union(
            types
                .iter()
                .filter_map(Value::as_str)
                .map(|t| of_type(t, s, depth, indent)),
        ),
        _ if s.contains_key("properties") => of_type("object", s, depth, indent),
        _ => "unknown".into(),
    }
}

/// The type for one JSON Schema `type` name.
fn of_type(t: &str, s: &serde_json::Map<String, Value>, depth: usize, indent: &str) -> String {
    match t {
        "string" => "string".into(),
        "integer" | "number" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => match s.get("items") {
            Some(items) => {
                let inner = ts_type(items, depth + 1, indent);
                if inner.contains(' ') || inner.contains('|') {
                    format!("Array<{inner}>")
                } else {
                    format!("{inner}[]")
                }
            }
            None => "unknown[]".into(),
        },
        "object" => object(s, depth, indent),
        _ => "unknown".into(),
    }
}

/// An object type: its properties (optional unless `required`), and an index signature
/// when other keys are allowed with a schema.
fn object(s: &serde_json::Map<String, Value>, depth: usize, indent: &str) -> String {
    let required: Vec<&str> = match s.get("required") {
        Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let inner = format!("{indent}  ");
    let mut out = String::from("{\n");
    let mut members = 0;
    if let Some(Value::Object(props)) = s.get("properties") {
        for (name, prop) in props {
            if let Some(Value::String(d)) = prop.get("description") {
                push_doc(&mut out, d, &inner);
            }
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            out.push_str(&format!(
                "{inner}{}{optional}: {};\n",
                key(name),
                ts_type(prop, depth + 1, &inner)
            ));
            members += 1;
        }
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(false)) => {}
        Some(extra @ Value::Object(_)) => {
            out.push_str(&format!(
                "{inner}[key: string]: {};\n",
                ts_type(extra, depth + 1, &inner)
            ));
            members += 1;
        }
        _ if members == 0 => return "Record<string, unknown>".into(),
        _ => {}
    }
    if members == 0 {
        return "{}".into();
    }
    out.push_str(indent);
    out.push('}');
    out
}

/// `a | b | c`, at most [`MAX_VARIANTS`] members, duplicates once.
fn union(types: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut more = false;
    for t in types {
        if seen.len() == MAX_VARIANTS {
            more = true;
            break;
        }
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    if more {
        seen.push("unknown".into());
    }
    match seen.len() {
        0 => "never".into(),
        _ => seen.join(" | "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn common_schemas_become_readable_types() {
        let input = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file to read"},
                "lines": {"type": "array", "items": {"type": "integer"}},
                "mode": {"enum": ["text", "base64"]},
                "opts": {"type": "object", "additionalProperties": {"type": "boolean"}},
                "maybe": {"type": ["string", "null"]}
            },
            "required": ["path"]
        });
        let d = declare("read_file", "Read a file.", &input, None);
        assert_eq!(
            d,
            "/** Read a file. */\nread_file(args: {\n  lines?: number[];\n  \
             maybe?: string | null;\n  mode?: \"text\" | \"base64\";\n  opts?: {\n    \
             [key: string]: boolean;\n  };\n  /** The file to read */\n  path: string;\n\
             }): Promise<unknown>;"
        );
        let out =
            json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]});
        let d = declare("get-count", "", &json!({"type": "object"}), Some(&out));
        assert_eq!(
            d,
            "\"get-count\"(args: Record<string, unknown>): Promise<{\n  n: number;\n}>;"
        );
    }

    #[test]
    fn hostile_definitions_cannot_break_out_of_a_comment_or_a_type() {
        let input = json!({
            "type": "object",
            "properties": {
                "a\"; evil(): void; \"": {
                    "type": "string",
                    "description": "x */ declare const pwned: 1; /* \n\u{2028}"
                },
                "b\u{2028}": {"const": "\u{2029}"}
            }
        });
        let d = declare("x */ evil", "doc */ injected /*\u{1b}[31m", &input, None);
        assert!(!d.contains("*/ injected"), "{d}");
        assert!(!d.contains("*/ declare"), "{d}");
        assert!(!d.contains('\u{1b}') && !d.contains('\u{2028}') && !d.contains('\u{2029}'));
        assert!(d.contains("\"x */ evil\"(args"), "{d}");
        assert!(d.contains("\"a\\\"; evil(): void; \\\"\"?: string;"), "{d}");
        // Every comment is one line that opens once and closes once, at its end.
        for line in d.lines().filter(|l| l.trim_start().starts_with("/**")) {
            assert_eq!(line.matches("*/").count(), 1, "{line}");
            assert!(line.ends_with(" */"), "{line}");
        }
    }

    #[test]
    fn deep_wide_and_huge_schemas_stay_bounded() {
        let mut deep = json!({"type": "string"});
        for _ in 0..200 {
            deep = json!({"type": "array", "items": deep});
        }
        let d = declare("deep", "", &deep, None);
        assert!(d.contains("unknown"), "{d}");
        assert!(d.len() < 200, "{d}");
        let wide = json!({"enum": (0..1000).collect::<Vec<_>>()});
        let d = declare("wide", "", &wide, None);
        assert_eq!(d.matches('|').count(), MAX_VARIANTS, "{d}");
        let props: serde_json::Map<String, Value> = (0..2000)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let huge = json!({"type": "object", "properties": props});
        let d = declare("huge", "", &huge, None);
        assert!(d.len() <= MAX_DECLARATION_BYTES + 100, "{}", d.len());
        assert!(d.contains("schema too large"), "{d}");
        let long = "word ".repeat(1000);
        let d = declare("long", &long, &json!({}), None);
        assert!(d.chars().count() < MAX_DOC_CHARS + 80, "{d}");
    }
}
