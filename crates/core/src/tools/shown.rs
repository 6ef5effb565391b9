//! What a model or a client is shown of a tool: the **one** definition that the linter
//! reads and the operator's approval pins (`docs/design.md`, "What is shown").
//!
//! A tool reaches a model as its name, description and parameter schema, and reaches an
//! MCP client as the tool object `serve` lists: those plus a title, an output schema,
//! icons and annotations. Every string in that object (object keys included: a property
//! *name* is text a model reads) is text an untrusted author wrote. If lint read one set
//! of fields and approval pinned another, an attacker would use the difference. So both
//! go through [`ShownTool`]: approval hashes [`ShownTool::to_value`] and lint reads every
//! string of the same value through [`strings`].
//!
//! Annotation *hints* (`readOnlyHint`, ...) are not text: they map to the declared
//! permissions, which are part of the value. The `annotations.title` a source gives is
//! kept as it was given.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// One tool as a model or a client is shown it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShownTool {
    /// The tool name.
    pub name: String,
    /// The description shown to models.
    pub description: String,
    /// The parameter JSON Schema.
    pub parameters: Value,
    /// The declared permissions (`read`, `network`, ...), as their names, sorted.
    pub permissions: Vec<String>,
    /// A display title (MCP `title`), when the source gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The title inside the source's annotations (MCP `annotations.title`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations_title: Option<String>,
    /// The output JSON Schema (MCP `outputSchema`), when the source gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The icons' sources (`https:` URLs or `data:image/...`), when the source gives any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<String>,
    /// The tool's `_meta` (an MCP App's `ui.resourceUri`, a server's extension fields),
    /// when the source gives one: a client acts on it, so approval pins it and lint reads
    /// its strings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// "sha256:HEX" of the MCP App view the tool ships (`crate::tools::view`), when it
    /// ships one: a host renders the page beside the tool's results, so approval pins it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
}

impl ShownTool {
    /// A tool with a name, a description, a schema and permissions (sorted and
    /// deduplicated: their order means nothing), and nothing else shown.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        permissions: impl IntoIterator<Item = String>,
    ) -> Self {
        let mut permissions: Vec<String> = permissions.into_iter().collect();
        permissions.sort();
        permissions.dedup();
        ShownTool {
            name: name.into(),
            description: description.into(),
            parameters,
            permissions,
            title: None,
            annotations_title: None,
            output_schema: None,
            icons: Vec::new(),
            meta: None,
            view: None,
        }
    }

    /// With the view a tool ships: its `_meta` (`ui.resourceUri`) and the page's digest
    /// (`None`: no view; the `_meta` is left as it was).
    pub fn with_view(mut self, view: Option<&crate::tools::view::AppView>) -> Self {
        if let Some(v) = view {
            self.meta = Some(Value::Object(v.tool_meta()));
            self.view = Some(v.digest.clone());
        }
        self
    }

    /// With the `_meta` a source gave (`None`: not shown).
    pub fn with_meta(mut self, meta: Option<Value>) -> Self {
        self.meta = meta;
        self
    }

    /// With the display title, the annotations' title, the output schema and the icons'
    /// sources a source gave (`None` or empty: not shown).
    pub fn with_display(
        mut self,
        title: Option<String>,
        annotations_title: Option<String>,
        output_schema: Option<Value>,
        icons: Vec<String>,
    ) -> Self {
        self.title = title;
        self.annotations_title = annotations_title;
        self.output_schema = output_schema;
        self.icons = icons;
        self
    }

    /// The tool as one JSON value: `name`, `description`, `parameters`, `permissions`,
    /// and `title`, `annotations.title`, `outputSchema`, `icons`, `_meta`, `view` (the digest of
    /// its MCP App page) only when given (so a
    /// tool that has none hashes as it did before they were shown).
    pub fn to_value(&self) -> Value {
        let mut v = serde_json::json!({
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "permissions": self.permissions,
        });
        if let Some(o) = v.as_object_mut() {
            if let Some(t) = &self.title {
                o.insert("title".into(), Value::String(t.clone()));
            }
            if let Some(t) = &self.annotations_title {
                o.insert("annotations".into(), serde_json::json!({ "title": t }));
            }
            if let Some(s) = &self.output_schema {
                o.insert("outputSchema".into(), s.clone());
            }
            if !self.icons.is_empty() {
                o.insert("icons".into(), serde_json::json!(self.icons));
            }
            if let Some(m) = &self.meta {
                o.insert("_meta".into(), m.clone());
            }
            if let Some(d) = &self.view {
                o.insert("view".into(), Value::String(d.clone()));
            }
        }
        v
    }

    /// Canonical JSON of [`Self::to_value`].
    pub fn canonical(&self) -> String {
        canonical_json(&self.to_value())
    }

    /// "sha256:HEX" of the canonical JSON: what an approval records per tool.
    pub fn hash(&self) -> String {
        format!(
            "sha256:{}",
            hex::encode(Sha256::digest(self.canonical().as_bytes()))
        )
    }

    /// The fields that differ between `self` and `other`, by their place in
    /// [`Self::to_value`] (`description`, `parameters`, `title`, `outputSchema`, ...).
    pub fn changed_fields(&self, other: &ShownTool) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut check = |name: &'static str, same: bool| {
            if !same {
                out.push(name);
            }
        };
        check("name", self.name == other.name);
        check("title", self.title == other.title);
        check(
            "annotations.title",
            self.annotations_title == other.annotations_title,
        );
        check("description", self.description == other.description);
        check("parameters", self.parameters == other.parameters);
        check("outputSchema", self.output_schema == other.output_schema);
        check("icons", self.icons == other.icons);
        check("_meta", self.meta == other.meta);
        check("view", self.view == other.view);
        check("permissions", self.permissions == other.permissions);
        out
    }
}

