//! The operator's console (docs/console.md): HTML pages on the admin listener of `serve`
//! (`--admin ADDR --console`) to see the sources and their trust, approve or deny held
//! plugins, read the audit trail and watch calls live.
//!
//! - **Access** (`console/auth.rs`): the operator token once at `/console/login`, then a
//!   session cookie (HttpOnly, SameSite=Strict, `Secure` behind TLS); every POST carries a
//!   single-use CSRF nonce, and a request that says it comes from another site
//!   (`Origin`, `Sec-Fetch-Site`) is refused. Pages without a session answer 401 with the
//!   login form.
//! - **Pages** (`console/pages.rs`): sources and pending (`console/review.rs`, with the
//!   approve and deny actions), audit (`console/audit_view.rs`),
//!   live (`console/live.rs`, a server-sent event stream), clients.
//! - **Actions are the CLI's** (`toolhost approve`'s [`crate::trust::review_plugin`]):
//!   the decision names the file's digest and request as shown, so a file swapped after
//!   the page was drawn is refused, not approved. Each action is written to the audit
//!   trail as a record of tool `console.approve` or `console.deny`, client `console`,
//!   session `console:XXXXXXXX` (the operator session's label).
//! - **Every response** has a Content-Security-Policy that allows only the console's own
//!   script and stylesheet, `no-store`, `nosniff`, a referrer only to itself (with `no-referrer`
//!   browsers send `Origin: null` on a form POST, which the origin check refuses) and no
//!   framing.

mod audit_view;
mod auth;
mod live;
mod pages;
mod review;
mod servers;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::Markup;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

pub use audit_view::{Cursor, Filter, MAX_SCAN, PAGE};
pub use auth::{IDLE, LIFETIME, LOGIN_BURST, LOGIN_REFILL, MAX_NONCES, MAX_SESSIONS, Sessions};
pub use live::{LiveCalls, Snapshot};
pub use review::{DefinitionJudge, JUDGE_PAGE_DEADLINE, MAX_PENDING_SHOWN};

use crate::host::Host;
use crate::mcp::server::{BearerTokens, SessionCounters};
use crate::tools::ToolRegistry;
use crate::tools::audit::{AuditDecision, AuditLog, AuditRecord};
use crate::trust::TrustBoard;

/// Where the console reads and writes the audit trail.
#[derive(Clone)]
pub struct AuditTrail {
    /// The current file (`audit.jsonl`); rotated ones are `audit.jsonl.N`.
    pub path: PathBuf,
    /// How many rotated files are kept.
    pub keep: usize,
    /// The trail's writer, for the records of the console's own actions.
    pub log: Arc<AuditLog>,
}

/// What the console needs of the running `serve`.
#[derive(Clone)]
pub struct ConsoleOptions {
    /// The operator tokens (at least one).
    pub tokens: BearerTokens,
    /// The host plugins are reviewed on.
    pub host: Host,
    /// The served registry.
    pub registry: ToolRegistry,
    /// The plugins folder.
    pub plugins_dir: PathBuf,
    /// Keys whose signatures are trusted (`[trust] keys`).
    pub trust_keys: Vec<String>,
    /// Folders that may never be granted (`[permissions]`).
    pub permissions: crate::permissions::PermissionsConfig,
    /// Each plugin's trust as loading and live reload decided.
    pub board: TrustBoard,
    /// Asks the plugins folder's reload to apply an approval at once; `None`: nothing
    /// reloads the folder in this process, an approval applies at the next start.
    pub reloads: Option<crate::reload::Reloads>,
    /// The operator's judge model (`[lint] judge`), asked on the pending page beside lint.
    pub judge: Option<Arc<dyn DefinitionJudge>>,
    /// The wrapped MCP servers, their pins and withheld tools.
    pub mcp: Option<crate::trust::McpBoard>,
    /// The audit trail, if one is written.
    pub audit: Option<AuditTrail>,
    /// The live counts (attached to the registry by the caller).
    pub live: Arc<LiveCalls>,
    /// The HTTP session counts of `serve --http`.
    pub session_counters: Option<Arc<SessionCounters>>,
    /// The tasks alive in the MCP server, by client.
    pub tasks: Option<crate::mcp::server::TaskBoard>,
    /// The configured clients: (name, what it may use).
    pub clients: Vec<(String, String)>,
    /// The cookie gets `Secure` (TLS is terminated in front of the console).
    pub secure_cookie: bool,
    /// Ends the live streams at shutdown.
    pub stop: CancellationToken,
    /// A session with no request for this long ends (at most [`LIFETIME`]).
    pub session_idle: std::time::Duration,
}

