//! Answering a 2026-07-28 server's `input_required` rounds (multi-round-trip requests)
//! as toolhost's client: each question goes where the server's requests back go today
//! ([`super::hooks`]: the client of `serve` whose call it is, else the person at the
//! terminal, with the server's name attached), and the call is sent again with the
//! answers and the server's `requestState`, unchanged.
//!
//! Bounded: at most [`MAX_INPUT_ROUNDS`] rounds a call and [`MAX_INPUTS_PER_ROUND`]
//! questions a round are answered (a server asking more gets no answer to the rest).

use rmcp::ClientHandler;
use rmcp::model::{CallToolResult, InputRequest, InputRequests, InputResponses, RequestId};
use rmcp::service::RequestContext;
use toolhost_core::tools::ToolContext;

use super::{McpClient, Pending, Route};

/// The most `input_required` rounds one call goes through before toolhost gives up.
pub(crate) const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;
/// The most questions of one round answered.
pub(crate) const MAX_INPUTS_PER_ROUND: usize = 16;

impl McpClient {
    /// The answers to a round's questions, asked on behalf of the call whose context is
    /// `ctx`. A refused elicitation is declined, refused roots are none, a refused
    /// sampling request is left unanswered (the server asks again or fails the call).
    pub(super) async fn answer_inputs(
        &self,
        requests: Option<InputRequests>,
        ctx: &ToolContext,
    ) -> InputResponses {
        let mut answers = InputResponses::new();
        let Some(requests) = requests else {
            return answers;
        };
        let Ok(peer) = self.peer().await else {
            return answers;
        };
        if requests.len() > MAX_INPUTS_PER_ROUND {
            tracing::warn!(
                server = %self.cfg.server,
                asked = requests.len(),
                "the server asked more than {MAX_INPUTS_PER_ROUND} questions at once; the rest go unanswered"
            );
        }
        let hooks = self.hooks();
        // While the questions are out, the call is in flight: its route says whose they are.
        let _in_flight = Pending::file(&self.shared.progress, Route::of(ctx));
        // To a 2026-07-28 client of `serve` the questions go on together, in one round,
        // under the server's own keys; to a person (a terminal, a client asked one
        // request at a time) one after the other.
        let together = ctx
            .get::<crate::DownstreamClient>()
            .is_some_and(crate::DownstreamClient::asks_in_rounds);
        let asked = requests
            .into_iter()
            .take(MAX_INPUTS_PER_ROUND)
            .map(|(key, request)| {
                let (hooks, peer) = (&hooks, peer.clone());
                let scoped = key.clone();
                let answer = async move {
                    let context = RequestContext::new(
                        RequestId::String(format!("toolhost-input-{key}").into()),
                        peer,
                    );
                    (key, self.answer_one(hooks, request, context).await)
                };
                crate::rounds::INPUT_KEY.scope(scoped, answer)
            });
        let results: Vec<(String, Option<serde_json::Value>)> = if together {
            futures::future::join_all(asked).await
        } else {
            let mut all = Vec::new();
            for a in asked {
                all.push(a.await);
            }
            all
        };
        for (key, answer) in results {
            if let Some(a) = answer {
                answers.insert(key, a);
            }
        }
        answers
    }

    /// One question's answer; see [`McpClient::answer_inputs`].
    async fn answer_one(
        &self,
        hooks: &super::hooks::Hooks,
        request: InputRequest,
        context: RequestContext<rmcp::service::RoleClient>,
    ) -> Option<serde_json::Value> {
        match request {
            InputRequest::Elicitation(r) => match hooks.create_elicitation(r.params, context).await
            {
                Ok(a) => serde_json::to_value(a).ok(),
                Err(e) => {
                    tracing::info!(server = %self.cfg.server, "declined the server's question: {}", e.message);
                    Some(serde_json::json!({ "action": "decline" }))
                }
            },
            InputRequest::CreateMessage(r) => hooks
                .create_message(r.params, context)
                .await
                .ok()
                .and_then(|a| serde_json::to_value(a).ok()),
            InputRequest::ListRoots(_) => Some(
                hooks
                    .list_roots(context)
                    .await
                    .ok()
                    .and_then(|a| serde_json::to_value(a).ok())
                    .unwrap_or_else(|| serde_json::json!({ "roots": [] })),
            ),
            // `InputRequest` is non-exhaustive: a kind added later goes unanswered.
            _ => None,
        }
    }
}

/// What one round of a `tools/call` came back with.
pub(super) enum Round {
    /// The tool's result.
    Complete(CallToolResult),
    /// The server's questions (2026-07-28 `input_required`).
    Input(rmcp::model::InputRequiredResult),
    /// A task the server made of the call (the tasks extension), followed to its end.
    Task(rmcp::model::CreateTaskResult),
}
