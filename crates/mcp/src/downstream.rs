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
    ClientResult, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ErrorCode, ListRootsRequest, ListRootsResult, RequestMetaObject, ServerRequest,
};
use rmcp::service::{Peer, RoleServer, ServiceError};
use toolhost_core::tools::ToolContext;

/// The client of an MCP session of `serve`. Cheap to clone.
#[derive(Clone)]
pub struct DownstreamClient {
    peer: Peer<RoleServer>,
    session: String,
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
            peer,
            session: session.into(),
        }
    }

    /// Its MCP session id (`ToolContext::session_id` of its calls).
    pub fn session(&self) -> &str {
        &self.session
    }

    fn capabilities(&self) -> rmcp::model::ClientCapabilities {
        self.peer
            .peer_info()
            .map(|i| i.capabilities.clone())
            .unwrap_or_default()
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
            return Err(unsupported("sampling/createMessage"));
        }
        bounded(
            timeout,
            "sampling/createMessage",
            self.peer.create_message(params),
        )
        .await
    }

    /// `elicitation/create`, waiting at most `timeout` (a person answers).
    pub async fn elicit(
        &self,
        params: ElicitRequestParams,
        timeout: Duration,
    ) -> Result<ElicitResult, ErrorData> {
        if !self.supports_elicitation() {
            return Err(unsupported("elicitation/create"));
        }
        bounded(
            timeout,
            "elicitation/create",
            self.peer.create_elicitation(params),
        )
        .await
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
        let asked = async {
            match self
                .peer
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

/// How a [`LocalUser`] logs in again when a server asks for more OAuth scope during a
/// call (HTTP 403 `insufficient_scope`).
#[derive(Clone)]
pub enum LocalLogin {
    /// A person: the authorization URL is given to this function (the CLI prints it on
    /// stderr and opens a browser), then the login waits for the callback.
    Person(Arc<dyn Fn(&str) + Send + Sync>),
    /// Automation: the authorization URL's redirects are followed without a person,
    /// which works only with authorization servers that approve without asking.
    Headless,
}

impl std::fmt::Debug for LocalLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LocalLogin::Person(_) => "Person",
            LocalLogin::Headless => "Headless",
        })
    }
}

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
pub fn one_downstream<'a>(
    calls: impl IntoIterator<Item = &'a ToolContext>,
    what: &str,
) -> Result<DownstreamClient, ErrorData> {
    let mut found: Option<DownstreamClient> = None;
    for ctx in calls {
        let Some(d) = ctx.get::<DownstreamClient>() else {
            continue;
        };
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
