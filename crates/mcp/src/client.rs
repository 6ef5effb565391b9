//! [`McpClient`]: an MCP client over rmcp, stdio (child process) or Streamable HTTP, whose
//! tools become ordinary registry tools.
//!
//! - The handshake offers protocol `2025-11-25` with `initialize`
//!   (`ProtocolVersion::LATEST_WITH_INITIALIZE`) and accepts any older version the server
//!   answers with.
//! - Every request is bounded by the client timeout (default 30 s). On timeout rmcp sends
//!   `notifications/cancelled` and the call fails with `McpClientError::Timeout` (`McpTimeout` in the registry). A call whose
//!   `ToolContext` is cancelled, or whose future is dropped, also sends
//!   `notifications/cancelled`.
//! - A stdio child runs with a **cleared environment** plus exactly the listed variables,
//!   and, when its transport is [`McpTransport::SandboxedStdio`], inside the declared
//!   sandbox ([`crate::sandbox`]; it is not started when the sandbox cannot be enforced);
//!   its stderr goes to `tracing` (target `toolhost_mcp::stderr`), capped per line and in
//!   total, and its last lines are quoted in error messages. A stdout line longer than
//!   [`StdioLimits::max_line_bytes`] closes the connection with an error (memory stays
//!   bounded); unparsable lines are skipped by rmcp; replies with unknown ids are dropped.
//! - When the connection dies (crash, exit, broken framing), the call in flight gets a
//!   structured `McpError` naming the cause, and the next call reconnects. Repeated failures
//!   back off exponentially (100 ms doubling, at most 10 s).
//! - `notifications/tools/list_changed` invalidates the tool cache; a registry filled with
//!   [`McpClient::register_into`] is updated in the background.
//! - `tools/list` is followed page by page within [`ToolLimits`] (how many tools, how many
//!   bytes), [`MAX_TOOL_PAGES`] pages and the timeout; a tool nested too deep or too large
//!   is refused by name and the others are kept (`client/listing.rs`).

mod call;
mod connection;
mod features;
mod hooks;
mod http_client;
mod listen;
mod listing;
mod open;
mod rounds;
mod routes;
mod tasks;
mod transport;

use routes::Pending;
pub(crate) use routes::Route;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::ProgressToken;
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolhost_core::tools::{FunctionDefinition, ToolContext, ToolDefinition, ToolOutput};

use crate::error::McpClientError;
use crate::info::McpToolInfo;
use crate::rating::McpToolRules;
use crate::stdio::StdioLimits;
use connection::Conn;
pub use features::{MAX_INSTRUCTIONS_BYTES, MAX_ITEMS, MAX_PAGES, UpstreamError, UpstreamInfo};
pub use hooks::UpstreamEvent;
pub use listing::{
    DEFAULT_MAX_TOOLS, DEFAULT_MAX_TOOLS_BYTES, MAX_TOOL_BYTES, MAX_TOOL_DEPTH, MAX_TOOL_PAGES,
    ToolLimits,
};
pub use transport::{McpProtocol, McpTransport};

/// Default time budget of one MCP request: 30 s.
pub const DEFAULT_MCP_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
struct Config {
    server: String,
    transport: McpTransport,
    timeout: Duration,
    limits: StdioLimits,
    rules: McpToolRules,
    /// Where OAuth credentials of HTTP servers are looked up (`None`: OAuth is off).
    oauth: Option<crate::oauth::OAuthStore>,
    /// Who toolhost is to the server's authorization server (refreshing tokens).
    oauth_client: crate::oauth::OAuthClientIdentity,
    /// Whether this server's forms may ask for secret-looking fields
    /// ([`crate::attribution`]).
    allow_secret_fields: bool,
    /// The protocol revision spoken to the server.
    protocol: McpProtocol,
    /// How much of the server's tool list is kept.
    tool_limits: ToolLimits,
    /// Replaces the secrets given to the server in what its tools return.
    redactor: toolhost_core::secrets::Redactor,
}

#[derive(Default)]
struct Slot {
    conn: Option<Conn>,
    connected_once: bool,
    not_before: Option<Instant>,
    last_error: String,
}

