//! Serving a [`ToolRegistry`] as an MCP server, over stdio or Streamable HTTP (axum).
//!
//! - `tools/list`: every registry tool, with its `inputSchema` and annotations derived from
//!   its permissions (`readOnlyHint` when it declares nothing that writes, deletes or runs
//!   shell commands; `destructiveHint` for Delete/Shell; `openWorldHint` for Network),
//!   and the `title`, `icons` and `outputSchema` its source gave (wrapped MCP tools).
//!   In search mode ([`Discovery::Search`], `server/discovery.rs`) the list holds
//!   `search_tools`, `call_tool` and the operator's pinned tools instead.
//! - `tools/call`: runs the full registry pipeline (validation, permission gate, timeout).
//!   Success returns the output's content blocks as they are (else the render text as one
//!   text block) plus `structuredContent` (the canonical value, as it is when the tool
//!   declares an output schema; otherwise non-objects are wrapped as `{"result": value}`).
//!   Any [`ToolError`] — unknown tool,
//!   invalid arguments, denial, failure — is a result with `isError: true` (and
//!   `structuredContent: {"error": kind, "message": ...}`), never a JSON-RPC error.
//! - Progress: a tool's `ToolContext::report_progress` becomes `notifications/progress` when
//!   the client sent a progress token. `notifications/cancelled` cancels the tool's
//!   `ToolContext`.
//! - `notifications/tools/list_changed` whenever the registry changes: on legacy
//!   (`initialize`) sessions directly, on `2026-07-28` sessions through
//!   `subscriptions/listen`. A change between the `initialize` answer and the client's
//!   `notifications/initialized` (tools loading in the background) is announced too.
//! - `tools/call` of a tool the registry is still loading waits for it (the registry's
//!   pending loads, `ToolRegistry::begin_loading`).
//! - `tools/list` (and `resources/list`, `resources/templates/list`, `prompts/list`)
//!   while loads are pending waits for them, up to [`DEFAULT_LIST_WAIT`]
//!   ([`McpServer::with_list_wait`]): many clients list tools once and never again,
//!   whatever `list_changed` says, so a list answered in the first milliseconds of a start
//!   from a warm compile cache must not be partial. Only a load that takes longer (a cold
//!   compile of a large component) is answered with what is ready, and `list_changed`
//!   follows when the rest is registered.
//! - HTTP binds loopback by default ([`McpServer::serve_http`] refuses other addresses unless told,
//!   and then only with a bearer token), and validates `Host` (loopback names, the bound
//!   address and the operator's `allowed_hosts`) and `Origin` (loopback origins only;
//!   requests without `Origin` pass, as non-browser clients send none).
//! - With bearer tokens ([`BearerTokens`], `server/auth.rs`), every HTTP request without a
//!   valid `Authorization: Bearer` gets HTTP 401 with `WWW-Authenticate: Bearer
//!   realm="toolhost"` and a JSON-RPC error, before anything else looks at it.
//! - HTTP is bounded ([`HttpLimits`], defaults in docs/mcp.md): a connection must send its
//!   request headers within the header-read timeout (also the idle limit of a keep-alive
//!   connection between requests), at most `max_connections` are served at once (further
//!   ones wait in the kernel's accept queue), at most `max_sessions` MCP sessions exist
//!   and at most `max_sessions_per_client` per client (bearer token, else IP address): a
//!   new `initialize` over either bound closes the least recently used idle session (of
//!   that client, for the share), and gets HTTP 503 with a JSON-RPC error only when every
//!   such session has a request in flight (`server/sessions.rs`), and a session with no
//!   traffic for `session_idle` is closed. Accepted sockets get `TCP_NODELAY`:
//!   a response is one small write, and Nagle's algorithm with the client's delayed ACK
//!   would hold every keep-alive call back by ~40 ms.
//! - A POST whose body is not JSON gets HTTP 400 with JSON-RPC error -32700 (parse error),
//!   rather than rmcp's 415.
//!
//! This file holds [`McpServer`] and its MCP handler (its builder is `server/builder.rs`); `server/listing.rs` makes a tool's
//! definition, `server/calls.rs` runs a `tools/call`; the transports are beside it:
//! `server/stdio.rs` (stdin/stdout, any byte-stream pair), `server/http.rs` (the
//! Streamable HTTP front and its limits) and `server/sessions.rs` (its session store).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult,
    Implementation, InitializeRequestParams, InitializeResult, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    PromptsCapability, ReadResourceRequestParams, ReadResourceResponse, ResourcesCapability,
    ResultType, ServerCapabilities, ServerConfig, ServerResult, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use toolhost_core::tools::{ToolContext, ToolRegistry};
