//! What the loop does with an invalid tool call: one naming a tool that is not offered, or
//! whose arguments are not JSON (after Rig's `InvalidToolCallAction`).
//!
//! | action | effect |
//! |---|---|
//! | `Fail` | the loop ends with [`LlmError::InvalidToolCall`](crate::LlmError::InvalidToolCall) |
//! | `Retry { feedback }` | the call's tool message is the feedback; the model tries again next turn |
//! | `Repair { tool_name }` | the call is renamed (in the history too) and runs normally |
//! | `Skip { reason }` | the call's tool message is the reason, as a synthetic result |
//! | `Stop { reason }` | the loop ends with [`LlmError::Stopped`](crate::LlmError::Stopped) |
//!
//! A `Custom` policy sees the conversation before the call ([`InvalidToolCall::history`]),
//! so a repair can follow what the person asked. Valid calls go to the call hook instead
//! (`hook.rs`).
//!
//! On `Fail` and `Stop` no call of that turn runs, and every call still gets its tool
//! message, so the history stays valid. The default policy is `Retry` with feedback that
//! names the available tools. A retry costs a turn of `max_turns`.

use std::fmt;
use std::sync::Arc;

/// What is wrong with a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidToolCallKind {
    /// No tool of this name is offered to the model (unregistered, or filtered out).
    UnknownTool,
    /// The argument text is not JSON.
    MalformedArguments {
        /// The parser's message.
        error: String,
    },
}

/// Everything a policy may look at.
#[derive(Debug, Clone)]
pub struct InvalidToolCall {
    /// The call id.
    pub call_id: String,
    /// The tool name the model used.
    pub tool_name: String,
    /// The raw argument text.
    pub raw_arguments: String,
    /// What is wrong.
    pub kind: InvalidToolCallKind,
    /// The names of the tools the model may call.
    pub available_tools: Vec<String>,
    /// The conversation before the assistant message that made the call.
    pub history: Vec<crate::types::ChatMessage>,
}

impl InvalidToolCall {
    /// Feedback for the model: what was wrong and what to do (names the available tools).
    pub fn default_feedback(&self) -> String {
        match &self.kind {
            InvalidToolCallKind::UnknownTool => format!(
                "Error: there is no tool named '{}'. The available tools are: {}. Call one of them by its exact name.",
                self.tool_name,
                if self.available_tools.is_empty() {
                    "(none)".to_string()
                } else {
                    self.available_tools.join(", ")
                }
            ),
            InvalidToolCallKind::MalformedArguments { error } => format!(
                "Error: the arguments of tool '{}' are not valid JSON ({error}). Send the arguments as one JSON object that matches the tool's parameter schema.",
                self.tool_name
            ),
        }
    }

    /// The available tool closest to the name the model used, if it is close enough to be
    /// a typo (edit distance at most 2, or a third of the name's length for long names).
    pub fn closest_tool(&self) -> Option<&str> {
        let wanted = self.tool_name.to_ascii_lowercase();
        let limit = (wanted.chars().count() / 3).max(2);
        self.available_tools
            .iter()
            .map(|t| (edit_distance(&wanted, &t.to_ascii_lowercase()), t))
            .filter(|(d, _)| *d <= limit)
            .min_by_key(|(d, _)| *d)
            .map(|(_, t)| t.as_str())
    }

    /// A one-line description of the problem.
    pub fn problem(&self) -> String {
        match &self.kind {
            InvalidToolCallKind::UnknownTool => "no tool of this name is available".into(),
            InvalidToolCallKind::MalformedArguments { error } => {
                format!("the arguments are not valid JSON: {error}")
            }
        }
    }
}

/// What to do with one invalid call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidToolCallAction {
    /// End the loop with an error.
    Fail,
    /// Tell the model what was wrong and let it try again.
    Retry {
        /// The text of the call's tool message.
        feedback: String,
    },
    /// Call this tool instead (only for unknown names; ignored for bad JSON).
    Repair {
        /// The tool to call.
        tool_name: String,
    },
    /// Do not run the call; answer it with a synthetic result.
    Skip {
        /// The text of the call's tool message.
        reason: String,
    },
    /// End the whole run.
    Stop {
        /// Why.
        reason: String,
    },
}

/// A custom decision function.
pub type InvalidToolCallHandler = dyn Fn(&InvalidToolCall) -> InvalidToolCallAction + Send + Sync;

