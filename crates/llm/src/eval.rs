//! Tool-selection regression cases: a user prompt, the tool the model should call first, and
//! constraints on that call's arguments, replayed through the real loop against a model
//! (`docs/llm.md`, "Tool-selection evals"; `toolhost eval` runs a file of them).
//!
//! A tool's description is the model's only guide to choosing it, so a description edit
//! can silently send the model elsewhere. Running the cases after every description change
//! shows that at once: a case fails when the model's first tool call is another tool, or
//! breaks an argument constraint, or when the model calls no tool at all.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_core::tools::ToolRegistry;

use crate::cycle::{CycleConfig, LlmCycle};
use crate::provider::ChatProvider;
use crate::types::ChatMessage;

/// A file of cases.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalFile {
    /// The cases, in order (`[[case]]` tables in TOML).
    #[serde(default, rename = "case")]
    pub cases: Vec<EvalCase>,
}

/// One case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalCase {
    /// A short name, shown in the report.
    pub name: String,
    /// The user prompt.
    pub prompt: String,
    /// The tool the model must call first; `None` means it must call no tool.
    #[serde(default)]
    pub expect_tool: Option<String>,
    /// Constraints on the arguments of that call, by argument name (or JSON pointer when
    /// the key starts with `/`).
    #[serde(default)]
    pub args: BTreeMap<String, ArgConstraint>,
    /// A system prompt for this case.
    #[serde(default)]
    pub system: Option<String>,
}

/// A constraint on one argument: a rule table, or else a plain value it must equal.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ArgConstraint {
    /// `{ equals = .., contains = "..", one_of = [..], present = true }`; every given
    /// field must hold.
    Rule(ArgRule),
    /// The argument must equal this value.
    Equals(Value),
}

/// The fields of a rule constraint.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgRule {
    /// Must equal this value.
    #[serde(default)]
    pub equals: Option<Value>,
    /// Must be a string containing this text.
    #[serde(default)]
    pub contains: Option<String>,
    /// Must equal one of these values.
    #[serde(default)]
    pub one_of: Option<Vec<Value>>,
    /// Must be present (`true`) or absent (`false`).
    #[serde(default)]
    pub present: Option<bool>,
}

/// What a case did.
#[derive(Debug, Clone, Serialize)]
pub struct CaseOutcome {
    /// The case name.
    pub name: String,
    /// Whether every expectation held.
    pub passed: bool,
    /// Every tool call the model made, in order: name and arguments.
    pub calls: Vec<(String, Value)>,
    /// What did not hold (empty when passed).
    pub problems: Vec<String>,
    /// The loop's error, if it failed (the case is judged on the calls made before).
    pub error: Option<String>,
}

/// Runs one case through a fresh [`LlmCycle`] with `config` (the case's system prompt, if
/// any, replaces the config's). The loop runs for real: the tools the model calls run, with
/// the registry's permission gate.
pub async fn run_case(
    provider: Arc<dyn ChatProvider>,
    registry: &ToolRegistry,
    case: &EvalCase,
    config: &CycleConfig,
) -> CaseOutcome {
    let mut config = config.clone();
    if case.system.is_some() {
        config.system_prompt = case.system.clone();
    }
    let mut cycle = LlmCycle::with_provider(provider, config);
    let error = cycle
        .submit_with_tools(case.prompt.clone(), registry)
        .await
        .err()
        .map(|e| e.to_string());
    let calls: Vec<(String, Value)> = cycle
        .messages()
        .iter()
        .filter_map(ChatMessage::as_assistant)
        .flat_map(|a| a.tool_calls.iter())
        .map(|c| {
            let args = serde_json::from_str(&c.function.arguments)
                .unwrap_or_else(|_| Value::String(c.function.arguments.clone()));
            (c.function.name.clone(), args)
        })
        .collect();
    let mut problems = judge(case, &calls);
    if problems.is_empty()
        && let Some(refused) = first_call_refused(cycle.messages())
    {
        problems.push(refused);
    }
    CaseOutcome {
        name: case.name.clone(),
        passed: problems.is_empty(),
        calls,
        problems,
        error,
    }
}

