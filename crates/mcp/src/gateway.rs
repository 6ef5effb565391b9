//! The gateway: what the wrapped MCP servers offer besides tools — resources, resource
//! templates and subscriptions, prompts, completions, logging and instructions — gathered
//! from every connected [`McpClient`] and served again by [`crate::McpServer`].
//!
//! Tools go through the registry (validation, permissions, approvals, audit); what the
//! gateway passes on is data the client asked for by name or URI and reads itself, so it
//! goes straight to the server that offers it. Naming and routing across servers:
//! [`routes`]. Every list is bounded per server (see `client::MAX_ITEMS`), a server that
//! fails to list is left out of the answer (and logged), not an error for the others.
//!
//! Notifications (`notifications/message`, `resources/updated`, `resources/list_changed`,
//! `prompts/list_changed`) arrive on [`Gateway::events`]; each MCP session filters them
//! (its log level, its subscriptions) and passes them to its client.

// Logging and `resources/subscribe` are deprecated in rmcp in favour of the 2026-07-28
// protocol; 2025-11-25 clients and servers use them, and the gateway serves both.
#![allow(deprecated)]

mod error;
pub mod routes;
mod skills;

pub use error::GatewayError;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult, LoggingLevel,
    LoggingMessageNotificationParam, Prompt, ReadResourceResult, Reference, Resource,
    ResourceContents, ResourceTemplate,
};
use tokio::sync::{broadcast, watch};

use crate::client::{McpClient, UpstreamError, UpstreamEvent, UpstreamInfo};
use routes::{prefixed_name, routed_uri, split_routed, template_matches};

/// How many notifications a slow session may fall behind before it loses the oldest.
const GATEWAY_BACKLOG: usize = 1024;

/// A notification of a wrapped server, for the sessions.
#[derive(Debug, Clone)]
pub enum GatewayEvent {
    /// `notifications/message` of `server`.
    Log {
        /// The configured server name.
        server: String,
        /// The message as sent.
        params: LoggingMessageNotificationParam,
    },
    /// `server` says `uri` (its own name for it) changed.
    ResourceUpdated {
        /// The configured server name.
        server: String,
        /// The server's URI.
        uri: String,
    },
    /// The list of resources changed (a server said so, or servers came or went).
    ResourcesChanged,
    /// The list of prompts changed.
    PromptsChanged,
}

#[derive(Clone)]
struct Upstream {
    client: McpClient,
    info: UpstreamInfo,
}

impl Upstream {
    fn name(&self) -> &str {
        self.client.server_name()
    }
}

/// Where served names and URIs go: `(server, the server's own name or URI)`.
#[derive(Default)]
struct Routes {
    resources: HashMap<String, (String, String)>,
    /// `(served template, server, the server's template)`, in server order.
    templates: Vec<(String, String, String)>,
    templates_listed: bool,
    prompts: HashMap<String, (String, String)>,
    /// The server of each skill URI listed (its `SKILL.md` and every file of its entry).
    skills: HashMap<String, String>,
}

struct Inner {
    upstreams: RwLock<Vec<Upstream>>,
    routes: RwLock<Routes>,
    events: broadcast::Sender<GatewayEvent>,
    changed: watch::Sender<u64>,
    /// The most verbose log level any session asked for (upstreams get it).
    level: Mutex<Option<LoggingLevel>>,
    /// Sessions subscribed per `(server, server's uri)`.
    subscribers: Mutex<HashMap<(String, String), usize>>,
}

/// The extensions toolhost offers when a wrapped server does ([`Gateway::extensions`]):
/// MCP Apps (`io.modelcontextprotocol/ui`), whose tools' `_meta`, results' `_meta` and
/// `ui://` resources pass through as the server wrote them.
pub const PASSED_EXTENSIONS: [&str; 1] = [UI_EXTENSION];

/// The MCP Apps extension's id.
pub const UI_EXTENSION: &str = toolhost_core::tools::view::UI_EXTENSION;

/// The MIME type of an MCP App's view (`ui://` resources).
pub const MCP_APP_MIME: &str = toolhost_core::tools::view::VIEW_MIME_TYPE;

/// The wrapped servers' resources, prompts, completions and logs. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

impl Default for Gateway {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .upstreams()
            .iter()
            .map(|u| u.name().to_string())
            .collect();
        f.debug_struct("Gateway").field("servers", &names).finish()
    }
}

