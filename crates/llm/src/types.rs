//! OpenAI Chat Completions types: messages (system, user, assistant with `tool_calls`,
//! tool results), requests, responses, finish reasons, usage and streaming deltas.
//!
//! The wire format is the one OpenAI, vLLM, Ollama, llama.cpp and LM Studio share. Fields
//! this crate does not need are ignored when reading, so extra fields a server adds never
//! break parsing.

use serde::{Deserialize, Deserializer, Serialize};
use toolhost_core::tools::ToolDefinition;

/// One message of a conversation, tagged by `role` as the Chat Completions API expects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage {
    /// Instructions for the model.
    System {
        /// The text.
        content: String,
    },
    /// What the person said.
    User {
        /// The text.
        content: String,
    },
    /// What the model said: text, tool calls, or both.
    Assistant(AssistantMessage),
    /// The result of one tool call, answering the assistant's call with the same id.
    Tool {
        /// The id of the assistant's tool call this answers.
        tool_call_id: String,
        /// The result (or error) text for the model.
        content: String,
    },
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage::User {
            content: content.into(),
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage::Assistant(AssistantMessage {
            content: Some(content.into()),
            tool_calls: Vec::new(),
        })
    }

    /// A tool result message.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
        }
    }

    /// The role: `system`, `user`, `assistant` or `tool`.
    pub fn role(&self) -> &'static str {
        match self {
            ChatMessage::System { .. } => "system",
            ChatMessage::User { .. } => "user",
            ChatMessage::Assistant(_) => "assistant",
            ChatMessage::Tool { .. } => "tool",
        }
    }

    /// The text content, if any.
    pub fn text(&self) -> Option<&str> {
        match self {
            ChatMessage::System { content }
            | ChatMessage::User { content }
            | ChatMessage::Tool { content, .. } => Some(content),
            ChatMessage::Assistant(a) => a.content.as_deref(),
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            ChatMessage::Assistant(a) => Some(a),
            _ => None,
        }
    }
}

/// The assistant's part of a turn.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// The text, if the model wrote any (`null` when it only called tools).
    #[serde(default)]
    pub content: Option<String>,
    /// The tool calls the model asked for, in order.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub tool_calls: Vec<AssistantToolCall>,
}

impl AssistantMessage {
    /// Whether the model asked for at least one tool call.
    pub fn has_tool_calls(&self) -> bool {
        !self.tool_calls.is_empty()
    }
}

/// One tool call as the model wrote it. `arguments` is the raw JSON text: models do send
/// text that is not JSON, and the loop's invalid-call policy decides what happens then.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantToolCall {
    /// The call id (`call_...`), echoed back in the tool message.
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// The function name and arguments.
    pub function: FunctionCall,
}

impl AssistantToolCall {
    /// A function tool call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            kind: function_kind(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }
}

fn function_kind() -> String {
    "function".into()
}

/// The function part of an [`AssistantToolCall`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool name.
    #[serde(default)]
    pub name: String,
    /// The arguments as raw JSON text.
    #[serde(default)]
    pub arguments: String,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural stop, or a stop sequence.
    Stop,
    /// The token limit cut the answer.
    Length,
    /// The model wants tool results.
    ToolCalls,
    /// The provider's content filter cut the answer.
    ContentFilter,
    /// The legacy `function_call` reason (treated like `ToolCalls`).
    FunctionCall,
    /// Anything else a server may send.
    #[serde(other)]
    Other,
}

/// Token usage of one request, when the server reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Both.
    #[serde(default)]
    pub total_tokens: u64,
    /// Input tokens read from the provider's prompt cache (a part of `prompt_tokens`,
    /// billed lower): OpenAI `prompt_tokens_details.cached_tokens`, Anthropic
    /// `cache_read_input_tokens`.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Input tokens written to the provider's prompt cache (Anthropic
    /// `cache_creation_input_tokens`; a part of `prompt_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Adds another request's usage to this one (saturating).
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(other.cached_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
    }
}

/// A tool's description with its input examples appended, for providers that take no
/// examples field (the examples are the registry's, checked against the schema).
pub(crate) fn with_examples(description: &str, examples: &[serde_json::Value]) -> String {
    if examples.is_empty() {
        return description.to_string();
    }
    let shown: Vec<String> = examples.iter().map(serde_json::Value::to_string).collect();
    format!("{description}\n\nExample arguments: {}", shown.join(" | "))
}

