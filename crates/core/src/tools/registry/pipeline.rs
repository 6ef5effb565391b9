//! The invocation pipeline: `invoke*` runs one call through the five stages (see the
//! [`registry`](super) docs and `docs/design.md`), and `invoke_calls` fans independent
//! calls out over tasks.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::Value;

use super::call::{ToolCall, ToolInvocation};
use super::entry::ToolEntry;
use super::validate::{validation_error, without_optional_nulls};
use super::{ToolRegistry, read};
use crate::tools::base::{ToolContext, ToolOutput, ToolSource};
use crate::tools::content::{ContentBlock, ContentLimits, check_content};
use crate::tools::error::ToolError;
use crate::tools::escape::escape_line;
use crate::tools::events::{ResultDigest, ToolEvent};
use crate::tools::render::truncate_render;
use crate::tools::share::Caller;

/// The next invocation number ([`ToolEvent::invocation`]): one counter for the whole
/// process, so the numbers stay unique even across registries sharing a listener.
static NEXT_INVOCATION: AtomicU64 = AtomicU64::new(1);

/// Emits the `Completed` event of a call whose future is dropped before it finished (the
/// caller stopped waiting: an aborted task, a timed-out `select!`), so every invocation
/// ends in a `Completed` event and an audit record, and a listener's pending state for
/// it is released. Disarmed on the normal path; costs nothing when nobody listens.
struct Unfinished<'a> {
    registry: &'a ToolRegistry,
    invocation: u64,
    call_id: &'a str,
    tool: &'a str,
    input: &'a Value,
    ctx: &'a ToolContext,
    source: Option<&'a ToolSource>,
    start: Instant,
    done: bool,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        // While unwinding (a listener panicked), calling the listeners again could abort.
        if self.done || std::thread::panicking() {
            return;
        }
        self.registry.emit(|| ToolEvent::Completed {
            call_id: self.call_id.to_string(),
            invocation: self.invocation,
            tool: self.tool.to_string(),
            session: self.ctx.session_id().to_string(),
            client: self.ctx.get::<Caller>().map(|c| c.id.to_string()),
            source: self.source.cloned(),
            input: self.input.clone(),
            ok: false,
            error_kind: Some("cancelled".into()),
            error: Some(format!(
                "the call of '{}' was abandoned: its caller stopped waiting before it finished",
                self.tool
            )),
            duration: self.start.elapsed(),
            truncated: false,
            result: None,
            output: None,
        });
    }
}

impl ToolRegistry {
    /// Invokes a tool by name with a default context and a generated call id.
    ///
    /// A name no tool has (after waiting for tools still loading) is
    /// `Err(ToolError::NotFound)`; anything else is `Ok` with the invocation, whose
    /// `output` holds the tool's result or error: `registry.invoke(name, args).await?`.
    /// Every attempt is recorded either way (stats, audit trail); use
    /// [`ToolRegistry::invoke_recorded`] to get the record of a failed lookup too.
    pub async fn invoke(&self, name: &str, args: Value) -> Result<ToolInvocation, ToolError> {
        let inv = self.invoke_recorded(name, args).await;
        if matches!(inv.output, Err(ToolError::NotFound(_))) {
            return Err(inv
                .output
                .err()
                .unwrap_or_else(|| ToolError::NotFound(name.to_string())));
        }
        Ok(inv)
    }

    /// Like [`ToolRegistry::invoke`], but always returns the invocation record, a failed
    /// lookup included (`output: Err(ToolError::NotFound)`): for callers that keep a
    /// record of every attempt.
    pub async fn invoke_recorded(&self, name: &str, args: Value) -> ToolInvocation {
        self.invoke_call(ToolCall::new(name, args), &ToolContext::default())
            .await
    }