struct Shared {
    slot: tokio::sync::Mutex<Slot>,
    tools: RwLock<Option<(u64, Arc<Vec<McpToolInfo>>)>>,
    /// The tools the last listing refused by name, each with why.
    refused: Mutex<Vec<String>>,
    changed: Arc<watch::Sender<u64>>,
    progress: Arc<Mutex<HashMap<ProgressToken, Route>>>,
    /// The server's notifications for the gateway.
    events: tokio::sync::broadcast::Sender<UpstreamEvent>,
    /// The resources whose updates are wanted of a 2026-07-28 server (its listen stream's
    /// `resourceSubscriptions`; the older revisions' `resources/subscribe` keeps none
    /// here), kept across reconnections.
    watched: watch::Sender<std::collections::BTreeSet<String>>,
    failures: AtomicU32,
    reconnects: AtomicU64,
    closed: AtomicBool,
    /// Set once the "runs unsandboxed" warning was logged (it is logged once per client,
    /// not at every reconnect).
    warned_unsandboxed: AtomicBool,
    /// Set when `protocol = "auto"` could not start this server in 2026-07-28: every
    /// later connection speaks 2025-11-25 to it (client/open.rs).
    legacy_only: AtomicBool,
    stop: CancellationToken,
    /// The challenge of the last 403 `insufficient_scope` that ended an HTTP connection.
    denied: http_client::Denied,
}

