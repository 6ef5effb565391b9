//! [`CycleConfig`]: the settings of an [`LlmCycle`](super::LlmCycle), each with its
//! default, and [`OnDenied`].

use crate::policy::InvalidToolCallPolicy;
use crate::tokens::TokenCounter;
use crate::types::ToolChoice;
use toolhost_core::tools::DEFAULT_MAX_TOOL_RESULT_BYTES;

use super::ToolSelection;

/// Settings of an [`LlmCycle`]. Every limit has a default; change it with struct update
/// syntax: `CycleConfig { max_turns: Some(4), ..Default::default() }`.
#[derive(Debug, Clone)]
pub struct CycleConfig {
    /// The most model requests one submit may make (`None`: no limit). Default `Some(10)`.
    pub max_turns: Option<usize>,
    /// The deadline of one turn's tool calls, in seconds (they run in parallel, so this is
    /// each call's budget). It travels to the registry in the turn's `ToolContext`; the
    /// registry stops a call at the earlier of this and the tool's own timeout. Default 60.
    pub tool_timeout_secs: u64,
    /// The most bytes of one tool result given to the model (head and tail kept, a marker
    /// between), applied by the registry (the smaller of this and its own limit).
    /// Default 20 000.
    pub max_tool_result_bytes: usize,
    /// A system prompt, put first in the history. Default none.
    pub system_prompt: Option<String>,
    /// Offer only tools carrying at least one of these tags (empty: every tool). A tool
    /// outside the filter counts as unknown if the model calls it.
    pub tool_tags: Vec<String>,
    /// Offer only these tools, by name (`None`: every tool the tags allow). Like the tags,
    /// a tool outside counts as unknown if called, and a script of code mode cannot reach
    /// it. Change it between turns with [`LlmCycle::config_mut`].
    pub active_tools: Option<Vec<String>>,
    /// Whether, and which, tool the model must call: applied to the first request of each
    /// submit; the requests after it are `Auto` so the model can answer (`None` holds for
    /// every request). Default `Auto`.
    pub tool_choice: ToolChoice,
    /// Whether the model may call several tools in one turn (`None`: the provider's
    /// default, which allows it). Default `None`.
    pub parallel_tool_calls: Option<bool>,
    /// A JSON Schema the final answer must meet (`None`: free text). The answer is read
    /// as JSON (a fenced block too) and validated; the value is
    /// [`ChatResponse::structured`](crate::ChatResponse). An answer that fails goes back
    /// to the model with what is wrong, at most `max_answer_repairs` times, then
    /// [`LlmError::InvalidAnswer`](crate::LlmError). OpenAI also gets it as
    /// `response_format`. Default `None`.
    pub answer_schema: Option<serde_json::Value>,
    /// How many times a final answer that breaks `answer_schema` is sent back. Default 2.
    pub max_answer_repairs: usize,
    /// The caller's word on every valid call before it runs, with the history: run,
    /// rewrite the arguments, rename, skip or stop ([`CallHook`](crate::CallHook)).
    /// Default none.
    pub call_hook: Option<crate::hook::CallHook>,
    /// Which of those tools each turn offers: all of them (the default), or those a
    /// search of the conversation ranks first ([`ToolSelection`]).
    pub tool_selection: ToolSelection,
    /// What to do with invalid tool calls. Default `Retry` with feedback.
    pub invalid_tool_calls: InvalidToolCallPolicy,
    /// Sampling temperature. Default: the server's.
    pub temperature: Option<f32>,
    /// Output token limit per request. Default: the server's (the Anthropic provider,
    /// whose API requires one, sends 4096).
    pub max_tokens: Option<u32>,
    /// What a permission denial does. Default [`OnDenied::Stop`].
    pub on_denied: OnDenied,
    /// The most tokens a request's history and tool definitions may take; past it the
    /// history is compacted before the request (`None`: never compact). Default `None`.
    pub token_budget: Option<usize>,
    /// How many of the most recent turns (an assistant message with its tool results, or
    /// one other message) compaction keeps whole. Default 4.
    pub keep_recent_turns: usize,
    /// How tokens are counted for the budget (`None`: from the provider's model name,
    /// see [`TokenCounter::for_model`]). Default `None`.
    pub token_counter: Option<TokenCounter>,
}

/// What the loop does when the permission gate refuses a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnDenied {
    /// End the loop with [`LlmError::ToolFailed`] (the model never sees the denial).
    #[default]
    Stop,
    /// Answer the call with `denied: REASON` and let the model go on.
    Continue,
}

impl Default for CycleConfig {
    fn default() -> Self {
        Self {
            max_turns: Some(10),
            tool_timeout_secs: 60,
            max_tool_result_bytes: DEFAULT_MAX_TOOL_RESULT_BYTES,
            system_prompt: None,
            tool_tags: Vec::new(),
            active_tools: None,
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: None,
            answer_schema: None,
            max_answer_repairs: 2,
            call_hook: None,
            tool_selection: ToolSelection::All,
            invalid_tool_calls: InvalidToolCallPolicy::default(),
            temperature: None,
            max_tokens: None,
            on_denied: OnDenied::Stop,
            token_budget: None,
            keep_recent_turns: 4,
            token_counter: None,
        }
    }
}
