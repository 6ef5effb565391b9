//! [`LlmCycle`]: a conversation with a model that calls tools, gets their results and goes
//! on, until it answers without tools (`docs/design.md`, "Where things are").
//!
//! One loop serves both modes (`submit_with_tools` and `submit_stream_with_tools`); each
//! turn:
//!
//! 1. **ask** the model, sending the history and the offered tool definitions (the
//!    registry's tools, narrowed by [`CycleConfig::tool_tags`]; recomputed every turn so
//!    tools added or removed mid-conversation are seen);
//! 2. an answer without tool calls ends the loop; it is added to the history and returned;
//! 3. otherwise the assistant message is added, and every call is **checked**: an unknown
//!    name or arguments that are not JSON go to the [`InvalidToolCallPolicy`];
//! 4. the valid calls **run in parallel** through `ToolRegistry::invoke_calls`, with the
//!    cycle's [`ToolContext`] (session id, trace id, cancellation) carrying a per-turn
//!    deadline of `tool_timeout_secs` and the `max_tool_result_bytes` limit, both enforced by
//!    the registry;
//! 5. every call gets **exactly one tool message**, in the model's order, before anything
//!    else happens: its result, its error, the policy's feedback, or why it did not run;
//! 6. a fatal tool error (`!ToolError::is_recoverable()`: permission denied, MCP link down,
//!    I/O, cancellation) ends the loop with [`LlmError::ToolFailed`], carrying the trajectory;
//!    recoverable errors are just results the model reads. A permission denial is the
//!    operator's choice ([`CycleConfig::on_denied`]): it ends the loop (the default), or
//!    its call is answered `denied: REASON` and the model goes on.
//!
//! Before every request the history is fitted under [`CycleConfig::token_budget`], if set
//! (tool-aware compaction, [`crate::compact`]), and the usage the provider reports is added
//! up per conversation ([`LlmCycle::usage`]).
//!
//! The entry points follow the method matrix of `docs/llm.md`:
//!
//! | method | pushes a user message | compaction | provider retry | tool loop |
//! |---|---|---|---|---|
//! | `submit` | yes | yes | yes | no |
//! | `submit_messages` (+ `_stream`) | no (the caller's history) | yes | yes | yes |
//! | `submit_with_tools` (+ `submit_stream_with_tools`) | yes | yes | yes | yes |
//! | `submit_request` | no | no | yes | no |
//!
//! Asking the model more than `max_turns` times is an error ([`LlmError::MaxTurns`]).
//!
//! An answer with tool calls is executed whatever its finish reason: some servers (older
//! Ollama builds) report `stop` with tool calls, and leaving calls unanswered would make the
//! history invalid to resubmit.

mod answer;
mod calls;
mod config;
mod select;

pub use config::{CycleConfig, OnDenied};
pub use select::{CODE_TOOL, ToolSelection};

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::{Stream, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;
use toolhost_core::tools::{ToolCall, ToolContext, ToolDefinition, ToolError, ToolRegistry};

use crate::compact::{CompactionReport, compact};
use crate::error::LlmError;
use crate::events::{MAX_PROGRESS_MESSAGE_BYTES, StreamEvent};
use crate::hook::CallDecision;
use crate::policy::{InvalidToolCall, InvalidToolCallAction, InvalidToolCallKind};
use crate::provider::ChatProvider;
use crate::tokens::{TokenCounter, upper_bound};
use crate::types::{
    AssistantMessage, ChatMessage, ChatRequest, ChatResponse, FinishReason, ResponseAssembler,
    ToolChoice, Usage,
};

/// A boxed stream of loop events; see [`LlmCycle::submit_stream_with_tools`].
pub type EventStream<'a> = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send + 'a>>;

/// A conversation with a model and the automatic tool loop. See the module docs.
pub struct LlmCycle {
    provider: Arc<dyn ChatProvider>,
    config: CycleConfig,
    messages: Vec<ChatMessage>,
    context: ToolContext,
    turns: u64,
    usage: Usage,
    last_usage: Option<Usage>,
    counter: TokenCounter,
    /// The search index of `ToolSelection::Search`, made on first use.
    index: Option<toolhost_search::LiveIndex>,
}

impl std::fmt::Debug for LlmCycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmCycle")
            .field("model", &self.provider.model())
            .field("config", &self.config)
            .field("messages", &self.messages.len())
            .field("session_id", &self.context.session_id())
            .finish_non_exhaustive()
    }
}

