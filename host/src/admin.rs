//! The admin listener of `serve --http ADDR --admin ADDR2` (docs/deploy.md): what a load
//! balancer, an orchestrator and a metrics scraper need of a replica, on an address of its
//! own, unauthenticated (it serves no tool and no data of a user):
//!
//! - `GET /healthz`: 200 while the process runs (liveness);
//! - `GET /readyz`: 200 once the plugins are loaded and the MCP upstreams connected; 503
//!   with the reason before that, and from the moment a shutdown starts, so a load
//!   balancer stops sending new requests while the calls in flight finish (readiness);
//! - `GET /metrics`: Prometheus text ([`Metrics`]): tool calls by tool, source and outcome,
//!   a latency histogram, denials by who decided, sandbox traps by kind, plugin load
//!   times, reloads, MCP upstreams, readiness and the HTTP sessions (open, evicted,
//!   refused).
//!
//! Label values come from the registry (tool names it holds), never from a caller: a call
//! of a tool that does not exist is counted under `tool="(unknown)"`, so a model inventing
//! names cannot grow the number of series. The registry's names are bounded too, but a
//! wrapped server chooses its own (and changes them on `list_changed`), and a series is
//! kept for the life of the process: at most [`MAX_TOOL_LABELS`] distinct `tool` values
//! are used, and calls of any further tool are counted under `tool="(other)"`.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use axum::http::StatusCode;
use axum::response::IntoResponse;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio_util::sync::CancellationToken;

use crate::loader::{LoadEvent, LoadProgress};
use crate::mcp::server::SessionCounters;
use crate::tools::{ToolEvent, ToolEventListener, ToolSource};

/// Why the admin listener or the metrics cannot start.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The address cannot be listened on.
    #[error("cannot listen on {addr} for the admin endpoints: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The Prometheus recorder could not be built or installed.
    #[error("cannot set up the metrics: {0}")]
    Metrics(String),
}

/// Whether this replica should get traffic, and why not: shared by the loader (ready
/// when it is done), the shutdown (not ready from its start) and `/readyz`.
#[derive(Debug, Clone)]
pub struct Readiness {
    not_ready: Arc<Mutex<Option<String>>>,
    /// Set by [`Readiness::set_stopping`]: not ready for good.
    stopping: Arc<std::sync::atomic::AtomicBool>,
}

impl Readiness {
    /// Not ready, for `reason` (e.g. "loading the plugins").
    pub fn not_ready(reason: impl Into<String>) -> Readiness {
        let r = Readiness {
            not_ready: Arc::new(Mutex::new(None)),
            stopping: Arc::default(),
        };
        r.set_not_ready(reason);
        r
    }

    /// Ready from now on (until [`Readiness::set_not_ready`]), unless the process is
    /// stopping ([`Readiness::set_stopping`]): a load that ends during a shutdown must
    /// not bring traffic back.
    pub fn set_ready(&self) {
        let mut r = self.not_ready.lock().unwrap_or_else(|e| e.into_inner());
        if self.stopping.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        *r = None;
        metrics::gauge!("toolhost_ready").set(1.0);
    }

    /// Not ready from now on, for `reason` (a stopping process keeps its reason).
    pub fn set_not_ready(&self, reason: impl Into<String>) {
        let mut r = self.not_ready.lock().unwrap_or_else(|e| e.into_inner());
        if self.stopping.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        *r = Some(reason.into());
        metrics::gauge!("toolhost_ready").set(0.0);
    }

    /// Not ready for good, for `reason`: the process is shutting down.
    pub fn set_stopping(&self, reason: impl Into<String>) {
        let mut r = self.not_ready.lock().unwrap_or_else(|e| e.into_inner());
        self.stopping
            .store(true, std::sync::atomic::Ordering::Release);
        *r = Some(reason.into());
        metrics::gauge!("toolhost_ready").set(0.0);
    }

    /// Whether the process is shutting down.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(std::sync::atomic::Ordering::Acquire)
    }

    /// `Ok` when ready, else why not.
    pub fn check(&self) -> Result<(), String> {
        match &*self.not_ready.lock().unwrap_or_else(|e| e.into_inner()) {
            None => Ok(()),
            Some(why) => Err(why.clone()),
        }
    }
}

/// The Prometheus recorder of this process. `metrics` has one global recorder, so it is
/// installed once and shared (a second [`Metrics::install`] returns the same handle).
#[derive(Clone)]
pub struct Metrics {
    handle: PrometheusHandle,
    sessions: Option<Arc<SessionCounters>>,
    engine: Option<toolhost_wasm::WasmEngine>,
}

