//! [`ChatProvider`]: the one interface the tool loop needs from a model server.

use async_trait::async_trait;
use futures::stream::BoxStream;

use crate::error::LlmError;
use crate::types::{ChatRequest, ChatResponse, StreamDelta};

/// A stream of answer pieces. It ends after the model finished (or with an error).
pub type DeltaStream = BoxStream<'static, Result<StreamDelta, LlmError>>;

/// A chat model behind some API: blocking and streaming completions.
///
/// [`OpenAiProvider`](crate::OpenAiProvider) implements it for every OpenAI-compatible
/// server; tests and other APIs can bring their own.
#[async_trait]
pub trait ChatProvider: Send + Sync {
    /// Asks for one whole answer.
    async fn complete(&self, request: ChatRequest<'_>) -> Result<ChatResponse, LlmError>;

    /// Asks for an answer streamed in pieces (text deltas, tool-call deltas, finish).
    async fn stream(&self, request: ChatRequest<'_>) -> Result<DeltaStream, LlmError>;

    /// The model name, for display and for [`ChatResponse::model`] when the server omits it.
    fn model(&self) -> &str;
}
