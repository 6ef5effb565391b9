//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) for long tool calls: a
//! `tools/call` from a client that declared the extension (for its session, or in the
//! request's `_meta`) that is still running after [`TASK_AFTER`] becomes a task: the
//! client gets a `CreateTaskResult` at once and polls `tasks/get`, which carries the
//! result once the call is done; `tasks/cancel` stops the call (its status settles to
//! `cancelled`). A call that ends sooner is answered as usual, so quick tools never pay
//! for a task. rmcp's [`TaskManager`] keeps the tasks' states and expiry (5 minutes). A
//! task whose call could not be carried out (the link to the wrapped server failed, its
//! request was refused with a protocol error) ends `failed` with the error; a tool that
//! ran and reported an error ends `completed` with `isError`.
//!
//! What this adds to it:
//! - **Bounds.** [`TASK_SHARE`]: [`MAX_TASKS`] tasks alive in the shared pool, at most
//!   [`MAX_TASKS_PER_CLIENT`] per client, and beyond a full pool [`TASK_RESERVE`] more for
//!   each client, up to twice the pool: one client's tasks never leave another without
//!   room. Beyond them the call is simply answered when it ends, as for a client without
//!   the extension.
//! - **Ownership.** A task is seen, updated and cancelled only by the client that made it
//!   (its bearer token, else its session or its address, as for request states). Any
//!   other client is told the task is unknown, as for an id that never existed, so ids
//!   cannot be probed.
//! - **One replica.** A task lives in the process that runs it: behind a load balancer
//!   a client's `tasks/get` must reach that replica (docs/deploy.md).
//!
//! **Per tool.** The operator may set how a served tool runs ([`TaskSupport`], MCP's
//! `execution.taskSupport`; `[serve] task_support` in `toolhost.toml`): `optional` (the
//! default) as above, by the call's duration; `required`, always a task, and refused
//! with `-32021` (Missing Required Client Capability, naming the extension in
//! `data.requiredCapabilities`) to a client that does not take tasks, before anything
//! runs; `forbidden`, never a task (its questions go to the client as for a client
//! without the extension). A required call for which the bounds leave no room is
//! refused before it runs, too: it cannot be answered any other way.
//!
//! A required call is made a task at once, except for a 2026-07-28 client, which is
//! asked in rounds first (SEP-2663's composition of the two: a tool gathers its input in
//! `input_required` rounds, then the request of the final round is answered with the
//! task). Each request of such a call (the first, each retry) runs until the call asks,
//! ends or has run [`TASK_AFTER`]: a question is a round; otherwise the request gets the
//! `CreateTaskResult` (of a task already done, if the call ended), and the call's later
//! questions are the task's `inputRequests` (`McpServer::carry_on_as_task`).
//!
//! **Questions.** A call that asks its client something (toolhost's approval, a wrapped
//! server's elicitation, sampling or roots request) becomes a task at once, if it is not
//! one yet (a required call's questions of a 2026-07-28 client are rounds until then): the question is the task's `inputRequests` (status `input_required`), the
//! client answers with `tasks/update`, and the call goes on ([`TaskAsker`]). Several
//! questions at once are pending together and may be answered one at a time. When no
//! task can be made (the bounds), the question is refused as for a client that takes no
//! elicitations.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResult, ClientCapabilities, CreateTaskResult, ErrorData, GetTaskResult, InputResponses,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use toolhost_core::tools::{Share, ToolError};

use crate::task_asker::TaskAsker;

/// How long a call of a task-capable client runs before it becomes a task.
pub const TASK_AFTER: Duration = Duration::from_millis(500);

/// Tasks alive (running or kept for polling) in one process, at most.
pub const MAX_TASKS: usize = 256;

/// Tasks alive of one client, at most.
pub const MAX_TASKS_PER_CLIENT: usize = 32;

/// Tasks each client may still make when the pool is full.
pub const TASK_RESERVE: usize = 4;

/// How tasks are shared by clients (`toolhost_core::tools::share`).
pub const TASK_SHARE: Share = Share {
    pool: MAX_TASKS,
    per_client: MAX_TASKS_PER_CLIENT,
    reserve: TASK_RESERVE,
    ceiling: MAX_TASKS * 2,
};

