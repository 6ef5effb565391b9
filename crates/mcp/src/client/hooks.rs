//! [`Hooks`]: toolhost's rmcp client handler. It declares what toolhost takes from a
//! server (sampling, form elicitation and roots, passed on to the client of `serve`
//! whose call is in flight), forwards `list_changed` and progress, and passes logs and
//! resource and prompt changes on to the gateway ([`UpstreamEvent`]).
//!
//! Every request passed on is attributed to the server first ([`crate::attribution`]):
//! its message tagged with the server's name, `_meta` naming it, and a form asking for
//! secrets refused unless the operator allowed them for this server.

// Logging, sampling and roots are deprecated in rmcp (2026-07-28 protocol) but
// 2025-11-25 servers use them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ListRootsResult, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken, ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tokio::sync::watch;
use toolhost_core::tools::ToolContext;

/// The rmcp client handler: forwards list-changed, progress and log notifications.
#[derive(Clone)]
pub(super) struct Hooks {
    pub(super) server: Arc<str>,
    pub(super) info: ClientConfig,
    pub(super) changed: Arc<watch::Sender<u64>>,
    pub(super) progress: Arc<Mutex<HashMap<ProgressToken, super::routes::Route>>>,
    pub(super) events: tokio::sync::broadcast::Sender<UpstreamEvent>,
    /// The resources whose updates are wanted (a 2026-07-28 server's listen stream).
    pub(super) watched: watch::Receiver<std::collections::BTreeSet<String>>,
    /// How long a request passed on to the client of `serve` may wait for its answer.
    pub(super) timeout: Duration,
    /// Tags this server's requests with its name.
    pub(super) attribution: crate::attribution::Attribution,
}

impl Hooks {
    /// The contexts of the calls in flight on this server.
    fn calls(&self) -> Vec<ToolContext> {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|r| !r.answered)
            .map(|r| r.ctx.clone())
            .collect()
    }

    /// The client of `serve` whose calls are in flight on this server.
    fn downstream(&self, what: &str) -> Result<crate::DownstreamClient, rmcp::ErrorData> {
        crate::downstream::one_downstream(&self.calls(), what)
    }
}

impl rmcp::ClientHandler for Hooks {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "tools/list_changed");
        self.changed.send_modify(|g| *g += 1);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let ctx = self
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&params.progress_token)
            .map(|r| {
                r.reported = true;
                r.ctx.clone()
            });
        if let Some(ctx) = ctx {
            ctx.report_progress(params.progress, params.total, params.message);
        }
    }

    // A wrapped server's requests back go to the client of `serve` whose call they belong
    // to (docs/mcp.md, "Requests from wrapped servers").
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        self.downstream("sampling/createMessage")?
            .create_message(self.attribution.sampling(params), self.timeout)
            .await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let params = self.attribution.elicitation(params).map_err(|e| {
            tracing::warn!(server = %self.server, "elicitation refused: {e}");
            rmcp::ErrorData::from(e)
        })?;
        match self.downstream("elicitation/create") {
            Ok(d) => d.elicit(params, self.timeout).await,
            // No client of `serve` behind the call: the person at the CLI's terminal, if
            // the call came from there.
            Err(e) => match crate::downstream::local_user(&self.calls()) {
                Some(user) => Ok(user.elicit(&self.server, params, self.timeout).await),
                None => Err(e),
            },
        }
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, rmcp::ErrorData> {
        // Outside a call (servers often ask right after `initialize`) there are no roots.
        match self.downstream("roots/list") {
            Ok(d) => {
                d.list_roots_with(self.attribution.request_meta(), self.timeout)
                    .await
            }
            Err(_) => Ok(ListRootsResult::default()),
        }
    }

    // The gateway's notifications: nobody listening is fine (send fails, nothing lost
    // that anyone wanted).
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.events.send(UpstreamEvent::Log(params));
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.events.send(UpstreamEvent::ResourceUpdated(params.uri));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.events.send(UpstreamEvent::ResourcesChanged);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.events.send(UpstreamEvent::PromptsChanged);
    }
}

/// A notification of a wrapped server the gateway passes on.
#[derive(Debug, Clone)]
pub enum UpstreamEvent {
    /// `notifications/message`.
    Log(rmcp::model::LoggingMessageNotificationParam),
    /// `notifications/resources/updated` for this URI.
    ResourceUpdated(String),
    /// `notifications/resources/list_changed`.
    ResourcesChanged,
    /// `notifications/prompts/list_changed`.
    PromptsChanged,
}

/// How many notifications a slow gateway may fall behind before the oldest are dropped.
pub(super) const EVENT_BACKLOG: usize = 256;