/// Why the registry refused the model's first call, when it did so for its shape: the
/// tool is not offered (renamed, not loaded) or the arguments break its schema. A case
/// whose call had the right name and the right values but could never run is a
/// regression too: the tool changed under the case. (A denial or a tool's own error is
/// not: the case is about the model's choice.)
fn first_call_refused(messages: &[ChatMessage]) -> Option<String> {
    let call = messages
        .iter()
        .filter_map(ChatMessage::as_assistant)
        .flat_map(|a| a.tool_calls.iter())
        .next()?;
    let answer = messages.iter().find_map(|m| match m {
        ChatMessage::Tool {
            tool_call_id,
            content,
        } if *tool_call_id == call.id => Some(content.as_str()),
        _ => None,
    })?;
    // The registry's `InvalidArguments` and `NotFound`, and the loop's own answer to a
    // call of a tool it does not offer (policy.rs).
    let shape = [
        "invalid arguments for tool",
        "is not registered",
        "there is no tool named",
    ];
    (answer.starts_with("Error:") && shape.iter().any(|s| answer.contains(s))).then(|| {
        let text: String = answer.chars().take(300).collect();
        format!("the first call could not run: {text}")
    })
}

/// What does not hold of a case, given the calls the model made.
pub fn judge(case: &EvalCase, calls: &[(String, Value)]) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(expected) = &case.expect_tool else {
        if let Some((name, _)) = calls.first() {
            problems.push(format!("expected no tool call, the model called '{name}'"));
        }
        return problems;
    };
    let Some((name, args)) = calls.first() else {
        problems.push(format!(
            "expected a call of '{expected}', the model called no tool"
        ));
        return problems;
    };
    if name != expected {
        problems.push(format!(
            "expected a call of '{expected}', the model called '{name}' first"
        ));
        return problems;
    }
    for (key, constraint) in &case.args {
        let value = if key.starts_with('/') {
            args.pointer(key)
        } else {
            args.get(key)
        };
        if let Some(p) = check(key, value, constraint) {
            problems.push(p);
        }
    }
    problems
}

fn check(key: &str, value: Option<&Value>, c: &ArgConstraint) -> Option<String> {
    let shown = value.map_or_else(|| "absent".to_string(), Value::to_string);
    match c {
        ArgConstraint::Equals(want) => (value != Some(want))
            .then(|| format!("argument '{key}' should be {want}, it is {shown}")),
        ArgConstraint::Rule(r) => {
            if let Some(p) = r.present
                && value.is_some() != p
            {
                return Some(format!(
                    "argument '{key}' should be {}, it is {shown}",
                    if p { "present" } else { "absent" }
                ));
            }
            if let Some(want) = &r.equals
                && value != Some(want)
            {
                return Some(format!("argument '{key}' should be {want}, it is {shown}"));
            }
            if let Some(text) = &r.contains
                && !value
                    .and_then(Value::as_str)
                    .is_some_and(|s| s.contains(text.as_str()))
            {
                return Some(format!(
                    "argument '{key}' should contain {text:?}, it is {shown}"
                ));
            }
            if let Some(set) = &r.one_of
                && !value.is_some_and(|v| set.contains(v))
            {
                return Some(format!(
                    "argument '{key}' should be one of {}, it is {shown}",
                    Value::Array(set.clone())
                ));
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn case(args: Value) -> EvalCase {
        EvalCase {
            name: "c".into(),
            prompt: "p".into(),
            expect_tool: Some("add".into()),
            args: serde_json::from_value(args).unwrap_or_default(),
            system: None,
        }
    }

    #[test]
    fn constraints_are_judged() {
        let c = case(json!({"x": 2, "/q/city": {"contains": "Par"}, "z": {"present": false}}));
        let good = [("add".to_string(), json!({"x": 2, "q": {"city": "Paris"}}))];
        assert!(judge(&c, &good).is_empty(), "{:?}", judge(&c, &good));
        let bad = [(
            "add".to_string(),
            json!({"x": 3, "q": {"city": "Rome"}, "z": 1}),
        )];
        assert_eq!(judge(&c, &bad).len(), 3, "{:?}", judge(&c, &bad));
        let other = [("mul".to_string(), json!({}))];
        assert!(judge(&c, &other)[0].contains("called 'mul'"));
        assert!(judge(&c, &[])[0].contains("no tool"));
    }
}
