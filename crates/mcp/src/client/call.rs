//! One `tools/call` on the wire: its rounds (a 2026-07-28 server's `input_required`
//! questions are answered and the call sent again, at most [`MAX_INPUT_ROUNDS`] times; a
//! task the server makes of it is followed to its end under the same deadline), the
//! route its progress and the server's questions back take while it is in flight, its
//! trace context in `_meta`, and `notifications/cancelled` when its caller gives up
//! ([`InFlight`]).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::Value;
use toolhost_core::tools::{ToolContext, ToolOutput};

use super::McpClient;
use super::rounds::{MAX_INPUT_ROUNDS, Round};
use super::routes::{Pending, Route};
use crate::error::McpClientError;
use crate::info::output_from_result;

impl McpClient {
    pub(super) async fn call_tool_once(
        &self,
        name: &str,
        args: Value,
        ctx: &ToolContext,
        deadline: tokio::time::Instant,
    ) -> Result<ToolOutput, McpClientError> {
        let arguments = match args {
            Value::Object(m) => Some(m),
            Value::Null => None,
            other => {
                return Err(McpClientError::InvalidArguments {
                    tool: name.to_string(),
                    message: format!("MCP tool arguments must be a JSON object, got {other}"),
                });
            }
        };
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = arguments;
        // A server of the 2026-07-28 revision may answer `input_required`: its questions
        // are answered as its requests back are (the client of `serve` whose call it is,
        // or the person at the terminal), and the call is sent again with the answers,
        // at most `MAX_INPUT_ROUNDS` times.
        // A task the server makes of the call is followed to its end by the same deadline
        // (client/tasks.rs).
        for _ in 0..=MAX_INPUT_ROUNDS {
            match self
                .call_tool_round(name, params.clone(), ctx, deadline)
                .await?
            {
                Round::Complete(result) => {
                    self.shared.failures.store(0, Ordering::Relaxed);
                    return output_from_result(&self.cfg.server, name, result);
                }
                Round::Task(task) => {
                    let result = self.follow_task(name, task, deadline, ctx).await?;
                    self.shared.failures.store(0, Ordering::Relaxed);
                    return output_from_result(&self.cfg.server, name, result);
                }
                Round::Input(input) => {
                    let answering = self.answer_inputs(input.input_requests, ctx);
                    let Ok(answers) = tokio::time::timeout_at(deadline, answering).await else {
                        return Err(self.out_of_time(name));
                    };
                    params.input_responses = Some(answers);
                    params.request_state = input.request_state;
                }
            }
        }
        Err(McpClientError::Protocol {
            server: self.cfg.server.clone(),
            what: format!("tools/call {name}"),
            message: format!(
                "the server asked for input more than {} times; gave up",
                MAX_INPUT_ROUNDS
            ),
        })
    }