/// Whether, and which, tool the model must call in a request (the providers'
/// `tool_choice`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides (the providers' default).
    #[default]
    Auto,
    /// No tool call: the model answers in text (the tools are still described).
    None,
    /// At least one tool call (OpenAI `required`, Anthropic `any`).
    Required,
    /// A call of this tool.
    Tool(String),
}

/// The default choice, for requests that borrow one.
static AUTO: ToolChoice = ToolChoice::Auto;

/// What the loop asks the provider for. It borrows the history and the definitions, so a
/// turn costs no copy of the conversation; the provider adds its model name.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    /// The conversation so far.
    pub messages: &'a [ChatMessage],
    /// The tools the model may call (empty: none).
    pub tools: &'a [ToolDefinition],
    /// Sampling temperature, if set.
    pub temperature: Option<f32>,
    /// The output token limit, if set.
    pub max_tokens: Option<u32>,
    /// Whether and which tool the model must call (sent only with tools).
    pub tool_choice: &'a ToolChoice,
    /// Whether the model may call several tools at once (`None`: the provider's default;
    /// sent only with tools): OpenAI `parallel_tool_calls`, Anthropic
    /// `disable_parallel_tool_use`.
    pub parallel_tool_calls: Option<bool>,
    /// A JSON Schema the answer must meet, for providers that take one (OpenAI
    /// `response_format`); the loop validates the answer in any case.
    pub answer_schema: Option<&'a serde_json::Value>,
}

impl<'a> ChatRequest<'a> {
    /// A request with these messages and tools and no sampling options.
    pub fn new(messages: &'a [ChatMessage], tools: &'a [ToolDefinition]) -> Self {
        Self {
            messages,
            tools,
            temperature: None,
            max_tokens: None,
            tool_choice: &AUTO,
            parallel_tool_calls: None,
            answer_schema: None,
        }
    }
}

/// One complete model answer (blocking, or assembled from a stream).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatResponse {
    /// The assistant message.
    pub message: AssistantMessage,
    /// Why the model stopped (`None` when the server did not say).
    pub stop_reason: Option<FinishReason>,
    /// Token usage, when reported.
    pub usage: Option<Usage>,
    /// The model that answered, as the server names it.
    pub model: String,
    /// The answer as a JSON value that met [`CycleConfig::answer_schema`]
    /// (crate::CycleConfig), when the loop asked for one.
    pub structured: Option<serde_json::Value>,
}

impl ChatResponse {
    /// The text of the answer (empty when the model only called tools).
    pub fn text(&self) -> &str {
        self.message.content.as_deref().unwrap_or("")
    }
}

/// One piece of a streamed answer, as a provider parses it from the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamDelta {
    /// More assistant text.
    Text(String),
    /// A piece of a tool call. The first piece of a call carries its id and name; later
    /// pieces of the same `index` carry more of the argument text.
    ToolCall {
        /// The position of the call in the assistant message.
        index: Option<usize>,
        /// The call id (first piece).
        id: Option<String>,
        /// The function name (first piece; some servers repeat it).
        name: Option<String>,
        /// More argument text.
        arguments: String,
    },
    /// The model stopped.
    Finish(FinishReason),
    /// Usage of the whole request.
    Usage(Usage),
    /// The server's `[DONE]` marker.
    Done,
}

/// Builds a [`ChatResponse`] from [`StreamDelta`]s, joining tool-call argument pieces by
/// index.
#[derive(Debug, Default)]
pub struct ResponseAssembler {
    text: String,
    calls: Vec<AssistantToolCall>,
    index_of: Vec<(usize, usize)>,
    stop_reason: Option<FinishReason>,
    usage: Option<Usage>,
    done: bool,
}