static RECORDER: OnceLock<Result<PrometheusHandle, String>> = OnceLock::new();

/// Buckets of the call latency histogram, seconds: from a native call (microseconds) to a
/// call at the default deadline.
const CALL_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];
/// Buckets of the plugin load histogram, seconds: a cache hit to a cold compile of a large
/// component.
const LOAD_BUCKETS: &[f64] = &[0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

impl Metrics {
    /// Installs the process's Prometheus recorder (once) and returns its handle.
    pub fn install() -> Result<Metrics, AdminError> {
        let handle = RECORDER
            .get_or_init(|| {
                let recorder = PrometheusBuilder::new()
                    .set_buckets_for_metric(
                        metrics_exporter_prometheus::Matcher::Full(
                            "toolhost_tool_call_duration_seconds".into(),
                        ),
                        CALL_BUCKETS,
                    )
                    .and_then(|b| {
                        b.set_buckets_for_metric(
                            metrics_exporter_prometheus::Matcher::Full(
                                "toolhost_plugin_load_seconds".into(),
                            ),
                            LOAD_BUCKETS,
                        )
                    })
                    .map_err(|e| e.to_string())?
                    .build_recorder();
                let handle = recorder.handle();
                metrics::set_global_recorder(recorder).map_err(|e| e.to_string())?;
                describe();
                Ok(handle)
            })
            .clone()
            .map_err(AdminError::Metrics)?;
        Ok(Metrics {
            handle,
            sessions: None,
            engine: None,
        })
    }

    /// Also reports the HTTP session store's counts (`serve --http`'s
    /// `HttpServeOptions::session_counters`), read at each scrape.
    pub fn with_sessions(mut self, counters: Arc<SessionCounters>) -> Metrics {
        self.sessions = Some(counters);
        self
    }

    /// Also reports the wasm engine's spare sandboxes (held now, and calls that ran in
    /// one), read at each scrape.
    pub fn with_engine(mut self, engine: toolhost_wasm::WasmEngine) -> Metrics {
        self.engine = Some(engine);
        self
    }

    /// The metrics as Prometheus text.
    pub fn render(&self) -> String {
        if let Some(e) = &self.engine {
            metrics::gauge!("toolhost_spare_sandboxes").set(e.spare_sandboxes() as f64);
            metrics::counter!("toolhost_spare_sandbox_calls_total")
                .absolute(e.spare_sandboxes_used());
        }
        if let Some(c) = &self.sessions {
            let n = c.snapshot();
            metrics::gauge!("toolhost_http_sessions_open").set(n.live as f64);
            metrics::counter!("toolhost_http_sessions_evicted_total", "why" => "cap")
                .absolute(n.evicted_at_cap);
            metrics::counter!("toolhost_http_sessions_evicted_total", "why" => "client_share")
                .absolute(n.evicted_over_share);
            metrics::counter!("toolhost_http_sessions_refused_total", "why" => "all_busy")
                .absolute(n.refused_all_busy);
            metrics::counter!("toolhost_http_sessions_refused_total", "why" => "client_share_busy")
                .absolute(n.refused_share_busy);
        }
        self.handle.render()
    }
}

/// The help text of each metric.
fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        "toolhost_tool_calls_total",
        "Tool calls by tool, source (native, wasm, mcp) and outcome (ok or the error kind)"
    );
    describe_histogram!(
        "toolhost_tool_call_duration_seconds",
        Unit::Seconds,
        "Wall time of a tool call through the whole pipeline"
    );
    describe_counter!(
        "toolhost_denials_total",
        "Calls refused by the permission gate, by who decided"
    );
    describe_counter!(
        "toolhost_sandbox_traps_total",
        "WASM calls stopped by a limit, by kind (fuel, deadline, memory)"
    );
    describe_histogram!(
        "toolhost_plugin_load_seconds",
        Unit::Seconds,
        "Time to load one plugin (compiled: whether it was compiled rather than taken from the cache)"
    );
    describe_counter!(
        "toolhost_reloads_total",
        "Live reloads of plugins of the plugins folder"
    );
    describe_gauge!(
        "toolhost_mcp_upstreams",
        "Configured MCP servers, by state (connected, down)"
    );
    describe_gauge!("toolhost_ready", "1 when the replica is ready, else 0");
    describe_gauge!(
        "toolhost_spare_sandboxes",
        "Spare sandboxes held now (built or being built), [serve] spare_sandboxes"
    );
    describe_counter!(
        "toolhost_spare_sandbox_calls_total",
        "WASM calls that ran in a spare sandbox prepared ahead"
    );
    describe_gauge!(
        "toolhost_http_sessions_open",
        "MCP sessions of serve --http alive now"
    );
    describe_counter!(
        "toolhost_http_sessions_evicted_total",
        "Idle MCP sessions closed to make room, by why (cap, client_share)"
    );
    describe_counter!(
        "toolhost_http_sessions_refused_total",
        "initialize requests refused, every session busy, by why (all_busy, client_share_busy)"
    );
}