use tracing::Instrument;

mod auth;
mod builder;
mod calls;
mod clients;
mod discovery;
mod drain;
mod gateway_session;
mod hints;
mod http;
mod http_limits;
mod listen;
mod listing;
mod rounds;
mod sessions;
mod skills;
mod stdio;
mod tasks;
mod views;

use crate::gateway::Gateway;
use calls::is_stateless;
use clients::identity;
use gateway_session::Session;
use listing::tool_of;

pub use auth::BearerTokens;
pub use clients::{ServedClient, ServedClientError};
pub use discovery::{CALL_TOOL, Discovery, SEARCH_TOOLS};
pub use gateway_session::{LOG_BURST, LOG_PER_SECOND, MAX_LOG_DATA_BYTES};
pub use hints::{ListHints, STATIC_LIST_TTL};
pub use http::{ANY_HOST, HttpServeOptions, serve_connections};
pub use http_limits::HttpLimits;
pub use listing::{annotations_for, annotations_rated};
pub use rounds::{MAX_PARKED, MAX_SPENT, PARKED_SHARE, SPENT_SHARE};
pub use sessions::{
    CappedSessionManager, LOG_EVERY, SessionCounters, SessionCounts, SessionLimitError,
};
pub use tasks::{
    MAX_TASKS, MAX_TASKS_PER_CLIENT, TASK_AFTER, TASK_RESERVE, TASK_SHARE, TaskBoard, TaskSupport,
};

/// The token that stops [`McpServer::serve_http`] (tokio-util's `CancellationToken`).
pub use tokio_util::sync::CancellationToken as StopToken;

/// How long `tools/list` waits for the registry's pending loads before it answers with
/// the tools that are ready (see the module docs). A start from a warm compile cache
/// loads in tens of milliseconds; a cold compile of a large component takes longer and is
/// announced with `list_changed` instead.
pub const DEFAULT_LIST_WAIT: Duration = Duration::from_secs(5);

/// An MCP server over a [`ToolRegistry`]. Cheap to clone (one clone per HTTP session).
#[derive(Clone, Debug)]
pub struct McpServer {
    registry: ToolRegistry,
    /// How long `tools/list` waits for pending loads.
    list_wait: Duration,
    /// What the cache hints of `tools/list` are computed from.
    list_hints: ListHints,
    name: String,
    version: String,
    instructions: Option<String>,
    /// What the wrapped MCP servers offer besides tools, when serving as a gateway.
    gateway: Option<Gateway>,
    /// The state of the session this instance serves (a fresh one per HTTP session).
    session: Arc<Session>,
    /// The multi-round-trip requests of 2026-07-28 clients, shared by all sessions
    /// (`None` when no sealing key could be made: such requests that ask are refused).
    rounds: Option<Arc<rounds::Rounds>>,
    /// The tool calls running on as tasks, shared by all sessions.
    tasks: Arc<tasks::Tasks>,
    /// How each tool named here may run as a task (others: [`TaskSupport::Optional`]).
    task_support: Arc<BTreeMap<String, TaskSupport>>,
    /// Progressive discovery (`server/discovery.rs`): `None` lists every tool.
    search: Option<discovery::SearchMode>,
    /// Whether `initialize` waits for the load (the wrapped servers' capabilities and
    /// instructions are known only once they joined the gateway).
    initialize_waits: bool,
    /// The skills served (the Skills extension, `server/skills.rs`); empty: none.
    skills: crate::skills::SkillSet,
}

impl McpServer {
    fn gateway_or_not_found(&self, method: &'static str) -> Result<&Gateway, ErrorData> {
        self.gateway
            .as_ref()
            .ok_or_else(|| ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, method, None))
    }
}

/// Marks a result a wrapped server gave as complete when it says nothing: results of the
/// revisions before 2026-07-28 carry no `resultType`, which 2026-07-28 requires on every
/// result (rmcp removes it again for clients of the older revisions).
fn complete_result_type(result_type: &mut Option<ResultType>) {
    result_type.get_or_insert(ResultType::COMPLETE);
}