/// The loop's invalid-call policy (see the module docs).
#[derive(Clone, Default)]
pub enum InvalidToolCallPolicy {
    /// Always fail.
    Fail,
    /// Retry with [`InvalidToolCall::default_feedback`]. The default.
    #[default]
    Retry,
    /// Repair unknown names to [`InvalidToolCall::closest_tool`]; retry with feedback when
    /// there is no close name or the arguments are bad.
    Repair,
    /// Skip with the feedback as the synthetic result.
    Skip,
    /// Stop the run.
    Stop,
    /// Decide with a function.
    Custom(Arc<InvalidToolCallHandler>),
}

impl fmt::Debug for InvalidToolCallPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InvalidToolCallPolicy::Fail => "Fail",
            InvalidToolCallPolicy::Retry => "Retry",
            InvalidToolCallPolicy::Repair => "Repair",
            InvalidToolCallPolicy::Skip => "Skip",
            InvalidToolCallPolicy::Stop => "Stop",
            InvalidToolCallPolicy::Custom(_) => "Custom(..)",
        })
    }
}

impl InvalidToolCallPolicy {
    /// A policy deciding with `f`.
    pub fn custom(
        f: impl Fn(&InvalidToolCall) -> InvalidToolCallAction + Send + Sync + 'static,
    ) -> Self {
        InvalidToolCallPolicy::Custom(Arc::new(f))
    }

    /// The action for one call. A `Repair` is only returned for an unknown name and a tool
    /// that is available; anything else becomes a `Retry` with the default feedback.
    pub fn decide(&self, call: &InvalidToolCall) -> InvalidToolCallAction {
        let retry = || InvalidToolCallAction::Retry {
            feedback: call.default_feedback(),
        };
        let action = match self {
            InvalidToolCallPolicy::Fail => InvalidToolCallAction::Fail,
            InvalidToolCallPolicy::Retry => retry(),
            InvalidToolCallPolicy::Repair => match call.closest_tool() {
                Some(t) => InvalidToolCallAction::Repair {
                    tool_name: t.to_string(),
                },
                None => retry(),
            },
            InvalidToolCallPolicy::Skip => InvalidToolCallAction::Skip {
                reason: call.default_feedback(),
            },
            InvalidToolCallPolicy::Stop => InvalidToolCallAction::Stop {
                reason: format!(
                    "invalid call of tool '{}': {}",
                    call.tool_name,
                    call.problem()
                ),
            },
            InvalidToolCallPolicy::Custom(f) => f(call),
        };
        match action {
            InvalidToolCallAction::Repair { tool_name }
                if call.kind == InvalidToolCallKind::UnknownTool
                    && call.available_tools.contains(&tool_name) =>
            {
                InvalidToolCallAction::Repair { tool_name }
            }
            InvalidToolCallAction::Repair { .. } => retry(),
            other => other,
        }
    }
}

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unknown(name: &str) -> InvalidToolCall {
        InvalidToolCall {
            call_id: "c".into(),
            tool_name: name.into(),
            raw_arguments: "{}".into(),
            kind: InvalidToolCallKind::UnknownTool,
            available_tools: vec!["search".into(), "add".into()],
            history: Vec::new(),
        }
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("serch", "search"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn repair_picks_the_closest_name_or_retries() {
        let p = InvalidToolCallPolicy::Repair;
        assert_eq!(
            p.decide(&unknown("serch")),
            InvalidToolCallAction::Repair {
                tool_name: "search".into()
            }
        );
        assert!(matches!(
            p.decide(&unknown("weather")),
            InvalidToolCallAction::Retry { .. }
        ));
    }

    #[test]
    fn default_feedback_names_the_available_tools() {
        let InvalidToolCallAction::Retry { feedback } =
            InvalidToolCallPolicy::default().decide(&unknown("nope"))
        else {
            panic!("the default is Retry");
        };
        assert!(feedback.contains("'nope'") && feedback.contains("search, add"));
    }

    #[test]
    fn a_custom_repair_to_an_unavailable_tool_becomes_a_retry() {
        let p = InvalidToolCallPolicy::custom(|_| InvalidToolCallAction::Repair {
            tool_name: "rm_rf".into(),
        });
        assert!(matches!(
            p.decide(&unknown("x")),
            InvalidToolCallAction::Retry { .. }
        ));
    }
}
