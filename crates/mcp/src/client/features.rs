//! What an MCP server offers besides tools, as the gateway ([`crate::gateway`]) needs it:
//! its capabilities and instructions, resources, resource templates, subscriptions,
//! prompts, completions and its log level.
//!
//! Every request is bounded like a tool call (the client timeout) and every list is
//! bounded in pages and items ([`MAX_PAGES`], [`MAX_ITEMS`]): a server that answers with
//! cursors forever, or with a million entries, costs a bounded amount of memory and time.
//! A JSON-RPC error of the server is kept as it is ([`UpstreamError::Rejected`]), so the
//! gateway can pass its code on (e.g. `-32002`, resource not found).

// Logging and `resources/subscribe` are deprecated in rmcp in favour of the 2026-07-28
// protocol, but clients of the 2025-11-25 protocol (the conformance suite, the Inspector,
// desktop clients) use them: the gateway serves both.
#![allow(deprecated)]

use std::future::Future;

use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult, LoggingLevel,
    PaginatedRequestParams, Prompt, ReadResourceRequestParams, ReadResourceResult, Resource,
    ResourceTemplate, ServerCapabilities, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RoleClient, ServiceError};

use super::McpClient;
use super::hooks::UpstreamEvent;
use crate::error::McpClientError;

/// The most pages of one list the gateway follows.
pub const MAX_PAGES: usize = 100;
/// The most items of one list the gateway keeps (per server).
pub const MAX_ITEMS: usize = 10_000;
/// The longest `instructions` text of a server the gateway passes on, in bytes.
pub const MAX_INSTRUCTIONS_BYTES: usize = 8 * 1024;

/// A request to a wrapped server that did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The server answered with a JSON-RPC error (kept as sent, to be passed on).
    #[error("MCP server '{server}' rejected {what}: {} (JSON-RPC error {})", error.message, error.code.0)]
    Rejected {
        /// The configured server name.
        server: String,
        /// The request.
        what: String,
        /// The server's error.
        error: ErrorData,
    },
    /// The connection, the timeout or the protocol failed.
    #[error(transparent)]
    Client(#[from] McpClientError),
    /// A 2026-07-28 server is already asked for the updates of as many resources as one
    /// listen stream carries ([`MAX_WATCHED`]).
    #[error("MCP server '{server}': at most {MAX_WATCHED} resources are watched at once")]
    TooManyWatched {
        /// The configured server name.
        server: String,
    },
}

/// The most resources whose updates are asked of one 2026-07-28 server at once (its
/// listen stream's `resourceSubscriptions`).
pub const MAX_WATCHED: usize = 1024;

/// What a server declared in its `initialize` answer.
#[derive(Debug, Clone, Default)]
pub struct UpstreamInfo {
    /// Its capabilities.
    pub capabilities: ServerCapabilities,
    /// Its instructions, cut to [`MAX_INSTRUCTIONS_BYTES`].
    pub instructions: Option<String>,
}

impl UpstreamInfo {
    /// Whether it offers skills (the Skills extension).
    pub fn skills(&self) -> bool {
        self.capabilities.supports_skills()
    }

    /// Whether it answers `resources/directory/read` (its skills' folders).
    pub fn directory_read(&self) -> bool {
        self.capabilities.supports_directory_read()
    }

    /// Whether it offers resources.
    pub fn resources(&self) -> bool {
        self.capabilities.resources.is_some()
    }

    /// Whether it accepts `resources/subscribe`.
    pub fn subscribe(&self) -> bool {
        self.capabilities
            .resources
            .as_ref()
            .and_then(|r| r.subscribe)
            .unwrap_or(false)
    }

    /// Whether it offers prompts.
    pub fn prompts(&self) -> bool {
        self.capabilities.prompts.is_some()
    }

    /// Whether it answers `completion/complete`.
    pub fn completions(&self) -> bool {
        self.capabilities.completions.is_some()
    }

    /// Whether it takes `logging/setLevel`.
    pub fn logging(&self) -> bool {
        self.capabilities.logging.is_some()
    }
}