/// Log levels from most to least verbose.
pub fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl Gateway {
    /// A gateway with no servers yet.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                upstreams: RwLock::new(Vec::new()),
                routes: RwLock::new(Routes::default()),
                events: broadcast::channel(GATEWAY_BACKLOG).0,
                changed: watch::channel(0).0,
                level: Mutex::new(None),
                subscribers: Mutex::new(HashMap::new()),
            }),
        }
    }

    fn upstreams(&self) -> Vec<Upstream> {
        self.inner
            .upstreams
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn upstream(&self, server: &str) -> Option<Upstream> {
        self.inner
            .upstreams
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|u| u.name() == server)
            .cloned()
    }

    /// Adds a connected server (replacing one of the same name): asks for its
    /// capabilities and instructions and passes its notifications on.
    pub async fn add(&self, client: McpClient) {
        let info = match client.upstream_info().await {
            Ok(i) => i,
            Err(e) => {
                tracing::warn!(server = %client.server_name(), "gateway: {e}");
                UpstreamInfo::default()
            }
        };
        let server = client.server_name().to_string();
        let mut rx = client.events();
        let tx = self.inner.events.clone();
        let name = server.clone();
        tokio::spawn(async move {
            loop {
                let ev = match rx.recv().await {
                    Ok(ev) => ev,
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(server = %name, "gateway: {n} notifications dropped (backlog full)");
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                let ev = match ev {
                    UpstreamEvent::Log(params) => GatewayEvent::Log {
                        server: name.clone(),
                        params,
                    },
                    UpstreamEvent::ResourceUpdated(uri) => GatewayEvent::ResourceUpdated {
                        server: name.clone(),
                        uri,
                    },
                    UpstreamEvent::ResourcesChanged => GatewayEvent::ResourcesChanged,
                    UpstreamEvent::PromptsChanged => GatewayEvent::PromptsChanged,
                };
                let _ = tx.send(ev);
            }
        });
        let level = *self.inner.level.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(level) = level.filter(|_| info.logging())
            && let Err(e) = client.set_log_level(level).await
        {
            tracing::warn!(server = %server, "gateway: {e}");
        }
        {
            let mut ups = self
                .inner
                .upstreams
                .write()
                .unwrap_or_else(|e| e.into_inner());
            ups.retain(|u| u.name() != server);
            ups.push(Upstream { client, info });
            ups.sort_by(|a, b| a.name().cmp(b.name()));
        }
        *self.inner.routes.write().unwrap_or_else(|e| e.into_inner()) = Routes::default();
        self.inner.changed.send_modify(|g| *g += 1);
        let _ = self.inner.events.send(GatewayEvent::ResourcesChanged);
        let _ = self.inner.events.send(GatewayEvent::PromptsChanged);
    }

    /// The servers' notifications. A receiver that falls behind loses the oldest.
    pub fn events(&self) -> broadcast::Receiver<GatewayEvent> {
        self.inner.events.subscribe()
    }

    /// The next of `events` (from [`Gateway::events`]); never, when there is no receiver
    /// (no gateway, or its stream ended and the caller set it to `None`), so it can sit in
    /// a `select!` beside other sources.
    pub async fn next_event(
        events: &mut Option<broadcast::Receiver<GatewayEvent>>,
    ) -> Result<GatewayEvent, broadcast::error::RecvError> {
        match events {
            Some(rx) => rx.recv().await,
            None => std::future::pending().await,
        }
    }

    /// Whether any server is wrapped.
    pub fn is_empty(&self) -> bool {
        self.upstreams().is_empty()
    }

    /// The extensions toolhost offers because a wrapped server does: those of
    /// [`PASSED_EXTENSIONS`], whose data (tools' and results' `_meta`, `ui://`
    /// resources) passes through faithfully. The first server in name order that offers
    /// one gives its settings, bounded like a `_meta` ([`crate::meta`]); other extension
    /// ids a server declares are not offered (toolhost does not know it passes them on).
    pub fn extensions(&self) -> Vec<(String, rmcp::model::JsonObject)> {
        let mut ups = self.upstreams();
        ups.sort_by(|a, b| a.name().cmp(b.name()));
        let mut out: Vec<(String, rmcp::model::JsonObject)> = Vec::new();
        for u in &ups {
            let Some(exts) = &u.info.capabilities.extensions else {
                continue;
            };
            for id in PASSED_EXTENSIONS {
                if out.iter().any(|(have, _)| have == id) {
                    continue;
                }
                if let Some(settings) = exts.get(id) {
                    // Settings may be empty (`{}`): that is an offer too.
                    let bounded = if settings.is_empty() {
                        Some(settings.clone())
                    } else {
                        crate::meta::meta_from_mcp(Some(settings), || {
                            format!("{}/extensions/{id}", u.name())
                        })
                    };
                    if let Some(b) = bounded {
                        out.push((id.to_string(), b));
                    }
                }
            }
        }
        out
    }

    /// The servers' instructions, each under its server's name (bounded per server).
    pub fn instructions(&self) -> Option<String> {
        let parts: Vec<String> = self
            .upstreams()
            .iter()
            .filter_map(|u| {
                let text = u.info.instructions.as_ref()?;
                Some(format!("MCP server '{}': {}", u.name(), text.trim()))
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    /// Each server that offers something (`offers`), in name order, with its list; a
    /// server that fails to list is logged and left out.
    async fn lists<T, F, Fut>(
        &self,
        offers: fn(&UpstreamInfo) -> bool,
        list: F,
    ) -> Vec<(String, Vec<T>)>
    where
        F: Fn(McpClient) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<T>, UpstreamError>>,
    {
        let mut out = Vec::new();
        for u in self.upstreams().into_iter().filter(|u| offers(&u.info)) {
            match list(u.client.clone()).await {
                Ok(items) => out.push((u.name().to_string(), items)),
                Err(e) => tracing::warn!(server = %u.name(), "gateway: {e}"),
            }
        }
        out
    }

    /// Every server's resources; a URI two or more servers list is renamed for each
    /// of them ([`routes::routed_uri`]; the rule is decided on the set, see
    /// `gateway/routes.rs`).
    pub async fn list_resources(&self) -> Vec<Resource> {
        let lists = self
            .lists(UpstreamInfo::resources, |c| async move {
                c.list_resources().await
            })
            .await;
        let contested = contested_in(&lists, |r: &Resource| r.uri.clone());
        let mut out = Vec::new();
        let mut table = HashMap::new();
        for (server, list) in lists {
            for mut r in list {
                let original = r.uri.clone();
                r.meta = crate::meta::meta_object(r.meta.take(), || format!("{server}/{original}"));
                if contested.contains(&original) {
                    r.uri = routed_uri(&server, &original);
                }
                table.insert(r.uri.clone(), (server.clone(), original));
                out.push(r);
            }
        }
        self.inner
            .routes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .resources = table;
        out
    }

    /// Every server's resource templates; a template two or more servers list is
    /// renamed for each of them.
    pub async fn list_resource_templates(&self) -> Vec<ResourceTemplate> {
        let lists = self
            .lists(UpstreamInfo::resources, |c| async move {
                c.list_resource_templates().await
            })
            .await;
        let contested = contested_in(&lists, |t: &ResourceTemplate| t.uri_template.clone());
        let mut out = Vec::new();
        let mut table = Vec::new();
        for (server, list) in lists {
            for mut t in list {
                let original = t.uri_template.clone();
                t.meta = crate::meta::meta_object(t.meta.take(), || format!("{server}/{original}"));
                if contested.contains(&original) {
                    t.uri_template = routed_uri(&server, &original);
                }
                table.push((t.uri_template.clone(), server.clone(), original));
                out.push(t);
            }
        }
        let mut routes = self.inner.routes.write().unwrap_or_else(|e| e.into_inner());
        routes.templates = table;
        routes.templates_listed = true;
        out
    }

    /// The server and its own URI for a served URI.
    async fn route_uri(&self, uri: &str) -> Result<(Upstream, String), GatewayError> {
        let ups = self.upstreams();
        let names: Vec<&str> = ups.iter().map(|u| u.name()).collect();
        let find = |server: &str| ups.iter().find(|u| u.name() == server).cloned();
        if let Some((server, original)) = split_routed(uri, &names)
            && let Some(u) = find(&server)
        {
            return Ok((u, original.to_string()));
        }
        let listed = {
            let routes = self.inner.routes.read().unwrap_or_else(|e| e.into_inner());
            routes.resources.get(uri).cloned()
        };
        if let Some((server, original)) = listed
            && let Some(u) = find(&server)
        {
            return Ok((u, original));
        }
        // A skill's files are read under the URIs its entry names (gateway/skills.rs).
        let skill = {
            let routes = self.inner.routes.read().unwrap_or_else(|e| e.into_inner());
            routes.skills.get(uri).cloned()
        };
        if let Some(server) = skill
            && let Some(u) = find(&server)
        {
            return Ok((u, uri.to_string()));
        }
        let listed_templates = self
            .inner
            .routes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .templates_listed;
        if !listed_templates {
            self.list_resource_templates().await;
        }
        let by_template = {
            let routes = self.inner.routes.read().unwrap_or_else(|e| e.into_inner());
            routes
                .templates
                .iter()
                .find(|(_, _, t)| template_matches(t, uri))
                .map(|(_, s, _)| s.clone())
        };
        if let Some(u) = by_template.and_then(|s| find(&s)) {
            return Ok((u, uri.to_string()));
        }
        let mut offering = ups.iter().filter(|u| u.info.resources());
        match (offering.next(), offering.next()) {
            (Some(only), None) => Ok((only.clone(), uri.to_string())),
            _ => Err(GatewayError::UnknownResource(uri.to_string())),
        }
    }

    /// `resources/read` of a served URI, from the server that offers it. Contents under
    /// the server's URI are given the served one.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, GatewayError> {
        let (u, original) = self.route_uri(uri).await?;
        let mut result = u.client.read_resource(&original).await?;
        // Contents' `_meta` (an MCP App view's CSP and permissions) pass bounded.
        for c in &mut result.contents {
            if let ResourceContents::TextResourceContents { meta, .. }
            | ResourceContents::BlobResourceContents { meta, .. } = c
            {
                *meta =
                    crate::meta::meta_object(meta.take(), || format!("{}/{original}", u.name()));
            }
        }
        if original != uri {
            for c in &mut result.contents {
                // `ResourceContents` is non-exhaustive: a kind added later keeps its URI.
                if let ResourceContents::TextResourceContents { uri: cu, .. }
                | ResourceContents::BlobResourceContents { uri: cu, .. } = c
                    && *cu == original
                {
                    *cu = uri.to_string();
                }
            }
        }
        Ok(result)
    }

    /// Subscribes to a served URI; the first subscriber subscribes upstream. Returns
    /// `(server, the server's uri)`, the key of its `ResourceUpdated` events.
    pub async fn subscribe(&self, uri: &str) -> Result<(String, String), GatewayError> {
        let (u, original) = self.route_uri(uri).await?;
        if !u.info.subscribe() {
            return Err(GatewayError::Unsupported {
                server: u.name().to_string(),
                what: "resources/subscribe".into(),
            });
        }
        let key = (u.name().to_string(), original.clone());
        let first = {
            let mut subs = self
                .inner
                .subscribers
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let n = subs.entry(key.clone()).or_insert(0);
            *n += 1;
            *n == 1
        };
        if first && let Err(e) = u.client.subscribe_resource(&original).await {
            self.release(&key);
            return Err(e.into());
        }
        Ok(key)
    }

    /// Drops one session's subscription (from [`Gateway::subscribe`]); the last one
    /// unsubscribes upstream.
    pub async fn unsubscribe(&self, key: &(String, String)) -> Result<(), GatewayError> {
        if self.release(key)
            && let Some(u) = self.upstream(&key.0)
        {
            u.client.unsubscribe_resource(&key.1).await?;
        }
        Ok(())
    }

    /// Counts one subscriber less; true when it was the last.
    fn release(&self, key: &(String, String)) -> bool {
        let mut subs = self
            .inner
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match subs.get_mut(key) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => {
                subs.remove(key);
                true
            }
            None => false,
        }
    }

    /// Every server's prompts; a name two or more servers offer becomes `server__name`
    /// for each of them.
    pub async fn list_prompts(&self) -> Vec<Prompt> {
        let lists = self
            .lists(
                UpstreamInfo::prompts,
                |c| async move { c.list_prompts().await },
            )
            .await;
        let contested = contested_in(&lists, |p: &Prompt| p.name.clone());
        let mut out = Vec::new();
        let mut table = HashMap::new();
        for (server, list) in lists {
            for mut p in list {
                let original = p.name.clone();
                p.meta = crate::meta::meta_object(p.meta.take(), || format!("{server}/{original}"));
                if contested.contains(&original) {
                    p.name = prefixed_name(&server, &original);
                }
                // A server listing one name twice, or a prefixed name equal to another
                // server's own: the first stays reachable, the rest are not served.
                if table.contains_key(&p.name) {
                    continue;
                }
                table.insert(p.name.clone(), (server.clone(), original));
                out.push(p);
            }
        }
        self.inner
            .routes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .prompts = table;
        out
    }

    async fn route_prompt(&self, name: &str) -> Result<(Upstream, String), GatewayError> {
        for attempt in 0..2 {
            let hit = self
                .inner
                .routes
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .prompts
                .get(name)
                .cloned();
            if let Some((server, original)) = hit
                && let Some(u) = self.upstream(&server)
            {
                return Ok((u, original));
            }
            if attempt == 0 {
                self.list_prompts().await;
            }
        }
        Err(GatewayError::UnknownPrompt(name.to_string()))
    }

    /// `prompts/get` of a served prompt name.
    pub async fn get_prompt(
        &self,
        mut params: GetPromptRequestParams,
    ) -> Result<GetPromptResult, GatewayError> {
        let (u, original) = self.route_prompt(&params.name).await?;
        params.name = original;
        Ok(u.client.get_prompt(params).await?)
    }

    /// `prompts/get` for the request whose context is `ctx` (see
    /// [`McpClient::get_prompt_in`]).
    pub async fn get_prompt_in(
        &self,
        mut params: GetPromptRequestParams,
        ctx: &toolhost_core::tools::ToolContext,
    ) -> Result<GetPromptResult, GatewayError> {
        let (u, original) = self.route_prompt(&params.name).await?;
        params.name = original;
        Ok(u.client.get_prompt_in(params, ctx).await?)
    }

    /// `completion/complete`, routed by the prompt or template it completes; nothing to
    /// complete (no server offers it, or it does not complete) is an empty answer.
    pub async fn complete(
        &self,
        mut params: CompleteRequestParams,
    ) -> Result<CompleteResult, GatewayError> {
        let target = match &mut params.r#ref {
            Reference::Prompt(p) => match self.route_prompt(&p.name).await {
                Ok((u, original)) => {
                    p.name = original;
                    Some(u)
                }
                Err(_) => None,
            },
            Reference::Resource(r) => {
                let listed = self
                    .inner
                    .routes
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .templates_listed;
                if !listed {
                    self.list_resource_templates().await;
                }
                let hit = self
                    .inner
                    .routes
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .templates
                    .iter()
                    .find(|(served, _, _)| *served == r.uri)
                    .map(|(_, s, t)| (s.clone(), t.clone()));
                match hit {
                    Some((server, original)) => {
                        r.uri = original;
                        self.upstream(&server)
                    }
                    None => None,
                }
            }
            // `Reference` is non-exhaustive: a kind added later has nothing to complete.
            _ => None,
        };
        match target.filter(|u| u.info.completions()) {
            Some(u) => Ok(u.client.complete(params).await?),
            None => Ok(CompleteResult::default()),
        }
    }

    /// A session asked for `level`: servers are told the most verbose level any session
    /// asked for (each session filters what it passes on to its own level).
    pub async fn set_level(&self, level: LoggingLevel) {
        let raise = {
            let mut current = self.inner.level.lock().unwrap_or_else(|e| e.into_inner());
            let more_verbose = current.is_none_or(|c| level_rank(level) < level_rank(c));
            if more_verbose {
                *current = Some(level);
            }
            more_verbose
        };
        if !raise {
            return;
        }
        for u in self.upstreams().iter().filter(|u| u.info.logging()) {
            if let Err(e) = u.client.set_log_level(level).await {
                tracing::warn!(server = %u.name(), "gateway: {e}");
            }
        }
    }
}

/// The keys (`key` of each item) that two or more servers of `lists` offer: the
/// registry's one naming rule ([`toolhost_core::tools::contested_names`]) applied to
/// what the gateway passes on.
fn contested_in<T>(lists: &[(String, Vec<T>)], key: impl Fn(&T) -> String) -> BTreeSet<String> {
    let claims: Vec<BTreeSet<String>> = lists
        .iter()
        .map(|(_, list)| list.iter().map(&key).collect())
        .collect();
    toolhost_core::tools::contested_names(&claims, |_| false)
}
