//! Filling a form elicitation from typed answers: [`Form::from_schema`] reads the fields
//! a wrapped server's `requestedSchema` asks for (MCP's restricted schema: a flat object
//! of strings, numbers, integers, booleans, single- and multi-select enums), and
//! [`Field::answer`] turns one typed line into a value checked against its field, with
//! the field's default for an empty line (SEP-1034). The CLI asks these questions on its
//! terminal when no client of `serve` is behind a call.
//!
//! The schema comes from an MCP server, which is not trusted: the number of fields, the
//! options and the texts shown are bounded, and a default that breaks its own field is
//! ignored rather than sent back.

use serde_json::{Map, Value};
use thiserror::Error;

/// The most fields a form may ask for.
pub const MAX_FIELDS: usize = 64;
/// The most options of one enum shown and accepted.
pub const MAX_OPTIONS: usize = 100;
/// The longest answer accepted for one field, in bytes.
pub const MAX_ANSWER: usize = 64 * 1024;
/// The longest label or option text kept (bytes).
const MAX_LABEL: usize = 200;

/// A schema that cannot be asked as a form.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FormError {
    /// Not an object schema with `properties`.
    #[error("the requested schema is not an object with properties")]
    NotAnObject,
    /// More than [`MAX_FIELDS`] fields.
    #[error("the form asks for {0} fields; at most {MAX_FIELDS} are asked")]
    TooManyFields(usize),
    /// A field of a type forms do not have.
    #[error("field {field}: {why}")]
    BadField {
        /// The field (cut and escaped).
        field: String,
        /// What is wrong.
        why: String,
    },
}

/// What kind of value a field takes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FieldKind {
    /// Free text, with optional length bounds and `format` (`email`, `uri`, `date`,
    /// `date-time`: shown as a hint, checked loosely).
    Text {
        /// `minLength`.
        min: Option<u64>,
        /// `maxLength`.
        max: Option<u64>,
        /// `format`.
        format: Option<String>,
    },
    /// A whole number within the bounds.
    Integer {
        /// `minimum`.
        min: Option<f64>,
        /// `maximum`.
        max: Option<f64>,
    },
    /// A number within the bounds.
    Number {
        /// `minimum`.
        min: Option<f64>,
        /// `maximum`.
        max: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One of these values (`enum` or `oneOf` of `const`s), each with the label shown.
    Choice(Vec<(String, String)>),
    /// Any of these values (an array of an `enum` or `anyOf` of `const`s), with bounds on
    /// how many.
    MultiChoice {
        /// The values and their labels.
        options: Vec<(String, String)>,
        /// `minItems`.
        min: Option<u64>,
        /// `maxItems`.
        max: Option<u64>,
    },
}

/// One question of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property name.
    pub name: String,
    /// What to show: the `title`, and the `description` when there is one (cut).
    pub label: String,
    /// The kind of value.
    pub kind: FieldKind,
    /// The default (only one its own field accepts).
    pub default: Option<Value>,
    /// Whether the schema lists it in `required`.
    pub required: bool,
}

/// The fields of a form, in the schema's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// The questions.
    pub fields: Vec<Field>,
}

/// `text` from the server bounded to [`MAX_LABEL`] bytes, control characters made spaces.
fn cut(text: &str) -> String {
    let kept = toolhost_core::tools::render::head(text, MAX_LABEL);
    let mut s: String = kept
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if kept.len() < text.len() {
        s.push('…');
    }
    s
}

/// `(value, label)` pairs of an `enum` (labels from `enumNames` when given) or of a
/// list of `{"const": .., "title": ..}`.
fn options(schema: &Map<String, Value>, consts: Option<&Value>) -> Option<Vec<(String, String)>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .take(MAX_OPTIONS)
                .enumerate()
                .filter_map(|(i, v)| {
                    let v = v.as_str()?;
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .unwrap_or(v);
                    Some((v.to_string(), cut(label)))
                })
                .collect(),
        );
    }
    let list = consts?.as_array()?;
    Some(
        list.iter()
            .take(MAX_OPTIONS)
            .filter_map(|o| {
                let v = o.get("const")?.as_str()?;
                let label = o.get("title").and_then(Value::as_str).unwrap_or(v);
                Some((v.to_string(), cut(label)))
            })
            .collect(),
    )
}