impl McpClient {
    /// Runs one request on a live peer, bounded by the client timeout.
    async fn upstream<T, F, Fut>(&self, what: &str, f: F) -> Result<T, UpstreamError>
    where
        F: FnOnce(Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let peer = self.peer().await?;
        match tokio::time::timeout(self.cfg.timeout, f(peer)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(ServiceError::McpError(error))) => Err(UpstreamError::Rejected {
                server: self.cfg.server.clone(),
                what: what.to_string(),
                error,
            }),
            Ok(Err(e)) => Err(self.request_error(e, what).await.into()),
            Err(_) => Err(McpClientError::Timeout {
                server: self.cfg.server.clone(),
                what: what.to_string(),
                timeout: self.cfg.timeout,
            }
            .into()),
        }
    }

    /// The server's capabilities and instructions (connecting if needed).
    pub async fn upstream_info(&self) -> Result<UpstreamInfo, UpstreamError> {
        let peer = self.peer().await?;
        let Some(info) = peer.peer_info() else {
            return Ok(UpstreamInfo::default());
        };
        let instructions = info
            .instructions
            .as_ref()
            .map(|s| toolhost_core::tools::render::head(s, MAX_INSTRUCTIONS_BYTES).to_string());
        Ok(UpstreamInfo {
            capabilities: info.capabilities.clone(),
            instructions,
        })
    }

    /// Follows a paginated list, at most [`MAX_PAGES`] pages and [`MAX_ITEMS`] items.
    async fn paged<T, F, Fut>(&self, what: &str, mut page: F) -> Result<Vec<T>, UpstreamError>
    where
        F: FnMut(Peer<RoleClient>, Option<PaginatedRequestParams>) -> Fut,
        Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
    {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor
                .take()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let (mut got, next) = self.upstream(what, |p| page(p, params)).await?;
            got.truncate(MAX_ITEMS.saturating_sub(items.len()));
            items.append(&mut got);
            match next {
                Some(c) if items.len() < MAX_ITEMS => cursor = Some(c),
                Some(_) => {
                    tracing::warn!(server = %self.cfg.server, what, "list cut at {MAX_ITEMS} items");
                    break;
                }
                None => return Ok(items),
            }
        }
        if cursor.is_some() {
            tracing::warn!(server = %self.cfg.server, what, "list cut at {MAX_PAGES} pages");
        }
        Ok(items)
    }

    /// `resources/list`, every page (bounded).
    pub async fn list_resources(&self) -> Result<Vec<Resource>, UpstreamError> {
        self.paged("resources/list", |peer, params| async move {
            let r = peer.list_resources(params).await?;
            Ok((r.resources, r.next_cursor))
        })
        .await
    }

    /// `resources/templates/list`, every page (bounded).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, UpstreamError> {
        self.paged("resources/templates/list", |peer, params| async move {
            let r = peer.list_resource_templates(params).await?;
            Ok((r.resource_templates, r.next_cursor))
        })
        .await
    }

    /// `resources/read`.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, UpstreamError> {
        let params = ReadResourceRequestParams::new(uri);
        self.upstream("resources/read", |peer| async move {
            peer.read_resource(params).await
        })
        .await
    }

    /// `skills/list` (the Skills extension), every page (bounded).
    pub async fn list_skills(&self) -> Result<Vec<rmcp::model::Skill>, UpstreamError> {
        self.paged("skills/list", |peer, params| async move {
            let r = peer.list_skills(params).await?;
            Ok((r.skills, r.next_cursor))
        })
        .await
    }

    /// `skills/get` of the skill whose `SKILL.md` is `uri`.
    pub async fn get_skill(&self, uri: &str) -> Result<rmcp::model::Skill, UpstreamError> {
        let params = rmcp::model::GetSkillRequestParams::new(uri);
        self.upstream(
            "skills/get",
            |peer| async move { peer.get_skill(params).await },
        )
        .await
        .map(|r| r.skill)
    }

    /// `resources/directory/read` of the folder at `uri` (the Skills extension), every
    /// page (bounded).
    pub async fn read_resource_directory(&self, uri: &str) -> Result<Vec<Resource>, UpstreamError> {
        let uri = uri.to_string();
        self.paged("resources/directory/read", move |peer, params| {
            let mut request = rmcp::model::ReadResourceDirectoryRequestParams::new(uri.clone());
            if let Some(cursor) = params.and_then(|p| p.cursor) {
                request = request.with_cursor(cursor);
            }
            async move {
                let r = peer.read_resource_directory(request).await?;
                Ok((r.resources, r.next_cursor))
            }
        })
        .await
    }

    /// Whether the live connection speaks 2026-07-28 (connecting if needed).
    async fn speaks_2026(&self) -> Result<bool, UpstreamError> {
        let peer = self.peer().await?;
        Ok(peer
            .peer_info()
            .is_some_and(|i| i.protocol_version == rmcp::model::ProtocolVersion::V_2026_07_28))
    }

    /// `resources/subscribe`; for a 2026-07-28 server, which has no such request, the URI
    /// joins its listen stream's `resourceSubscriptions` (the stream is opened again with
    /// it, `client/listen.rs`), at most [`MAX_WATCHED`].
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), UpstreamError> {
        if self.speaks_2026().await? {
            let mut full = false;
            self.shared.watched.send_if_modified(|set| {
                if set.contains(uri) {
                    return false;
                }
                if set.len() >= MAX_WATCHED {
                    full = true;
                    return false;
                }
                set.insert(uri.to_string())
            });
            if full {
                return Err(UpstreamError::TooManyWatched {
                    server: self.cfg.server.clone(),
                });
            }
            return Ok(());
        }
        let params = SubscribeRequestParams::new(uri);
        self.upstream("resources/subscribe", |peer| async move {
            peer.subscribe(params).await
        })
        .await
    }

    /// `resources/unsubscribe`; for a 2026-07-28 server, the URI leaves its listen
    /// stream's `resourceSubscriptions`.
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), UpstreamError> {
        if self.shared.watched.send_if_modified(|set| set.remove(uri)) {
            return Ok(());
        }
        let params = UnsubscribeRequestParams::new(uri);
        self.upstream("resources/unsubscribe", |peer| async move {
            peer.unsubscribe(params).await
        })
        .await
    }

    /// `prompts/list`, every page (bounded).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, UpstreamError> {
        self.paged("prompts/list", |peer, params| async move {
            let r = peer.list_prompts(params).await?;
            Ok((r.prompts, r.next_cursor))
        })
        .await
    }

    /// `prompts/get`.
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResult, UpstreamError> {
        self.upstream("prompts/get", |peer| async move {
            peer.get_prompt(params).await
        })
        .await
    }

    /// `prompts/get` on behalf of the request whose context is `ctx`: what the server
    /// asks while it answers (elicitation, sampling, roots) goes to that request's client,
    /// as a call's does.
    pub async fn get_prompt_in(
        &self,
        params: GetPromptRequestParams,
        ctx: &toolhost_core::tools::ToolContext,
    ) -> Result<GetPromptResult, UpstreamError> {
        let _in_flight = super::Pending::file(&self.shared.progress, super::Route::of(ctx));
        self.get_prompt(params).await
    }

    /// `completion/complete`.
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, UpstreamError> {
        self.upstream("completion/complete", |peer| async move {
            peer.complete(params).await
        })
        .await
    }

    /// `logging/setLevel`.
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<(), UpstreamError> {
        let params = SetLevelRequestParams::new(level);
        self.upstream("logging/setLevel", |peer| async move {
            peer.set_level(params).await
        })
        .await
    }
}

impl McpClient {
    /// The server's notifications for the gateway (logs, resource and prompt changes).
    /// A receiver that falls [`EVENT_BACKLOG`] behind loses the oldest ones.
    pub fn events(&self) -> tokio::sync::broadcast::Receiver<UpstreamEvent> {
        self.shared.events.subscribe()
    }
}
