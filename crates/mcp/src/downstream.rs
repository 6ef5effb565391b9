//! [`DownstreamClient`]: the MCP client connected to `toolhost serve`, as the calls it
//! makes see it. The server puts one into every call's [`ToolContext`] (a typed inbound
//! value), so that a wrapped server's requests back — sampling, elicitation, roots — reach
//! the client whose call they belong to, and so that an approval can be asked of that
//! client's user (elicitation).
//!
//! Outside `serve` (the CLI on a terminal) there is no MCP client behind a call, but
//! there may be a person: a [`LocalUser`] in the call's context answers a wrapped
//! server's form elicitation there.
//!
//! A client of the 2026-07-28 revision cannot be sent requests: its calls hold a
//! [`crate::rounds::Asker`] instead, and what is asked of it goes out as an
//! `input_required` result (`server/rounds.rs`). A call that runs as a task holds a
//! [`crate::task_asker::TaskAsker`]: its questions become the task's `inputRequests`.
//!
//! A wrapped server's request names no call, so it goes to the client of the calls in
//! flight on that server; if calls of several sessions are in flight there, it is
//! refused as ambiguous rather than shown to the wrong user ([`one_downstream`]).

// Sampling and roots are deprecated in rmcp (2026-07-28 forbids server-to-client
// requests); clients and servers of the 2025-11-25 protocol use them.
#![allow(deprecated)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    ClientResult, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequest, ElicitRequestParams, ElicitResult, ErrorCode, InputRequest, ListRootsRequest,
    ListRootsResult, RequestMetaObject, ServerRequest,
};
use rmcp::service::{Peer, RoleServer, ServiceError};
use serde::de::DeserializeOwned;
use serde_json::Value;
use toolhost_core::tools::ToolContext;
use toolhost_oauth::LocalLogin;

/// The client of an MCP session of `serve`. Cheap to clone.
#[derive(Clone)]
pub struct DownstreamClient {
    reach: Reach,
    session: String,
}

/// How the client is asked.
#[derive(Clone)]
enum Reach {
    /// A client of 2025-11-25 or older: requests on its session.
    Peer(Peer<RoleServer>),
    /// A 2026-07-28 client: `input_required` results.
    Rounds(crate::rounds::Asker),
    /// A call that runs as a task (or becomes one when it asks): its questions are
    /// the task's `inputRequests`, answered with `tasks/update`.
    Task(crate::task_asker::TaskAsker),
}

impl std::fmt::Debug for DownstreamClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DownstreamClient")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

fn unsupported(what: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{what}: the client connected to toolhost did not declare this capability"),
        None,
    )
}

impl DownstreamClient {
    /// The client of session `session`, reached through `peer`.
    pub fn new(peer: Peer<RoleServer>, session: impl Into<String>) -> Self {
        Self {
            reach: Reach::Peer(peer),
            session: session.into(),
        }
    }

    /// A client whose call runs as a task, asked through `asker`.
    pub(crate) fn task(asker: crate::task_asker::TaskAsker, session: impl Into<String>) -> Self {
        Self {
            reach: Reach::Task(asker),
            session: session.into(),
        }
    }

    /// A 2026-07-28 client, asked through `asker`.
    pub(crate) fn rounds(asker: crate::rounds::Asker, session: impl Into<String>) -> Self {
        Self {
            reach: Reach::Rounds(asker),
            session: session.into(),
        }
    }

    /// Its MCP session id (`ToolContext::session_id` of its calls).
    pub fn session(&self) -> &str {
        &self.session
    }

    fn capabilities(&self) -> rmcp::model::ClientCapabilities {
        match &self.reach {
            Reach::Peer(peer) => peer
                .peer_info()
                .map(|i| i.capabilities.clone())
                .unwrap_or_default(),
            Reach::Rounds(asker) => asker.capabilities().clone(),
            Reach::Task(asker) => asker.capabilities().clone(),
        }
    }

    /// The error for `what`, which needs `capability` the client did not declare.
    fn refuse(&self, capability: &'static str, what: &str) -> ErrorData {
        if let Reach::Rounds(asker) = &self.reach {
            asker.note_missing(capability);
        }
        unsupported(what)
    }

    /// Whether it is asked through `input_required` rounds (a 2026-07-28 client).
    pub fn asks_in_rounds(&self) -> bool {
        matches!(self.reach, Reach::Rounds(_))
    }

    /// Whether the call it belongs to is parked, its questions out with the client
    /// (2026-07-28 rounds; never for a client with a session).
    pub(crate) fn is_parked(&self) -> bool {
        matches!(&self.reach, Reach::Rounds(asker) if asker.is_parked())
    }

    /// Whether it declared `sampling`.
    pub fn supports_sampling(&self) -> bool {
        self.capabilities().sampling.is_some()
    }

