//! `toolhost-llm`: the automatic LLM tool loop.
//!
//! - [`types`]: OpenAI Chat Completions messages, requests, responses, stream deltas.
//! - [`provider`]: the [`ChatProvider`] trait (`complete` and `stream`).
//! - [`openai`]: [`OpenAiProvider`], for OpenAI, vLLM, Ollama, llama.cpp, LM Studio.
//! - [`anthropic`]: [`AnthropicProvider`], the Anthropic Messages API.
//! - [`cycle`]: [`LlmCycle`] and [`CycleConfig`]: `submit`, `submit_messages`,
//!   `submit_with_tools`, `submit_stream_with_tools`, `submit_request`, `messages`, `usage`.
//! - [`compact`]: tool-aware compaction of a history under a token budget.
//! - [`tokens`]: [`TokenCounter`] (tiktoken for OpenAI families, an estimate otherwise).
//! - [`events`]: the [`StreamEvent`]s of the streaming loop.
//! - [`policy`]: the [`InvalidToolCallPolicy`] (Fail, Retry, Repair, Skip, Stop).
//! - [`eval`]: tool-selection regression cases (`toolhost eval`).
//! - [`error`]: [`LlmError`]; loop errors carry the trajectory.
//!
//! ```no_run
//! use toolhost_core::tools::ToolRegistry;
//! use toolhost_llm::{CycleConfig, LlmCycle, OpenAiProvider};
//!
//! # async fn demo(registry: ToolRegistry) -> Result<(), toolhost_llm::LlmError> {
//! let provider = OpenAiProvider::new("http://localhost:11434/v1", "qwen3:4b")?;
//! let mut cycle = LlmCycle::new(provider, CycleConfig::default());
//! let answer = cycle.submit_with_tools("What is 2 + 3?", &registry).await?;
//! println!("{}", answer.text());
//! for m in cycle.messages() {
//!     println!("{}: {}", m.role(), m.text().unwrap_or(""));
//! }
//! # Ok(()) }
//! ```

pub mod anthropic;
pub mod compact;
pub mod cycle;
pub mod error;
pub mod eval;
pub mod events;
pub mod hook;
mod http;
pub mod openai;
pub mod policy;
pub mod provider;
pub mod tokens;
pub mod types;

pub use anthropic::{AnthropicProvider, DEFAULT_ANTHROPIC_KEY_ENV};
pub use compact::CompactionReport;
pub use cycle::{CODE_TOOL, CycleConfig, EventStream, LlmCycle, OnDenied, ToolSelection};
pub use error::LlmError;
pub use events::StreamEvent;
pub use hook::{CallDecision, CallHook, CallView};
pub use openai::{DEFAULT_API_KEY_ENV, OpenAiProvider, RetryPolicy};
pub use policy::{
    InvalidToolCall, InvalidToolCallAction, InvalidToolCallKind, InvalidToolCallPolicy,
};
pub use provider::{ChatProvider, DeltaStream};
pub use tokens::TokenCounter;
pub use types::{
    AssistantMessage, AssistantToolCall, ChatMessage, ChatRequest, ChatResponse, FinishReason,
    FunctionCall, ResponseAssembler, StreamDelta, ToolChoice, Usage,
};