/// Writes `value` as canonical JSON: object keys sorted by their UTF-8 bytes, no
/// whitespace, strings and numbers as serde_json writes them. Sorting is done here rather
/// than relying on `serde_json::Map`'s order, which a `preserve_order` feature anywhere
/// in the build would change.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(k) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The deepest nesting [`strings`] walks into.
pub const MAX_DEPTH: usize = 64;
/// The most JSON nodes [`strings`] visits.
pub const MAX_NODES: usize = 10_000;
/// The most bytes of text [`strings`] hands over in all.
pub const MAX_TEXT_BYTES: usize = 1024 * 1024;
/// The most bytes of one string [`strings`] hands over (a longer one is read that far,
/// and the walk goes on to the other strings).
pub const MAX_STRING_BYTES: usize = 64 * 1024;

/// One string of a shown value: where it is and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownString<'a> {
    /// The JSON pointer of the value (for a key: of the value it names).
    pub pointer: String,
    /// Whether the string is an object key (a property name, an `x-*` key).
    pub is_key: bool,
    /// The text as the source gave it.
    pub text: &'a str,
}

/// Every string of a shown value and whether the walk stopped early.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShownStrings<'a> {
    /// The strings, depth first, object keys in sorted order (deterministic; the tool's
    /// own fields short ones first: title, annotations, description, icons, parameters,
    /// outputSchema).
    pub items: Vec<ShownString<'a>>,
    /// Why the walk stopped before the end (too deep, too many nodes, too much text):
    /// what lies beyond was not read.
    pub cut: Option<String>,
}