/// The most distinct `tool` label values the call metrics use: 500. Each value is a
/// series of `toolhost_tool_calls_total` per outcome and a histogram of 16 buckets, kept
/// for the life of the process: 20,000 tool names called made `/metrics` 32 MB and added
/// 80 MB to the process. Calls of tools past the first 500 named are counted under
/// `tool="(other)"` ([`OTHER_TOOL_LABEL`]).
pub const MAX_TOOL_LABELS: usize = 500;

/// The `tool` label of calls of tools past [`MAX_TOOL_LABELS`].
pub const OTHER_TOOL_LABEL: &str = "(other)";

/// The `tool` label values given out so far, at most `cap` of them.
#[derive(Debug)]
struct ToolLabels {
    seen: Mutex<HashSet<String>>,
    cap: usize,
    /// Set once the cap was reached and logged.
    warned: AtomicBool,
}

impl ToolLabels {
    fn new(cap: usize) -> Self {
        Self {
            seen: Mutex::new(HashSet::new()),
            cap,
            warned: AtomicBool::new(false),
        }
    }

    /// The label of `tool`: its name while fewer than `cap` names were given out (or it
    /// is one of them), else [`OTHER_TOOL_LABEL`].
    fn label(&self, tool: &str) -> String {
        {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            if seen.contains(tool) {
                return tool.to_string();
            }
            if seen.len() < self.cap {
                seen.insert(tool.to_string());
                return tool.to_string();
            }
        }
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "more than {} distinct tools were called: /metrics counts the calls of                  `{}` and any further tool under tool=\"{OTHER_TOOL_LABEL}\"                  (MAX_TOOL_LABELS)",
                self.cap,
                crate::tools::escape::escape_line(&tool.chars().take(128).collect::<String>()),
            );
        }
        OTHER_TOOL_LABEL.to_string()
    }
}

/// The `tool` labels of this process (the recorder is one per process too).
static TOOL_LABELS: LazyLock<ToolLabels> = LazyLock::new(|| ToolLabels::new(MAX_TOOL_LABELS));

/// The `tool` label of a call of registered tool `tool`, as `/metrics` and the console's
/// live view count it: its name, or [`OTHER_TOOL_LABEL`] past [`MAX_TOOL_LABELS`] names.
pub(crate) fn tool_label(tool: &str) -> String {
    TOOL_LABELS.label(tool)
}

/// The `tool` and `outcome` labels of a completed call, as `/metrics` and the console's
/// live view count it. Only names the registry holds become tool labels (`(unknown)`
/// otherwise: `source` is `None`), and at most [`MAX_TOOL_LABELS`] of them; the outcome
/// is `ok` or the error kind.
pub(crate) fn call_labels(
    tool: &str,
    source: Option<&ToolSource>,
    ok: bool,
    error_kind: Option<&String>,
) -> (String, String) {
    let tool = if source.is_some() {
        tool_label(tool)
    } else {
        "(unknown)".to_string()
    };
    let outcome = if ok {
        "ok".to_string()
    } else {
        error_kind.cloned().unwrap_or_else(|| "error".into())
    };
    (tool, outcome)
}

/// Records [`ToolEvent`]s as metrics (attached to the registry like the audit trail).
#[derive(Debug, Default)]
pub struct MetricsListener;

/// The `source` label of a tool source.
fn source_label(source: Option<&ToolSource>) -> &'static str {
    match source {
        Some(ToolSource::Native) => "native",
        Some(ToolSource::Wasm { .. }) => "wasm",
        Some(ToolSource::Mcp { .. }) => "mcp",
        None => "none",
    }
}

/// The kind of limit that stopped a WASM call, from its error, if one did.
fn trap_kind(error_kind: &str, message: &str) -> Option<&'static str> {
    let message = message.to_ascii_lowercase();
    match error_kind {
        "timeout" => Some("deadline"),
        "limit_exceeded" if message.contains("fuel") => Some("fuel"),
        "limit_exceeded" if message.contains("memory") => Some("memory"),
        "limit_exceeded" => Some("other"),
        _ => None,
    }
}