    /// Whether it declared form elicitation (`elicitation: {}` means forms, per the spec).
    pub fn supports_elicitation(&self) -> bool {
        self.capabilities()
            .elicitation
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
    }

    /// Whether it declared `roots`.
    pub fn supports_roots(&self) -> bool {
        self.capabilities().roots.is_some()
    }

    /// `sampling/createMessage`, waiting at most `timeout`.
    pub async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        timeout: Duration,
    ) -> Result<CreateMessageResult, ErrorData> {
        if !self.supports_sampling() {
            return Err(self.refuse("sampling", "sampling/createMessage"));
        }
        let what = "sampling/createMessage";
        match &self.reach {
            Reach::Peer(peer) => bounded(timeout, what, peer.create_message(params)).await,
            Reach::Rounds(asker) => {
                let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
                answer_as(what, asker.ask(request, what, timeout).await?)
            }
            Reach::Task(asker) => {
                let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
                answer_as(what, asker.ask(request, what, timeout).await?)
            }
        }
    }

    /// `elicitation/create`, waiting at most `timeout` (a person answers).
    pub async fn elicit(
        &self,
        params: ElicitRequestParams,
        timeout: Duration,
    ) -> Result<ElicitResult, ErrorData> {
        if !self.supports_elicitation() {
            return Err(self.refuse("elicitation", "elicitation/create"));
        }
        let what = "elicitation/create";
        match &self.reach {
            Reach::Peer(peer) => bounded(timeout, what, peer.create_elicitation(params)).await,
            Reach::Rounds(asker) => {
                let request = InputRequest::Elicitation(ElicitRequest::new(params));
                answer_as(what, asker.ask(request, what, timeout).await?)
            }
            Reach::Task(asker) => {
                let request = InputRequest::Elicitation(ElicitRequest::new(params));
                answer_as(what, asker.ask(request, what, timeout).await?)
            }
        }
    }

    /// `elicitation/create` for toolhost's own question `key`, asked before the call
    /// ran: a 2026-07-28 client is asked by a restartable round (the call runs again
    /// from the start with its answer); others as [`DownstreamClient::elicit`].
    pub async fn elicit_before_running(
        &self,
        key: &str,
        params: ElicitRequestParams,
        timeout: Duration,
    ) -> Result<ElicitResult, ErrorData> {
        let what = "elicitation/create";
        let Reach::Rounds(asker) = &self.reach else {
            return self.elicit(params, timeout).await;
        };
        if !self.supports_elicitation() {
            return Err(self.refuse("elicitation", what));
        }
        if let Some(given) = asker.preset(key) {
            return answer_as(what, given.clone());
        }
        let request = InputRequest::Elicitation(ElicitRequest::new(params));
        Err(asker.ask_restartable(key, request, what).await)
    }

    /// `roots/list`, waiting at most `timeout`; no roots when it does not offer them.
    pub async fn list_roots(&self, timeout: Duration) -> Result<ListRootsResult, ErrorData> {
        self.list_roots_with(RequestMetaObject::new(), timeout)
            .await
    }

    /// `roots/list` carrying `meta` (who asks, [`crate::attribution`]), waiting at most
    /// `timeout`; no roots when it does not offer them.
    pub async fn list_roots_with(
        &self,
        meta: RequestMetaObject,
        timeout: Duration,
    ) -> Result<ListRootsResult, ErrorData> {
        if !self.supports_roots() {
            return Ok(ListRootsResult::default());
        }
        let mut request = ListRootsRequest {
            method: Default::default(),
            extensions: Default::default(),
        };
        if !meta.0.is_empty() {
            request.extensions.insert(meta);
        }
        let peer = match &self.reach {
            Reach::Peer(peer) => peer,
            Reach::Rounds(asker) => {
                let request = InputRequest::ListRoots(request);
                let what = "roots/list";
                return answer_as(what, asker.ask(request, what, timeout).await?);
            }
            Reach::Task(asker) => {
                let request = InputRequest::ListRoots(request);
                let what = "roots/list";
                return answer_as(what, asker.ask(request, what, timeout).await?);
            }
        };
        let asked = async {
            match peer
                .send_request(ServerRequest::ListRootsRequest(request))
                .await?
            {
                ClientResult::ListRootsResult(r) => Ok(r),
                _ => Err(ServiceError::UnexpectedResponse),
            }
        };
        bounded(timeout, "roots/list", asked).await
    }
}

/// A 2026-07-28 client's answer (an `inputResponses` value, untrusted) as the result
/// its question expects; a wrong shape is the client's error.
fn answer_as<T: DeserializeOwned>(what: &str, answer: Value) -> Result<T, ErrorData> {
    serde_json::from_value(answer).map_err(|e| {
        ErrorData::invalid_params(
            format!("the client's answer to {what} is not a valid result: {e}"),
            None,
        )
    })
}

