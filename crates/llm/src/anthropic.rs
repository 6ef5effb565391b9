//! [`AnthropicProvider`]: the Anthropic Messages API over HTTP (`docs/llm.md`,
//! "Anthropic").
//!
//! - `POST {base_url}/v1/messages` (a base URL ending in `/v1` or `/v1/messages` is used as
//!   it is), with `x-api-key` (from `ANTHROPIC_API_KEY` by default) and
//!   `anthropic-version: 2023-06-01`.
//! - The history is translated from the loop's Chat Completions shape: system messages go
//!   to the top-level `system` field; an assistant message becomes `text` and `tool_use`
//!   blocks (`input` is the parsed arguments); tool messages become `tool_result` blocks in
//!   one user message (parallel tool use answered together), with `is_error` set when the
//!   loop wrote an error (`Error: ...`) or a denial (`denied: ...`); consecutive messages of
//!   one role are merged, as the API requires alternation.
//! - Tools are sent as `name`, `description`, `input_schema`.
//! - `max_tokens` is required by the API: the request's, the provider's, or 4096.
//! - `stop_reason` maps to the loop's finish reasons: `end_turn`/`stop_sequence` → stop,
//!   `max_tokens` → length, `tool_use` → tool calls, `refusal` → content filter.
//! - Streaming reads the `message_start`, `content_block_start`, `content_block_delta`
//!   (`text_delta`, `input_json_delta`), `content_block_stop`, `message_delta` and
//!   `message_stop` events; `ping` is ignored and `error` is an error. Tool-use argument
//!   pieces are joined by block index by the
//!   [`ResponseAssembler`](crate::ResponseAssembler).
//! - Retries and the answer size bound are those of the OpenAI provider.

use async_trait::async_trait;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::{HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::LlmError;
use crate::http::{
    Endpoint, MAX_RESPONSE_BYTES, RetryPolicy, excerpt, read_limited, stream_error, stream_limited,
};
use crate::provider::{ChatProvider, DeltaStream};
use crate::types::{
    AssistantMessage, AssistantToolCall, ChatMessage, ChatRequest, ChatResponse, FinishReason,
    StreamDelta, ToolChoice, Usage,
};

/// Default environment variable holding the Anthropic API key.
pub const DEFAULT_ANTHROPIC_KEY_ENV: &str = "ANTHROPIC_API_KEY";

/// The API version sent in `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The output token limit sent when neither the request nor the provider sets one.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A provider for the Anthropic Messages API.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    endpoint: Endpoint,
    model: String,
    max_tokens: Option<u32>,
    /// Mark the tools, the system prompt and the conversation so far for Anthropic's
    /// prompt cache.
    cache: bool,
    /// Send tools' input examples as `input_examples` (a beta of the API); else they are
    /// folded into the descriptions.
    examples_field: bool,
}

/// The beta that lets a tool definition carry `input_examples`.
const INPUT_EXAMPLES_BETA: &str = "advanced-tool-use-2025-11-20";

/// The cache mark of a prompt-cache breakpoint (Anthropic's 5-minute cache).
fn cache_mark() -> Value {
    json!({"type": "ephemeral"})
}

impl AnthropicProvider {
    /// A provider for `model` at `base_url` (e.g. `https://api.anthropic.com`), with the
    /// key from `ANTHROPIC_API_KEY` if set.
    pub fn new(base_url: impl AsRef<str>, model: impl Into<String>) -> Result<Self, LlmError> {
        Self::without_key(base_url, model)?.with_api_key_env(DEFAULT_ANTHROPIC_KEY_ENV)
    }

    /// A provider that sends no key (a local proxy that adds it).
    pub fn without_key(
        base_url: impl AsRef<str>,
        model: impl Into<String>,
    ) -> Result<Self, LlmError> {
        let mut endpoint = Endpoint::new(base_url.as_ref(), "https://api.anthropic.com", |base| {
            if base.ends_with("/v1/messages") {
                base.to_string()
            } else if base.ends_with("/v1") {
                format!("{base}/messages")
            } else {
                format!("{base}/v1/messages")
            }
        })?;
        endpoint.headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        Ok(Self {
            endpoint,
            model: model.into(),
            max_tokens: None,
            cache: false,
            examples_field: false,
        })
    }

    /// Reads the key from this environment variable (unset or empty: no key).
    pub fn with_api_key_env(mut self, var: &str) -> Result<Self, LlmError> {
        self.endpoint
            .key_from_env(HeaderName::from_static("x-api-key"), var, str::to_string)?;
        Ok(self)
    }

