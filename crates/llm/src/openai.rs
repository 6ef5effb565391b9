//! [`OpenAiProvider`]: the OpenAI Chat Completions API over HTTP, for OpenAI itself and
//! every compatible server (vLLM, Ollama, llama.cpp, LM Studio, ...).
//!
//! - `POST {base_url}/chat/completions`; the base URL is the API root (for example
//!   `https://api.openai.com/v1` or `http://localhost:11434/v1`).
//! - The API key comes from an environment variable (default `OPENAI_API_KEY`) and is sent
//!   as a bearer token; no key means no `Authorization` header (local servers need none).
//! - 429 and 5xx answers and connection failures are retried with exponential backoff
//!   (default 3 retries, 500 ms doubling up to 8 s), honouring `Retry-After` (seconds) up
//!   to `max_retry_after`. A stream is retried only before its first byte.
//! - Streaming reads Server-Sent Events and yields [`StreamDelta`]s; tool-call argument
//!   pieces are joined by index by [`ResponseAssembler`](crate::ResponseAssembler).

use async_trait::async_trait;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::AUTHORIZATION;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_core::tools::ToolDefinition;

use crate::error::LlmError;
pub use crate::http::RetryPolicy;
use crate::http::{
    Endpoint, MAX_RESPONSE_BYTES, excerpt, read_limited, stream_error, stream_limited,
};
use crate::provider::{ChatProvider, DeltaStream};
use crate::types::{
    AssistantMessage, ChatMessage, ChatRequest, ChatResponse, FinishReason, StreamDelta,
    ToolChoice, Usage,
};

/// Default environment variable holding the API key.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// An OpenAI-compatible chat provider.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    endpoint: Endpoint,
    model: String,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
}

impl OpenAiProvider {
    /// A provider for `model` at `base_url` (the API root, e.g. `http://localhost:11434/v1`),
    /// with the key from `OPENAI_API_KEY` if set.
    pub fn new(base_url: impl AsRef<str>, model: impl Into<String>) -> Result<Self, LlmError> {
        Self::without_key(base_url, model)?.with_api_key_env(DEFAULT_API_KEY_ENV)
    }

    /// A provider that sends no API key (local servers).
    pub fn without_key(
        base_url: impl AsRef<str>,
        model: impl Into<String>,
    ) -> Result<Self, LlmError> {
        let endpoint = Endpoint::new(base_url.as_ref(), "http://localhost:11434/v1", |base| {
            if base.ends_with("/chat/completions") {
                base.to_string()
            } else {
                format!("{base}/chat/completions")
            }
        })?;
        Ok(Self {
            endpoint,
            model: model.into(),
            temperature: None,
            max_tokens: None,
        })
    }

    /// Reads the API key from this environment variable instead of `OPENAI_API_KEY`
    /// (unset or empty: no key).
    pub fn with_api_key_env(mut self, var: &str) -> Result<Self, LlmError> {
        self.endpoint.key_from_env(AUTHORIZATION, var, bearer)?;
        Ok(self)
    }

    /// Sends this API key as a bearer token.
    pub fn with_api_key(mut self, key: &str) -> Result<Self, LlmError> {
        self.endpoint.set_key(AUTHORIZATION, &bearer(key))?;
        Ok(self)
    }

    /// Adds a header to every request (for example `X-Fakellm-Conversation-Id`).
    pub fn with_header(mut self, name: &str, value: &str) -> Result<Self, LlmError> {
        self.endpoint.add_header(name, value)?;
        Ok(self)
    }

    /// Sets the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.endpoint.retry = retry;
        self
    }

    /// Sets a default temperature (a request's own wins).
    pub fn with_temperature(mut self, t: f32) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Sets a default output token limit (a request's own wins).
    pub fn with_max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// The full completions URL.
    pub fn url(&self) -> &str {
        &self.endpoint.url
    }

    fn body<'a>(&'a self, req: &ChatRequest<'a>, stream: bool) -> WireRequest<'a> {
        WireRequest {
            model: &self.model,
            messages: req.messages,
            tools: wire_tools(req.tools),
            stream,
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
            temperature: req.temperature.or(self.temperature),
            max_tokens: req.max_tokens.or(self.max_tokens),
            // Both are refused without tools.
            tool_choice: (!req.tools.is_empty())
                .then(|| openai_choice(req.tool_choice))
                .flatten(),
            parallel_tool_calls: req.parallel_tool_calls.filter(|_| !req.tools.is_empty()),
            response_format: req.answer_schema.map(|schema| {
                serde_json::json!({"type": "json_schema",
                    "json_schema": {"name": "answer", "schema": schema}})
            }),
        }
    }

    /// Sends the request, retrying transient failures; returns a success response.
    async fn send(&self, body: &WireRequest<'_>) -> Result<reqwest::Response, LlmError> {
        self.endpoint.send(body).await
    }
}

/// The tools as OpenAI takes them: a tool's input examples (which OpenAI has no field for)
/// are folded into its description; without examples the definitions go as they are.
fn wire_tools(tools: &[ToolDefinition]) -> std::borrow::Cow<'_, [ToolDefinition]> {
    if tools.iter().all(|t| t.input_examples.is_empty()) {
        return std::borrow::Cow::Borrowed(tools);
    }
    std::borrow::Cow::Owned(
        tools
            .iter()
            .map(|t| {
                let mut t = t.clone();
                t.function.description =
                    crate::types::with_examples(&t.function.description, &t.input_examples);
                t
            })
            .collect(),
    )
}