/// How a served tool may run as a task (MCP's `execution.taskSupport`), as the operator
/// sets it per tool (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never a task: answered when it ends, whatever the client takes.
    Forbidden,
    /// A task when the client takes tasks and the call outlives [`TASK_AFTER`] or asks.
    #[default]
    Optional,
    /// Always a task (a 2026-07-28 client is asked in rounds first); refused to a client
    /// that does not take tasks.
    Required,
}

/// The error a client that does not take tasks gets for a tool that runs only as one:
/// `-32021`, with the extension it must declare in `data.requiredCapabilities` (the
/// shape of the client capabilities).
pub(crate) fn tasks_required(tool: &str) -> ErrorData {
    let mut e = ErrorData::missing_required_client_capability(
        ClientCapabilities::builder().enable_tasks().build(),
    );
    e.message = format!(
        "the tool `{tool}` runs only as a task: declare the {} extension to call it",
        rmcp::model::TASKS_EXTENSION_ID
    )
    .into();
    e
}

/// The error of a call that must be a task when the bounds leave no room for one.
pub(super) fn no_room_for_task(tool: &str) -> ErrorData {
    ErrorData::invalid_request(
        format!(
            "the tool `{tool}` runs only as a task, and no task can be made now (at most \
             {MAX_TASKS_PER_CLIENT} per client, {MAX_TASKS} shared): wait for one to end or \
             cancel one"
        ),
        None,
    )
}

/// The tasks of a server and who made each.
#[derive(Default)]
pub(crate) struct Tasks {
    manager: TaskManager,
    /// Task id → the principal that made it.
    owners: Mutex<HashMap<String, String>>,
}

/// A read-only view of the tasks alive in a server, for an operator's console: how many
/// each client holds. Cheap to clone; give it to the server with
/// [`McpServer::with_task_board`](super::McpServer::with_task_board).
#[derive(Clone, Default, Debug)]
pub struct TaskBoard(pub(super) std::sync::Arc<Tasks>);

impl TaskBoard {
    /// The tasks alive (running, or kept for polling), by the client that made them
    /// (its identity: a configured client's name, `token:N`, a digest of its session,
    /// its address), in name order.
    pub fn alive_by_client(&self) -> Vec<(String, usize)> {
        self.0.alive_by_owner().into_iter().collect()
    }
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").finish_non_exhaustive()
    }
}

/// Whether the client of `context` takes tasks.
pub(crate) fn client_takes_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks())
}

/// How one `tools/call` ended: the result the client gets, and, when the call could not
/// be carried out (the MCP link to the wrapped server failed, or the host did, as opposed
/// to a tool that ran and reported an error), that failure as a task's inlined `error`:
/// a task ends `failed` with it, `completed` with `isError` otherwise. Decided from the
/// typed [`ToolError`] where the call ends ([`CallEnd::failed`]), never read back from the
/// result's JSON.
#[derive(Debug)]
pub(crate) struct CallEnd {
    /// What the client is answered.
    pub(crate) result: CallToolResult,
    /// The failure that fails a task, if the call could not be carried out.
    pub(crate) failure: Option<ErrorData>,
}

impl CallEnd {
    /// A call that ran (it may have reported an error in `result`).
    pub(crate) fn ran(result: CallToolResult) -> Self {
        CallEnd {
            result,
            failure: None,
        }
    }

    /// A call that ended with `error`, answered as `result`.
    pub(crate) fn failed(result: CallToolResult, error: &ToolError) -> Self {
        let failure = matches!(
            error,
            ToolError::McpError(_)
                | ToolError::McpTimeout(_)
                | ToolError::McpNotInitialized(_)
                | ToolError::Io(_)
        )
        .then(|| ErrorData::internal_error(error.to_string(), None));
        CallEnd { result, failure }
    }
}

/// What became of a call of a task-capable client.
pub(crate) enum Outcome {
    /// It ended within [`TASK_AFTER`] (or no task could be made): its result.
    Done(CallToolResult),
    /// It runs on as a task.
    Task(CreateTaskResult),
}