impl McpServer {
    /// While loads are pending (the plugins, the wrapped servers and what they offer),
    /// a list waits for them up to the list wait ([`McpServer::with_list_wait`]): tools,
    /// resources, resource templates and prompts alike, so a client that lists once
    /// right after `initialize` is not answered with a partial list. A resource read and
    /// a prompt get wait the same way: what they name may be a server's still starting.
    async fn wait_for_load(&self, method: &'static str) {
        if !self.registry.is_loading() || self.list_wait.is_zero() {
            return;
        }
        let started = std::time::Instant::now();
        let done = tokio::time::timeout(self.list_wait, Box::pin(self.registry.loaded()))
            .await
            .is_ok();
        tracing::debug!(
            method,
            waited_ms = started.elapsed().as_millis() as u64,
            complete = done,
            "a request waited for what is still loading"
        );
    }
}

// rmcp spawns every request's handler as a task of its own, and the handler's future is
// as large as the largest of these methods' futures: each method boxes what it awaits of
// the pipeline, the gateway or the rounds, so the task copied at each spawn stays small
// (docs/benchmarks.md, "serve's per-call path").
impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        // Long tool calls as tasks (server/tasks.rs).
        let mut caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks()
            .build();
        // Logs: the wrapped servers' and, later, the plugins'. Resources, prompts and
        // completions: what the wrapped servers offer (empty lists without any).
        caps.logging = Some(JsonObject::new());
        let has_views = views::any(&self.registry);
        if self.gateway.is_some() || !self.skills.is_empty() || has_views {
            let mut resources = ResourcesCapability::default();
            resources.subscribe = Some(true);
            resources.list_changed = Some(true);
            caps.resources = Some(resources);
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = Some(true);
            caps.prompts = Some(prompts);
            caps.completions = Some(JsonObject::new());
        }
        if !self.skills.is_empty() || self.gateway.as_ref().is_some_and(Gateway::offers_skills) {
            caps.extensions.get_or_insert_with(Default::default).insert(
                crate::skills::SKILLS_EXTENSION.to_string(),
                skills::settings(&self.skills, self.gateway.as_ref()),
            );
        }
        // MCP Apps, when a tool of toolhost's own ships a view (a plugin's `NAME.ui/`).
        if has_views {
            caps.extensions.get_or_insert_with(Default::default).insert(
                crate::gateway::UI_EXTENSION.to_string(),
                json!({ "mimeTypes": [crate::gateway::MCP_APP_MIME] })
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            );
        }
        // Extensions a wrapped server offers and toolhost passes through faithfully (an
        // MCP App's `ui`): offered as the server offers them (gateway.rs).
        if let Some(g) = &self.gateway {
            for (id, settings) in g.extensions() {
                caps.extensions
                    .get_or_insert_with(Default::default)
                    .entry(id)
                    .or_insert(settings);
            }
        }
        let mut info = ServerConfig::new(caps)
            .with_server_info(Implementation::new(self.name.clone(), self.version.clone()));
        let wrapped = self.gateway.as_ref().and_then(Gateway::instructions);
        let text = match (&self.instructions, wrapped) {
            (Some(own), Some(w)) => Some(format!("{own}\n\n{w}")),
            (Some(own), None) => Some(own.clone()),
            (None, w) => w,
        };
        if let Some(i) = text {
            info = info.with_instructions(i);
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.wait_for_load("tools/list").await;
        // A configured client sees only the tools its `tools` globs name.
        let who = identity(&context);
        let mut tools: Vec<Tool> = self
            .registry
            .entries()
            .iter()
            .filter(|e| who.sees(e.name()))
            .filter(|e| self.search.as_ref().is_none_or(|s| s.is_pinned(e.name())))
            .map(|e| tool_of(e))
            .collect();
        if self.search.is_some() {
            // The server's own tools take their names: a registry tool of either name is
            // reached through `call_tool`.
            tools.retain(|t| discovery::SearchMode::own_tool(&t.name).is_none());
            tools.extend(discovery::SearchMode::own_tools());
        }
        // Lists come in a deterministic order (2026-07-28): by name, the same on every
        // replica whatever order their plugins and servers finished loading in.
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let mut result = ListToolsResult::with_all_items(tools);
        self.list_hints
            .apply(&mut result, self.registry.is_loading());
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if self.search.is_some()
            && let Some(own) = discovery::SearchMode::own_tool(name)
        {
            return Some(own);
        }
        self.registry.entry(name).map(|e| tool_of(&e))
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Search mode's own tools: `search_tools` is answered here; `call_tool` becomes
        // the call it stands for, before the span, visibility and everything else.
        if let Some(search) = &self.search {
            match request.name.as_ref() {
                discovery::SEARCH_TOOLS => {
                    let who = identity(&context);
                    let result = search.search(request.arguments.as_ref(), &who);
                    return Ok(CallToolResponse::Complete(result));
                }
                discovery::CALL_TOOL => match discovery::unwrap_call(request.arguments.take()) {
                    Ok((name, arguments)) => {
                        request.name = name.into();
                        request.arguments = arguments;
                    }
                    Err(result) => return Ok(CallToolResponse::Complete(result)),
                },
                _ => {}
            }
        }
        let span = self.request_span("tools/call", &request.name, &context);
        // Boxed: the call's future (the pipeline, the sandbox's instantiation) is tens of
        // kilobytes, and rmcp spawns every request's handler as a task of its own; inline,
        // all of it would be copied into the task at each spawn (docs/benchmarks.md,
        // "serve's per-call path").
        Box::pin(self.call_tool_traced(request, context).instrument(span)).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks.get(&request.task_id, identity(&context).id())
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update(
            &request.task_id,
            identity(&context).id(),
            request.input_responses,
        )
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&request.task_id, identity(&context).id())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.wait_for_load("resources/list").await;
        let items = match &self.gateway {
            Some(g) => Box::pin(g.list_resources()).await,
            None => Vec::new(),
        };
        // A wrapped server's resource at the URI of a view of toolhost's own is not
        // passed on: the URI names the view the operator approved.
        let own = views::own_uris(&self.registry);
        let mut items: Vec<_> = items
            .into_iter()
            .filter(|r| !own.contains(&r.uri))
            .collect();
        items.extend(views::resources(&self.registry, &identity(&context)));
        items.extend(skills::resources(&self.skills));
        items.sort_by(|a, b| a.uri.cmp(&b.uri));
        Ok(ListResourcesResult::with_all_items(items))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.wait_for_load("resources/templates/list").await;
        let items = match &self.gateway {
            Some(g) => Box::pin(g.list_resource_templates()).await,
            None => Vec::new(),
        };
        let mut items = items;
        items.sort_by(|a, b| a.uri_template.cmp(&b.uri_template));
        Ok(ListResourceTemplatesResult::with_all_items(items))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        // A URI of a server still starting is known once the load is done.
        self.wait_for_load("resources/read").await;
        if let Some(read) = skills::read(&self.skills, &request.uri) {
            return read.map(ReadResourceResponse::Complete);
        }
        if let Some(read) = views::read(&self.registry, &identity(&context), &request.uri) {
            return read.map(|mut r| {
                complete_result_type(&mut r.result_type);
                ReadResourceResponse::Complete(r)
            });
        }
        // The view of a tool this client does not see is as if it were not there: the
        // read goes on exactly as for a URI nothing of toolhost's own serves.
        let Some(gateway) = &self.gateway else {
            // Resources offered without a wrapped server are skills and views only.
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                Some(json!({ "uri": request.uri })),
            ));
        };
        let mut result = Box::pin(gateway.read_resource(&request.uri))
            .await
            .map_err(|e| {
                // A resource that is not there: `data.uri` names the client's URI back
                // (SEP-2164); the wrapped server's own `data` never passes (unbounded).
                let mut e = ErrorData::from(e);
                if e.code == rmcp::model::ErrorCode::RESOURCE_NOT_FOUND
                    || e.code == rmcp::model::ErrorCode::INVALID_PARAMS
                {
                    e.data = Some(json!({ "uri": request.uri }));
                }
                e
            })?;
        complete_result_type(&mut result.result_type);
        Ok(ReadResourceResponse::Complete(result))
    }

    #[allow(deprecated)] // 2025-11-25 clients subscribe this way (see `listen` for 2026-07-28)
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let gateway = self.gateway_or_not_found("resources/subscribe")?;
        Box::pin(self.session.gateway.subscribe(gateway, &request.uri)).await?;
        Ok(())
    }

    #[allow(deprecated)] // as `subscribe`
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let gateway = self.gateway_or_not_found("resources/unsubscribe")?;
        Box::pin(self.session.gateway.unsubscribe(gateway, &request.uri)).await?;
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.wait_for_load("prompts/list").await;
        let items = match &self.gateway {
            Some(g) => Box::pin(g.list_prompts()).await,
            None => Vec::new(),
        };
        let mut items = items;
        items.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ListPromptsResult::with_all_items(items))
    }

    async fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.wait_for_load("prompts/get").await;
        let gateway = self.gateway_or_not_found("prompts/get")?.clone();
        let state = request.request_state.take();
        let responses = request.input_responses.take();
        let prompt_ctx = |client: crate::DownstreamClient, cancel: StopToken| {
            ToolContext::new(self.session.id.clone(), context.id.to_string())
                .with_cancellation(cancel)
                .with(client)
        };
        if !is_stateless(&context) {
            let client =
                crate::DownstreamClient::new(context.peer.clone(), self.session.id.clone());
            let ctx = prompt_ctx(client, context.ct.child_token());
            let mut result = Box::pin(gateway.get_prompt_in(request, &ctx)).await?;
            complete_result_type(&mut result.result_type);
            return Ok(GetPromptResponse::Complete(result));
        }
        let rounds = self.rounds_or_refuse()?;
        let args = serde_json::to_value(&request.arguments).unwrap_or(Value::Null);
        let who = identity(&context);
        let binding = rounds::binding(who.id(), "prompts/get", &request.name, &args);
        let capabilities = context.meta.client_capabilities().unwrap_or_default();
        let step = Box::pin(rounds.run(
            binding,
            state.as_deref(),
            responses.as_ref(),
            capabilities,
            &self.session.id,
            who.id(),
            &context.ct,
            None,
            |client, cancel| {
                let ctx = prompt_ctx(client, cancel);
                async move {
                    let result = Box::pin(gateway.get_prompt_in(request, &ctx)).await?;
                    Ok(ServerResult::GetPromptResult(result))
                }
            },
        ))
        .await?;
        match step {
            rounds::Step::Done(done) => match *done {
                ServerResult::GetPromptResult(mut r) => {
                    complete_result_type(&mut r.result_type);
                    Ok(GetPromptResponse::Complete(r))
                }
                _ => Err(ErrorData::internal_error(
                    "prompts/get produced another kind of result",
                    None,
                )),
            },
            rounds::Step::Input(input) => Ok(GetPromptResponse::InputRequired(input)),
            // Not given a `task_after`, the driver never hands a prompt's work on.
            rounds::Step::Running(r) => {
                r.cancel.cancel();
                r.work.abort();
                Err(ErrorData::internal_error(
                    "prompts/get was handed on as a task, which prompts never are",
                    None,
                ))
            }
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let mut result = match &self.gateway {
            Some(g) => Box::pin(g.complete(request)).await?,
            None => CompleteResult::default(),
        };
        complete_result_type(&mut result.result_type);
        Ok(result)
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, ErrorData> {
        self.wait_for_load("skills/list").await;
        let wrapped = match &self.gateway {
            Some(g) => Box::pin(g.list_skills()).await,
            None => Vec::new(),
        };
        skills::list(&self.skills, wrapped)
    }

    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, ErrorData> {
        self.wait_for_load("skills/get").await;
        let wrapped = match (&self.gateway, self.skills.by_uri(&request.uri)) {
            (Some(g), None) => Box::pin(g.get_skill(&request.uri)).await,
            _ => None,
        };
        skills::get(&self.skills, &request.uri, wrapped)
    }

    async fn read_resource_directory(
        &self,
        request: rmcp::model::ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceDirectoryResult, ErrorData> {
        self.wait_for_load("resources/directory/read").await;
        Box::pin(self.read_skill_directory(&request.uri)).await
    }

    #[allow(deprecated)] // logging is deprecated for 2026-07-28; 2025-11-25 clients use it
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.gateway.set_level(request.level);
        if let Some(g) = &self.gateway {
            Box::pin(g.set_level(request.level)).await;
        }
        Ok(())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let generation = *self.registry.watch_changes().borrow();
        self.session
            .initialized_at
            .store(generation, std::sync::atomic::Ordering::SeqCst);
        if self.initialize_waits {
            self.wait_for_load("initialize").await;
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Legacy (initialize) session: push list_changed on this peer, for every change
        // after the `initialize` answer. Tools loading in the background may have been
        // registered before this notification arrived (a `tools/list` sent meanwhile may
        // or may not have seen them): then one list_changed goes out at once.
        self.session.gateway.forward(context.peer.clone());
        let peer = context.peer.clone();
        let mut rx = self.registry.watch_changes();
        let now = *rx.borrow_and_update();
        let at_init = self
            .session
            .initialized_at
            .load(std::sync::atomic::Ordering::SeqCst);
        let missed = at_init != u64::MAX && at_init != now;
        tokio::spawn(async move {
            if missed && peer.notify_tool_list_changed().await.is_err() {
                return;
            }
            loop {
                tokio::select! {
                    r = rx.changed() => if r.is_err() { break },
                    _ = tokio::time::sleep(Duration::from_secs(30)) => {
                        if peer.is_transport_closed() { break }
                        continue;
                    }
                }
                if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(listen::bounded(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        Box::pin(listen::forward_changes(
            &self.registry,
            self.gateway.as_ref(),
            context,
        ))
        .await;
        Ok(())
    }
}
