//! The tool-call half of a turn of [`LlmCycle`]: checking each call the model made
//! against the invalid-call policy (`plan_calls`), running the valid ones through the
//! registry with the turn's deadline and result limit and answering every call with exactly
//! one tool message (`execute`), and forwarding the tools' progress reports as events. The
//! loop that asks the model and decides what comes next is in `cycle.rs`.

#[allow(clippy::wildcard_imports)]
use super::*;

impl LlmCycle {
    /// Checks each call of an assistant message, applying the invalid-call policy. Repairs
    /// rename the call in `message`, so the history shows what actually ran.
    pub(super) fn plan_calls(
        &self,
        message: &mut AssistantMessage,
        available: &[String],
    ) -> (Vec<PlannedCall>, Option<Halt>) {
        let offered: HashSet<&str> = available.iter().map(String::as_str).collect();
        let mut plan = Vec::with_capacity(message.tool_calls.len());
        let mut halt = None;
        let mut seen_ids = HashSet::new();
        for (i, call) in message.tool_calls.iter_mut().enumerate() {
            // Every call must be answerable by its own tool message: ids must exist and be
            // unique.
            if call.id.is_empty() || !seen_ids.insert(call.id.clone()) {
                call.id = format!("call_{}_{i}", self.turns);
                seen_ids.insert(call.id.clone());
            }
            let raw = call.function.arguments.trim();
            let parsed = if raw.is_empty() {
                Ok(Value::Object(Default::default()))
            } else {
                serde_json::from_str::<Value>(raw).map_err(|e| e.to_string())
            };
            let kind = match (&parsed, offered.contains(call.function.name.as_str())) {
                (_, false) => Some(InvalidToolCallKind::UnknownTool),
                (Err(e), true) => {
                    Some(InvalidToolCallKind::MalformedArguments { error: e.clone() })
                }
                (Ok(_), true) => None,
            };
            let input = parsed
                .clone()
                .unwrap_or_else(|_| Value::String(call.function.arguments.clone()));
            let Some(kind) = kind else {
                let (input, action) = self.hooked(call, input, available, &offered, &mut halt);
                plan.push(PlannedCall {
                    id: call.id.clone(),
                    name: call.function.name.clone(),
                    input,
                    action,
                });
                continue;
            };
            let invalid = InvalidToolCall {
                call_id: call.id.clone(),
                tool_name: call.function.name.clone(),
                raw_arguments: call.function.arguments.clone(),
                kind,
                available_tools: available.to_vec(),
                history: self.messages.clone(),
            };
            let action = self.config.invalid_tool_calls.decide(&invalid);
            tracing::debug!(tool = %invalid.tool_name, problem = %invalid.problem(), ?action, "invalid tool call");
            let planned = match action {
                InvalidToolCallAction::Repair { tool_name } => {
                    call.function.name = tool_name;
                    match parsed {
                        Ok(v) => Planned::Run(v),
                        Err(_) => Planned::Answer(invalid.default_feedback()),
                    }
                }
                InvalidToolCallAction::Retry { feedback } => Planned::Answer(feedback),
                InvalidToolCallAction::Skip { reason } => Planned::Answer(reason),
                InvalidToolCallAction::Fail => {
                    if halt.is_none() {
                        halt = Some(Halt::Fail {
                            call_id: invalid.call_id.clone(),
                            tool: invalid.tool_name.clone(),
                            problem: invalid.problem(),
                        });
                    }
                    Planned::Answer(invalid.default_feedback())
                }
                InvalidToolCallAction::Stop { reason } => {
                    if halt.is_none() {
                        halt = Some(Halt::Stop { reason });
                    }
                    Planned::Answer(invalid.default_feedback())
                }
            };
            plan.push(PlannedCall {
                id: call.id.clone(),
                name: call.function.name.clone(),
                input,
                action: planned,
            });
        }
        (plan, halt)
    }

    /// The call hook's decision on a valid call (`input`: its parsed arguments): what the
    /// call runs with, or its answer; a `Stop` sets `halt`. Rewrites and renames change
    /// `call`, so the history shows what ran.
    fn hooked(
        &self,
        call: &mut crate::types::AssistantToolCall,
        input: Value,
        available: &[String],
        offered: &HashSet<&str>,
        halt: &mut Option<Halt>,
    ) -> (Value, Planned) {
        let Some(hook) = &self.config.call_hook else {
            return (input.clone(), Planned::Run(input));
        };
        let view = crate::hook::CallView {
            call_id: &call.id,
            tool_name: &call.function.name,
            arguments: &input,
            history: &self.messages,
            available_tools: available,
        };
        match hook.decide(&view) {
            CallDecision::Run => (input.clone(), Planned::Run(input)),
            CallDecision::Rewrite { arguments } => {
                call.function.arguments = arguments.to_string();
                (arguments.clone(), Planned::Run(arguments))
            }
            CallDecision::Rename { tool_name } if offered.contains(tool_name.as_str()) => {
                call.function.name = tool_name;
                (input.clone(), Planned::Run(input))
            }
            CallDecision::Rename { tool_name } => {
                let answer = format!(
                    "Error: not run: the call hook renamed it to '{tool_name}', which is not offered"
                );
                (input, Planned::Answer(answer))
            }
            CallDecision::Skip { reason } => (input, Planned::Answer(reason)),
            CallDecision::Stop { reason } => {
                if halt.is_none() {
                    *halt = Some(Halt::Stop {
                        reason: reason.clone(),
                    });
                }
                (input, Planned::Answer(format!("Error: not run: {reason}")))
            }
        }
    }

