//! The schema rules, and the bounded walk of a parameter schema every rule shares.
//!
//! - `schema-not-object`: the parameters are not a JSON object, or their `type` is not
//!   `"object"` (what function calling and the registry require).
//! - `schema-missing-type`: the top level, or a property, says neither `type` nor
//!   anything that stands for one (`$ref`, `enum`, `const`, `allOf`/`anyOf`/`oneOf`,
//!   `not`).
//! - `schema-unresolved-ref`: a `$ref` that does not resolve inside the schema: a JSON
//!   pointer fragment (`#/$defs/x`, `%XX` and `~0`/`~1` escapes decoded) to nothing, a
//!   plain-name fragment (`#name`) no `$anchor` declares, or anything outside the
//!   document (toolhost fetches no remote schema).
//! - `schema-invalid`: the schema does not compile (the registry refuses such a tool);
//!   checked only when every `$ref` resolves, as an unresolved one fails to compile too.
//! - `schema-missing-format`: a string property whose name ends in a word with a
//!   standard format (`url`, `uri`, `link`, `href`, `endpoint`, `email`, `date`,
//!   `datetime`, `timestamp`, `time`, `uuid`, `guid`, `ip`, `ipv4`, `ipv6`, `hostname`)
//!   and that says no `format`, `pattern`, `enum` or `const`.
//! - `schema-too-complex`: the walk stopped at [`MAX_DEPTH`] or [`MAX_NODES`].
//!
//! The walk follows the subschema keywords of JSON Schema 2020-12 (and draft 7's
//! `definitions`, `additionalItems`, array `items`), not every JSON value, so a
//! `default` or `const` object is never mistaken for a schema.

use serde_json::Value;

use super::{Finding, Rule, Subject};

/// Subschemas deeper than this are not walked.
pub const MAX_DEPTH: usize = 64;

/// At most this many subschemas are walked.
pub const MAX_NODES: usize = 10_000;

/// One subschema met by [`walk`].
#[derive(Debug, Clone)]
pub struct Node<'a> {
    /// Its JSON pointer from the parameter schema's root (`""` for the root).
    pub pointer: String,
    /// The subschema.
    pub schema: &'a Value,
    /// The property name, when it is a child of `properties`.
    pub property: Option<&'a str>,
}

/// The subschemas of a parameter schema, depth first, in document order.
#[derive(Debug, Clone, Default)]
pub struct Walk<'a> {
    /// What was walked (the root first).
    pub nodes: Vec<Node<'a>>,
    /// Whether the walk stopped at [`MAX_DEPTH`] or [`MAX_NODES`].
    pub truncated: bool,
}

/// Keywords whose value is a map of name to subschema.
const MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Keywords whose value is one subschema.
const ONE_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
];

/// Keywords whose value is a list of subschemas (`items` too, in draft 7).
const LIST_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

/// A JSON pointer token (RFC 6901: `~` is `~0`, `/` is `~1`).
fn token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Walks the subschemas of `root` (see the module docs), at most [`MAX_NODES`] of them
/// and [`MAX_DEPTH`] deep.
pub fn walk(root: &Value) -> Walk<'_> {
    let mut out = Walk::default();
    // (pointer, schema, property, depth); children pushed in reverse to pop in order.
    let mut stack: Vec<(String, &Value, Option<&str>, usize)> =
        vec![(String::new(), root, None, 0)];
    while let Some((pointer, schema, property, depth)) = stack.pop() {
        if out.nodes.len() == MAX_NODES {
            out.truncated = true;
            break;
        }
        let mut children = Vec::new();
        if let Some(obj) = schema.as_object() {
            for (key, value) in obj {
                let at = format!("{pointer}/{}", token(key));
                if MAP_KEYWORDS.contains(&key.as_str()) {
                    if let Some(map) = value.as_object() {
                        for (name, sub) in map {
                            let prop = (key == "properties").then_some(name.as_str());
                            children.push((format!("{at}/{}", token(name)), sub, prop));
                        }
                    }
                } else if let Some(list) = value
                    .as_array()
                    .filter(|_| LIST_KEYWORDS.contains(&key.as_str()))
                {
                    for (i, sub) in list.iter().enumerate() {
                        children.push((format!("{at}/{i}"), sub, None));
                    }
                } else if ONE_KEYWORDS.contains(&key.as_str()) && value.is_object() {
                    children.push((at, value, None));
                }
            }
        }
        out.nodes.push(Node {
            pointer,
            schema,
            property,
        });
        if !children.is_empty() && depth == MAX_DEPTH {
            out.truncated = true;
            continue;
        }
        for (p, s, prop) in children.into_iter().rev() {
            stack.push((p, s, prop, depth + 1));
        }
    }
    out
}