/// Every string of `value`, object keys included, recursively, within [`MAX_DEPTH`],
/// [`MAX_NODES`] and [`MAX_TEXT_BYTES`]. Bounded in time and memory whatever the value
/// (it is walked with an explicit stack, never by recursion).
pub fn strings(value: &Value) -> ShownStrings<'_> {
    let mut out = ShownStrings::default();
    let mut stack: Vec<(&Value, String, usize)> = vec![(value, String::new(), 0)];
    let mut nodes = 0usize;
    let mut bytes = 0usize;
    while let Some((v, pointer, depth)) = stack.pop() {
        nodes += 1;
        if nodes > MAX_NODES {
            out.cut = Some(format!("it has more than {MAX_NODES} JSON values"));
            break;
        }
        if depth > MAX_DEPTH {
            // That branch is not read; the others are.
            out.cut
                .get_or_insert_with(|| format!("{pointer} nests deeper than {MAX_DEPTH} levels"));
            continue;
        }
        match v {
            Value::String(s) => {
                let mut text = s.as_str();
                if text.len() > MAX_STRING_BYTES {
                    text = crate::tools::render::head(text, MAX_STRING_BYTES);
                    out.cut.get_or_insert_with(|| {
                        format!(
                            "{pointer} is {} bytes long (read up to {MAX_STRING_BYTES})",
                            s.len()
                        )
                    });
                }
                bytes = bytes.saturating_add(text.len());
                if bytes > MAX_TEXT_BYTES {
                    out.cut = Some(format!("it holds more than {MAX_TEXT_BYTES} bytes of text"));
                    break;
                }
                out.items.push(ShownString {
                    pointer,
                    is_key: false,
                    text,
                });
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((item, format!("{pointer}/{i}"), depth + 1));
                }
            }
            Value::Object(map) => {
                let mut keys: Vec<(&String, &Value)> = map.iter().collect();
                keys.sort_by(|a, b| a.0.cmp(b.0));
                if depth == 0 {
                    // The tool's own fields: the short ones first, so a huge schema
                    // cannot use up the bounds before the title or description is read.
                    keys.sort_by_key(|(k, _)| field_order(k));
                }
                // Keys are read where they stand, before the values they name; each
                // counts as a value of its own.
                nodes = nodes.saturating_add(keys.len());
                if nodes > MAX_NODES {
                    out.cut = Some(format!("it has more than {MAX_NODES} JSON values"));
                    break;
                }
                for (k, _) in &keys {
                    bytes = bytes.saturating_add(k.len());
                    out.items.push(ShownString {
                        pointer: format!("{pointer}/{}", escape_pointer(k)),
                        is_key: true,
                        text: k,
                    });
                }
                if bytes > MAX_TEXT_BYTES {
                    out.cut = Some(format!("it holds more than {MAX_TEXT_BYTES} bytes of text"));
                    break;
                }
                for (k, item) in keys.into_iter().rev() {
                    stack.push((item, format!("{pointer}/{}", escape_pointer(k)), depth + 1));
                }
            }
            _ => {}
        }
    }
    out
}

/// Where a field of the shown value is read in the walk: short text first, schemas last.
fn field_order(key: &str) -> usize {
    [
        "title",
        "annotations",
        "description",
        "icons",
        "parameters",
        "outputSchema",
    ]
    .iter()
    .position(|k| *k == key)
    .unwrap_or(6)
}

