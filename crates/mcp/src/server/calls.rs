//! The parts of [`McpServer`]'s handler that run a `tools/call`: which way it goes (a
//! task, by the tool's task support and the client's extensions; the session's own
//! client; a 2026-07-28 multi-round-trip round, or rounds then a task), the registry pipeline of the call as a
//! task of its own, and what a 2026-07-28 request is bound to (its sender and revision)
//! for its rounds (`rounds.rs`).

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    ProgressNotificationParam, ServerResult,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use toolhost_core::tools::escape::escape_line;
use toolhost_core::tools::{ToolCall, ToolContext, ToolError, ToolOutput};

use super::clients::identity;
use super::{McpServer, StopToken, TaskSupport, rounds, tasks};
use crate::content::block_to_mcp;

/// Whether the request is of the 2026-07-28 revision or later (stateless: its client
/// cannot be sent requests, it is asked through `input_required` results).
pub(super) fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}

impl McpServer {
    /// The registry pipeline for one `tools/call`, as a task of its own: `client` is
    /// who is asked (approvals, a wrapped server's requests back), progress goes to the
    /// request's progress token, and the request's cancellation cancels it.
    pub(super) fn call_future(
        &self,
        name: String,
        args: Value,
        client: crate::DownstreamClient,
        cancel: StopToken,
        context: &RequestContext<RoleServer>,
        who: &super::clients::Identity,
    ) -> impl std::future::Future<Output = super::tasks::CallEnd> + Send + 'static {
        let registry = self.registry.clone();
        let mut ctx = ToolContext::new(self.session.id.clone(), context.id.to_string())
            .with(who.caller.clone())
            .with(who.visible())
            .with_cancellation(cancel)
            .with(client)
            .with(self.session.gateway.log_sink());
        let mut forward = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (tx, mut rx) = mpsc::unbounded_channel();
            ctx = ctx.with_progress(tx);
            let peer: Peer<RoleServer> = context.peer.clone();
            forward = Some(tokio::spawn(async move {
                while let Some(ev) = rx.recv().await {
                    let mut p = ProgressNotificationParam::new(token.clone(), ev.progress);
                    p.total = ev.total;
                    p.message = ev.message;
                    if peer.notify_progress(p).await.is_err() {
                        break;
                    }
                }
            }));
        }
        let declares_output_schema = registry
            .entry(&name)
            .is_some_and(|e| e.metadata().output_schema.is_some());
        let call = ToolCall::with_id(format!("mcp-{}", context.id), name, args);
        // The call may run as a task of its own (a 2026-07-28 round): it stays in the
        // request's span.
        let span = tracing::Span::current();
        tracing::Instrument::instrument(
            async move {
                let inv = registry.invoke_call(call, &ctx).await;
                drop(ctx);
                if let Some(f) = forward {
                    // Let queued progress reach the client before the result.
                    let _ = tokio::time::timeout(Duration::from_millis(200), f).await;
                }
                match inv.output {
                    Ok(out) => {
                        super::tasks::CallEnd::ran(success_result(out, declares_output_schema))
                    }
                    Err(e) => {
                        super::tasks::CallEnd::failed(error_result(e.kind(), e.to_string()), &e)
                    }
                }
            },
            span,
        )
    }

    /// The span of one request of a client (OpenTelemetry's MCP conventions): a server
    /// span named `METHOD NAME`, continuing the trace of the request's
    /// `_meta.traceparent`. A name the registry does not know is `(unknown)`: names come
    /// from clients, and span names and attributes must not grow without bound.
    pub(super) fn request_span(
        &self,
        method: &'static str,
        name: &str,
        context: &RequestContext<RoleServer>,
    ) -> tracing::Span {
        let span = tracing::info_span!(
            "mcp.request",
            otel.name = tracing::field::Empty,
            otel.kind = "server",
            mcp.method.name = method,
            gen_ai.tool.name = tracing::field::Empty,
            mcp.protocol.version = tracing::field::Empty,
            jsonrpc.request.id = %context.id,
        );
        // Without a subscriber that wants the span (no traces exported) nothing more is
        // done for it: no lookup, no formatting, no trace context parsed.
        if span.is_disabled() {
            return span;
        }
        let name = if self.registry.entry(name).is_some() {
            name
        } else {
            "(unknown)"
        };
        span.record("otel.name", format!("{method} {name}"));
        span.record("gen_ai.tool.name", name);
        if let Some(v) = context.protocol_version() {
            span.record("mcp.protocol.version", v.as_str());
        }
        crate::trace::continue_from(&span, &context.meta);
        span
    }

    pub(super) fn rounds_or_refuse(&self) -> Result<Arc<rounds::Rounds>, ErrorData> {
        self.rounds.clone().ok_or_else(|| {
            ErrorData::internal_error(
                "multi-round requests are unavailable on this server (see its log)",
                None,
            )
        })
    }
}