impl Tasks {
    /// Runs `call` (already spawned as `handle`; `stop` stops it; `asker` holds its
    /// questions) for `owner`: its result if it ends within [`TASK_AFTER`] without asking
    /// anything, else a task that carries it on; a task at once when `at_once`. Until it
    /// is a task, the client's cancellation of its request (`request`) stops it.
    pub(crate) async fn run(
        &self,
        owner: String,
        mut handle: tokio::task::JoinHandle<CallEnd>,
        stop: super::StopToken,
        asker: &TaskAsker,
        at_once: bool,
        request: &super::StopToken,
    ) -> Result<Outcome, ErrorData> {
        let joined = |r: Result<CallEnd, tokio::task::JoinError>| {
            r.map(|end| end.result).map_err(|e| {
                ErrorData::internal_error(format!("the call ended abnormally: {e}"), None)
            })
        };
        // Until the call is a task, it belongs to this request: a request dropped on the
        // way (the client went away) stops it rather than leaving it running unseen.
        let orphan = stop.clone().drop_guard();
        let link = asker.link();
        if !at_once {
            tokio::select! {
                r = &mut handle => return joined(r).map(Outcome::Done),
                () = tokio::time::sleep(TASK_AFTER) => {}
                () = link.asked() => {}
                () = request.cancelled() => {
                    stop.cancel();
                    return joined(handle.await).map(Outcome::Done);
                }
            }
        }
        // A call that must be a task had its room checked before it started; should
        // others have taken the room since, it is answered when it ends.
        if !self.room_for(&owner) {
            link.refuse();
            return joined(handle.await).map(Outcome::Done);
        }
        orphan.disarm();
        let task = self.manager.spawn(TaskOptions::new(), move |tctx| {
            link.became(tctx.clone());
            Box::pin(async move {
                tokio::select! {
                    r = &mut handle => match r {
                        Ok(end) => match end.failure {
                            Some(e) => Err(TaskExit::Error(e)),
                            None => Ok(end.result),
                        },
                        Err(e) => Err(TaskExit::Error(ErrorData::internal_error(
                            format!("the call ended abnormally: {e}"),
                            None,
                        ))),
                    },
                    () = tctx.cancelled() => {
                        stop.cancel();
                        // The call stops at its next cancellation point (the sandbox's
                        // next epoch tick, the wrapped server's cancel).
                        let _ = handle.await;
                        Err(TaskExit::Cancelled)
                    }
                }
            })
        });
        self.owners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(task.task_id.clone(), owner);
        Ok(Outcome::Task(CreateTaskResult::new(task)))
    }

    /// The tasks alive by owner (forgetting the owners of tasks the manager has let go
    /// of).
    fn alive_by_owner(&self) -> std::collections::BTreeMap<String, usize> {
        let mut owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        owners.retain(|id, _| self.manager.get_task(id).is_ok());
        let mut by = std::collections::BTreeMap::new();
        for o in owners.values() {
            *by.entry(o.clone()).or_insert(0) += 1;
        }
        by
    }

    /// Whether `owner` may make one more task (forgetting the owners of tasks the
    /// manager has let go of).
    pub(super) fn room_for(&self, owner: &str) -> bool {
        let mut owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        owners.retain(|id, _| self.manager.get_task(id).is_ok());
        let mine = owners.values().filter(|o| *o == owner).count();
        TASK_SHARE.admit(owners.len(), mine, None).is_ok()
    }

    /// `id` when `owner` made it, else the error an unknown id gets.
    fn owned(&self, id: &str, owner: &str) -> Result<(), ErrorData> {
        let owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        match owners.get(id) {
            Some(o) if o == owner => Ok(()),
            _ => Err(ErrorData::invalid_params(
                format!("unknown task: {id}"),
                None,
            )),
        }
    }

    /// `tasks/get` of `owner`.
    pub(crate) fn get(&self, id: &str, owner: &str) -> Result<GetTaskResult, ErrorData> {
        self.owned(id, owner)?;
        self.manager.get_task(id).map(GetTaskResult::new)
    }

