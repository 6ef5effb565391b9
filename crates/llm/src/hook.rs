//! The call hook: the caller's word on every valid tool call before it runs, with the
//! conversation so far (after Rig's tool-call hook). Invalid calls (an unknown name,
//! arguments that are not JSON) go to the invalid-call policy instead (`policy.rs`).
//!
//! | decision | effect |
//! |---|---|
//! | `Run` | the call runs as the model made it |
//! | `Rewrite { arguments }` | it runs with these arguments (the history shows them) |
//! | `Rename { tool_name }` | it runs as a call of this offered tool (the history shows it); a name that is not offered answers the call with an error instead |
//! | `Skip { reason }` | it does not run; `reason` is its tool message |
//! | `Stop { reason }` | no call of the turn runs and the loop ends with [`LlmError::Stopped`](crate::LlmError::Stopped) |

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::types::ChatMessage;

/// A valid call as the hook sees it.
#[derive(Debug, Clone, Copy)]
pub struct CallView<'a> {
    /// The call id.
    pub call_id: &'a str,
    /// The tool the model called.
    pub tool_name: &'a str,
    /// Its arguments (a JSON value).
    pub arguments: &'a Value,
    /// The conversation before the assistant message that made the call.
    pub history: &'a [ChatMessage],
    /// The tools the model may call this turn.
    pub available_tools: &'a [String],
}

/// What the hook decides for one call (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub enum CallDecision {
    /// Run it as it is.
    Run,
    /// Run it with these arguments.
    Rewrite {
        /// The arguments to run with.
        arguments: Value,
    },
    /// Run it as a call of this tool.
    Rename {
        /// An offered tool's name.
        tool_name: String,
    },
    /// Do not run it; answer it with `reason`.
    Skip {
        /// The call's tool message.
        reason: String,
    },
    /// End the run.
    Stop {
        /// Why.
        reason: String,
    },
}

/// The caller's call hook (`CycleConfig::call_hook`).
#[derive(Clone)]
pub struct CallHook(Arc<dyn Fn(&CallView<'_>) -> CallDecision + Send + Sync>);

impl CallHook {
    /// A hook deciding with `f`.
    pub fn new(f: impl Fn(&CallView<'_>) -> CallDecision + Send + Sync + 'static) -> Self {
        CallHook(Arc::new(f))
    }

    /// The decision for `call`.
    pub fn decide(&self, call: &CallView<'_>) -> CallDecision {
        (self.0)(call)
    }
}

impl fmt::Debug for CallHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CallHook(..)")
    }
}