struct Inner {
    opts: ConsoleOptions,
    sessions: Sessions,
    cookie: String,
    /// Digests the operator denied: (plugin, digest) → who and when.
    denied: Mutex<Vec<(String, String, String)>>,
    /// Console actions so far (their call ids).
    actions: std::sync::atomic::AtomicU64,
}

/// The console's state; [`router`] serves it.
#[derive(Clone)]
pub struct Console(Arc<Inner>);

impl Console {
    /// A console for `opts`; its cookie is named after `port` (cookies are shared across
    /// the ports of a host, so two consoles on one machine must not overwrite each
    /// other's).
    pub fn new(opts: ConsoleOptions, port: u16) -> Console {
        Console(Arc::new(Inner {
            sessions: Sessions::with_idle(opts.session_idle),
            opts,
            cookie: format!("toolhost_console_{port}"),
            denied: Mutex::new(Vec::new()),
            actions: std::sync::atomic::AtomicU64::new(0),
        }))
    }
}

/// The console's routes, under `/console`.
pub fn router(console: Console) -> axum::Router {
    axum::Router::new()
        .route(
            "/console",
            get(|| async { Redirect::to("/console/sources") }),
        )
        .route("/console/login", get(login_page).post(login))
        .route("/console/logout", post(logout))
        .route("/console/sources", get(review::sources))
        .route("/console/pending", get(review::pending))
        .route("/console/pending/approve", post(review::approve))
        .route("/console/pending/deny", post(review::deny))
        .route("/console/pending/approve-server", post(servers::approve))
        .route("/console/pending/deny-server", post(servers::deny))
        .route("/console/audit", get(audit))
        .route("/console/audit/entry", get(audit_entry))
        .route("/console/live", get(live_page))
        .route("/console/live/events", get(live_events))
        .route("/console/clients", get(clients))
        .route("/console/static/console.css", get(css))
        .route("/console/static/console.js", get(js))
        .layer(axum::middleware::map_response(secure_headers))
        .layer(axum::middleware::from_fn_with_state(
            console.clone(),
            loopback_host,
        ))
        .with_state(console)
}

/// The Content-Security-Policy of every console response.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
     connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

async fn secure_headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    r
}

async fn css() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        include_str!("console/static/console.css"),
    )
        .into_response()
}

async fn js() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        include_str!("console/static/console.js"),
    )
        .into_response()
}

fn html(status: StatusCode, page: Markup) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page.into_string(),
    )
        .into_response()
}

/// A session's view of one request: who, and a nonce for its logout form. As an
/// extractor, it admits a page request of a live operator session, and answers any other
/// with the login page (401) before the page's handler runs.
pub(super) struct Authed {
    session: auth::SessionView,
    logout: String,
}

impl axum::extract::FromRequestParts<Console> for Authed {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        c: &Console,
    ) -> Result<Self, Response> {
        c.page_session(&parts.headers).map_err(|r| *r)
    }
}

impl Console {
    fn session(&self, headers: &HeaderMap) -> Option<auth::SessionView> {
        let id = auth::cookie(headers, &self.0.cookie)?;
        self.0.sessions.session(id)
    }

    /// The session of a page request, or the 401 login page.
    fn page_session(&self, headers: &HeaderMap) -> Result<Authed, Box<Response>> {
        let Some(session) = self.session(headers) else {
            return Err(Box::new(html(
                StatusCode::UNAUTHORIZED,
                pages::login(Some("Log in to use the console (no session, or it ended).")),
            )));
        };
        let logout = self.nonce(&session)?;
        Ok(Authed { session, logout })
    }