/// One call of a turn, checked.
struct PlannedCall {
    id: String,
    name: String,
    input: Value,
    action: Planned,
}

enum Planned {
    /// Run it.
    Run(Value),
    /// Answer it with this text without running it (policy Retry/Skip).
    Answer(String),
}

/// Why a turn stops before running anything.
enum Halt {
    Fail {
        call_id: String,
        tool: String,
        problem: String,
    },
    Stop {
        reason: String,
    },
}

/// The result of one call, as given to the model.
/// The `error_kind` of a call answered without running (invalid, skipped, or cut short
/// by a run that ended).
pub(crate) const NOT_RUN: &str = "not_run";

struct Outcome {
    id: String,
    name: String,
    output: Result<String, String>,
    /// The error's kind, on failure ([`StreamEvent::ToolExecutionCompleted`]).
    kind: Option<&'static str>,
    duration: Duration,
    fatal: Option<ToolError>,
}

impl LlmCycle {
    /// A conversation with `provider` (for example an [`OpenAiProvider`](crate::OpenAiProvider)).
    pub fn new(provider: impl ChatProvider + 'static, config: CycleConfig) -> Self {
        Self::with_provider(Arc::new(provider), config)
    }

    /// A conversation with a shared provider.
    pub fn with_provider(provider: Arc<dyn ChatProvider>, config: CycleConfig) -> Self {
        let session = new_session_id();
        let trace = format!("{session}-trace");
        let mut messages = Vec::new();
        if let Some(p) = &config.system_prompt {
            messages.push(ChatMessage::system(p.clone()));
        }
        let counter = config
            .token_counter
            .unwrap_or_else(|| TokenCounter::for_model(provider.model()));
        Self {
            provider,
            config,
            messages,
            context: ToolContext::new(session, trace),
            turns: 0,
            usage: Usage::default(),
            last_usage: None,
            counter,
            index: None,
        }
    }

    /// Uses this context for the tools: its session id, trace id, typed values and
    /// cancellation token (cancelling it stops the loop and the running tools).
    pub fn with_tool_context(mut self, context: ToolContext) -> Self {
        self.context = context;
        self
    }

    /// The history: system prompt, user prompts, assistant turns and tool results.
    pub fn messages(&self) -> &[ChatMessage] {
        &self.messages
    }

    /// Replaces the history (for example with a trajectory from an error, to resubmit).
    pub fn set_messages(&mut self, messages: Vec<ChatMessage>) {
        self.messages = messages;
    }

    /// The settings.
    pub fn config(&self) -> &CycleConfig {
        &self.config
    }

    /// The settings, to change between turns (the tool choice, the active tools, ...).
    pub fn config_mut(&mut self) -> &mut CycleConfig {
        &mut self.config
    }

    /// The context the tools run in.
    pub fn tool_context(&self) -> &ToolContext {
        &self.context
    }

    /// The session id given to the tools.
    pub fn session_id(&self) -> &str {
        self.context.session_id()
    }

    /// How many model requests this cycle has made in all.
    pub fn turns(&self) -> u64 {
        self.turns
    }

    /// The token usage of every request of this cycle, as the providers reported it
    /// (requests whose answer carried no usage count zero).
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The usage of the last request, if its provider reported it.
    pub fn last_usage(&self) -> Option<Usage> {
        self.last_usage
    }

    /// How this cycle counts tokens for its budget.
    pub fn token_counter(&self) -> TokenCounter {
        self.counter
    }

    /// Fits the history under the token budget (if one is set), counting the offered tool
    /// definitions too. Returns what was done, or `None` when nothing had to be.
    pub fn compact(&mut self, tools: &[ToolDefinition]) -> Option<CompactionReport> {
        let budget = self.config.token_budget?;
        // Cheap first: a bound from byte lengths. Only a history that may pass the budget
        // is tokenised.
        let tools_bytes = if tools.is_empty() {
            0
        } else {
            serde_json::to_string(tools).map_or(0, |s| s.len())
        };
        if upper_bound(&self.messages, tools_bytes) <= budget {
            return None;
        }
        let fixed = self.counter.count_tools(tools);
        let report = compact(
            &mut self.messages,
            budget,
            fixed,
            self.config.keep_recent_turns,
            &self.counter,
        )?;
        if report.over_budget {
            tracing::warn!(
                budget,
                tokens = report.tokens_after,
                "the system prompt, the task and the recent turns alone pass the token budget"
            );
        }
        Some(report)
    }