/// OpenAI's `tool_choice` (`None` for the default, `auto`, which is not sent).
fn openai_choice(choice: &ToolChoice) -> Option<Value> {
    match choice {
        ToolChoice::Auto => None,
        ToolChoice::None => Some(Value::from("none")),
        ToolChoice::Required => Some(Value::from("required")),
        ToolChoice::Tool(name) => {
            Some(serde_json::json!({"type": "function", "function": {"name": name}}))
        }
    }
}

/// `Bearer KEY`, the `Authorization` value of an OpenAI key.
fn bearer(key: &str) -> String {
    format!("Bearer {key}")
}

#[async_trait]
impl ChatProvider for OpenAiProvider {
    async fn complete(&self, request: ChatRequest<'_>) -> Result<ChatResponse, LlmError> {
        let body = self.body(&request, false);
        let resp = self.send(&body).await?;
        let bytes = read_limited(resp, &self.endpoint.url, MAX_RESPONSE_BYTES).await?;
        let wire: WireResponse = serde_json::from_slice(&bytes).map_err(|e| {
            LlmError::Decode(format!(
                "{e}; the body starts with {}",
                excerpt(&String::from_utf8_lossy(&bytes))
            ))
        })?;
        let Some(choice) = wire.choices.into_iter().next() else {
            return Err(LlmError::Incomplete("the answer has no choices".into()));
        };
        Ok(ChatResponse {
            message: choice.message,
            stop_reason: choice.finish_reason,
            usage: wire.usage.map(WireUsage::into_usage),
            model: wire.model.unwrap_or_else(|| self.model.clone()),
            structured: None,
        })
    }

    async fn stream(&self, request: ChatRequest<'_>) -> Result<DeltaStream, LlmError> {
        let body = self.body(&request, true);
        let resp = self.send(&body).await?;
        let url = self.endpoint.url.clone();
        let mut events = stream_limited(resp, MAX_RESPONSE_BYTES).eventsource();
        let stream = async_stream::stream! {
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
                if data == "[DONE]" {
                    yield Ok(StreamDelta::Done);
                    return;
                }
                let chunk: WireChunk = match serde_json::from_str(data) {
                    Ok(c) => c,
                    Err(e) => {
                        yield Err(LlmError::Decode(format!("{e} in stream event {}", excerpt(data))));
                        return;
                    }
                };
                if let Some(err) = chunk.error {
                    yield Err(LlmError::Http { status: 200, body: excerpt(&err.to_string()), attempts: 1 });
                    return;
                }
                for delta in chunk_deltas(chunk) {
                    if matches!(delta, StreamDelta::Finish(_)) {
                        finished = true;
                    }
                    yield Ok(delta);
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

fn chunk_deltas(chunk: WireChunk) -> Vec<StreamDelta> {
    let mut out = Vec::new();
    for choice in chunk.choices {
        if let Some(delta) = choice.delta {
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                out.push(StreamDelta::Text(text));
            }
            for tc in delta.tool_calls.unwrap_or_default() {
                let (name, arguments) = match tc.function {
                    Some(f) => (f.name, f.arguments.unwrap_or_default()),
                    None => (None, String::new()),
                };
                out.push(StreamDelta::ToolCall {
                    index: tc.index,
                    id: tc.id,
                    name,
                    arguments,
                });
            }
        }
        if let Some(r) = choice.finish_reason {
            out.push(StreamDelta::Finish(r));
        }
    }
    if let Some(u) = chunk.usage {
        out.push(StreamDelta::Usage(u.into_usage()));
    }
    out
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: std::borrow::Cow<'a, [ToolDefinition]>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// OpenAI's usage: the counts, and the cached part of the input nested in
/// `prompt_tokens_details`.
#[derive(Deserialize)]
struct WireUsage {
    #[serde(flatten)]
    counts: Usage,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl WireUsage {
    fn into_usage(self) -> Usage {
        Usage {
            cached_tokens: self.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
            ..self.counts
        }
    }
}

#[derive(Deserialize)]
struct WireChoice {
    message: AssistantMessage,
    #[serde(default)]
    finish_reason: Option<FinishReason>,
}

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    choices: Vec<WireChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct WireChunkChoice {
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<FinishReason>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCallDelta>>,
}

#[derive(Deserialize)]
struct WireToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunctionDelta>,
}

#[derive(Deserialize)]
struct WireFunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_normalised_and_checked() -> Result<(), LlmError> {
        let p = OpenAiProvider::without_key("http://localhost:11434/v1/", "m")?;
        assert_eq!(p.url(), "http://localhost:11434/v1/chat/completions");
        assert!(OpenAiProvider::without_key("localhost:1", "m").is_err());
        Ok(())
    }

    #[test]
    fn chunks_become_deltas() -> Result<(), serde_json::Error> {
        let c: WireChunk = serde_json::from_str(
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"add","arguments":""}}]},"finish_reason":null}]}"#,
        )?;
        assert_eq!(
            chunk_deltas(c),
            vec![StreamDelta::ToolCall {
                index: Some(0),
                id: Some("c".into()),
                name: Some("add".into()),
                arguments: String::new()
            }]
        );
        Ok(())
    }
}
