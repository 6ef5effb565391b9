//! Following a wrapped server's task (the `io.modelcontextprotocol/tasks` extension,
//! SEP-2663) as toolhost's client: toolhost declares the extension, so a server may answer
//! a `tools/call` with a task instead of its result (for a tool that runs only as a task,
//! it must). The call then polls `tasks/get` until the task ends and returns its result as
//! if the server had answered at once; the task's questions (`input_required`) are
//! answered as a round's are ([`super::rounds`]) and sent with `tasks/update`.
//!
//! Bounded, since the server is not trusted:
//! - **time**: the whole call, rounds and task, gets the server's time budget
//!   (`timeout_secs`); at its end, or when the caller gives up, toolhost sends
//!   `tasks/cancel` and reports the timeout (or the cancellation);
//! - **polls**: no faster than [`MIN_POLL`] whatever `pollIntervalMs` says, no slower than
//!   [`MAX_POLL`];
//! - **questions**: at most [`super::rounds::MAX_INPUT_ROUNDS`] rounds of them a task;
//! - **results**: a completed task's `result` must be a tool result; a `failed` task's
//!   `error` is reported as the server's error.

use std::time::Duration;

use rmcp::model::{
    CallToolResult, CancelTaskParams, CreateTaskResult, GetTaskParams, TaskPayload,
    UpdateTaskParams,
};
use rmcp::service::{Peer, RoleClient};
use tokio::time::Instant;
use toolhost_core::tools::ToolContext;

use super::McpClient;
use crate::error::McpClientError;

/// The shortest pause between two polls of a task.
pub(crate) const MIN_POLL: Duration = Duration::from_millis(100);
/// The longest pause between two polls of a task.
pub(crate) const MAX_POLL: Duration = Duration::from_secs(5);
/// How long toolhost waits for the server to take a `tasks/cancel` it sends on giving up.
const CANCEL_WAIT: Duration = Duration::from_secs(2);

/// The pause before the next poll, from the server's suggestion.
fn poll_pause(suggested_ms: Option<u64>) -> Duration {
    suggested_ms
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_millis(500))
        .clamp(MIN_POLL, MAX_POLL)
}

/// The most characters of a server's text (a task id, an error message) put in an error.
const MAX_TEXT: usize = 500;

/// `text` from the server, cut to [`MAX_TEXT`] characters and escaped onto one line.
fn clip(text: &str) -> String {
    let cut: String = text.chars().take(MAX_TEXT).collect();
    toolhost_core::tools::escape::escape_line(&cut).into_owned()
}

/// Cancels the task when dropped while armed (the call was given up or timed out).
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    task: Option<String>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(task) = self.task.take() else {
            return;
        };
        let peer = self.peer.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { cancel(&peer, task).await });
        }
    }
}

/// Sends `tasks/cancel` for `task`, waiting at most [`CANCEL_WAIT`]. Best effort: the
/// server may be gone, and it ends its task at its own TTL.
async fn cancel(peer: &Peer<RoleClient>, task: String) {
    let _ = tokio::time::timeout(CANCEL_WAIT, peer.cancel_task(CancelTaskParams::new(task))).await;
}

impl McpClient {
    /// Follows the task `created` of the call of `name` until it ends, by `deadline`.
    pub(super) async fn follow_task(
        &self,
        name: &str,
        created: CreateTaskResult,
        deadline: Instant,
        ctx: &ToolContext,
    ) -> Result<CallToolResult, McpClientError> {
        let server = self.cfg.server.clone();
        let what = format!("tools/call {name} (task {})", clip(&created.task.task_id));
        let protocol = |message: String| McpClientError::Protocol {
            server: server.clone(),
            what: what.clone(),
            message,
        };
        let peer = self.peer().await?;
        let id = created.task.task_id.clone();
        // Armed until the task ends on its own: a call dropped on the way (the registry's
        // deadline, the caller gone) cancels it from a spawned task.
        let mut armed = CancelOnDrop {
            peer: peer.clone(),
            task: Some(id.clone()),
        };
        let mut pause = poll_pause(created.task.poll_interval_ms);
        let mut rounds = 0;
        let mut ended = false;
        let follow = async {
            loop {
                tokio::time::sleep(pause).await;
                let got = match peer.get_task(GetTaskParams::new(id.clone())).await {
                    Ok(got) => got.task,
                    Err(e) => return Err(self.request_error(e, &what).await),
                };
                if got.task.task_id != id {
                    return Err(protocol(format!(
                        "tasks/get answered about another task ({})",
                        clip(&got.task.task_id)
                    )));
                }
                pause = poll_pause(got.task.poll_interval_ms);
                match got.payload {
                    TaskPayload::Working => {}
                    TaskPayload::InputRequired { input_requests } => {
                        rounds += 1;
                        if rounds > super::rounds::MAX_INPUT_ROUNDS {
                            return Err(protocol(format!(
                                "the task asked for input more than {} times; gave up and \
                                 cancelled it",
                                super::rounds::MAX_INPUT_ROUNDS
                            )));
                        }
                        let answers = self.answer_inputs(Some(input_requests), ctx).await;
                        let params = UpdateTaskParams::new(id.clone(), answers);
                        if let Err(e) = peer.update_task(params).await {
                            return Err(self.request_error(e, &what).await);
                        }
                        pause = MIN_POLL;
                    }
                    TaskPayload::Completed { result } => {
                        ended = true;
                        return serde_json::from_value(serde_json::Value::Object(result)).map_err(
                            |e| protocol(format!("the task's result is not a tool result: {e}")),
                        );
                    }
                    TaskPayload::Failed { error } => {
                        ended = true;
                        let message = error
                            .get("message")
                            .and_then(|m| m.as_str())
                            .map(clip)
                            .unwrap_or_else(|| "the task failed, giving no message".into());
                        return Err(protocol(format!("the task failed: {message}")));
                    }
                    TaskPayload::Cancelled => {
                        ended = true;
                        return Err(protocol("the server cancelled the task".into()));
                    }
                    // `TaskPayload` is non-exhaustive: a status added later is polled again.
                    _ => {}
                }
            }
        };
        // One deadline and one cancellation for the whole following: the pauses, the
        // polls, the questions and the answers.
        let outcome = tokio::select! {
            r = tokio::time::timeout_at(deadline, follow) => r.unwrap_or_else(|_| {
                Err(McpClientError::Timeout {
                    server: server.clone(),
                    what: what.clone(),
                    timeout: self.cfg.timeout,
                })
            }),
            () = ctx.cancellation_token().cancelled() => Err(McpClientError::Cancelled {
                server: server.clone(),
                tool: name.to_string(),
            }),
        };
        // Given up (the deadline, the caller, the server's misbehaviour): the task is
        // cancelled before the call returns, so a process about to exit (`toolhost call`)
        // still sends it; at most [`CANCEL_WAIT`].
        if let Some(task) = armed.task.take().filter(|_| !ended) {
            cancel(&peer, task).await;
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_poll_interval_is_kept_within_bounds() {
        assert_eq!(poll_pause(Some(0)), MIN_POLL);
        assert_eq!(poll_pause(Some(u64::MAX)), MAX_POLL);
        assert_eq!(poll_pause(Some(250)), Duration::from_millis(250));
        assert_eq!(poll_pause(None), Duration::from_millis(500));
    }
}