    fn nonce(&self, s: &auth::SessionView) -> Result<String, Box<Response>> {
        self.0.sessions.nonce(&s.id).map_err(|e| {
            Box::new((StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response())
        })
    }

    /// The session of a state-changing request whose form carried a valid CSRF nonce,
    /// sent from the console's own pages; else 401 or 403 and nothing changes.
    fn post_session(
        &self,
        headers: &HeaderMap,
        form: &[(String, String)],
    ) -> Result<auth::SessionView, Box<Response>> {
        let refuse =
            |status: StatusCode, why: &str| Box::new((status, format!("{why}\n")).into_response());
        if let Some(why) = cross_site(headers) {
            return Err(refuse(StatusCode::FORBIDDEN, why));
        }
        let Some(session) = self.session(headers) else {
            return Err(refuse(
                StatusCode::UNAUTHORIZED,
                "refused: no session, or it ended; log in again",
            ));
        };
        let nonce = field(form, "csrf").unwrap_or("");
        if !self.0.sessions.spend_nonce(&session.id, nonce) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "refused: the form's CSRF token is not valid (forged, used before, or of another session); reload the page",
            ));
        }
        Ok(session)
    }
}

/// A state-changing console request that passed [`Console::post_session`]'s checks (same
/// origin, a live session, a valid CSRF nonce spent): the console, the session and the
/// form. As an extractor, an action handler is only reached past the checks; a refusal is
/// the 4xx response, and nothing changes.
pub(super) struct Post {
    /// The console.
    c: Console,
    /// The operator session that sent it.
    s: auth::SessionView,
    /// The form's fields, in order.
    form: Vec<(String, String)>,
}

impl axum::extract::FromRequest<Console> for Post {
    type Rejection = Response;

    async fn from_request(req: axum::extract::Request, c: &Console) -> Result<Self, Response> {
        let headers = req.headers().clone();
        let axum::Form(form) = axum::Form::<Vec<(String, String)>>::from_request(req, c)
            .await
            .map_err(IntoResponse::into_response)?;
        let s = c.post_session(&headers, &form).map_err(|r| *r)?;
        Ok(Post {
            c: c.clone(),
            s,
            form,
        })
    }
}

impl Console {
    /// Remembers the operator's denial of `name` (a plugin, or `mcp:SERVER`) as it was
    /// shown (`digest`), replacing an earlier one: the pending page says who denied it and
    /// when, and `outcome`, while it stays as it is.
    fn remember_denial(&self, name: &str, digest: String, s: &auth::SessionView, outcome: &str) {
        let mut denied = self.0.denied.lock().unwrap_or_else(|e| e.into_inner());
        denied.retain(|(n, _, _)| n != name);
        denied.push((
            name.to_string(),
            digest,
            format!(
                "Denied by {} at {}; {outcome}.",
                s.label,
                toolhost_trust::now_rfc3339()
            ),
        ));
    }

    /// Writes a console action to the audit trail.
    fn record(
        &self,
        session: &auth::SessionView,
        tool: &str,
        args: serde_json::Value,
        ok: bool,
        error: Option<String>,
    ) {
        let Some(trail) = &self.0.opts.audit else {
            return;
        };
        let n = self
            .0
            .actions
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        trail.log.record(&AuditRecord {
            ts: toolhost_trust::now_rfc3339(),
            call_id: format!("console-{n}"),
            invocation: 0,
            session: session.label.clone(),
            client: Some("console".into()),
            tool: tool.into(),
            source: None,
            arguments: args,
            arguments_omitted: None,
            decisions: vec![AuditDecision {
                by: "console".into(),
                decision: tool.trim_start_matches("console.").into(),
                reason: error.clone(),
            }],
            denied_by: None,
            executed: true,
            ok,
            error_kind: error.as_ref().map(|_| "refused".to_string()),
            error,
            duration_ms: 0.0,
            result: None,
            truncated: false,
        });
    }
}