/// Whether a schema node says what type its values have, directly or through a keyword
/// that stands for one.
fn has_type(obj: &serde_json::Map<String, Value>) -> bool {
    [
        "type", "$ref", "enum", "const", "allOf", "anyOf", "oneOf", "not",
    ]
    .iter()
    .any(|k| obj.contains_key(*k))
}

/// The format a property name asks for, by its last word (`home_url`, `replyEmail`,
/// `start-date`).
pub fn format_for(name: &str) -> Option<&'static str> {
    let last = last_word(name);
    Some(match last.as_str() {
        "url" | "uri" | "link" | "href" | "endpoint" => "uri",
        "email" => "email",
        "date" => "date",
        "datetime" | "timestamp" => "date-time",
        "time" => "time",
        "uuid" | "guid" => "uuid",
        "ip" | "ipv4" => "ipv4",
        "ipv6" => "ipv6",
        "hostname" => "hostname",
        _ => return None,
    })
}

/// The last word of an identifier, lowercased: split at `_`, `-`, `.`, spaces, a
/// lower-to-upper case change (`replyEmail`) and the last capital of an acronym followed
/// by a lower-case letter (`ISODate`).
fn last_word(name: &str) -> String {
    let chars: Vec<(usize, char)> = name.char_indices().collect();
    let mut start = 0;
    for (k, &(i, c)) in chars.iter().enumerate() {
        let prev = k.checked_sub(1).and_then(|p| chars.get(p)).map(|&(_, p)| p);
        let next = chars.get(k + 1).map(|&(_, n)| n);
        if !c.is_alphanumeric() {
            start = i + c.len_utf8();
        } else if c.is_uppercase()
            && prev.is_some_and(|p| {
                p.is_lowercase()
                    || p.is_numeric()
                    || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
            })
        {
            start = i;
        }
    }
    name[start..].to_lowercase()
}

/// Whether `reference` resolves inside `root` (see the module docs).
fn resolves(root: &Value, nodes: &[Node<'_>], reference: &str) -> bool {
    let Some(fragment) = reference.strip_prefix('#') else {
        return false;
    };
    if fragment.is_empty() {
        return true;
    }
    let Ok(decoded) = percent_encoding::percent_decode_str(fragment).decode_utf8() else {
        return false;
    };
    if decoded.starts_with('/') {
        return root.pointer(&decoded).is_some();
    }
    nodes
        .iter()
        .any(|n| n.schema.get("$anchor").and_then(Value::as_str) == Some(decoded.as_ref()))
}

/// Whether a string schema is bounded by a format, pattern, enum or const.
fn bounded(obj: &serde_json::Map<String, Value>) -> bool {
    ["format", "pattern", "enum", "const"]
        .iter()
        .any(|k| obj.contains_key(*k))
}

/// Whether a schema node's `type` admits strings.
fn is_string(obj: &serde_json::Map<String, Value>) -> bool {
    match obj.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        _ => false,
    }
}