impl ToolEventListener for MetricsListener {
    fn on_event(&self, event: &ToolEvent) {
        match event {
            ToolEvent::Completed {
                tool,
                client,
                source,
                ok,
                error_kind,
                error,
                duration,
                ..
            } => {
                let (tool, outcome) = call_labels(tool, source.as_ref(), *ok, error_kind.as_ref());
                let source_label = source_label(source.as_ref());
                if let (Some(ToolSource::Wasm { .. }), Some(kind)) = (source, error_kind)
                    && let Some(trap) = trap_kind(kind, error.as_deref().unwrap_or(""))
                {
                    metrics::counter!("toolhost_sandbox_traps_total", "kind" => trap).increment(1);
                }
                metrics::counter!(
                    "toolhost_tool_calls_total",
                    "tool" => tool.clone(),
                    "source" => source_label,
                    "outcome" => outcome,
                    "client" => client_label(client.as_deref())
                )
                .increment(1);
                metrics::histogram!(
                    "toolhost_tool_call_duration_seconds",
                    "tool" => tool,
                    "source" => source_label
                )
                .record(duration.as_secs_f64());
            }
            ToolEvent::PermissionDenied { by, .. } => {
                // `hook:NAME` names an operator's hook: bounded by the config.
                metrics::counter!("toolhost_denials_total", "by" => by.clone()).increment(1);
            }
            _ => {}
        }
    }
}

/// The `client` label of a call: a configured client's name or `token:N` (both bounded
/// by the config), else the kind of identity alone (`session`, `peer`: one per session
/// or address would grow without bound), else `local` (the CLI, chat).
pub(crate) fn client_label(client: Option<&str>) -> String {
    match client {
        None => "local".to_string(),
        Some(c) if c.starts_with("token:") || !c.contains(':') => c.to_string(),
        Some(c) => c.split(':').next().unwrap_or("other").to_string(),
    }
}

/// A [`LoadProgress`] that records each plugin's load time, and passes the events on.
pub struct LoadMetrics<'a> {
    /// Where the events go next.
    pub next: &'a dyn LoadProgress,
}

impl LoadProgress for LoadMetrics<'_> {
    fn event(&self, event: &LoadEvent<'_>) {
        if let LoadEvent::Finished { elapsed, slow, .. } = event {
            metrics::histogram!(
                "toolhost_plugin_load_seconds",
                "compiled" => if *slow { "true" } else { "false" }
            )
            .record(elapsed.as_secs_f64());
        }
        self.next.event(event);
    }
}

/// Sets the `toolhost_mcp_upstreams` gauges: `connected` and `down` servers.
pub fn record_upstreams(connected: usize, down: usize) {
    metrics::gauge!("toolhost_mcp_upstreams", "state" => "connected").set(connected as f64);
    metrics::gauge!("toolhost_mcp_upstreams", "state" => "down").set(down as f64);
}

/// The admin endpoints as a router.
pub fn router(readiness: Readiness, metrics: Metrics) -> axum::Router {
    use axum::routing::get;
    axum::Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/readyz",
            get(move || {
                let readiness = readiness.clone();
                async move {
                    match readiness.check() {
                        Ok(()) => (StatusCode::OK, "ready\n".to_string()).into_response(),
                        Err(why) => (
                            StatusCode::SERVICE_UNAVAILABLE,
                            format!("not ready: {why}\n"),
                        )
                            .into_response(),
                    }
                }
            }),
        )
        .route(
            "/metrics",
            get(move || {
                let metrics = metrics.clone();
                async move {
                    (
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8",
                        )],
                        metrics.render(),
                    )
                }
            }),
        )
}

/// Listens on `addr` and serves [`router`] (and the console's routes, `console` called
/// with the bound port) until `stop` is cancelled. `on_bound` gets the bound address
/// (useful with port 0).
pub async fn serve_admin(
    addr: SocketAddr,
    readiness: Readiness,
    metrics: Metrics,
    console: Option<impl FnOnce(u16) -> axum::Router>,
    stop: CancellationToken,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<(), AdminError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| AdminError::Bind {
            addr: addr.to_string(),
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| AdminError::Bind {
        addr: addr.to_string(),
        source,
    })?;
    on_bound(bound);
    // Unauthenticated, but not unbounded: a few connections at once (probes and a
    // scraper need one or two), each given a few seconds to send its request head.
    let limits = crate::mcp::server::HttpLimits {
        max_connections: ADMIN_MAX_CONNECTIONS,
        header_read_timeout: ADMIN_HEADER_TIMEOUT,
        ..crate::mcp::server::HttpLimits::default()
    };
    let mut app = router(readiness, metrics);
    if let Some(console) = console {
        app = app.merge(console(bound.port()));
    }
    crate::mcp::server::serve_connections(listener, app, &limits, stop).await;
    Ok(())
}