    /// Sends this key as `x-api-key`.
    pub fn with_api_key(mut self, key: &str) -> Result<Self, LlmError> {
        self.endpoint
            .set_key(HeaderName::from_static("x-api-key"), key)?;
        Ok(self)
    }

    /// Sets the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.endpoint.retry = retry;
        self
    }

    /// Sets a default output token limit (a request's own wins).
    pub fn with_max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Uses Anthropic's prompt cache: each request marks three breakpoints
    /// (`cache_control`): the last tool definition, the system prompt, and the last
    /// message, so a tool loop's next turn reads the tools, the instructions and the whole
    /// history before it from the cache. What was read and written is in the usage
    /// (`cached_tokens`, `cache_write_tokens`).
    pub fn with_prompt_caching(mut self, on: bool) -> Self {
        self.cache = on;
        self
    }

    /// Sends tools' input examples (`ToolMetadata::input_examples`) in the definitions'
    /// `input_examples` field, under the `anthropic-beta: advanced-tool-use-2025-11-20`
    /// header. Off by default: the examples are then folded into the descriptions, which
    /// every model reads.
    pub fn with_input_examples_field(mut self) -> Result<Self, LlmError> {
        self.endpoint
            .add_header("anthropic-beta", INPUT_EXAMPLES_BETA)?;
        self.examples_field = true;
        Ok(self)
    }

    /// The full messages URL.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }

    /// The request body for the Messages API.
    pub fn body(&self, req: &ChatRequest<'_>, stream: bool) -> Value {
        let (system, messages) = translate(req.messages);
        let mut body = json!({
            "model": self.model,
            "max_tokens": req.max_tokens.or(self.max_tokens).unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages,
        });
        if let Some(obj) = body.as_object_mut() {
            if !system.is_empty() {
                let system = if self.cache {
                    json!([{"type": "text", "text": system, "cache_control": cache_mark()}])
                } else {
                    Value::String(system)
                };
                obj.insert("system".into(), system);
            }
            if !req.tools.is_empty() {
                let tools: Vec<Value> = req
                    .tools
                    .iter()
                    .map(|t| {
                        let folded = !self.examples_field;
                        let description = if folded {
                            crate::types::with_examples(&t.function.description, &t.input_examples)
                        } else {
                            t.function.description.clone()
                        };
                        let mut tool = json!({
                            "name": t.function.name,
                            "description": description,
                            "input_schema": t.function.parameters,
                        });
                        if !folded
                            && !t.input_examples.is_empty()
                            && let Some(obj) = tool.as_object_mut()
                        {
                            obj.insert("input_examples".into(), json!(t.input_examples));
                        }
                        tool
                    })
                    .collect();
                let mut tools = tools;
                if self.cache
                    && let Some(Value::Object(last)) = tools.last_mut()
                {
                    last.insert("cache_control".into(), cache_mark());
                }
                obj.insert("tools".into(), Value::Array(tools));
                if let Some(choice) = anthropic_choice(req.tool_choice, req.parallel_tool_calls) {
                    obj.insert("tool_choice".into(), choice);
                }
            }
            if let Some(t) = req.temperature {
                obj.insert("temperature".into(), json!(t));
            }
            if stream {
                obj.insert("stream".into(), Value::Bool(true));
            }
            if self.cache {
                mark_last_block(obj.get_mut("messages"));
            }
        }
        body
    }
}

/// Puts the cache mark on the last content block of the last message (a message whose
/// content is a plain string becomes one text block to carry it).
fn mark_last_block(messages: Option<&mut Value>) {
    let Some(Value::Object(last)) = messages
        .and_then(Value::as_array_mut)
        .and_then(|m| m.last_mut())
    else {
        return;
    };
    if let Some(Value::String(text)) = last.get("content") {
        let block = json!([{"type": "text", "text": text}]);
        last.insert("content".into(), block);
    }
    if let Some(Value::Object(block)) = last
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .and_then(|c| c.last_mut())
    {
        block.insert("cache_control".into(), cache_mark());
    }
}

/// Anthropic's `tool_choice` (`None` for its default: `auto`, parallel calls allowed).
/// Parallel calls are switched off inside it (`disable_parallel_tool_use`).
fn anthropic_choice(choice: &ToolChoice, parallel: Option<bool>) -> Option<Value> {
    let mut value = match choice {
        ToolChoice::Auto if parallel != Some(false) => return None,
        ToolChoice::Auto => json!({"type": "auto"}),
        // `none` takes no parallel switch: no call at all.
        ToolChoice::None => return Some(json!({"type": "none"})),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
    };
    if parallel == Some(false)
        && let Some(obj) = value.as_object_mut()
    {
        obj.insert("disable_parallel_tool_use".into(), Value::Bool(true));
    }
    Some(value)
}