    /// Answers the calls of the last assistant message that have no tool message yet.
    /// That happens only when a caller dropped a loop future or stream part-way through a
    /// tool turn; every submit runs this first, so the history it sends stays valid.
    fn answer_dangling_calls(&mut self) {
        let tail_start = self
            .messages
            .iter()
            .rposition(|m| !matches!(m, ChatMessage::Tool { .. }))
            .unwrap_or(0);
        let Some(ChatMessage::Assistant(a)) = self.messages.get(tail_start) else {
            return;
        };
        let answered: HashSet<&str> = self.messages[tail_start + 1..]
            .iter()
            .filter_map(|m| match m {
                ChatMessage::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        let missing: Vec<String> = a
            .tool_calls
            .iter()
            .filter(|c| !answered.contains(c.id.as_str()))
            .map(|c| c.id.clone())
            .collect();
        for id in missing {
            self.messages.push(ChatMessage::tool(
                id,
                "Error: not run: the tool loop was interrupted before this call finished",
            ));
        }
    }

    /// Sends `prompt` without tools and returns the answer (compaction applies).
    pub async fn submit(&mut self, prompt: impl Into<String>) -> Result<ChatResponse, LlmError> {
        self.answer_dangling_calls();
        self.messages.push(ChatMessage::user(prompt));
        self.compact(&[]);
        let response = self.request(&[], None, false, ToolChoice::Auto).await?;
        self.messages
            .push(ChatMessage::Assistant(response.message.clone()));
        Ok(response)
    }

    /// Sends `prompt` and runs the tool loop until the model answers without tools.
    /// Returns that answer; the whole exchange is in [`LlmCycle::messages`].
    pub async fn submit_with_tools(
        &mut self,
        prompt: impl Into<String>,
        registry: &ToolRegistry,
    ) -> Result<ChatResponse, LlmError> {
        self.answer_dangling_calls();
        self.messages.push(ChatMessage::user(prompt));
        self.run_loop(registry, None, false).await
    }

    /// Sends one request on the current history as it is: no prompt added, no compaction,
    /// no tool loop (the provider's retry applies). The answer is added to the history.
    pub async fn submit_request(
        &mut self,
        tools: &[ToolDefinition],
    ) -> Result<ChatResponse, LlmError> {
        self.answer_dangling_calls();
        let choice = self.config.tool_choice.clone();
        let response = self.request(tools, None, false, choice).await?;
        self.messages
            .push(ChatMessage::Assistant(response.message.clone()));
        Ok(response)
    }

    /// Takes `history` as the conversation (the caller's own messages: no user message is
    /// pushed) and runs the tool loop on it, compacting under the budget as it goes. The
    /// configured system prompt is put first if `history` has no system message. Calls of
    /// a last assistant message left unanswered are answered "not run" first.
    pub async fn submit_messages(
        &mut self,
        history: Vec<ChatMessage>,
        registry: &ToolRegistry,
    ) -> Result<ChatResponse, LlmError> {
        self.adopt(history);
        self.run_loop(registry, None, false).await
    }

    /// Like [`LlmCycle::submit_messages`], streaming the events of
    /// [`LlmCycle::submit_stream_with_tools`].
    pub fn submit_messages_stream<'a>(
        &'a mut self,
        history: Vec<ChatMessage>,
        registry: &'a ToolRegistry,
    ) -> EventStream<'a> {
        self.adopt(history);
        self.event_stream(registry)
    }

    fn adopt(&mut self, history: Vec<ChatMessage>) {
        let has_system = history
            .iter()
            .any(|m| matches!(m, ChatMessage::System { .. }));
        self.messages = history;
        if !has_system && let Some(p) = &self.config.system_prompt {
            self.messages.insert(0, ChatMessage::system(p.clone()));
        }
        self.answer_dangling_calls();
    }

