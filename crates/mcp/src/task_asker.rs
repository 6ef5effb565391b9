//! Where the questions of a call that may become a task go ([`TaskAsker`]): a call of a
//! client that takes the tasks extension holds one from its start; its first question
//! makes it a task at once (`server/tasks.rs` runs the task), and each question becomes
//! one of the task's `inputRequests`, answered by the client's `tasks/update`. When no
//! task can be made (the bounds), the question is refused as for a client that takes no
//! elicitations.
//!
//! It sits below both the server and [`crate::downstream`] (which routes a wrapped
//! server's questions to it), so neither imports the other through it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ErrorData, InputRequest};
use rmcp::task_manager::{TaskContext, TaskExit};

/// Where a call's questions go once it is a task; the call holds it from its start.
#[derive(Clone)]
pub(crate) struct TaskAsker {
    capabilities: ClientCapabilities,
    link: Arc<TaskLink>,
}

/// What a call and [`Tasks::run`] share: whether the call became a task.
pub(crate) struct TaskLink {
    state: tokio::sync::watch::Sender<Link>,
    /// Woken by the first question: the call becomes a task at once.
    asked: tokio::sync::Notify,
    next_key: AtomicU64,
}

/// Whether a call is a task.
#[derive(Clone)]
enum Link {
    /// Not yet.
    Pending,
    /// It is, and this is its task.
    Task(TaskContext),
    /// It cannot become one (the bounds): its questions are refused.
    Refused,
}

impl TaskAsker {
    /// The asker of a call of a client with `capabilities`.
    pub(crate) fn new(capabilities: ClientCapabilities) -> Self {
        TaskAsker {
            capabilities,
            link: Arc::new(TaskLink {
                state: tokio::sync::watch::Sender::new(Link::Pending),
                asked: tokio::sync::Notify::new(),
                next_key: AtomicU64::new(1),
            }),
        }
    }

    /// What the call and the task runner share.
    pub(crate) fn link(&self) -> Arc<TaskLink> {
        self.link.clone()
    }

    /// What the client declared.
    pub(crate) fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    /// Asks `request` (`what`, for messages) as one of the task's `inputRequests`, and
    /// waits at most `timeout` for the client's `tasks/update`.
    pub(crate) async fn ask(
        &self,
        request: InputRequest,
        what: &str,
        timeout: Duration,
    ) -> Result<serde_json::Value, ErrorData> {
        self.link.asked.notify_one();
        let mut rx = self.link.state.subscribe();
        let task = match rx.wait_for(|l| !matches!(l, Link::Pending)).await {
            Ok(l) => match &*l {
                Link::Task(t) => t.clone(),
                _ => return Err(refused(what)),
            },
            Err(_) => return Err(refused(what)),
        };
        let key = format!("q{}", self.link.next_key.fetch_add(1, Ordering::Relaxed));
        match tokio::time::timeout(timeout, task.request_input(key, request)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(TaskExit::Error(e))) => Err(e),
            Ok(Err(TaskExit::Cancelled)) => Err(ErrorData::internal_error(
                format!("{what}: the task was cancelled before the client answered"),
                None,
            )),
            Err(_) => Err(ErrorData::internal_error(
                format!(
                    "{what}: the client did not answer within {} s",
                    timeout.as_secs()
                ),
                None,
            )),
        }
    }
}

impl TaskLink {
    /// Resolves when the call asks its first question (it becomes a task at once).
    pub(crate) async fn asked(&self) {
        self.asked.notified().await;
    }

    /// No task can be made of the call: its questions are refused.
    pub(crate) fn refuse(&self) {
        self.state.send_replace(Link::Refused);
    }

    /// The call is now the task `task`: its questions become the task's `inputRequests`.
    pub(crate) fn became(&self, task: TaskContext) {
        self.state.send_replace(Link::Task(task));
    }
}

fn refused(what: &str) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!("{what}: the call cannot ask its client (no task could be made for it)"),
        None,
    )
}