    /// `tasks/update` of `owner`: the answers to the task's pending questions (answers to
    /// anything else are ignored; an answer's shape is checked by the question's asker).
    pub(crate) fn update(
        &self,
        id: &str,
        owner: &str,
        answers: InputResponses,
    ) -> Result<(), ErrorData> {
        self.owned(id, owner)?;
        self.manager.update_task(id, answers)
    }

    /// `tasks/cancel` of `owner`.
    pub(crate) fn cancel(&self, id: &str, owner: &str) -> Result<(), ErrorData> {
        self.owned(id, owner)?;
        self.manager.cancel_task(id)
    }
}

impl super::McpServer {
    /// A `tools/call` of a client that takes tasks: answered when it ends within
    /// [`TASK_AFTER`], else a task; a task at once for a tool whose task support is
    /// `required` (refused before it runs when no task can be made).
    pub(super) async fn call_maybe_as_task(
        &self,
        name: String,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
        support: TaskSupport,
        who: &super::clients::Identity,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let owner = who.id().to_string();
        let at_once = support == TaskSupport::Required;
        if at_once && !self.tasks.room_for(&owner) {
            return Err(no_room_for_task(&name));
        }
        let capabilities = context.client_capabilities().unwrap_or_default();
        let asker = TaskAsker::new(capabilities);
        let client = crate::DownstreamClient::task(asker.clone(), self.session.id.clone());
        let stop = super::StopToken::new();
        let call = self.call_future(name, args, client, stop.clone(), context, who);
        let outcome = self
            .tasks
            .run(
                owner,
                tokio::spawn(call),
                stop,
                &asker,
                at_once,
                &context.ct,
            )
            .await?;
        Ok(match outcome {
            Outcome::Done(r) => rmcp::model::CallToolResponse::Complete(r),
            Outcome::Task(t) => rmcp::model::CallToolResponse::Task(t),
        })
    }
}

impl super::McpServer {
    /// Carries on as a task the call of a tool that runs only as one, once its rounds
    /// are over (`running`: its work, which may have ended already): the client gets a
    /// `CreateTaskResult`, and each question the call asks from now on is one of the
    /// task's `inputRequests`. An approval it would need now cannot be asked in a round
    /// any more: the task fails, saying to call again (the approval is then asked first).
    pub(super) async fn carry_on_as_task(
        &self,
        owner: &str,
        running: super::rounds::Running,
        capabilities: ClientCapabilities,
        request: &super::StopToken,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let super::rounds::Running {
            mut work,
            cancel,
            mut asks,
        } = running;
        let asker = TaskAsker::new(capabilities);
        let questions = asker.clone();
        let stop = cancel.clone();
        let handle = tokio::spawn(async move {
            // Each question waits for its answer beside the others (several may be
            // pending at once, answered one at a time), at most as many as a round asks.
            let mut waiting = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    biased;
                    done = &mut work => return ended(done),
                    Some(ask) = asks.recv() => {
                        if ask.restartable.is_some() {
                            cancel.cancel();
                            work.abort();
                            return late_approval();
                        }
                        while waiting.try_join_next().is_some() {}
                        if waiting.len() >= super::rounds::MAX_ASKS_PER_ROUND {
                            let _ = ask.reply.send(Err(ErrorData::invalid_request(
                                format!(
                                    "more than {} questions pending at once; refused",
                                    super::rounds::MAX_ASKS_PER_ROUND
                                ),
                                None,
                            )));
                            continue;
                        }
                        let asker = questions.clone();
                        waiting.spawn(async move {
                            let answer = asker
                                .ask(ask.request, "the call's question", super::rounds::STATE_TTL)
                                .await;
                            let _ = ask.reply.send(answer);
                        });
                    }
                }
            }
        });
        let outcome = self
            .tasks
            .run(owner.to_string(), handle, stop, &asker, true, request)
            .await?;
        Ok(match outcome {
            Outcome::Done(r) => rmcp::model::CallToolResponse::Complete(r),
            Outcome::Task(t) => rmcp::model::CallToolResponse::Task(t),
        })
    }
}