/// The schema findings of a subject (see the module docs).
pub fn check(subject: &Subject, walk: &Walk<'_>) -> Vec<Finding> {
    let root = &subject.definition.parameters;
    let at = |pointer: &str| format!("parameters#{pointer}");
    let mut out = Vec::new();
    let Some(top) = root.as_object() else {
        out.push(Finding::new(
            Rule::SchemaNotObject,
            subject,
            "parameters",
            format!(
                "the parameters are {}, not a JSON Schema object",
                toolhost_core::tools::json_kind(root)
            ),
        ));
        return out;
    };
    match top.get("type") {
        None => out.push(Finding::new(
            Rule::SchemaMissingType,
            subject,
            "parameters",
            "the parameter schema has no \"type\" (it must be \"object\")",
        )),
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => out.push(Finding::new(
            Rule::SchemaNotObject,
            subject,
            "parameters",
            format!(
                "the parameter schema's \"type\" is {}, not \"object\"",
                super::excerpt(&other.to_string())
            ),
        )),
    }
    if walk.truncated {
        out.push(Finding::new(
            Rule::SchemaTooComplex,
            subject,
            "parameters",
            format!(
                "checked only the first {} subschemas, {MAX_DEPTH} levels deep",
                walk.nodes.len()
            ),
        ));
    }
    let mut unresolved = false;
    for node in &walk.nodes {
        let Some(obj) = node.schema.as_object() else {
            continue;
        };
        if let Some(reference) = obj.get("$ref") {
            let ok = reference
                .as_str()
                .is_some_and(|r| resolves(root, &walk.nodes, r));
            if !ok {
                unresolved = true;
                let shown = match reference.as_str() {
                    Some(r) if !r.starts_with('#') => format!(
                        "$ref \"{}\" points outside this schema (toolhost fetches no remote schema)",
                        super::excerpt(r)
                    ),
                    Some(r) => format!("$ref \"{}\" resolves to nothing", super::excerpt(r)),
                    None => "$ref is not a string".to_string(),
                };
                out.push(Finding::new(
                    Rule::SchemaUnresolvedRef,
                    subject,
                    at(&format!("{}/$ref", node.pointer)),
                    shown,
                ));
            }
        }
        let Some(name) = node.property else {
            continue;
        };
        if !has_type(obj) {
            out.push(Finding::new(
                Rule::SchemaMissingType,
                subject,
                at(&node.pointer),
                format!("property \"{}\" has no \"type\"", super::excerpt(name)),
            ));
        }
        if is_string(obj)
            && !bounded(obj)
            && let Some(format) = format_for(name)
        {
            out.push(Finding::new(
                Rule::SchemaMissingFormat,
                subject,
                at(&node.pointer),
                format!(
                    "string property \"{}\" has no \"format\" (\"{format}\" fits its name)",
                    super::excerpt(name)
                ),
            ));
        }
    }
    if !unresolved && let Err(e) = jsonschema::validator_for(root) {
        out.push(Finding::new(
            Rule::SchemaInvalid,
            subject,
            "parameters",
            format!("does not compile: {}", super::excerpt(&e.to_string())),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::clean;
    use super::super::{Rule, lint_tool};
    use super::*;
    use serde_json::json;

    fn found(parameters: Value, rule: Rule) -> Vec<(String, String)> {
        let mut s = clean();
        s.definition.parameters = parameters;
        lint_tool(&s)
            .into_iter()
            .filter(|f| f.rule == rule)
            .map(|f| (f.location, f.message))
            .collect()
    }

    fn locations(parameters: Value, rule: Rule) -> Vec<String> {
        found(parameters, rule)
            .into_iter()
            .map(|(l, _)| l)
            .collect()
    }

    #[test]
    fn parameters_must_be_an_object_schema() {
        assert_eq!(
            found(json!("a string"), Rule::SchemaNotObject),
            vec![(
                "parameters".to_string(),
                "the parameters are a string, not a JSON Schema object".to_string()
            )]
        );
        assert_eq!(
            locations(json!({"type": "array"}), Rule::SchemaNotObject),
            vec!["parameters"]
        );
        assert_eq!(
            locations(json!({"properties": {}}), Rule::SchemaMissingType),
            vec!["parameters"]
        );
    }

    #[test]
    fn properties_without_a_type_are_found_at_any_depth() {
        let p = json!({"type": "object", "properties": {
            "a": {"description": "No type."},
            "b": {"description": "Typed by enum.", "enum": ["x", "y"]},
            "c": {"type": "object", "description": "Nested.", "properties": {
                "d/e": {"description": "No type either."}
            }},
            "f": {"description": "Any of two.", "anyOf": [{"type": "string"}, {"type": "null"}]}
        }});
        assert_eq!(
            locations(p, Rule::SchemaMissingType),
            vec![
                "parameters#/properties/a",
                "parameters#/properties/c/properties/d~1e"
            ]
        );
    }

    #[test]
    fn refs_must_resolve_inside_the_schema() {
        let p = json!({"type": "object",
        "$defs": {"day": {"type": "string", "$anchor": "d"}, "a b": {"type": "string"}},
        "properties": {
            "ok1": {"$ref": "#/$defs/day", "description": "Resolves."},
            "ok2": {"$ref": "#d", "description": "Anchor."},
            "ok3": {"$ref": "#/$defs/a%20b", "description": "Escaped."},
            "bad1": {"$ref": "#/$defs/nope", "description": "Dangling."},
            "bad2": {"$ref": "https://evil.example/s.json", "description": "Remote."},
            "bad3": {"$ref": "#nope", "description": "No such anchor."},
            "bad4": {"$ref": 5, "description": "Not a string."}
        }});
        let got = found(p, Rule::SchemaUnresolvedRef);
        let locs: Vec<&str> = got.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            locs,
            vec![
                "parameters#/properties/bad1/$ref",
                "parameters#/properties/bad2/$ref",
                "parameters#/properties/bad3/$ref",
                "parameters#/properties/bad4/$ref"
            ]
        );
        assert!(got[1].1.contains("points outside this schema"), "{got:?}");
        // An unresolved ref is not reported a second time as a compile failure.
        let p =
            json!({"type": "object", "properties": {"a": {"$ref": "#/nope", "description": "x"}}});
        assert_eq!(locations(p, Rule::SchemaInvalid), Vec::<String>::new());
    }

    #[test]
    fn a_schema_that_does_not_compile_is_found() {
        let p = json!({"type": "object", "properties": {
            "a": {"type": "string", "description": "Bad pattern.", "pattern": "(["}
        }});
        let got = found(p, Rule::SchemaInvalid);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].1.starts_with("does not compile: "), "{got:?}");
    }

    #[test]
    fn strings_named_like_a_format_need_one() {
        let p = json!({"type": "object", "properties": {
            "url": {"type": "string", "description": "Fetched."},
            "replyEmail": {"type": "string", "description": "Answered."},
            "start-date": {"type": ["string", "null"], "description": "From."},
            "created_timestamp": {"type": "string", "description": "When."},
            "home_url": {"type": "string", "format": "uri", "description": "Has one."},
            "ip": {"type": "string", "pattern": "^[0-9.]+$", "description": "Bounded."},
            "curl": {"type": "string", "description": "Not a url."},
            "count_url": {"type": "integer", "description": "Not a string."}
        }});
        let got = found(p, Rule::SchemaMissingFormat);
        let locs: Vec<&str> = got.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            locs,
            vec![
                "parameters#/properties/created_timestamp",
                "parameters#/properties/replyEmail",
                "parameters#/properties/start-date",
                "parameters#/properties/url",
            ]
        );
        assert!(got[1].1.contains("\"email\" fits"), "{got:?}");
        assert_eq!(format_for("createdAt"), None);
        assert_eq!(format_for("ISODate"), Some("date"));
    }

    #[test]
    fn the_walk_is_bounded() {
        let mut deep = json!({"type": "string", "description": "Leaf."});
        for _ in 0..(MAX_DEPTH + 10) {
            deep = json!({"type": "object", "description": "Level.", "properties": {"n": deep}});
        }
        let w = walk(&deep);
        assert!(w.truncated);
        assert_eq!(w.nodes.len(), MAX_DEPTH + 1);
        let many: serde_json::Map<String, Value> = (0..MAX_NODES + 5)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"type": "string", "description": "P."}),
                )
            })
            .collect();
        let wide = json!({"type": "object", "properties": many});
        let w = walk(&wide);
        assert!(w.truncated);
        assert_eq!(w.nodes.len(), MAX_NODES);
        assert_eq!(locations(wide, Rule::SchemaTooComplex), vec!["parameters"]);
    }
}