impl ResponseAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one delta.
    pub fn push(&mut self, delta: &StreamDelta) {
        match delta {
            StreamDelta::Text(t) => self.text.push_str(t),
            StreamDelta::ToolCall {
                index,
                id,
                name,
                arguments,
            } => {
                let slot = self.slot(*index, id.as_deref());
                if let Some(call) = self.calls.get_mut(slot) {
                    if let Some(id) = id.as_deref().filter(|s| !s.is_empty()) {
                        call.id = id.to_string();
                    }
                    if let Some(name) = name.as_deref().filter(|s| !s.is_empty()) {
                        // Some servers repeat the full name on every piece; others send it
                        // in pieces. Append only new pieces.
                        if call.function.name != name {
                            if call.function.name.is_empty()
                                || !name.starts_with(&call.function.name)
                            {
                                call.function.name.push_str(name);
                            } else {
                                call.function.name = name.to_string();
                            }
                        }
                    }
                    call.function.arguments.push_str(arguments);
                }
            }
            StreamDelta::Finish(r) => self.stop_reason = Some(*r),
            StreamDelta::Usage(u) => self.usage = Some(*u),
            StreamDelta::Done => self.done = true,
        }
    }

    /// Finds (or opens) the call slot for a delta.
    fn slot(&mut self, index: Option<usize>, id: Option<&str>) -> usize {
        let id = id.filter(|s| !s.is_empty());
        match index {
            Some(i) => {
                if let Some((_, s)) = self.index_of.iter().find(|(k, _)| *k == i) {
                    return *s;
                }
                self.open(i)
            }
            // No index (some servers): a new id opens a new call; otherwise continue the
            // last one.
            None => match (id, self.calls.last()) {
                (Some(id), Some(last)) if last.id != id => self.open(self.calls.len()),
                (_, Some(_)) => self.calls.len() - 1,
                (_, None) => self.open(0),
            },
        }
    }

    fn open(&mut self, index: usize) -> usize {
        self.calls.push(AssistantToolCall::new("", "", ""));
        let slot = self.calls.len() - 1;
        self.index_of.push((index, slot));
        slot
    }

    /// Whether a finish reason or the `[DONE]` marker arrived.
    pub fn is_complete(&self) -> bool {
        self.done || self.stop_reason.is_some()
    }

    /// The assembled answer. Calls without an id get a generated one, so every call can
    /// be answered by a tool message.
    pub fn finish(self, model: &str) -> ChatResponse {
        let mut calls = self.calls;
        for (i, c) in calls.iter_mut().enumerate() {
            if c.id.is_empty() {
                c.id = format!("call_{i}");
            }
        }
        ChatResponse {
            message: AssistantMessage {
                content: if self.text.is_empty() {
                    None
                } else {
                    Some(self.text)
                },
                tool_calls: calls,
            },
            stop_reason: self.stop_reason,
            usage: self.usage,
            model: model.to_string(),
            structured: None,
        }
    }
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_serialise_in_the_openai_shape() -> Result<(), serde_json::Error> {
        let m = ChatMessage::Assistant(AssistantMessage {
            content: None,
            tool_calls: vec![AssistantToolCall::new("c1", "add", r#"{"x":1}"#)],
        });
        let v = serde_json::to_value(&m)?;
        assert_eq!(
            v,
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"x\":1}"}}
            ]})
        );
        let t = serde_json::to_value(ChatMessage::tool("c1", "3"))?;
        assert_eq!(
            t,
            serde_json::json!({"role": "tool", "tool_call_id": "c1", "content": "3"})
        );
        let back: ChatMessage = serde_json::from_value(v)?;
        assert_eq!(back, m);
        Ok(())
    }

    #[test]
    fn null_tool_calls_and_unknown_finish_reasons_parse() -> Result<(), serde_json::Error> {
        let a: AssistantMessage =
            serde_json::from_str(r#"{"role":"assistant","content":"hi","tool_calls":null}"#)?;
        assert!(a.tool_calls.is_empty());
        let r: FinishReason = serde_json::from_str(r#""eos""#)?;
        assert_eq!(r, FinishReason::Other);
        Ok(())
    }

    #[test]
    fn assembler_joins_argument_pieces_by_index() {
        let mut a = ResponseAssembler::new();
        let piece =
            |index, id: Option<&str>, name: Option<&str>, args: &str| StreamDelta::ToolCall {
                index: Some(index),
                id: id.map(str::to_string),
                name: name.map(str::to_string),
                arguments: args.to_string(),
            };
        a.push(&StreamDelta::Text("Let me ".into()));
        a.push(&piece(0, Some("a"), Some("add"), ""));
        a.push(&piece(1, Some("b"), Some("mul"), "{\"x\""));
        a.push(&piece(0, None, None, "{\"x\":"));
        a.push(&piece(1, None, None, ":2}"));
        a.push(&piece(0, None, None, "1}"));
        a.push(&StreamDelta::Text("see".into()));
        a.push(&StreamDelta::Finish(FinishReason::ToolCalls));
        assert!(a.is_complete());
        let r = a.finish("m");
        assert_eq!(r.text(), "Let me see");
        assert_eq!(r.message.tool_calls.len(), 2);
        assert_eq!(r.message.tool_calls[0].function.arguments, "{\"x\":1}");
        assert_eq!(r.message.tool_calls[1].function.name, "mul");
        assert_eq!(r.message.tool_calls[1].function.arguments, "{\"x\":2}");
        assert_eq!(r.stop_reason, Some(FinishReason::ToolCalls));
    }
}