    /// Runs one call through the whole pipeline. `ctx` is the caller's context; the call
    /// runs in `ctx.child(call_id)`.
    pub async fn invoke_call(&self, call: ToolCall, ctx: &ToolContext) -> ToolInvocation {
        // One span per call (OpenTelemetry's `execute_tool` convention): named after the
        // tool when the registry knows it (names come from models), with its outcome.
        // Without a subscriber that wants it (no traces exported) the span is disabled
        // and nothing else is done for it.
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = tracing::field::Empty,
            otel.kind = "internal",
            otel.status_code = tracing::field::Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = tracing::field::Empty,
            gen_ai.tool.call.id = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        if !span.is_disabled() {
            let tool = if self.entry(&call.name).is_some() {
                call.name.as_str()
            } else {
                "(unknown)"
            };
            span.record("otel.name", format!("execute_tool {tool}"));
            span.record("gen_ai.tool.name", tool);
        }
        let inv =
            tracing::Instrument::instrument(self.invoke_call_in_span(call, ctx), span.clone())
                .await;
        if span.is_disabled() {
            return inv;
        }
        span.record("gen_ai.tool.call.id", inv.call_id.as_str());
        match &inv.output {
            Ok(_) => {
                span.record("otel.status_code", "OK");
            }
            Err(e) => {
                span.record("otel.status_code", "ERROR");
                span.record("error.type", e.kind());
            }
        }
        inv
    }

    /// [`ToolRegistry::invoke_call`] inside its span.
    async fn invoke_call_in_span(&self, call: ToolCall, ctx: &ToolContext) -> ToolInvocation {
        let start = Instant::now();
        let ToolCall {
            id,
            name,
            arguments,
        } = call;
        let call_id = if id.is_empty() {
            format!(
                "call_{}",
                self.inner.next_id.fetch_add(1, Ordering::Relaxed)
            )
        } else {
            id
        };
        let invocation = NEXT_INVOCATION.fetch_add(1, Ordering::Relaxed);
        // Stage 1: lookup. While tools are still loading, an unknown name waits for
        // them (bounded; see `registry/loading.rs`).
        let call_ctx = ctx.child(&call_id);
        let mut entry = self.entry(&name);
        let mut unfinished = Unfinished {
            registry: self,
            invocation,
            call_id: &call_id,
            tool: &name,
            input: &arguments,
            ctx: &call_ctx,
            source: None,
            start,
            done: false,
        };
        let mut waited = None;
        if entry.is_none() && self.is_loading() {
            match self.wait_for_tool(&name, &call_ctx).await {
                Ok(e) => entry = e,
                Err(e) => waited = Some(e),
            }
        }
        unfinished.source = entry.as_ref().map(|e| &e.metadata.source);
        let (output, truncated) = match (&entry, waited) {
            (_, Some(e)) => (Err(e), false),
            (None, None) => (Err(ToolError::NotFound(name.clone())), false),
            (Some(entry), None) => {
                self.run_pipeline(entry, (&call_id, invocation), &arguments, &call_ctx)
                    .await
            }
        };
        unfinished.done = true;
        drop(unfinished);
        let duration = start.elapsed();
        if let Some(entry) = &entry {
            entry.stats.record(output.is_ok(), duration);
        }
        self.emit_wanting(|wants_output| ToolEvent::Completed {
            call_id: call_id.clone(),
            invocation,
            tool: name.clone(),
            session: call_ctx.session_id().to_string(),
            client: call_ctx.get::<Caller>().map(|c| c.id.to_string()),
            source: entry.as_ref().map(|e| e.metadata.source.clone()),
            input: arguments.clone(),
            ok: output.is_ok(),
            error_kind: output.as_ref().err().map(|e| e.kind().to_string()),
            error: output.as_ref().err().map(|e| e.to_string()),
            duration,
            truncated,
            result: output.as_ref().ok().map(ResultDigest::of),
            output: wants_output
                .then(|| output.as_ref().ok().map(|o| Arc::new(o.canonical.clone())))
                .flatten(),
        });
        ToolInvocation {
            call_id,
            tool_name: name,
            input: arguments,
            output,
            duration,
            truncated,
            extensions: call_ctx.take_results(),
        }
    }