    /// One round of a `tools/call`: the server's result, or its questions.
    async fn call_tool_round(
        &self,
        name: &str,
        params: CallToolRequestParams,
        ctx: &ToolContext,
        deadline: tokio::time::Instant,
    ) -> Result<Round, McpClientError> {
        let what = format!("tools/call {name}");
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return Err(self.out_of_time(name));
        }
        let peer = self.peer().await?;
        // The call's trace goes on into the server (`_meta.traceparent`).
        let mut params = params;
        let mut meta = params.meta.take().unwrap_or_default();
        crate::trace::inject_current(&mut meta);
        params.meta = (!meta.0.is_empty()).then_some(meta);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // The call is in flight from the moment its request may reach the server: a fast
        // server asks its question back (elicitation, sampling) before `send_request`
        // returns the progress token rmcp picked. So the call's route is filed under a
        // token of toolhost's own first (not one rmcp hands out: a string, where rmcp's
        // are numbers) and moved to rmcp's token in one step under the lock.
        let route = || Route::of(ctx);
        let pending = Pending::file(&self.shared.progress, route());
        let sent = peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(left))
            .await;
        if let Ok(h) = &sent {
            let mut map = self
                .shared
                .progress
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let filed = map.remove(&pending.token);
            map.insert(h.progress_token.clone(), filed.unwrap_or_else(route));
        }
        drop(pending);
        let handle = match sent {
            Ok(h) => h,
            Err(e) => return Err(self.request_error(e, &what).await),
        };
        let mut guard = InFlight {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
            token: handle.progress_token.clone(),
            progress: self.shared.progress.clone(),
            grace: false,
        };
        let result = tokio::select! {
            r = handle.await_response() => r,
            _ = ctx.cancellation_token().cancelled() => {
                // Dropping the guard sends notifications/cancelled.
                drop(guard);
                return Err(McpClientError::Cancelled {
                    server: self.cfg.server.clone(),
                    tool: name.to_string(),
                });
            }
        };
        // Answered or timed out (rmcp already sent notifications/cancelled): nothing to
        // cancel any more. rmcp hands each notification to its own task, so a progress
        // notification sent just before the answer may be handled just after it: the
        // route stays a moment longer.
        guard.id = None;
        guard.grace = result.is_ok();
        drop(guard);
        let result = match result {
            Ok(r) => r,
            Err(e) => return Err(self.request_error(e, &what).await),
        };
        let result: CallToolResult = match result {
            ServerResult::CallToolResult(r) => r,
            ServerResult::EmptyResult(_) => CallToolResult::default(),
            ServerResult::InputRequiredResult(r) => return Ok(Round::Input(r)),
            ServerResult::CreateTaskResult(t) => return Ok(Round::Task(t)),
            other => {
                return Err(McpClientError::Protocol {
                    server: self.cfg.server.clone(),
                    what,
                    message: format!("unexpected reply {other:?}"),
                });
            }
        };
        Ok(Round::Complete(result))
    }

    /// The error of a call whose deadline passed between its requests.
    fn out_of_time(&self, name: &str) -> McpClientError {
        McpClientError::Timeout {
            server: self.cfg.server.clone(),
            what: format!("tools/call {name}"),
            timeout: self.cfg.timeout,
        }
    }
}

/// One request in flight: forgets its progress route when done and, if still armed when
/// dropped (caller cancelled or gave up), sends `notifications/cancelled`.
struct InFlight {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    token: ProgressToken,
    progress: Arc<Mutex<HashMap<ProgressToken, Route>>>,
    /// Keep the progress route for [`PROGRESS_GRACE`] after the answer.
    grace: bool,
}

/// How long the progress route of a call that reported progress outlives its answer, for
/// notifications the server sent just before it (rmcp handles each notification in its own
/// task, concurrently with the answer; on a loaded machine that task can run well after
/// it). A call that reported no progress loses its route at once, so only calls that
/// report progress wait (the server of `serve` sends the result once the route is gone).
const PROGRESS_GRACE: Duration = Duration::from_millis(100);

impl Drop for InFlight {
    fn drop(&mut self) {
        let rt = tokio::runtime::Handle::try_current().ok();
        match (&rt, self.grace) {
            (Some(rt), true) => {
                let reported = {
                    let mut map = self.progress.lock().unwrap_or_else(|e| e.into_inner());
                    match map.get_mut(&self.token) {
                        Some(route) if route.reported => {
                            route.answered = true;
                            true
                        }
                        _ => {
                            map.remove(&self.token);
                            false
                        }
                    }
                };
                if reported {
                    let (progress, token) = (self.progress.clone(), self.token.clone());
                    rt.spawn(async move {
                        tokio::time::sleep(PROGRESS_GRACE).await;
                        progress
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .remove(&token);
                    });
                }
            }
            _ => {
                self.progress
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&self.token);
            }
        }
        if let Some(id) = self.id.take() {
            let peer = self.peer.clone();
            if let Some(rt) = rt {
                rt.spawn(async move {
                    let _ = peer
                        .notify_cancelled(CancelledNotificationParam::new(
                            Some(id),
                            Some("cancelled by the host".into()),
                        ))
                        .await;
                });
            }
        }
    }
}