/// An MCP client: the connection to one server, its tool cache and its calls.
///
/// Cheap to clone; clones share the connection. The tools it adapts ([`McpClient::into_tools`],
/// [`McpClient::register_into`]) hold a clone.
///
/// ```no_run
/// # async fn demo() -> Result<(), toolhost_mcp::McpClientError> {
/// use toolhost_mcp::{McpClient, McpTransport};
/// let client = McpClient::new("everything", McpTransport::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]))
///     .with_timeout(10);
/// client.connect().await?;
/// let tools = client.list_tools().await?;
/// let sum = client.call_tool("get-sum", serde_json::json!({"a": 1, "b": 2})).await?;
/// client.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpClient {
    cfg: Arc<Config>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.cfg.server)
            .field("transport", &self.cfg.transport)
            .field("timeout", &self.cfg.timeout)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// A client for `server_name` (the name used in errors, logs and `server__tool` names).
    /// Nothing starts until [`McpClient::connect`].
    pub fn new(server_name: impl Into<String>, transport: McpTransport) -> Self {
        let (changed, _) = watch::channel(0);
        Self {
            cfg: Arc::new(Config {
                server: server_name.into(),
                transport,
                timeout: DEFAULT_MCP_TIMEOUT,
                limits: StdioLimits::default(),
                rules: McpToolRules::default(),
                oauth: None,
                oauth_client: Default::default(),
                allow_secret_fields: false,
                protocol: McpProtocol::Initialize,
                redactor: Default::default(),
                tool_limits: ToolLimits::default(),
            }),
            shared: Arc::new(Shared {
                slot: tokio::sync::Mutex::new(Slot::default()),
                tools: RwLock::new(None),
                refused: Mutex::new(Vec::new()),
                changed: Arc::new(changed),
                progress: Arc::new(Mutex::new(HashMap::new())),
                events: tokio::sync::broadcast::channel(hooks::EVENT_BACKLOG).0,
                watched: watch::channel(std::collections::BTreeSet::new()).0,
                failures: AtomicU32::new(0),
                reconnects: AtomicU64::new(0),
                closed: AtomicBool::new(false),
                warned_unsandboxed: AtomicBool::new(false),
                legacy_only: AtomicBool::new(false),
                stop: CancellationToken::new(),
                denied: Arc::default(),
            }),
        }
    }

    /// Sets the time budget of each request, in seconds.
    pub fn with_timeout(self, secs: u64) -> Self {
        self.with_timeout_duration(Duration::from_secs(secs))
    }

    /// Sets the time budget of each request.
    pub fn with_timeout_duration(mut self, timeout: Duration) -> Self {
        Arc::make_mut(&mut self.cfg).timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Sets the operator's rating of this server's tools (see [`crate::rating`]); by
    /// default, tools rate themselves through their annotations and an unannotated tool
    /// needs an approval.
    pub fn with_tool_rules(mut self, rules: McpToolRules) -> Self {
        Arc::make_mut(&mut self.cfg).rules = rules;
        self
    }

    /// Looks up OAuth credentials (from `toolhost mcp login`) in `store`: when a Streamable
    /// HTTP server without a configured `Authorization` header has some, they are sent
    /// (and the access token refreshed when it is about to expire). Without a store, or
    /// with no credentials there, a server's OAuth challenge becomes
    /// [`McpClientError::Unauthorized`] naming `toolhost mcp login SERVER`.
    pub fn with_oauth_store(mut self, store: Option<crate::oauth::OAuthStore>) -> Self {
        Arc::make_mut(&mut self.cfg).oauth = store;
        self
    }

    /// Who toolhost is to the server's authorization server (`[mcp.servers.NAME.oauth]`):
    /// a pre-registered client's secret authenticates the refresh of stored tokens.
    pub fn with_oauth_client(mut self, client: crate::oauth::OAuthClientIdentity) -> Self {
        Arc::make_mut(&mut self.cfg).oauth_client = client;
        self
    }

    /// Sets the protocol revision spoken to the server (`protocol` in
    /// `[mcp.servers.NAME]`).
    pub fn with_protocol(mut self, protocol: McpProtocol) -> Self {
        Arc::make_mut(&mut self.cfg).protocol = protocol;
        self
    }

    /// The operator's rating of this server's tools.
    pub fn tool_rules(&self) -> &McpToolRules {
        &self.cfg.rules
    }

    /// Sets the stdio limits (line size, stderr caps).
    pub fn with_limits(mut self, limits: StdioLimits) -> Self {
        Arc::make_mut(&mut self.cfg).limits = limits;
        self
    }

    /// The configured server name.
    pub fn server_name(&self) -> &str {
        &self.cfg.server
    }

    /// The time budget of each request.
    pub fn timeout(&self) -> Duration {
        self.cfg.timeout
    }

    /// How many times the client reconnected after the connection died.
    pub fn reconnect_count(&self) -> u64 {
        self.shared.reconnects.load(Ordering::Relaxed)
    }

    /// The protocol version the server agreed to, while connected.
    pub async fn protocol_version(&self) -> Option<String> {
        self.shared
            .slot
            .lock()
            .await
            .conn
            .as_ref()
            .map(|c| c.protocol.clone())
    }

    /// The last stderr lines of the server process (stdio only; empty otherwise).
    pub async fn stderr_tail(&self) -> Vec<String> {
        let slot = self.shared.slot.lock().await;
        slot.conn
            .as_ref()
            .map(|c| {
                c.state
                    .tail
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A receiver that changes whenever the server says its tool list changed (and after a
    /// reconnect).
    pub fn watch_tool_changes(&self) -> watch::Receiver<u64> {
        self.shared.changed.subscribe()
    }

    /// Connects and runs the `initialize` handshake. Calling it again while connected does
    /// nothing.
    pub async fn connect(&self) -> Result<(), McpClientError> {
        let mut slot = self.shared.slot.lock().await;
        self.shared.closed.store(false, Ordering::SeqCst);
        if slot.conn.as_ref().is_some_and(Conn::alive) {
            return Ok(());
        }
        if let Some(old) = slot.conn.take() {
            old.shutdown().await;
        }
        let conn = self.open().await?;
        slot.conn = Some(conn);
        slot.connected_once = true;
        slot.not_before = None;
        self.shared.failures.store(0, Ordering::Relaxed);
        Ok(())
    }

    /// Closes the connection (ends the child process). The client can `connect` again.
    pub async fn close(&self) -> Result<(), McpClientError> {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.stop.cancel();
        let conn = self.shared.slot.lock().await.conn.take();
        if let Some(conn) = conn {
            conn.shutdown().await;
        }
        Ok(())
    }

    /// The server's tools, from the cache when it is fresh (refreshed after
    /// `notifications/tools/list_changed`).
    pub async fn tools(&self) -> Result<Arc<Vec<McpToolInfo>>, McpClientError> {
        let generation = *self.shared.changed.borrow();
        {
            let cache = self.shared.tools.read().unwrap_or_else(|e| e.into_inner());
            if let Some((g, tools)) = &*cache
                && *g == generation
            {
                return Ok(tools.clone());
            }
        }
        self.refresh_tools().await
    }

    /// Lists the tools again, bypassing the cache: page by page, within the client's
    /// [`ToolLimits`] and its timeout for all pages together (see `client/listing.rs`).
    pub async fn refresh_tools(&self) -> Result<Arc<Vec<McpToolInfo>>, McpClientError> {
        let generation = *self.shared.changed.borrow();
        let peer = self.peer().await?;
        let listed = tokio::time::timeout(self.cfg.timeout, self.list_bounded(&peer)).await;
        let infos = match listed {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => return Err(self.request_error(e, "tools/list").await),
            Err(_) => {
                return Err(McpClientError::Timeout {
                    server: self.cfg.server.clone(),
                    what: "tools/list".into(),
                    timeout: self.cfg.timeout,
                });
            }
        };
        let (infos, refused) = infos;
        *self
            .shared
            .refused
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = refused;
        let infos = Arc::new(infos);
        *self.shared.tools.write().unwrap_or_else(|e| e.into_inner()) =
            Some((generation, infos.clone()));
        Ok(infos)
    }

    /// The tools the last listing refused by name (too deep, too large), each with why.
    pub fn refused_tools(&self) -> Vec<String> {
        self.shared
            .refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The server's tools as model-facing definitions. Cached; see
    /// [`McpClient::refresh_tools`].
    pub async fn list_tools(&self) -> Result<Vec<ToolDefinition>, McpClientError> {
        Ok(self
            .tools()
            .await?
            .iter()
            .map(|t| ToolDefinition {
                kind: "function".into(),
                function: FunctionDefinition {
                    name: t.name.clone(),
                    description: t.description.clone().unwrap_or_default(),
                    parameters: t.input_schema.clone(),
                },
                // MCP tool definitions carry no examples.
                input_examples: Vec::new(),
            })
            .collect())
    }

    /// Calls a tool and returns its canonical result: `structuredContent` when the server
    /// sends it, else the text content. `isError: true` becomes `ExecutionFailed`.
    pub async fn call_tool(&self, name: &str, args: Value) -> Result<Value, McpClientError> {
        self.call_tool_output(name, args, &ToolContext::default())
            .await
            .map(|o| o.canonical)
    }

    /// Calls a tool in a context: progress notifications go to `ctx.report_progress`, and
    /// cancelling `ctx` sends `notifications/cancelled`. When an HTTP server with a
    /// stored OAuth login answers 403 `insufficient_scope` and `ctx` carries a
    /// [`crate::LocalUser`] who logs in, they log in again with the scope the server
    /// names, and the call is made once more.
    pub async fn call_tool_output(
        &self,
        name: &str,
        args: Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, McpClientError> {
        // The arguments are kept for a second call only when a new login could follow: a
        // person who logs in is behind the call and the server's credential is an OAuth
        // login (every other call pays no copy).
        // The call's one deadline: the registry's (in `ctx`, the tool's timeout cut to the
        // caller's), else this client's timeout from now. Every request, question and
        // task poll of the call is bounded by it; nothing else times the call.
        let own = tokio::time::Instant::now() + self.cfg.timeout;
        let deadline = ctx.deadline().map_or(own, |d| d.min(own));
        let login = ctx.get::<crate::LocalUser>().and_then(|u| u.login());
        let oauth_http = matches!(self.cfg.transport, McpTransport::StreamableHttp { .. })
            && self.cfg.oauth.is_some();
        let Some((login, again)) = login.filter(|_| oauth_http).map(|l| (l, args.clone())) else {
            return self.call_tool_once(name, args, ctx, deadline).await;
        };
        let first = self.call_tool_once(name, args, ctx, deadline).await;
        let challenge = match &first {
            Err(McpClientError::Unauthorized {
                status: 403,
                challenge: Some(c),
                ..
            }) => c.clone(),
            _ => return first,
        };
        self.step_up(&challenge, login).await?;
        self.call_tool_once(name, again, ctx, deadline).await
    }

    /// A new login through `login` for the scope a 403 `challenge` names (only for a
    /// Streamable HTTP server whose credentials come from the OAuth store).
    async fn step_up(
        &self,
        challenge: &str,
        login: &crate::LocalLogin,
    ) -> Result<(), McpClientError> {
        let server = self.cfg.server.clone();
        let refused = |hint: String| McpClientError::Unauthorized {
            server: server.clone(),
            status: 403,
            hint,
            challenge: None,
        };
        let (McpTransport::StreamableHttp { url, .. }, Some(store)) =
            (&self.cfg.transport, &self.cfg.oauth)
        else {
            return Err(refused(
                "the server asks for more scope, and its credential is not an OAuth login".into(),
            ));
        };
        crate::oauth::step_up(
            &server,
            url,
            store,
            &self.cfg.oauth_client,
            challenge,
            login,
        )
        .await
        .map_err(|e| refused(format!("logging in again for more scope failed: {e}")))
    }

    /// Marks the server's tool list stale: the registry sync lists it again and passes
    /// every tool through its filter anew (the operator approved new definitions).
    pub fn tools_changed(&self) {
        self.shared.changed.send_modify(|g| *g += 1);
    }

    /// The tool list as the server last gave it (every tool, offered or withheld), if
    /// it was listed.
    pub fn cached_tools(&self) -> Option<Arc<Vec<McpToolInfo>>> {
        self.shared
            .tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|(_, t)| t.clone())
    }

    /// Changes on `list_changed` and reconnects (for the registry sync).
    pub(crate) fn tool_changes(&self) -> watch::Receiver<u64> {
        self.shared.changed.subscribe()
    }

    /// Cancelled by [`McpClient::close`] (ends the registry sync).
    pub(crate) fn stop_token(&self) -> CancellationToken {
        self.shared.stop.clone()
    }
}