    async fn run_pipeline(
        &self,
        entry: &Arc<ToolEntry>,
        (call_id, invocation): (&str, u64),
        arguments: &Value,
        ctx: &ToolContext,
    ) -> (Result<ToolOutput, ToolError>, bool) {
        // Stage 2: validation. Models often send `null` or nothing for argument-less
        // tools; treat that as `{}` and let the schema decide.
        let empty = Value::Object(Default::default());
        let mut args = if arguments.is_null() {
            &empty
        } else {
            arguments
        };
        // Each stage is a span of its own under the call's (traces, host/src/telemetry.rs).
        let invalid = tracing::info_span!("validate").in_scope(|| validation_error(entry, args));
        // Optional parameters given as `null` are left out when that makes the call valid.
        let nulls_dropped;
        if let Some(why) = invalid {
            match without_optional_nulls(entry, args) {
                Some(fixed) => {
                    nulls_dropped = fixed;
                    args = &nulls_dropped;
                }
                None => {
                    return (
                        Err(ToolError::InvalidArguments(entry.name.clone(), why)),
                        false,
                    );
                }
            }
        }

        // Stage 3: the permission gate (policy, hooks, approval; `registry/approval.rs`).
        let gate = self.gate(entry, (call_id, invocation), args, ctx);
        if let Err(e) =
            tracing::Instrument::instrument(gate, tracing::info_span!("permission")).await
        {
            return (Err(e), false);
        }
        let (default_timeout, max_bytes, content_limits, slots) = {
            let s = read(&self.inner.settings);
            (
                s.default_timeout,
                s.max_result_bytes,
                s.content_limits,
                s.slots.clone(),
            )
        };

        // Stage 4: execution in a fair share of the slots, under timeout and cancellation.
        // The call's budget: the tool's own timeout (else the registry default), cut to the
        // caller's deadline. Waiting for a slot counts against the caller's deadline.
        let own = entry.metadata.timeout.unwrap_or(default_timeout);
        let deadline = ctx.deadline();
        let far = tokio::time::Instant::now() + own;
        let caller_deadline = deadline.unwrap_or(far).min(far);
        let orchestrates = entry.metadata.orchestrates;
        let _slot = tokio::select! {
            slot = slots.acquire(ctx.get::<Caller>()), if !orchestrates => Some(slot),
            () = std::future::ready(()), if orchestrates => None,
            _ = ctx.cancellation_token().cancelled() => {
                return (Err(ToolError::Cancelled(entry.name.clone())), false);
            }
            _ = tokio::time::sleep_until(caller_deadline), if deadline.is_some() => {
                let budget = caller_budget(deadline, own);
                return (Err(ToolError::Timeout(entry.name.clone(), budget)), false);
            }
        };
        if ctx.is_cancelled() {
            return (Err(ToolError::Cancelled(entry.name.clone())), false);
        }
        self.emit(|| ToolEvent::Started {
            call_id: call_id.to_string(),
            invocation,
            tool: entry.name.clone(),
            input: args.clone(),
        });
        // The call's one deadline, owned here: the tool's timeout from now, cut to the
        // caller's. A tool that keeps it sees it in its context and stops itself there
        // (its own error says which limit); any other is stopped by this timer.
        let now = tokio::time::Instant::now();
        let call_deadline = deadline.map_or(now + own, |d| d.min(now + own));
        let timeout = call_deadline.saturating_duration_since(now);
        // A tool that keeps the deadline gets it in its own copy of the context; any
        // other runs in the caller's context, as it is, under the timer below (no copy
        // on the native path).
        let keeper_ctx;
        let call_ctx = if entry.metadata.keeps_deadline {
            keeper_ctx = ctx.clone().with_deadline(call_deadline);
            &keeper_ctx
        } else {
            ctx
        };
        // A WASM tool records the fuel its call used on this span.
        let exec_span =
            tracing::info_span!("execute", toolhost.wasm.fuel_used = tracing::field::Empty);
        let exec = AssertUnwindSafe(tracing::Instrument::instrument(
            entry.tool.execute(args.clone(), call_ctx),
            exec_span,
        ))
        .catch_unwind();
        let timer = async {
            if entry.metadata.keeps_deadline {
                Ok(exec.await)
            } else {
                tokio::time::timeout_at(call_deadline, exec).await
            }
        };
        let result = tokio::select! {
            r = timer => match r {
                // The tool's own deadline error speaks of the call's budget, as this
                // timer would have.
                Ok(Ok(Err(ToolError::Timeout(name, _)))) => Err(ToolError::Timeout(name, timeout)),
                Ok(Ok(res)) => res,
                Ok(Err(panic)) => {
                    let msg = panic_message(&panic);
                    tracing::error!(tool = %entry.name, panic = %msg, "tool panicked");
                    Err(ToolError::Panicked(entry.name.clone(), msg))
                }
                Err(_) => {
                    // Tell the tool to stop whatever it still runs in the background.
                    ctx.cancellation_token().cancel();
                    Err(ToolError::Timeout(entry.name.clone(), timeout))
                }
            },
            _ = ctx.cancellation_token().cancelled() => Err(ToolError::Cancelled(entry.name.clone())),
        };

        // Stage 5: render. The caller's limit applies when it is tighter. Error messages
        // are bounded too: they carry text from the tool (a guest's message, a server's).
        let max_bytes = ctx
            .max_result_bytes()
            .map_or(max_bytes, |m| m.min(max_bytes));
        let _render = tracing::info_span!("render").entered();
        match result.and_then(|out| check_output(entry, out, content_limits)) {
            Ok(mut out) => {
                let (render, mut truncated) = truncate_render(&out.render, max_bytes);
                out.render = render;
                // Text blocks are read by a model too (the MCP client's): each is cut like
                // the render text. Other blocks are bounded by the content limits.
                for block in &mut out.content {
                    if let ContentBlock::Text(t) = block
                        && t.text.len() > max_bytes
                    {
                        t.text = truncate_render(&t.text, max_bytes).0;
                        truncated = true;
                    }
                }
                (Ok(out), truncated)
            }
            Err(e) => (Err(bound_error(e, max_bytes)), false),
        }
    }

