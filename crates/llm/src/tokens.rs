//! [`TokenCounter`]: how many tokens a history costs, for the loop's token budget
//! (`docs/llm.md`, "Token budget and compaction").
//!
//! - For OpenAI model families the count is exact: tiktoken-rs knows which BPE each model
//!   name uses (`gpt-4o*` → o200k_base, `gpt-4*`/`gpt-3.5*` → cl100k_base, ...). The
//!   vocabulary is loaded once per process, on the first count.
//! - For every other model (Claude, Llama, Qwen, ...) the tokenizer is not public or not
//!   known from the name, so the count is an **estimate**: one token per 3 bytes of text.
//!   BPE tokenizers average 3.5 to 4.5 bytes per token on English prose and code, so the
//!   estimate over-counts slightly: compaction starts a little early rather than the
//!   provider refusing a request that is too long.
//!
//! A message costs its text plus [`MESSAGE_OVERHEAD`] tokens (role and separators, the
//! figure OpenAI documents for its chat format); a tool call costs its name and argument
//! text; the offered tool definitions cost their JSON.

use std::fmt;

use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};
use toolhost_core::tools::ToolDefinition;

use crate::types::ChatMessage;

/// Tokens a message costs beyond its text (role, separators).
pub const MESSAGE_OVERHEAD: usize = 4;

/// Bytes per token of the estimate (see the module docs).
pub const ESTIMATE_BYTES_PER_TOKEN: usize = 3;

/// Counts tokens: exactly with a known BPE, or by estimate.
#[derive(Clone, Copy)]
pub enum TokenCounter {
    /// A tiktoken BPE (OpenAI model families).
    Bpe(Tokenizer),
    /// One token per [`ESTIMATE_BYTES_PER_TOKEN`] bytes, rounded up.
    Estimate,
}

impl fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl TokenCounter {
    /// The counter for a model name: a BPE when tiktoken knows the family, else the
    /// estimate. A provider prefix such as `openai/` is ignored.
    pub fn for_model(model: &str) -> Self {
        let name = model.rsplit('/').next().unwrap_or(model);
        match get_tokenizer(name) {
            Some(t) => TokenCounter::Bpe(t),
            None => TokenCounter::Estimate,
        }
    }

    /// A short name for display: the BPE's name, or `estimate`.
    pub fn name(&self) -> String {
        match self {
            TokenCounter::Bpe(t) => format!("{t:?}"),
            TokenCounter::Estimate => "estimate".into(),
        }
    }

    fn bpe(&self) -> Option<&'static CoreBPE> {
        match self {
            TokenCounter::Bpe(t) => tiktoken_rs::bpe_for_tokenizer(*t).ok(),
            TokenCounter::Estimate => None,
        }
    }

    /// Tokens of a text.
    pub fn count_text(&self, text: &str) -> usize {
        match self.bpe() {
            Some(bpe) => bpe.count_ordinary(text),
            None => text.len().div_ceil(ESTIMATE_BYTES_PER_TOKEN),
        }
    }

    /// Tokens of one message, overhead included.
    pub fn count_message(&self, message: &ChatMessage) -> usize {
        let mut n = MESSAGE_OVERHEAD + message.text().map_or(0, |t| self.count_text(t));
        if let ChatMessage::Assistant(a) = message {
            for c in &a.tool_calls {
                n += MESSAGE_OVERHEAD
                    + self.count_text(&c.function.name)
                    + self.count_text(&c.function.arguments);
            }
        }
        n
    }

    /// Tokens of a history.
    pub fn count_messages(&self, messages: &[ChatMessage]) -> usize {
        messages.iter().map(|m| self.count_message(m)).sum()
    }

    /// Tokens of the offered tool definitions (their JSON).
    pub fn count_tools(&self, tools: &[ToolDefinition]) -> usize {
        if tools.is_empty() {
            return 0;
        }
        serde_json::to_string(tools).map_or(0, |s| self.count_text(&s))
    }
}

/// An upper bound of the tokens of a history and tool set, from byte lengths alone (every
/// token of a byte-level BPE covers at least one byte, and the estimate counts fewer tokens
/// than bytes). Cheap: used to skip counting when a history is far under its budget.
pub(crate) fn upper_bound(messages: &[ChatMessage], tools_bytes: usize) -> usize {
    let mut n = tools_bytes;
    for m in messages {
        n += MESSAGE_OVERHEAD + m.text().map_or(0, str::len);
        if let ChatMessage::Assistant(a) = m {
            for c in &a.tool_calls {
                n += MESSAGE_OVERHEAD + c.function.name.len() + c.function.arguments.len();
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_families_count_with_their_bpe_and_others_estimate() {
        let gpt = TokenCounter::for_model("gpt-4o-mini");
        assert!(matches!(gpt, TokenCounter::Bpe(Tokenizer::O200kBase)));
        assert_eq!(gpt.count_text("hello world"), 2);
        assert!(matches!(
            TokenCounter::for_model("openai/gpt-4"),
            TokenCounter::Bpe(Tokenizer::Cl100kBase)
        ));
        let other = TokenCounter::for_model("qwen3:4b");
        assert!(matches!(other, TokenCounter::Estimate));
        assert_eq!(other.count_text("hello world"), 4);
    }

    #[test]
    fn the_byte_bound_is_never_below_the_count() {
        let text = "Zürich 東京 emoji 🦀 and code { \"x\": [1, 2, 3] } ".repeat(20);
        let messages = vec![
            ChatMessage::user(text.clone()),
            ChatMessage::tool("c", text),
        ];
        for c in [TokenCounter::for_model("gpt-4o"), TokenCounter::Estimate] {
            assert!(c.count_messages(&messages) <= upper_bound(&messages, 0));
        }
    }
}
