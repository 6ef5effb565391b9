//! The description rules: does the definition tell a model what the tool does and how to
//! call it?
//!
//! - `desc-missing`: the description is empty (or blank).
//! - `desc-too-short`: under [`MIN_CHARS`] characters (trimmed): too short to say what
//!   the tool does, what it returns and when to use it.
//! - `desc-too-long`: over [`MAX_CHARS`] characters: sent with every request, and room
//!   to bury instructions in.
//! - `desc-repeats-name`: every word of the description is a word of the name
//!   (`read_file`: "Read file."), ignoring case, a plural or third-person `s`, and
//!   filler words ("the", "tool", ...).
//! - `param-undescribed`: a property (at any depth) with no `description`, its own or
//!   that of the schema its `$ref` points to.
//! - `enum-unexplained`: a described property with an `enum` of two or more values
//!   whose description names none of them.

use std::collections::BTreeSet;

use serde_json::Value;

use super::schema::Walk;
use super::{Finding, Rule, Subject};

/// Shorter descriptions (in characters, trimmed) get `desc-too-short`.
pub const MIN_CHARS: usize = 20;

/// Longer descriptions (in characters, trimmed) get `desc-too-long`.
pub const MAX_CHARS: usize = 1024;

/// Words that say nothing about what a tool does.
const FILLER: &[&str] = &[
    "a", "an", "the", "this", "that", "it", "tool", "function", "of", "for", "to", "and", "or",
    "with", "by", "on", "in",
];

/// The words of a name or description: split at anything not alphanumeric and at
/// lower-to-upper case changes, lowercased, filler dropped, and a trailing `s` (not
/// `ss`) dropped from words over three letters.
fn words(s: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut word = String::new();
    let mut prev_lower = false;
    let mut flush = |word: &mut String| {
        if word.is_empty() {
            return;
        }
        let mut w = std::mem::take(word).to_lowercase();
        if FILLER.contains(&w.as_str()) {
            return;
        }
        if w.chars().count() > 3 && w.ends_with('s') && !w.ends_with("ss") {
            w.pop();
        }
        out.insert(w);
    };
    for c in s.chars() {
        if !c.is_alphanumeric() {
            flush(&mut word);
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            flush(&mut word);
        }
        prev_lower = c.is_lowercase();
        word.push(c);
    }
    flush(&mut word);
    out
}

/// The schema a local `$ref` of `obj` points to, if it resolves.
fn target<'a>(root: &'a Value, obj: &serde_json::Map<String, Value>) -> Option<&'a Value> {
    let fragment = obj.get("$ref")?.as_str()?.strip_prefix('#')?;
    let decoded = percent_encoding::percent_decode_str(fragment)
        .decode_utf8()
        .ok()?;
    root.pointer(&decoded)
}

/// A non-blank string `key` of `obj`, else of the schema its `$ref` points to.
fn own_or_ref<'a>(
    root: &'a Value,
    obj: &'a serde_json::Map<String, Value>,
    key: &str,
) -> Option<&'a Value> {
    obj.get(key)
        .or_else(|| target(root, obj).and_then(|t| t.get(key)))
}