/// How a call carried on from its rounds ended, as a task ends.
fn ended(
    done: Result<Result<rmcp::model::ServerResult, ErrorData>, tokio::task::JoinError>,
) -> CallEnd {
    let failure = match done {
        Ok(Ok(rmcp::model::ServerResult::CallToolResult(r))) => return CallEnd::ran(r),
        Ok(Ok(_)) => ErrorData::internal_error("the call produced another kind of result", None),
        Ok(Err(e)) => e,
        Err(e) => ErrorData::internal_error(format!("the call ended abnormally: {e}"), None),
    };
    CallEnd {
        result: super::calls::error_result("failed", failure.message.to_string()),
        failure: Some(failure),
    }
}

/// The end of a task whose call needed toolhost's approval after it became a task.
fn late_approval() -> CallEnd {
    let message = "the call needed an approval after it became a task, where it cannot be \
                   asked: call the tool again (the approval is asked first, in a round)";
    CallEnd {
        result: super::calls::error_result("approval", message.to_string()),
        failure: Some(ErrorData::internal_error(message, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A call that never ends by itself (its `stop` token ends it).
    fn endless(stop: &super::super::StopToken) -> tokio::task::JoinHandle<CallEnd> {
        let stop = stop.clone();
        tokio::spawn(async move {
            stop.cancelled().await;
            CallEnd::ran(CallToolResult::success(vec![]))
        })
    }

    #[test]
    fn a_failed_link_fails_the_task_and_a_failed_tool_completes_it() {
        let failure = |e: ToolError| CallEnd::failed(CallToolResult::error(vec![]), &e).failure;
        let e = failure(ToolError::McpError("boom".into())).map(|e| e.message.to_string());
        assert!(e.is_some_and(|m| m.contains("boom")));
        assert!(failure(ToolError::McpTimeout("s".into())).is_some());
        assert!(failure(ToolError::McpNotInitialized("s".into())).is_some());
        assert!(failure(ToolError::failed("t", "boom")).is_none());
        assert!(failure(ToolError::PermissionDenied("t".into(), "no".into())).is_none());
        assert!(
            CallEnd::ran(CallToolResult::success(vec![]))
                .failure
                .is_none()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_whose_request_goes_away_before_it_is_a_task_is_stopped() {
        let tasks = Arc::new(Tasks::default());
        let stop = super::super::StopToken::new();
        let call = endless(&stop);
        let (t, s) = (tasks.clone(), stop.clone());
        let run = tokio::spawn(async move {
            let asker = TaskAsker::new(ClientCapabilities::default());
            t.run(
                "a".into(),
                call,
                s,
                &asker,
                false,
                &super::super::StopToken::new(),
            )
            .await
            .is_ok()
        });
        tokio::time::sleep(TASK_AFTER / 5).await;
        assert!(!stop.is_cancelled());
        run.abort();
        let _ = run.await;
        assert!(stop.is_cancelled(), "the orphaned call still runs");
    }

    /// A call that ends after `after`, with one text block.
    fn ends_after(after: Duration) -> tokio::task::JoinHandle<CallEnd> {
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            CallEnd::ran(CallToolResult::success(vec![
                rmcp::model::ContentBlock::text("done"),
            ]))
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_required_call_is_a_task_at_once_and_an_optional_one_only_when_slow() {
        let tasks = Tasks::default();
        let quick = TASK_AFTER / 10;
        let run = |at_once| {
            let stop = super::super::StopToken::new();
            let asker = TaskAsker::new(ClientCapabilities::default());
            let tasks = &tasks;
            async move {
                tasks
                    .run(
                        "a".into(),
                        ends_after(quick),
                        stop,
                        &asker,
                        at_once,
                        &super::super::StopToken::new(),
                    )
                    .await
            }
        };
        assert!(matches!(run(false).await, Ok(Outcome::Done(_))));
        let id = match run(true).await {
            Ok(Outcome::Task(t)) => t.task.task_id,
            _ => panic!("a required call was answered without a task"),
        };
        // The task carries the call's result once it ends.
        tokio::time::sleep(quick * 2).await;
        let got = tasks.get(&id, "a").unwrap_or_else(|e| panic!("{e:?}"));
        let got = serde_json::to_value(&got).unwrap_or_default();
        assert_eq!(got["status"], "completed", "{got}");
        assert_eq!(got["result"]["content"][0]["text"], "done", "{got}");
    }

    #[test]
    fn a_tool_that_runs_only_as_a_task_names_the_extension_in_its_refusal() {
        let e = tasks_required("export");
        assert_eq!(e.code.0, -32021);
        assert!(e.message.contains("`export`"), "{}", e.message);
        let data = e.data.unwrap_or_default();
        assert!(
            data["requiredCapabilities"]["extensions"][rmcp::model::TASKS_EXTENSION_ID].is_object(),
            "{data}"
        );
        assert!(no_room_for_task("export").message.contains("`export`"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_the_client_cancels_before_it_is_a_task_stops_its_call() {
        let tasks = Tasks::default();
        let stop = super::super::StopToken::new();
        let request = super::super::StopToken::new();
        let canceller = request.clone();
        tokio::spawn(async move {
            tokio::time::sleep(TASK_AFTER / 5).await;
            canceller.cancel();
        });
        let asker = TaskAsker::new(ClientCapabilities::default());
        let out = tasks
            .run(
                "a".into(),
                endless(&stop),
                stop.clone(),
                &asker,
                false,
                &request,
            )
            .await;
        assert!(matches!(out, Ok(Outcome::Done(_))));
        assert!(stop.is_cancelled(), "the call runs on");
    }

    /// [`Tasks::run`] of an [`endless`] call of `owner`, stopped by `stop`, that asks nothing
    /// and whose request is never cancelled.
    async fn run_endless(
        tasks: &Tasks,
        owner: &str,
        stop: super::super::StopToken,
    ) -> Result<Outcome, ErrorData> {
        let asker = TaskAsker::new(ClientCapabilities::default());
        let request = super::super::StopToken::new();
        tasks
            .run(owner.into(), endless(&stop), stop, &asker, false, &request)
            .await
    }

    #[tokio::test(start_paused = true)]
    async fn the_board_counts_each_clients_live_tasks() {
        let tasks = Arc::new(Tasks::default());
        let board = TaskBoard(tasks.clone());
        assert!(board.alive_by_client().is_empty());
        let stops: Vec<_> = (0..3).map(|_| super::super::StopToken::new()).collect();
        for (owner, stop) in ["a", "a", "b"].into_iter().zip(&stops) {
            assert!(matches!(
                run_endless(&tasks, owner, stop.clone()).await,
                Ok(Outcome::Task(_))
            ));
        }
        assert_eq!(
            board.alive_by_client(),
            vec![("a".to_string(), 2), ("b".to_string(), 1)]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_gets_at_most_its_share_of_tasks_and_others_keep_theirs() {
        let tasks = Tasks::default();
        let mut ids = Vec::new();
        for _ in 0..MAX_TASKS_PER_CLIENT {
            match run_endless(&tasks, "a", super::super::StopToken::new()).await {
                Ok(Outcome::Task(t)) => ids.push(t.task.task_id),
                _ => panic!("no task within the share"),
            }
        }
        // Over its share: the call is answered when it ends, as if tasks were not taken.
        let stop = super::super::StopToken::new();
        let stopper = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            stopper.cancel();
        });
        assert!(matches!(
            run_endless(&tasks, "a", stop).await,
            Ok(Outcome::Done(_))
        ));
        // Another client still gets its task, and cannot see the first client's.
        let stop = super::super::StopToken::new();
        assert!(matches!(
            run_endless(&tasks, "b", stop).await,
            Ok(Outcome::Task(_))
        ));
        assert!(tasks.get(&ids[0], "b").is_err());
        assert!(tasks.cancel(&ids[0], "b").is_err());
        assert!(tasks.get(&ids[0], "a").is_ok());
        tasks
            .cancel(&ids[0], "a")
            .unwrap_or_else(|e| panic!("{e:?}"));
    }
}