/// Connections the admin listener serves at once; more wait in the accept queue.
pub const ADMIN_MAX_CONNECTIONS: usize = 16;

/// How long an admin connection may take to send its request head.
pub const ADMIN_HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

#[cfg(test)]
mod tests {
    #[test]
    fn the_client_label_is_bounded_and_never_a_session() {
        assert_eq!(super::client_label(None), "local");
        assert_eq!(super::client_label(Some("analyst")), "analyst");
        assert_eq!(super::client_label(Some("token:3")), "token:3");
        assert_eq!(super::client_label(Some("session:0a1b2c3d")), "session");
        assert_eq!(super::client_label(Some("peer:127.0.0.1")), "peer");
    }

    use super::*;

    #[test]
    fn traps_are_told_apart_by_their_limit() {
        assert_eq!(trap_kind("timeout", "x"), Some("deadline"));
        assert_eq!(trap_kind("limit_exceeded", "ran out of Fuel"), Some("fuel"));
        assert_eq!(
            trap_kind("limit_exceeded", "memory limit of 32 MiB"),
            Some("memory")
        );
        assert_eq!(trap_kind("execution_failed", "fuel"), None);
    }

    #[test]
    fn tool_labels_stop_at_the_cap_and_keep_the_names_given_out() {
        let labels = ToolLabels::new(500);
        let given: HashSet<String> = (0..20_000)
            .map(|i| labels.label(&format!("tool_{i}")))
            .collect();
        assert_eq!(given.len(), 501, "500 names and (other)");
        assert!(given.contains(OTHER_TOOL_LABEL));
        assert_eq!(labels.label("tool_499"), "tool_499");
        assert_eq!(labels.label("tool_500"), OTHER_TOOL_LABEL);
    }

    /// 20,000 distinct tool names called through the listener: /metrics stays small.
    #[test]
    fn twenty_thousand_called_names_keep_metrics_bounded() {
        let metrics = Metrics::install().unwrap();
        let listener = MetricsListener;
        let start = std::time::Instant::now();
        for i in 0..20_000 {
            listener.on_event(&ToolEvent::Completed {
                call_id: format!("c{i}"),
                invocation: i,
                tool: format!("flood_tool_{i}"),
                session: String::new(),
                client: None,
                source: Some(ToolSource::Mcp {
                    server: "flood".into(),
                }),
                input: serde_json::Value::Null,
                ok: true,
                error_kind: None,
                error: None,
                duration: std::time::Duration::from_millis(1),
                truncated: false,
                result: None,
                output: None,
            });
        }
        let text = metrics.render();
        let names: HashSet<&str> = text
            .lines()
            .filter(|l| l.starts_with("toolhost_tool_calls_total{"))
            .filter_map(|l| l.split("tool=\"").nth(1)?.split('"').next())
            .collect();
        eprintln!(
            "20,000 names: /metrics {} bytes, {} tool labels, {:?}",
            text.len(),
            names.len(),
            start.elapsed()
        );
        assert!(names.len() <= MAX_TOOL_LABELS + 1, "{}", names.len());
        assert!(names.contains(OTHER_TOOL_LABEL));
        let other = text
            .lines()
            .find(|l| l.starts_with("toolhost_tool_calls_total{") && l.contains("tool=\"(other)\""))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
        assert!(other.is_some_and(|n| n >= 19_500.0), "{other:?}");
        assert!(text.len() < 2_000_000, "{} bytes", text.len());
    }

    #[test]
    fn readiness_says_why_not() {
        let r = Readiness::not_ready("loading the plugins");
        assert_eq!(r.check(), Err("loading the plugins".into()));
        r.set_ready();
        assert_eq!(r.check(), Ok(()));
        r.clone().set_stopping("shutting down");
        assert_eq!(r.check(), Err("shutting down".into()));
        // A load or tier-up that ends during the shutdown does not bring traffic back.
        r.set_ready();
        r.set_not_ready("optimizing");
        assert_eq!(r.check(), Err("shutting down".into()));
        assert!(r.is_stopping());
    }
}
