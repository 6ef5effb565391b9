//! The structured final answer (`CycleConfig::answer_schema`): the model's last text read
//! as JSON (bare, or in one fenced block) and validated against the caller's schema with
//! the `jsonschema` crate; what is wrong goes back to the model in a bounded repair
//! prompt. The model is not trusted: what is quoted back to it is cut.

use serde_json::Value;

use crate::error::LlmError;

/// The most schema errors named in one repair prompt.
const MAX_ERRORS: usize = 5;

/// The longest problem text sent back to the model.
const MAX_PROBLEM_BYTES: usize = 1_000;

/// The answer's value when `text` meets `schema`, else what is wrong. A schema that is not
/// a valid JSON Schema is the caller's error ([`LlmError::Config`]).
pub(super) fn judge(schema: &Value, text: &str) -> Result<Result<Value, String>, LlmError> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| LlmError::Config(format!("answer_schema is not a valid JSON Schema: {e}")))?;
    let body = unfenced(text);
    let value: Value = match serde_json::from_str(body) {
        Ok(v) => v,
        Err(e) => {
            return Ok(Err(cut(&format!(
                "the answer is not JSON ({e}); it must be one JSON value and nothing else"
            ))));
        }
    };
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .take(MAX_ERRORS)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_string() } else { at };
            format!("at {at}: {e}")
        })
        .collect();
    if errors.is_empty() {
        Ok(Ok(value))
    } else {
        Ok(Err(cut(&format!(
            "the answer does not meet the schema: {}",
            errors.join("; ")
        ))))
    }
}

/// What the model is asked when its answer failed.
pub(super) fn repair_prompt(problem: &str) -> String {
    format!(
        "Your answer cannot be used: {problem}. Reply again with only the JSON value that \
         meets the required schema, no other text."
    )
}

/// The JSON inside one fenced block (```json ... ```), else the whole text, trimmed.
fn unfenced(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    // The info string (`json`) ends at the first newline.
    let Some((_, body)) = rest.split_once('\n') else {
        return t;
    };
    body.trim_end().strip_suffix("```").map_or(t, str::trim)
}

fn cut(s: &str) -> String {
    toolhost_core::tools::render::head(s, MAX_PROBLEM_BYTES).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "required": ["city", "temp_c"],
               "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}},
               "additionalProperties": false})
    }

    #[test]
    fn a_fenced_or_bare_answer_that_meets_the_schema_is_its_value() {
        for text in [
            r#"{"city": "Paris", "temp_c": 21}"#,
            "```json\n{\"city\": \"Paris\", \"temp_c\": 21}\n```",
        ] {
            assert_eq!(
                judge(&schema(), text).unwrap(),
                Ok(json!({"city": "Paris", "temp_c": 21}))
            );
        }
    }

    #[test]
    fn what_is_wrong_is_said_where_and_bounded() {
        let wrong = judge(&schema(), r#"{"city": 3, "extra": true}"#)
            .unwrap()
            .unwrap_err();
        assert!(
            wrong.contains("at /city") && wrong.contains("temp_c"),
            "{wrong}"
        );
        let prose = judge(&schema(), &"It is warm in Paris. ".repeat(500))
            .unwrap()
            .unwrap_err();
        assert!(
            prose.contains("not JSON") && prose.len() <= MAX_PROBLEM_BYTES,
            "{prose}"
        );
        assert!(matches!(
            judge(&json!({"type": 5}), "{}"),
            Err(LlmError::Config(_))
        ));
    }
}