    /// Runs the loop again on the current history without adding a prompt (for example
    /// after [`LlmCycle::set_messages`]).
    pub async fn resume_with_tools(
        &mut self,
        registry: &ToolRegistry,
    ) -> Result<ChatResponse, LlmError> {
        self.answer_dangling_calls();
        self.run_loop(registry, None, false).await
    }

    /// Like [`LlmCycle::submit_with_tools`], streaming: text deltas as the model writes, and
    /// tool events, in the order the [`events`](crate::events) module documents. The stream
    /// ends after the final `TurnComplete`, or with one `Err` when the loop fails. The
    /// history is updated as the stream goes; read it after dropping the stream.
    pub fn submit_stream_with_tools<'a>(
        &'a mut self,
        prompt: impl Into<String>,
        registry: &'a ToolRegistry,
    ) -> EventStream<'a> {
        self.answer_dangling_calls();
        self.messages.push(ChatMessage::user(prompt));
        self.event_stream(registry)
    }

    fn event_stream<'a>(&'a mut self, registry: &'a ToolRegistry) -> EventStream<'a> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let stream = async_stream::stream! {
            let run = self.run_loop(registry, Some(tx), true);
            tokio::pin!(run);
            let result = loop {
                tokio::select! {
                    biased;
                    Some(ev) = rx.recv() => yield Ok(ev),
                    r = &mut run => break r,
                }
            };
            while let Ok(ev) = rx.try_recv() {
                yield Ok(ev);
            }
            if let Err(e) = result {
                yield Err(e);
            }
        };
        Box::pin(stream)
    }

    fn cancelled(&self) -> LlmError {
        LlmError::Cancelled {
            messages: self.messages.clone(),
        }
    }

    async fn run_loop(
        &mut self,
        registry: &ToolRegistry,
        events: Option<mpsc::UnboundedSender<StreamEvent>>,
        stream: bool,
    ) -> Result<ChatResponse, LlmError> {
        let emit = |ev: StreamEvent| {
            if let Some(tx) = &events {
                // The receiver is gone only if the caller dropped the stream, and then
                // this future is dropped too.
                let _ = tx.send(ev);
            }
        };
        let mut turn = 0usize;
        let mut repairs = 0usize;
        loop {
            if self.context.is_cancelled() {
                return Err(self.cancelled());
            }
            turn += 1;
            if let Some(max) = self.config.max_turns
                && turn > max
            {
                return Err(LlmError::MaxTurns {
                    max_turns: max,
                    messages: self.messages.clone(),
                });
            }
            let tools = self.offered_tools(registry);
            if let Some(report) = self.compact(&tools) {
                emit(StreamEvent::Compacted(report));
            }
            // A forced choice holds for the first request only: after its calls the model
            // must be free to answer.
            let choice = match &self.config.tool_choice {
                ToolChoice::None => ToolChoice::None,
                forced if turn == 1 => forced.clone(),
                _ => ToolChoice::Auto,
            };
            let response = self
                .request(&tools, events.as_ref(), stream, choice)
                .await?;
            if !response.message.has_tool_calls() {
                self.messages
                    .push(ChatMessage::Assistant(response.message.clone()));
                emit(StreamEvent::TurnComplete {
                    reason: response.stop_reason.unwrap_or(FinishReason::Stop),
                });
                let Some(schema) = &self.config.answer_schema else {
                    return Ok(response);
                };
                match answer::judge(schema, response.text())? {
                    Ok(value) => {
                        let mut response = response;
                        response.structured = Some(value);
                        return Ok(response);
                    }
                    Err(problem) => {
                        repairs += 1;
                        if repairs > self.config.max_answer_repairs {
                            return Err(LlmError::InvalidAnswer {
                                problem,
                                messages: self.messages.clone(),
                            });
                        }
                        emit(StreamEvent::AnswerRejected {
                            problem: problem.clone(),
                        });
                        self.messages
                            .push(ChatMessage::user(answer::repair_prompt(&problem)));
                        continue;
                    }
                }
            }

            // A tool turn: check the calls, record the (possibly repaired) assistant message.
            let available = self.callable_tools(registry, &tools);
            let mut message = response.message;
            let (plan, halt) = self.plan_calls(&mut message, &available);
            self.messages.push(ChatMessage::Assistant(message));
            for p in &plan {
                emit(StreamEvent::ToolExecutionStarted {
                    id: p.id.clone(),
                    tool_name: p.name.clone(),
                    input: p.input.clone(),
                });
            }
            emit(StreamEvent::TurnComplete {
                reason: FinishReason::ToolCalls,
            });

            if let Some(halt) = halt {
                let note = match &halt {
                    Halt::Fail { tool, problem, .. } => {
                        format!(
                            "Error: not run: the invalid call of '{tool}' ({problem}) ended the run"
                        )
                    }
                    Halt::Stop { reason } => {
                        format!("Error: not run: the run was stopped: {reason}")
                    }
                };
                for p in &plan {
                    let text = match &p.action {
                        Planned::Answer(t) => t.clone(),
                        Planned::Run(_) => note.clone(),
                    };
                    self.messages
                        .push(ChatMessage::tool(p.id.clone(), text.clone()));
                    emit(StreamEvent::ToolExecutionCompleted {
                        id: p.id.clone(),
                        tool_name: p.name.clone(),
                        output: Err(text),
                        error_kind: Some(NOT_RUN.into()),
                        duration: Duration::ZERO,
                    });
                }
                return Err(match halt {
                    Halt::Fail {
                        call_id,
                        tool,
                        problem,
                    } => LlmError::InvalidToolCall {
                        tool,
                        call_id,
                        problem,
                        messages: self.messages.clone(),
                    },
                    Halt::Stop { reason } => LlmError::Stopped {
                        reason,
                        messages: self.messages.clone(),
                    },
                });
            }

            let outcomes = self.execute(plan, registry, turn, events.as_ref()).await;
            let mut fatal = None;
            for o in outcomes {
                let text = match &o.output {
                    Ok(t) | Err(t) => t.clone(),
                };
                self.messages.push(ChatMessage::tool(o.id.clone(), text));
                if fatal.is_none()
                    && let Some(e) = o.fatal
                {
                    fatal = Some((o.name.clone(), o.id.clone(), e));
                }
                emit(StreamEvent::ToolExecutionCompleted {
                    id: o.id,
                    tool_name: o.name,
                    output: o.output,
                    error_kind: o.kind.map(str::to_string),
                    duration: o.duration,
                });
            }
            if self.context.is_cancelled() {
                return Err(self.cancelled());
            }
            if let Some((tool, call_id, error)) = fatal {
                return Err(LlmError::ToolFailed {
                    tool,
                    call_id,
                    error: Box::new(error),
                    messages: self.messages.clone(),
                });
            }
        }
    }

    /// Asks the model once (blocking or streaming), honouring cancellation.
    async fn request(
        &mut self,
        tools: &[ToolDefinition],
        events: Option<&mpsc::UnboundedSender<StreamEvent>>,
        stream: bool,
        choice: ToolChoice,
    ) -> Result<ChatResponse, LlmError> {
        self.turns += 1;
        let request = ChatRequest {
            messages: &self.messages,
            tools,
            temperature: self.config.temperature,
            max_tokens: self.config.max_tokens,
            tool_choice: &choice,
            parallel_tool_calls: self.config.parallel_tool_calls,
            answer_schema: self.config.answer_schema.as_ref(),
        };
        let provider = &self.provider;
        let ask = async {
            if !stream {
                return provider.complete(request).await;
            }
            let mut deltas = provider.stream(request).await?;
            let mut asm = ResponseAssembler::new();
            while let Some(delta) = deltas.next().await {
                let delta = delta?;
                if let (crate::types::StreamDelta::Text(t), Some(tx)) = (&delta, events) {
                    let _ = tx.send(StreamEvent::AssistantTextDelta { text: t.clone() });
                }
                asm.push(&delta);
            }
            Ok(asm.finish(provider.model()))
        };
        let token = self.context.cancellation_token().clone();
        let response = tokio::select! {
            r = ask => r,
            _ = token.cancelled() => Err(self.cancelled()),
        }?;
        self.last_usage = response.usage;
        if let Some(u) = &response.usage {
            self.usage.add(u);
            if let Some(tx) = events {
                let _ = tx.send(StreamEvent::Usage {
                    turn: *u,
                    conversation: self.usage,
                });
            }
        }
        Ok(response)
    }
}

fn new_session_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "session-{:x}-{:x}-{}",
        nanos,
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