/// A key as a JSON pointer token (RFC 6901: `~` is `~0`, `/` is `~1`).
fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_and_drops_whitespace() {
        let a: Value =
            serde_json::from_str(r#"{ "b": 1, "a": {"y": [1, 2], "x": "s"} }"#).unwrap_or_default();
        assert_eq!(canonical_json(&a), r#"{"a":{"x":"s","y":[1,2]},"b":1}"#);
    }

    #[test]
    fn a_tool_without_display_fields_hashes_as_before_and_each_field_changes_the_hash() {
        let base = ShownTool::new("add", "Adds.", json!({"type": "object"}), vec![]);
        // The value (and so the hash) of a tool that shows nothing more is the four
        // fields approvals always pinned.
        assert_eq!(
            base.canonical(),
            r#"{"description":"Adds.","name":"add","parameters":{"type":"object"},"permissions":[]}"#
        );
        let variants = [
            base.clone()
                .with_display(Some("Add".into()), None, None, vec![]),
            base.clone()
                .with_display(None, Some("Add".into()), None, vec![]),
            base.clone()
                .with_display(None, None, Some(json!({"type": "object"})), vec![]),
            base.clone()
                .with_display(None, None, None, vec!["https://x.example/i.png".into()]),
            // An MCP App's link: pinned, so a server cannot point an approved tool at
            // another view.
            base.clone()
                .with_meta(Some(json!({"ui": {"resourceUri": "ui://a/view.html"}}))),
            base.clone()
                .with_meta(Some(json!({"ui": {"resourceUri": "ui://a/other.html"}}))),
        ];
        let mut hashes: Vec<String> = variants.iter().map(ShownTool::hash).collect();
        hashes.push(base.hash());
        hashes.sort();
        hashes.dedup();
        assert_eq!(hashes.len(), 7);
        assert_eq!(variants[0].changed_fields(&base), vec!["title"]);
        assert_eq!(variants[2].changed_fields(&base), vec!["outputSchema"]);
        assert_eq!(variants[5].changed_fields(&variants[4]), vec!["_meta"]);
        // Lint reads the strings of `_meta` too.
        let v = variants[4].to_value();
        assert!(
            strings(&v)
                .items
                .iter()
                .any(|s| s.text == "ui://a/view.html")
        );
    }

    #[test]
    fn every_string_and_key_is_walked_with_its_pointer() {
        let tool = ShownTool::new(
            "t",
            "Top.",
            json!({"type": "object", "properties": {"a/b": {"default": {"x": ["deep"]}}}}),
            vec![],
        )
        .with_display(
            Some("T".into()),
            None,
            Some(json!({"$comment": "c", "x-note": "n"})),
            vec![],
        );
        let v = tool.to_value();
        let got = strings(&v);
        assert_eq!(got.cut, None);
        let find = |text: &str| {
            got.items
                .iter()
                .find(|s| s.text == text)
                .map(|s| (s.pointer.clone(), s.is_key))
        };
        assert_eq!(find("Top."), Some(("/description".into(), false)));
        assert_eq!(
            find("a/b"),
            Some(("/parameters/properties/a~1b".into(), true))
        );
        assert_eq!(
            find("deep"),
            Some(("/parameters/properties/a~1b/default/x/0".into(), false))
        );
        assert_eq!(find("x-note"), Some(("/outputSchema/x-note".into(), true)));
        assert_eq!(find("c"), Some(("/outputSchema/$comment".into(), false)));
        assert_eq!(find("T"), Some(("/title".into(), false)));
    }

    #[test]
    fn the_walk_is_bounded_by_depth_nodes_and_text() {
        let mut deep = json!("bottom");
        for _ in 0..200 {
            deep = json!({ "a": deep });
        }
        let deep = json!([deep, "after"]);
        let got = strings(&deep);
        assert!(
            got.cut.as_deref().is_some_and(|c| c.contains("deeper")),
            "{:?}",
            got.cut
        );
        assert!(
            got.items.iter().any(|s| s.text == "after"),
            "a deep branch is skipped, not the rest"
        );
        let wide = Value::Object((0..20_000).map(|i| (format!("k{i}"), json!(i))).collect());
        let got = strings(&wide);
        assert!(got.cut.is_some());
        assert!(got.items.len() <= MAX_NODES);
        // One long string is read up to its bound and the walk goes on.
        let long = json!(["x".repeat(600 * 1024), "after"]);
        let got = strings(&long);
        assert!(
            got.cut.as_deref().is_some_and(|c| c.contains("/0 is")),
            "{:?}",
            got.cut
        );
        assert_eq!(got.items.len(), 2);
        assert_eq!(got.items[0].text.len(), MAX_STRING_BYTES);
        // Many of them stop at the total.
        let many = Value::Array((0..40).map(|_| json!("y".repeat(60 * 1024))).collect());
        let got = strings(&many);
        assert!(
            got.cut
                .as_deref()
                .is_some_and(|c| c.contains("bytes of text")),
            "{:?}",
            got.cut
        );
        assert!(got.items.len() < 40);
    }

    #[test]
    fn the_short_fields_are_read_before_the_schemas() {
        let wide: serde_json::Map<String, Value> =
            (0..20_000).map(|i| (format!("p{i}"), json!("x"))).collect();
        let tool = ShownTool::new("t", "Desc.", Value::Object(wide), vec![]).with_display(
            Some("Title".into()),
            Some("Ann".into()),
            None,
            vec![],
        );
        let v = tool.to_value();
        let got = strings(&v);
        assert!(got.cut.is_some());
        for text in ["Title", "Ann", "Desc."] {
            assert!(got.items.iter().any(|s| s.text == text), "{text} not read");
        }
    }
}