/// Why a POST is refused as sent from another site or origin, if it is: a
/// `Sec-Fetch-Site` other than `same-origin` (or `none`, typed by the user), or an
/// `Origin` that is not the console's own (`Host`).
fn cross_site(headers: &HeaderMap) -> Option<&'static str> {
    if let Some(site) = headers.get("sec-fetch-site")
        && site.as_bytes() != b"same-origin"
        && site.as_bytes() != b"none"
    {
        return Some("refused: sent from another site");
    }
    if let (Some(origin), Some(host)) = (headers.get(header::ORIGIN), headers.get(header::HOST)) {
        let o = origin.as_bytes();
        let ok = [b"http://".as_slice(), b"https://".as_slice()]
            .iter()
            .any(|scheme| o.strip_prefix(*scheme) == Some(host.as_bytes()));
        if !ok {
            return Some("refused: sent from another origin");
        }
    }
    None
}

/// Refuses a request whose `Host` is not a loopback name (`127.0.0.1`, `localhost`,
/// `[::1]`, with or without the port), unless TLS is in front (the proxy is the
/// operator's): a page of another site whose name an attacker pointed at 127.0.0.1 (DNS
/// rebinding) is same-origin to the browser, and must not reach the console.
async fn loopback_host(
    State(c): State<Console>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if !c.0.opts.secure_cookie {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        let name = match host.rsplit_once(':') {
            Some((n, port)) if !n.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => host,
        };
        if !matches!(name, "127.0.0.1" | "localhost" | "[::1]") {
            return (
                StatusCode::MISDIRECTED_REQUEST,
                "the console answers on a loopback name only (127.0.0.1, localhost, [::1])\n",
            )
                .into_response();
        }
    }
    next.run(request).await
}

fn field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

async fn login_page(State(c): State<Console>, headers: HeaderMap) -> Response {
    if c.session(&headers).is_some() {
        return Redirect::to("/console/sources").into_response();
    }
    html(StatusCode::OK, pages::login(None))
}

async fn login(
    State(c): State<Console>,
    headers: HeaderMap,
    axum::Form(form): axum::Form<Vec<(String, String)>>,
) -> Response {
    // Another site may not spend the bucket of tries (nor log a browser in).
    if let Some(why) = cross_site(&headers) {
        return (StatusCode::FORBIDDEN, format!("{why}\n")).into_response();
    }
    if let Err(wait) = c.0.sessions.may_try() {
        let secs = wait.as_secs().max(1);
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, secs.to_string())],
            format!("too many wrong tokens; try again in {secs} s\n"),
        )
            .into_response();
    }
    let token = field(&form, "token").unwrap_or("").trim();
    let right = c.0.opts.tokens.accepts_secret(token.as_bytes());
    match c.0.sessions.login(right) {
        Ok(auth::Login::Ok(s)) => {
            tracing::info!(session = %s.label, "console: operator logged in");
            let cookie = format!(
                "{}={}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}{}",
                c.0.cookie,
                s.id,
                LIFETIME.as_secs(),
                if c.0.opts.secure_cookie {
                    "; Secure"
                } else {
                    ""
                }
            );
            (
                StatusCode::SEE_OTHER,
                [
                    (header::SET_COOKIE, cookie),
                    (header::LOCATION, "/console/sources".into()),
                ],
            )
                .into_response()
        }
        Ok(_) => {
            tracing::warn!("console: a login with a wrong token");
            html(
                StatusCode::UNAUTHORIZED,
                pages::login(Some("That token is not right.")),
            )
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn logout(Post { c, s, .. }: Post) -> Response {
    c.0.sessions.logout(&s.id);
    let cookie = format!(
        "{}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0",
        c.0.cookie
    );
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, cookie),
            (header::LOCATION, "/console/login".into()),
        ],
    )
        .into_response()
}

/// Query of the audit page.
#[derive(Debug, Deserialize, Default)]
struct AuditQuery {
    #[serde(default)]
    client: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    outcome: String,
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    #[serde(default)]
    from: String,
    #[serde(default)]
    at: String,
}

async fn audit(State(c): State<Console>, a: Authed, Query(q): Query<AuditQuery>) -> Response {
    let Some(trail) = c.0.opts.audit.clone() else {
        return html(
            StatusCode::OK,
            pages::message(
                "Audit trail",
                "/console/audit",
                &a.logout,
                "This serve writes no audit trail (--no-audit).",
                "/console/sources",
            ),
        );
    };
    let filter = Filter {
        client: q.client,
        tool: q.tool,
        outcome: q.outcome,
        since: q.since,
        until: q.until,
    };
    let from = Cursor::parse(&q.from);
    let f = filter.clone();
    let page = tokio::task::spawn_blocking(move || {
        audit_view::page(&audit_view::files(&trail.path, trail.keep), &f, from)
    })
    .await
    .unwrap_or_default();
    let note = (page.records.is_empty() && page.next.is_some()).then_some(
        "Nothing matched in the part of the trail read so far; follow “Older records” to read on.",
    );
    html(
        StatusCode::OK,
        pages::audit(&a.logout, &filter, &page, note),
    )
}