    /// Runs the runnable calls of a turn in parallel and returns one outcome per call, in
    /// the plan's order.
    pub(super) async fn execute(
        &self,
        plan: Vec<PlannedCall>,
        registry: &ToolRegistry,
        turn: usize,
        events: Option<&mpsc::UnboundedSender<StreamEvent>>,
    ) -> Vec<Outcome> {
        let calls: Vec<ToolCall> = plan
            .iter()
            .filter_map(|p| match &p.action {
                Planned::Run(args) => Some(ToolCall::with_id(
                    p.id.clone(),
                    p.name.clone(),
                    args.clone(),
                )),
                Planned::Answer(_) => None,
            })
            .collect();
        let budget = Duration::from_secs(self.config.tool_timeout_secs);
        let mut invocations = Vec::new();
        if !calls.is_empty() {
            // One child context per turn, carrying the turn's deadline and result limit: the
            // registry enforces both (it owns timeouts and truncation), so a call past the
            // deadline ends as `ToolError::Timeout` and a long result arrives cut.
            // Cancelling the cycle's context cancels the turn too.
            let mut turn_ctx = self
                .context
                .child(&format!("turn-{turn}"))
                .with_deadline(tokio::time::Instant::now() + budget)
                .with_max_result_bytes(self.config.max_tool_result_bytes);
            if !self.config.tool_tags.is_empty() || self.config.active_tools.is_some() {
                // A tool that runs others (code mode's run) reaches only the tools the
                // tags and the active tools let the model see.
                let config = self.config.clone();
                let tools = registry.clone();
                turn_ctx = turn_ctx.with(toolhost_core::tools::Visible::new(move |name| {
                    tools
                        .entry(name)
                        .is_some_and(|e| super::select::allowed(&config, &e))
                }));
            }
            match events {
                None => invocations = registry.invoke_calls(calls, &turn_ctx).await,
                Some(events) => {
                    // Progress reports go to the event stream while the batch runs.
                    let names: std::collections::HashMap<String, String> = calls
                        .iter()
                        .map(|c| (c.id.clone(), c.name.clone()))
                        .collect();
                    let (ptx, mut prx) = mpsc::unbounded_channel();
                    turn_ctx = turn_ctx.with_progress(ptx);
                    let run = registry.invoke_calls(calls, &turn_ctx);
                    tokio::pin!(run);
                    let mut batch = Vec::new();
                    invocations = loop {
                        tokio::select! {
                            biased;
                            r = &mut run => break r,
                            n = prx.recv_many(&mut batch, 1024) => {
                                if n > 0 {
                                    forward_progress(&mut batch, &names, events);
                                }
                            }
                        }
                    };
                    while let Ok(p) = prx.try_recv() {
                        batch.push(p);
                    }
                    forward_progress(&mut batch, &names, events);
                }
            }
        }
        let mut by_id: std::collections::HashMap<String, toolhost_core::tools::ToolInvocation> =
            invocations
                .into_iter()
                .map(|inv| (inv.call_id.clone(), inv))
                .collect();
        plan.into_iter()
            .map(|p| match p.action {
                Planned::Answer(text) => Outcome {
                    id: p.id,
                    name: p.name,
                    output: Err(text),
                    kind: Some(NOT_RUN),
                    duration: Duration::ZERO,
                    fatal: None,
                },
                Planned::Run(_) => {
                    let Some(inv) = by_id.remove(&p.id) else {
                        // invoke_calls returns one invocation per call; this is defensive.
                        return Outcome {
                            id: p.id,
                            name: p.name.clone(),
                            output: Err(format!(
                                "Error: tool '{}' did not report a result",
                                p.name
                            )),
                            kind: Some("other"),
                            duration: Duration::ZERO,
                            fatal: None,
                        };
                    };
                    let kind = inv.output.as_ref().err().map(ToolError::kind);
                    let (text, fatal) = match inv.output {
                        Ok(out) => (Ok(out.render), None),
                        Err(ToolError::PermissionDenied(_, why))
                            if self.config.on_denied == OnDenied::Continue =>
                        {
                            (Err(format!("denied: {why}")), None)
                        }
                        Err(e) => {
                            let text = format!("Error: {e}");
                            let fatal = (!e.is_recoverable()).then_some(e);
                            (Err(text), fatal)
                        }
                    };
                    Outcome {
                        id: p.id,
                        name: p.name,
                        output: text,
                        kind,
                        duration: inv.duration,
                        fatal,
                    }
                }
            })
            .collect()
    }
}

/// Sends the progress reports of `batch` as events, the latest per call only (a tool
/// reporting faster than the stream is read cannot grow the event queue), and empties it.
fn forward_progress(
    batch: &mut Vec<toolhost_core::tools::ProgressEvent>,
    names: &std::collections::HashMap<String, String>,
    events: &mpsc::UnboundedSender<StreamEvent>,
) {
    let mut latest: Vec<toolhost_core::tools::ProgressEvent> = Vec::new();
    for p in batch.drain(..) {
        match latest.iter_mut().find(|l| l.call_id == p.call_id) {
            Some(l) => *l = p,
            None => latest.push(p),
        }
    }
    for p in latest {
        // Only calls of this batch are reported; anything else is not ours to show.
        let Some(name) = names.get(&p.call_id) else {
            continue;
        };
        let _ = events.send(StreamEvent::ToolExecutionProgress {
            id: p.call_id,
            tool_name: name.clone(),
            progress: p.progress,
            total: p.total,
            message: p
                .message
                .map(|m| cut_to(&m, MAX_PROGRESS_MESSAGE_BYTES).to_string()),
        });
    }
}

/// At most `max` bytes of `s`, cut on a character boundary.
fn cut_to(s: &str, max: usize) -> &str {
    toolhost_core::tools::render::head(s, max)
}