impl Form {
    /// The form a `requestedSchema` asks for.
    pub fn from_schema(schema: &Value) -> Result<Form, FormError> {
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .ok_or(FormError::NotAnObject)?;
        if props.len() > MAX_FIELDS {
            return Err(FormError::TooManyFields(props.len()));
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields = Vec::with_capacity(props.len());
        for (name, prop) in props {
            let bad = |why: &str| FormError::BadField {
                field: cut(name),
                why: why.to_string(),
            };
            let p = prop.as_object().ok_or_else(|| bad("not a schema"))?;
            let num = |k: &str| p.get(k).and_then(Value::as_f64);
            let count = |k: &str| p.get(k).and_then(Value::as_u64);
            let kind = match p.get("type").and_then(Value::as_str) {
                Some("string") => match options(p, p.get("oneOf")) {
                    Some(o) if !o.is_empty() => FieldKind::Choice(o),
                    Some(_) => return Err(bad("an enum without string options")),
                    None => FieldKind::Text {
                        min: count("minLength"),
                        max: count("maxLength"),
                        format: p.get("format").and_then(Value::as_str).map(cut),
                    },
                },
                Some("integer") => FieldKind::Integer {
                    min: num("minimum"),
                    max: num("maximum"),
                },
                Some("number") => FieldKind::Number {
                    min: num("minimum"),
                    max: num("maximum"),
                },
                Some("boolean") => FieldKind::Boolean,
                Some("array") => {
                    let items = p
                        .get("items")
                        .and_then(Value::as_object)
                        .ok_or_else(|| bad("an array without items"))?;
                    match options(items, items.get("anyOf").or_else(|| items.get("oneOf"))) {
                        Some(o) if !o.is_empty() => FieldKind::MultiChoice {
                            options: o,
                            min: count("minItems"),
                            max: count("maxItems"),
                        },
                        _ => return Err(bad("an array that is not a multi-select enum")),
                    }
                }
                _ => return Err(bad("not a string, number, integer, boolean or enum")),
            };
            let title = p.get("title").and_then(Value::as_str);
            let description = p.get("description").and_then(Value::as_str);
            let label = match (title, description) {
                (Some(t), Some(d)) => cut(&format!("{t}: {d}")),
                (Some(t), None) => cut(t),
                (None, Some(d)) => cut(d),
                (None, None) => String::new(),
            };
            let mut field = Field {
                // Sent back as the server gave it; whoever shows it escapes it.
                name: name.clone(),
                label,
                kind,
                default: None,
                required: required.contains(&name.as_str()),
            };
            // A default its own field refuses is the server's mistake; it is not sent back.
            field.default = p.get("default").filter(|d| field.check(d).is_ok()).cloned();
            fields.push(field);
        }
        Ok(Form { fields })
    }

    /// The content of an accepted form where every field takes its default: what a
    /// client that applies defaults sends for a form nobody changed.
    pub fn defaults(&self) -> Map<String, Value> {
        self.fields
            .iter()
            .filter_map(|f| Some((f.name.clone(), f.default.clone()?)))
            .collect()
    }
}

impl Field {
    /// A short description of what the field takes, for the prompt.
    pub fn hint(&self) -> String {
        let range = |min: Option<f64>, max: Option<f64>| match (min, max) {
            (Some(a), Some(b)) => format!(", {a}..{b}"),
            (Some(a), None) => format!(", at least {a}"),
            (None, Some(b)) => format!(", at most {b}"),
            (None, None) => String::new(),
        };
        let list = |o: &[(String, String)]| {
            o.iter()
                .map(|(v, l)| {
                    if v == l {
                        v.clone()
                    } else {
                        format!("{v} ({l})")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &self.kind {
            FieldKind::Text { format, .. } => match format {
                Some(f) => format!("text, {f}"),
                None => "text".into(),
            },
            FieldKind::Integer { min, max } => format!("whole number{}", range(*min, *max)),
            FieldKind::Number { min, max } => format!("number{}", range(*min, *max)),
            FieldKind::Boolean => "yes/no".into(),
            FieldKind::Choice(o) => format!("one of: {}", list(o)),
            FieldKind::MultiChoice { options, .. } => {
                format!("comma-separated, any of: {}", list(options))
            }
        }
    }

    /// The value of one typed answer: `Ok(None)` for an empty line on a field with
    /// neither a default nor `required`; the default for an empty line when there is
    /// one; otherwise the parsed value, or why it does not fit.
    pub fn answer(&self, line: &str) -> Result<Option<Value>, String> {
        if line.len() > MAX_ANSWER {
            return Err(format!("longer than {MAX_ANSWER} bytes"));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        let text = line.trim();
        if text.is_empty() {
            return match (&self.default, self.required) {
                (Some(d), _) => Ok(Some(d.clone())),
                (None, true) => Err("an answer is required".into()),
                (None, false) => Ok(None),
            };
        }
        let value = match &self.kind {
            FieldKind::Text { .. } => Value::String(line.to_string()),
            FieldKind::Integer { .. } => Value::from(
                text.parse::<i64>()
                    .map_err(|_| format!("{text:?} is not a whole number"))?,
            ),
            FieldKind::Number { .. } => {
                let n = text
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .ok_or_else(|| format!("{text:?} is not a number"))?;
                Value::Number(n)
            }
            FieldKind::Boolean => match text.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" | "1" => Value::Bool(true),
                "n" | "no" | "false" | "0" => Value::Bool(false),
                _ => return Err(format!("{text:?}: answer yes or no")),
            },
            FieldKind::Choice(_) => Value::String(text.to_string()),
            FieldKind::MultiChoice { .. } => Value::Array(
                text.split(',')
                    .map(|s| Value::String(s.trim().to_string()))
                    .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
                    .collect(),
            ),
        };
        self.check(&value)?;
        Ok(Some(value))
    }

    /// Whether `value` fits the field.
    fn check(&self, value: &Value) -> Result<(), String> {
        let within = |n: f64, min: &Option<f64>, max: &Option<f64>| {
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                Err(format!("{n} is out of range"))
            } else {
                Ok(())
            }
        };
        let one_of = |v: &str, o: &[(String, String)]| {
            if o.iter().any(|(x, _)| x == v) {
                Ok(())
            } else {
                Err(format!("{:?} is not one of the options", cut(v)))
            }
        };
        match (&self.kind, value) {
            (FieldKind::Text { min, max, .. }, Value::String(s)) => {
                let n = s.chars().count() as u64;
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    return Err(format!("{n} characters is not an allowed length"));
                }
                Ok(())
            }
            (FieldKind::Integer { min, max }, Value::Number(n)) if n.is_i64() || n.is_u64() => {
                within(n.as_f64().unwrap_or(f64::NAN), min, max)
            }
            (FieldKind::Number { min, max }, Value::Number(n)) => {
                within(n.as_f64().unwrap_or(f64::NAN), min, max)
            }
            (FieldKind::Boolean, Value::Bool(_)) => Ok(()),
            (FieldKind::Choice(o), Value::String(s)) => one_of(s, o),
            (FieldKind::MultiChoice { options, min, max }, Value::Array(items)) => {
                for item in items {
                    one_of(item.as_str().unwrap_or_default(), options)?;
                }
                let n = items.len() as u64;
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    return Err(format!("{n} choices is not an allowed number"));
                }
                Ok(())
            }
            _ => Err("the value has the wrong type".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn defaults_schema() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "default": 30, "minimum": 0, "maximum": 150},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
            "tags": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b"}]}},
            "email": {"type": "string", "format": "email"}
        }, "required": ["email"]})
    }