/// The description findings of a subject (see the module docs).
pub fn check(subject: &Subject, walk: &Walk<'_>) -> Vec<Finding> {
    let def = &subject.definition;
    let mut out = Vec::new();
    let chars = def.description.trim().chars().count();
    if chars == 0 {
        out.push(Finding::new(
            Rule::DescMissing,
            subject,
            "description",
            "the description is empty",
        ));
    } else if chars < MIN_CHARS {
        out.push(Finding::new(
            Rule::DescTooShort,
            subject,
            "description",
            format!("the description has {chars} characters (fewer than {MIN_CHARS})"),
        ));
    } else if chars > MAX_CHARS {
        out.push(Finding::new(
            Rule::DescTooLong,
            subject,
            "description",
            format!("the description has {chars} characters (more than {MAX_CHARS})"),
        ));
    }
    let said = words(&def.description);
    if !said.is_empty() && said.is_subset(&words(&def.name)) {
        out.push(Finding::new(
            Rule::DescRepeatsName,
            subject,
            "description",
            format!(
                "the description \"{}\" only repeats the name",
                super::excerpt(def.description.trim())
            ),
        ));
    }
    let root = &def.parameters;
    for node in &walk.nodes {
        let (Some(name), Some(obj)) = (node.property, node.schema.as_object()) else {
            continue;
        };
        let at = format!("parameters#{}", node.pointer);
        let description = own_or_ref(root, obj, "description")
            .and_then(Value::as_str)
            .filter(|d| !d.trim().is_empty());
        let Some(description) = description else {
            out.push(Finding::new(
                Rule::ParamUndescribed,
                subject,
                at,
                format!("property \"{}\" has no description", super::excerpt(name)),
            ));
            continue;
        };
        let values = own_or_ref(root, obj, "enum")
            .and_then(Value::as_array)
            .filter(|v| v.len() >= 2);
        if let Some(values) = values {
            let lower = description.to_lowercase();
            let named = values.iter().any(|v| {
                let shown = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                !shown.is_empty() && lower.contains(&shown.to_lowercase())
            });
            if !named {
                out.push(Finding::new(
                    Rule::EnumUnexplained,
                    subject,
                    at,
                    format!(
                        "property \"{}\" has {} enum values and its description names none",
                        super::excerpt(name),
                        values.len()
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::clean;
    use super::super::{Rule, lint_tool};
    use serde_json::json;

    fn rules_for(name: &str, description: &str) -> Vec<Rule> {
        let mut s = clean();
        s.definition.name = name.into();
        s.definition.description = description.into();
        lint_tool(&s).into_iter().map(|f| f.rule).collect()
    }

    #[test]
    fn description_length_bounds() {
        assert_eq!(rules_for("forecast", "  \n "), vec![Rule::DescMissing]);
        assert_eq!(
            rules_for("forecast", "Gets weather."),
            vec![Rule::DescTooShort]
        );
        assert_eq!(
            rules_for("forecast", &"Returns the weather. ".repeat(60)),
            vec![Rule::DescTooLong]
        );
        assert_eq!(
            rules_for("forecast", "Returns the forecast of a city."),
            vec![]
        );
    }

    #[test]
    fn a_description_that_repeats_the_name_is_found() {
        assert_eq!(
            rules_for("read_file", "Read file."),
            vec![Rule::DescTooShort, Rule::DescRepeatsName]
        );
        assert_eq!(
            rules_for("getWeatherForecasts", "This tool gets the weather forecast"),
            vec![Rule::DescRepeatsName]
        );
        assert_eq!(
            rules_for(
                "read_file",
                "Reads a UTF-8 text file and returns its content"
            ),
            vec![]
        );
    }

    #[test]
    fn undescribed_parameters_are_found_and_refs_lend_theirs() {
        let mut s = clean();
        s.definition.parameters = json!({"type": "object",
        "$defs": {"when": {"type": "string", "format": "date", "description": "A day."}},
        "properties": {
            "x": {"type": "number"},
            "y": {"type": "number", "description": "  "},
            "z": {"$ref": "#/$defs/when"},
            "nested": {"type": "object", "description": "More.", "properties": {
                "deep": {"type": "string"}
            }}
        }});
        let got: Vec<(Rule, String)> = lint_tool(&s)
            .into_iter()
            .map(|f| (f.rule, f.location))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    Rule::ParamUndescribed,
                    "parameters#/properties/nested/properties/deep".into()
                ),
                (Rule::ParamUndescribed, "parameters#/properties/x".into()),
                (Rule::ParamUndescribed, "parameters#/properties/y".into()),
            ]
        );
    }

    #[test]
    fn enum_values_must_be_explained() {
        let mut s = clean();
        s.definition.parameters = json!({"type": "object", "properties": {
            "mode": {"type": "string", "enum": ["fast", "safe"], "description": "How to run."},
            "unit": {"type": "string", "enum": ["c", "f"], "description": "c for Celsius, f for Fahrenheit."},
            "level": {"type": "integer", "enum": [1, 2, 3], "description": "1 is low, 3 high."},
            "one": {"type": "string", "enum": ["only"], "description": "Fixed."}
        }});
        let got: Vec<(Rule, String)> = lint_tool(&s)
            .into_iter()
            .map(|f| (f.rule, f.location))
            .collect();
        assert_eq!(
            got,
            vec![(Rule::EnumUnexplained, "parameters#/properties/mode".into())]
        );
    }
}