async fn bounded<T>(
    timeout: Duration,
    what: &str,
    fut: impl std::future::Future<Output = Result<T, ServiceError>>,
) -> Result<T, ErrorData> {
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok(v)) => Ok(v),
        // The client's own error goes back as it sent it.
        Ok(Err(ServiceError::McpError(e))) => Err(e),
        Ok(Err(e)) => Err(ErrorData::internal_error(
            format!(
                "{what}: the client connected to toolhost failed: {}",
                crate::error::service_error_text(&e)
            ),
            None,
        )),
        Err(_) => Err(ErrorData::internal_error(
            format!(
                "{what}: the client connected to toolhost did not answer within {} s",
                timeout.as_secs()
            ),
            None,
        )),
    }
}

/// How a [`LocalUser`] answers a form elicitation: given the server's name and its
/// request.
pub type AskLocalUser = dyn Fn(String, ElicitRequestParams) -> Pin<Box<dyn Future<Output = ElicitResult> + Send>>
    + Send
    + Sync;

/// The person who made a call outside `serve` (the CLI), put into the call's
/// [`ToolContext`]: a wrapped server's form elicitation during the call is asked of them
/// when no client of `serve` is behind it, and a server that asks for more OAuth scope
/// gets a new login through them. Each ability is optional.
#[derive(Clone, Default)]
pub struct LocalUser {
    ask: Option<Arc<AskLocalUser>>,
    login: Option<LocalLogin>,
}

impl std::fmt::Debug for LocalUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalUser")
            .field("answers_forms", &self.ask.is_some())
            .field("login", &self.login)
            .finish()
    }
}

impl LocalUser {
    /// Someone who answers form elicitations with `ask(server, request)`.
    pub fn with_elicitation(mut self, ask: Arc<AskLocalUser>) -> Self {
        self.ask = Some(ask);
        self
    }

    /// Someone who logs in again, as `login` says, when a server asks for more scope.
    pub fn with_login(mut self, login: LocalLogin) -> Self {
        self.login = Some(login);
        self
    }

    /// How they log in, if they do.
    pub fn login(&self) -> Option<&LocalLogin> {
        self.login.as_ref()
    }

    /// Whether they answer form elicitations.
    pub fn answers_forms(&self) -> bool {
        self.ask.is_some()
    }

    /// Asks them, waiting at most `timeout` (then the request is cancelled); declined
    /// when they do not answer forms.
    pub async fn elicit(
        &self,
        server: &str,
        params: ElicitRequestParams,
        timeout: Duration,
    ) -> ElicitResult {
        let Some(ask) = &self.ask else {
            return ElicitResult::new(rmcp::model::ElicitationAction::Decline);
        };
        match tokio::time::timeout(timeout, ask(server.to_string(), params)).await {
            Ok(r) => r,
            Err(_) => ElicitResult::new(rmcp::model::ElicitationAction::Cancel),
        }
    }
}

/// The local user behind one of `calls` who answers forms, if any.
pub fn local_user<'a>(calls: impl IntoIterator<Item = &'a ToolContext>) -> Option<LocalUser> {
    calls
        .into_iter()
        .filter_map(|ctx| ctx.get::<LocalUser>())
        .find(|u| u.answers_forms())
        .cloned()
}

/// The one client whose calls are in flight among `calls`: an error naming the problem
/// when there is none (no call in flight, or calls not made over MCP) or when calls of
/// several sessions are in flight (the request cannot be told apart).
///
/// A call parked in a 2026-07-28 round has its questions out with its client and waits
/// for the retry: it is passed over while other calls are in flight, so that calls
/// whose clients never came back (up to five minutes each) do not make every later
/// question ambiguous. docs/mcp.md ("Multi-round-trip requests") says what that assumes.
pub fn one_downstream<'a>(
    calls: impl IntoIterator<Item = &'a ToolContext>,
    what: &str,
) -> Result<DownstreamClient, ErrorData> {
    let all: Vec<&DownstreamClient> = calls
        .into_iter()
        .filter_map(|ctx| ctx.get::<DownstreamClient>())
        .collect();
    let running: Vec<&DownstreamClient> = all.iter().copied().filter(|d| !d.is_parked()).collect();
    let candidates = if running.is_empty() { all } else { running };
    let mut found: Option<DownstreamClient> = None;
    for d in candidates {
        match &found {
            Some(f) if f.session != d.session => {
                return Err(ErrorData::invalid_request(
                    format!(
                        "{what}: calls of several clients are in flight on this server, so \
                         toolhost cannot tell whose user to ask; refused"
                    ),
                    None,
                ));
            }
            Some(_) => {}
            None => found = Some(d.clone()),
        }
    }
    found.ok_or_else(|| {
        ErrorData::invalid_request(
            format!(
                "{what}: no call of an MCP client of toolhost is in flight on this server, \
                 so there is nobody to ask"
            ),
            None,
        )
    })
}