    #[test]
    fn empty_answers_take_the_defaults() {
        let form = Form::from_schema(&defaults_schema()).unwrap();
        let d = form.defaults();
        assert_eq!(d["name"], "John Doe");
        assert_eq!(d["age"], 30);
        assert_eq!(d["score"], 95.5);
        assert_eq!(d["status"], "active");
        assert_eq!(d["verified"], true);
        assert!(!d.contains_key("tags"));
        let age = form.fields.iter().find(|f| f.name == "age").unwrap();
        assert_eq!(age.answer("").unwrap(), Some(json!(30)));
        assert_eq!(age.answer(" 42 \n").unwrap(), Some(json!(42)));
        assert!(age.answer("200").is_err());
        assert!(age.answer("4.5").is_err());
        let email = form.fields.iter().find(|f| f.name == "email").unwrap();
        assert!(email.answer("").is_err(), "required without default");
        let tags = form.fields.iter().find(|f| f.name == "tags").unwrap();
        assert_eq!(tags.answer("a, b").unwrap(), Some(json!(["a", "b"])));
        assert!(tags.answer("a, c").is_err());
        assert_eq!(tags.answer("").unwrap(), None);
    }

    #[test]
    fn hostile_schemas_are_bounded_and_bad_defaults_dropped() {
        let many: Map<String, Value> = (0..1000)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        assert_eq!(
            Form::from_schema(&json!({"type": "object", "properties": many})),
            Err(FormError::TooManyFields(1000))
        );
        let form = Form::from_schema(&json!({"type": "object", "properties": {
            "n": {"type": "integer", "default": "not a number", "maximum": 5},
            "e": {"type": "string", "enum": ["x"], "default": "y"},
            "\u{1b}[2Jlabel": {"type": "string", "title": "\u{1b}]0;pwned\u{7}".repeat(100)}
        }}))
        .unwrap();
        assert!(form.fields.iter().all(|f| f.default.is_none()));
        let f = &form.fields[2];
        assert!(f.label.chars().count() <= MAX_LABEL + 1);
        assert!(!f.label.contains('\u{1b}'));
        assert!(
            Form::from_schema(&json!({"type": "object", "properties": {
                "x": {"type": "object"}
            }}))
            .is_err()
        );
        assert!(Form::from_schema(&json!("nope")).is_err());
    }
}