    /// Runs independent calls in parallel (one task each) with a default context. Results
    /// come back in input order; each call has its own timeout.
    pub async fn invoke_all(&self, calls: Vec<(String, Value)>) -> Vec<ToolInvocation> {
        let calls = calls
            .into_iter()
            .map(|(name, args)| ToolCall::new(name, args))
            .collect();
        self.invoke_calls(calls, &ToolContext::default()).await
    }

    /// Runs independent calls in parallel, each on its own task, in `ctx`. Results come
    /// back in input order. Dropping the returned future aborts the calls still running.
    pub async fn invoke_calls(
        &self,
        calls: Vec<ToolCall>,
        ctx: &ToolContext,
    ) -> Vec<ToolInvocation> {
        let mut calls = calls;
        if calls.len() == 1
            && let Some(c) = calls.pop()
        {
            return vec![self.invoke_call(c, ctx).await];
        }
        let n = calls.len();
        let mut fallback: Vec<(String, String, Value)> = Vec::with_capacity(n);
        let mut set = tokio::task::JoinSet::new();
        for (i, mut call) in calls.into_iter().enumerate() {
            if call.id.is_empty() {
                call.id = format!(
                    "call_{}",
                    self.inner.next_id.fetch_add(1, Ordering::Relaxed)
                );
            }
            fallback.push((call.id.clone(), call.name.clone(), call.arguments.clone()));
            let this = self.clone();
            let ctx = ctx.clone();
            set.spawn(async move { (i, this.invoke_call(call, &ctx).await) });
        }
        let mut slots: Vec<Option<ToolInvocation>> = (0..n).map(|_| None).collect();
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok((i, inv)) => {
                    if let Some(slot) = slots.get_mut(i) {
                        *slot = Some(inv);
                    }
                }
                // invoke_call catches tool panics; a join error means the task itself was
                // aborted or panicked outside the tool. The slot is filled below.
                Err(e) => tracing::error!(error = %e, "tool task failed"),
            }
        }
        slots
            .into_iter()
            .zip(fallback)
            .map(|(slot, (id, name, input))| {
                slot.unwrap_or_else(|| ToolInvocation {
                    call_id: id,
                    tool_name: name.clone(),
                    input,
                    output: Err(ToolError::ExecutionFailed(
                        name,
                        "the call's task ended unexpectedly".into(),
                    )),
                    duration: Duration::ZERO,
                    truncated: false,
                    extensions: http::Extensions::new(),
                })
            })
            .collect()
    }
}