async fn audit_entry(State(c): State<Console>, a: Authed, Query(q): Query<AuditQuery>) -> Response {
    let (Some(trail), Some(at)) = (c.0.opts.audit.clone(), Cursor::parse(&q.at)) else {
        return (StatusCode::BAD_REQUEST, "no such record\n").into_response();
    };
    let record = tokio::task::spawn_blocking(move || {
        audit_view::record_at(&audit_view::files(&trail.path, trail.keep), at)
    })
    .await
    .ok()
    .flatten();
    match record {
        Some(r) => html(StatusCode::OK, pages::audit_entry(&a.logout, &r)),
        None => (
            StatusCode::NOT_FOUND,
            "no record there (the trail may have rotated since)\n",
        )
            .into_response(),
    }
}

async fn live_page(State(c): State<Console>, a: Authed) -> Response {
    html(
        StatusCode::OK,
        pages::live(&a.logout, &c.0.opts.live.snapshot()),
    )
}

/// How often the live stream sends a snapshot.
pub const LIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

async fn live_events(State(c): State<Console>, headers: HeaderMap) -> Response {
    if c.session(&headers).is_none() {
        return (StatusCode::UNAUTHORIZED, "log in first\n").into_response();
    }
    use axum::response::sse::{Event, Sse};
    let live = c.0.opts.live.clone();
    let stop = c.0.opts.stop.clone();
    let stream = futures::stream::unfold((live, stop, true), |(live, stop, first)| async move {
        if !first {
            tokio::select! {
                () = tokio::time::sleep(LIVE_EVERY) => {}
                () = stop.cancelled() => return None,
            }
        }
        let data = serde_json::to_string(&live.snapshot()).unwrap_or_default();
        Some((
            Ok::<_, std::convert::Infallible>(Event::default().event("snapshot").data(data)),
            (live, stop, false),
        ))
    });
    Sse::new(stream).into_response()
}

async fn clients(State(c): State<Console>, a: Authed) -> Response {
    let opts = &c.0.opts;
    let mut sessions = vec![(
        "console sessions".to_string(),
        c.0.sessions.len().to_string(),
    )];
    if let Some(n) = &opts.session_counters {
        let n = n.snapshot();
        sessions.push(("MCP sessions open".into(), n.live.to_string()));
        sessions.push(("closed at the cap".into(), n.evicted_at_cap.to_string()));
        sessions.push((
            "closed over a client's share".into(),
            n.evicted_over_share.to_string(),
        ));
        sessions.push(("refused, all busy".into(), n.refused_all_busy.to_string()));
        sessions.push((
            "refused, client's share busy".into(),
            n.refused_share_busy.to_string(),
        ));
    }
    let rows = opts.live.by_client();
    // Execution slots held now: each configured client's, and everyone's together.
    let slots = opts.registry.slots();
    let configured: Vec<(String, String)> = opts
        .clients
        .iter()
        .map(|(name, share)| {
            let (mine, _) = slots.held(name);
            (
                name.clone(),
                format!("{share}; {mine} execution slot(s) in use now"),
            )
        })
        .collect();
    let (_, total) = slots.held("");
    sessions.push(("execution slots in use now".into(), total.to_string()));
    if let Some(board) = &opts.tasks {
        let alive = board.alive_by_client();
        let all: usize = alive.iter().map(|(_, n)| n).sum();
        sessions.push(("tasks alive".into(), all.to_string()));
        for (client, n) in alive {
            sessions.push((format!("tasks alive of {client}"), n.to_string()));
        }
    }
    html(
        StatusCode::OK,
        pages::clients(&a.logout, &sessions, &configured, &rows),
    )
}