/// Whether a tool message the loop wrote reports a failure (see the module docs).
fn is_error_result(content: &str) -> bool {
    content.starts_with("Error: ") || content.starts_with("denied: ")
}

/// The history as Anthropic's `system` text and `messages` (roles alternating).
fn translate(history: &[ChatMessage]) -> (String, Vec<Value>) {
    let mut system: Vec<&str> = Vec::new();
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, block: Value| match out.last_mut() {
        Some((r, blocks)) if *r == role => blocks.push(block),
        _ => out.push((role, vec![block])),
    };
    for m in history {
        match m {
            ChatMessage::System { content } => system.push(content),
            ChatMessage::User { content } => {
                push("user", json!({"type": "text", "text": content}));
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => push(
                "user",
                json!({"type": "tool_result", "tool_use_id": tool_call_id,
                       "content": content, "is_error": is_error_result(content)}),
            ),
            ChatMessage::Assistant(a) => {
                if let Some(t) = a.content.as_deref().filter(|t| !t.is_empty()) {
                    push("assistant", json!({"type": "text", "text": t}));
                }
                for c in &a.tool_calls {
                    // The API wants an object; arguments that were not one (the loop has
                    // answered such a call with feedback) are sent as an empty object.
                    let input = match serde_json::from_str::<Value>(&c.function.arguments) {
                        Ok(Value::Object(o)) => Value::Object(o),
                        _ => Value::Object(Map::new()),
                    };
                    push(
                        "assistant",
                        json!({"type": "tool_use", "id": c.id, "name": c.function.name, "input": input}),
                    );
                }
            }
        }
    }
    let messages = out
        .into_iter()
        .map(|(role, blocks)| json!({"role": role, "content": blocks}))
        .collect();
    (system.join("\n\n"), messages)
}

fn finish_reason(s: &str) -> FinishReason {
    match s {
        "end_turn" | "stop_sequence" | "pause_turn" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

#[async_trait]
impl ChatProvider for AnthropicProvider {
    async fn complete(&self, request: ChatRequest<'_>) -> Result<ChatResponse, LlmError> {
        let body = self.body(&request, false);
        let resp = self.endpoint.send(&body).await?;
        let bytes = read_limited(resp, &self.endpoint.url, MAX_RESPONSE_BYTES).await?;
        let wire: WireMessage = serde_json::from_slice(&bytes).map_err(|e| {
            LlmError::Decode(format!(
                "{e}; the body starts with {}",
                excerpt(&String::from_utf8_lossy(&bytes))
            ))
        })?;
        let mut message = AssistantMessage::default();
        let mut text = String::new();
        for block in wire.content {
            match block {
                WireBlock::Text { text: t } => text.push_str(&t),
                WireBlock::ToolUse { id, name, input } => message
                    .tool_calls
                    .push(AssistantToolCall::new(id, name, input.to_string())),
                WireBlock::Other => {}
            }
        }
        if !text.is_empty() {
            message.content = Some(text);
        }
        Ok(ChatResponse {
            message,
            stop_reason: wire.stop_reason.as_deref().map(finish_reason),
            usage: wire.usage.map(|u| u.into_usage(WireUsage::default())),
            model: wire.model.unwrap_or_else(|| self.model.clone()),
            structured: None,
        })
    }

    async fn stream(&self, request: ChatRequest<'_>) -> Result<DeltaStream, LlmError> {
        let body = self.body(&request, true);
        let resp = self.endpoint.send(&body).await?;
        let url = self.endpoint.url.clone();
        let mut events = stream_limited(resp, MAX_RESPONSE_BYTES).eventsource();
        let stream = async_stream::stream! {
            let mut start = WireUsage::default();
            let mut finished = false;
            while let Some(ev) = events.next().await {
                let ev = match ev {
                    Ok(ev) => ev,
                    Err(e) => {
                        yield Err(stream_error(&url, e));
                        return;
                    }
                };
                let data = ev.data.trim();
                if data.is_empty() {
                    continue;
                }
                let event: WireEvent = match serde_json::from_str(data) {
                    Ok(e) => e,
                    Err(e) => {
                        yield Err(LlmError::Decode(format!("{e} in stream event {}", excerpt(data))));
                        return;
                    }
                };
                match event {
                    WireEvent::MessageStart { message } => {
                        if let Some(u) = message.usage {
                            start = u;
                        }
                    }
                    WireEvent::ContentBlockStart { index, content_block } => {
                        match content_block {
                            WireBlock::Text { text } if !text.is_empty() => yield Ok(StreamDelta::Text(text)),
                            WireBlock::ToolUse { id, name, input } => {
                                // A start block may carry a whole input already; an empty
                                // object is the usual placeholder before the deltas.
                                let arguments = match input {
                                    Value::Object(o) if o.is_empty() => String::new(),
                                    Value::Null => String::new(),
                                    other => other.to_string(),
                                };
                                yield Ok(StreamDelta::ToolCall { index: Some(index), id: Some(id), name: Some(name), arguments });
                            }
                            _ => {}
                        }
                    }
                    WireEvent::ContentBlockDelta { index, delta } => match delta {
                        WireDelta::TextDelta { text } => yield Ok(StreamDelta::Text(text)),
                        WireDelta::InputJsonDelta { partial_json } => {
                            yield Ok(StreamDelta::ToolCall { index: Some(index), id: None, name: None, arguments: partial_json });
                        }
                        WireDelta::Other => {}
                    },
                    WireEvent::MessageDelta { delta, usage } => {
                        if let Some(u) = usage {
                            yield Ok(StreamDelta::Usage(u.into_usage(start)));
                        }
                        if let Some(r) = delta.stop_reason {
                            finished = true;
                            yield Ok(StreamDelta::Finish(finish_reason(&r)));
                        }
                    }
                    WireEvent::MessageStop => {
                        yield Ok(StreamDelta::Done);
                        return;
                    }
                    WireEvent::Error { error } => {
                        yield Err(LlmError::Http { status: 200, body: excerpt(&error.to_string()), attempts: 1 });
                        return;
                    }
                    WireEvent::Other => {}
                }
            }
            if !finished {
                yield Err(LlmError::Incomplete("the stream ended before the model finished".into()));
            }
        };
        Ok(Box::pin(stream))
    }

    fn model(&self) -> &str {
        &self.model
    }
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    content: Vec<WireBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Clone, Copy, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
}

impl WireUsage {
    /// As the loop's usage; a stream reports input (and cache) tokens at its start only.
    /// Anthropic's `input_tokens` leaves out the cached ones: the loop's input is all of
    /// them.
    fn into_usage(self, start: WireUsage) -> Usage {
        let read = self
            .cache_read_input_tokens
            .max(start.cache_read_input_tokens);
        let write = self
            .cache_creation_input_tokens
            .max(start.cache_creation_input_tokens);
        let input = self
            .input_tokens
            .max(start.input_tokens)
            .saturating_add(read)
            .saturating_add(write);
        Usage {
            prompt_tokens: input,
            completion_tokens: self.output_tokens,
            total_tokens: input.saturating_add(self.output_tokens),
            cached_tokens: read,
            cache_write_tokens: write,
        }
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireStartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: WireBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: WireDelta,
    },
    MessageDelta {
        #[serde(default)]
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error {
        #[serde(default)]
        error: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct WireStartMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        #[serde(default)]
        text: String,
    },
    InputJsonDelta {
        #[serde(default)]
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_normalised() -> Result<(), LlmError> {
        for (base, url) in [
            (
                "https://api.anthropic.com",
                "https://api.anthropic.com/v1/messages",
            ),
            ("http://127.0.0.1:9/v1/", "http://127.0.0.1:9/v1/messages"),
            ("http://h/v1/messages", "http://h/v1/messages"),
        ] {
            assert_eq!(AnthropicProvider::without_key(base, "m")?.url(), url);
        }
        assert!(AnthropicProvider::without_key("api.anthropic.com", "m").is_err());
        Ok(())
    }

    #[test]
    fn the_history_becomes_alternating_blocks() {
        let history = vec![
            ChatMessage::system("be brief"),
            ChatMessage::user("add and multiply"),
            ChatMessage::Assistant(AssistantMessage {
                content: Some("Sure.".into()),
                tool_calls: vec![
                    AssistantToolCall::new("t1", "add", r#"{"x":1}"#),
                    AssistantToolCall::new("t2", "mul", "not json"),
                ],
            }),
            ChatMessage::tool("t1", "3"),
            ChatMessage::tool("t2", "Error: bad arguments"),
            ChatMessage::user("thanks"),
        ];
        let (system, messages) = translate(&history);
        assert_eq!(system, "be brief");
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"][1]["input"], json!({"x": 1}));
        assert_eq!(messages[1]["content"][2]["input"], json!({}));
        let results = &messages[2]["content"];
        assert_eq!(results[0]["tool_use_id"], "t1");
        assert_eq!(results[0]["is_error"], false);
        assert_eq!(results[1]["is_error"], true);
        assert_eq!(results[2]["type"], "text");
    }
}