/// The MCP result of a successful call: the output's content blocks as they are (else
/// its render text as one text block), and `structuredContent`: the canonical value as it
/// is when the tool declares an output schema (the registry checked it conforms), else
/// the canonical value with non-objects wrapped as `{"result": value}`.
pub(super) fn success_result(out: ToolOutput, declares_output_schema: bool) -> CallToolResult {
    let content = if out.content.is_empty() {
        vec![ContentBlock::text(out.render)]
    } else {
        out.content.iter().map(block_to_mcp).collect()
    };
    let structured = match out.canonical {
        Value::Object(m) => Value::Object(m),
        other if declares_output_schema => other,
        other => json!({ "result": other }),
    };
    let mut r = CallToolResult::success(content);
    r.structured_content = Some(structured);
    // The source's `_meta` as it gave it (bounded by the source: crate::meta).
    r.meta = out.meta.map(rmcp::model::MetaObject);
    r
}

/// The MCP result of a call that failed: the message as text (`Error: ...`) and
/// `structuredContent: {"error": kind, "message": ...}`.
pub(super) fn error_result(kind: &str, message: String) -> CallToolResult {
    let mut r = CallToolResult::error(vec![ContentBlock::text(format!("Error: {message}"))]);
    r.structured_content = Some(json!({"error": kind, "message": message}));
    r
}

impl McpServer {
    /// `tools/call`, inside its span (see `call_tool`).
    pub(super) async fn call_tool_traced(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let name = request.name.to_string();
        let who = identity(&context);
        if !who.sees(&name) {
            // Exactly what an unknown name gets: a client cannot tell a tool it may not
            // see from one that does not exist.
            tracing::info!(client = %who.id(), tool = %escape_line(&name), "a client called a tool outside its `tools`");
            let e = ToolError::NotFound(name);
            return Ok(CallToolResponse::Complete(error_result(
                e.kind(),
                e.to_string(),
            )));
        }
        let support = self.task_support.get(&name).copied().unwrap_or_default();
        let takes_tasks = tasks::client_takes_tasks(&context);
        let stateless = is_stateless(&context);
        let as_task = match support {
            // Refused before anything runs: the call could not be answered otherwise.
            TaskSupport::Required if !takes_tasks => return Err(tasks::tasks_required(&name)),
            // A 2026-07-28 client is asked in rounds first, and the task is made on the
            // request that does not end in one (below). Another client's call is a task
            // at once; its questions are the task's, and a `requestState` cannot belong
            // to it and is ignored.
            TaskSupport::Required => !stateless || self.rounds.is_none(),
            TaskSupport::Optional => takes_tasks && request.request_state.is_none(),
            TaskSupport::Forbidden => false,
        };
        if as_task {
            return self
                .call_maybe_as_task(name, args, &context, support, &who)
                .await;
        }
        if !stateless {
            // The client itself travels with the call: a wrapped server's sampling or
            // elicitation request, or an approval, is asked of this client.
            let client =
                crate::DownstreamClient::new(context.peer.clone(), self.session.id.clone());
            let cancel = context.ct.child_token();
            let result = self
                .call_future(name, args, client, cancel, &context, &who)
                .await
                .result;
            return Ok(CallToolResponse::Complete(result));
        }
        let rounds = self.rounds_or_refuse()?;
        // A tool that runs only as a task: rounds while its call asks before it has run
        // [`tasks::TASK_AFTER`], then a task (SEP-2663's composition: the input gathered
        // in rounds, the task made on the final one).
        let required = support == TaskSupport::Required;
        if required && request.request_state.is_none() && !self.tasks.room_for(who.id()) {
            return Err(tasks::no_room_for_task(&name));
        }
        let binding = rounds::binding(who.id(), "tools/call", &name, &args);
        let capabilities = context.meta.client_capabilities().unwrap_or_default();
        let step = rounds
            .run(
                binding,
                request.request_state.as_deref(),
                request.input_responses.as_ref(),
                capabilities,
                &self.session.id,
                who.id(),
                &context.ct,
                required.then_some(tasks::TASK_AFTER),
                |client, cancel| {
                    let call = self.call_future(name, args, client, cancel, &context, &who);
                    async move {
                        let end = call.await;
                        match end.failure {
                            // A task's call that could not be carried out fails the task.
                            Some(failure) if required => Err(failure),
                            _ => Ok(ServerResult::CallToolResult(end.result)),
                        }
                    }
                },
            )
            .await?;
        match step {
            rounds::Step::Done(done) => match *done {
                ServerResult::CallToolResult(r) => Ok(CallToolResponse::Complete(r)),
                _ => Err(ErrorData::internal_error(
                    "tools/call produced another kind of result",
                    None,
                )),
            },
            rounds::Step::Input(input) => Ok(CallToolResponse::InputRequired(input)),
            rounds::Step::Running(running) => {
                let capabilities = context.client_capabilities().unwrap_or_default();
                self.carry_on_as_task(who.id(), running, capabilities, &context.ct)
                    .await
            }
        }
    }
}