pub(super) fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".into()
    }
}

/// Stage 5 checks of a successful output: its content blocks against the limits and the
/// format rules (over a limit: `LimitExceeded`; malformed: `ExecutionFailed`), and its
/// canonical value against the tool's output schema (`ExecutionFailed`). The tool's output
/// is not trusted: an MCP server or a plugin may send anything.
fn check_output(
    entry: &ToolEntry,
    out: ToolOutput,
    limits: ContentLimits,
) -> Result<ToolOutput, ToolError> {
    if let Err(e) = check_content(&out.content, limits) {
        let msg = format!("the tool's result was refused: {e}");
        return Err(if e.is_limit() {
            ToolError::LimitExceeded(entry.name.clone(), msg)
        } else {
            ToolError::ExecutionFailed(entry.name.clone(), msg)
        });
    }
    if let Some(validator) = &entry.output_validator {
        const MAX_REPORTED: usize = 3;
        let problems: Vec<String> = validator
            .iter_errors(&out.canonical)
            .take(MAX_REPORTED)
            .map(|e| {
                let path = e.instance_path().to_string();
                let at = if path.is_empty() {
                    "/".to_string()
                } else {
                    path
                };
                // The value itself is not quoted: it may be large or secret.
                format!(
                    "at '{}': {}",
                    escape_line(&at),
                    escape_line(&e.masked().to_string())
                )
            })
            .collect();
        if !problems.is_empty() {
            return Err(ToolError::ExecutionFailed(
                entry.name.clone(),
                format!(
                    "the tool's structured result does not match its declared output schema \
                     ({}); the result was withheld",
                    problems.join("; ")
                ),
            ));
        }
    }
    Ok(out)
}

/// The budget a caller's deadline left a call, for the timeout message: the time from now
/// to the deadline when it is the tighter bound, else the tool's own timeout.
fn caller_budget(deadline: Option<tokio::time::Instant>, own: Duration) -> Duration {
    deadline
        .map(|d| d.saturating_duration_since(tokio::time::Instant::now()))
        .map_or(own, |left| left.min(own))
}

/// `e` with its free-text message cut to `max` bytes (head and tail kept, on UTF-8
/// boundaries). The variants and their other fields are unchanged.
fn bound_error(e: ToolError, max: usize) -> ToolError {
    let cut = |m: String| {
        if m.len() <= max {
            m
        } else {
            truncate_render(&m, max).0
        }
    };
    match e {
        ToolError::ExecutionFailed(n, m) => ToolError::ExecutionFailed(n, cut(m)),
        ToolError::InvalidArguments(n, m) => ToolError::InvalidArguments(n, cut(m)),
        ToolError::PermissionDenied(n, m) => ToolError::PermissionDenied(n, cut(m)),
        ToolError::LimitExceeded(n, m) => ToolError::LimitExceeded(n, cut(m)),
        ToolError::McpError(m) => ToolError::McpError(cut(m)),
        ToolError::McpTimeout(m) => ToolError::McpTimeout(cut(m)),
        ToolError::McpNotInitialized(m) => ToolError::McpNotInitialized(cut(m)),
        ToolError::Other(m) => ToolError::Other(cut(m)),
        other => other,
    }
}
