//! One MCP session's share of the gateway: the log level its client set, the resources it
//! subscribed to, and the task that passes the wrapped servers' notifications to it.
//!
//! - Logs go out only after the client set a level (`logging/setLevel`), at that level or
//!   above, at most [`LOG_BURST`] at once and [`LOG_PER_SECOND`] a second on average (the
//!   rest is dropped and counted in the trace log), each cut to [`MAX_LOG_DATA_BYTES`] of
//!   JSON. The logger is prefixed with the server's name, so the client sees who spoke.
//! - `resources/updated` goes out for the URIs this session subscribed to, under the URI it
//!   subscribed with; `resources/list_changed` and `prompts/list_changed` go to everyone.
//! - A session that ends gives its subscriptions back (the last one unsubscribes upstream).
//! - The log lines of the tools the session calls (a WASM plugin's `host.log`) reach it
//!   the same way, under the logger `plugin/tool`, through the [`ToolLogSink`] its calls
//!   carry; at most [`PLUGIN_LOG_BACKLOG`] wait, more are dropped.

#![allow(deprecated)] // logging and resources/subscribe: see crate::gateway

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ErrorData;
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ResourceUpdatedNotificationParam,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use toolhost_core::tools::render::head;
use toolhost_core::tools::{ToolLogLevel, ToolLogSink};

use crate::gateway::{Gateway, GatewayEvent, level_rank};

/// Log messages a session may get at once.
pub const LOG_BURST: f64 = 100.0;
/// Log messages a session may get per second, on average.
pub const LOG_PER_SECOND: f64 = 50.0;
/// The most JSON bytes of one log message's `data` passed on; more is cut.
pub const MAX_LOG_DATA_BYTES: usize = 16 * 1024;

#[derive(Default)]
struct State {
    level: Option<LoggingLevel>,
    /// `(server, the server's uri)` → the URI this session subscribed with.
    subscriptions: HashMap<(String, String), String>,
}

/// How many plugin log lines may wait for the session's forwarding task (more are
/// dropped).
const PLUGIN_LOG_BACKLOG: usize = 256;

/// A session's gateway state. Cloned handles share it.
pub(super) struct GatewaySession {
    gateway: Option<Gateway>,
    state: Arc<Mutex<State>>,
    /// The sink of this session's calls (built once, cloned into each call's context).
    sink: ToolLogSink,
    /// Log lines of the tools this session calls (WASM plugins' `host.log`), for the
    /// forwarding task.
    plugin_logs_rx: Mutex<Option<mpsc::Receiver<LoggingMessageNotificationParam>>>,
}

/// What the forwarding task passes on.
enum Item {
    Gateway(GatewayEvent),
    Plugin(LoggingMessageNotificationParam),
}

impl std::fmt::Debug for GatewaySession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewaySession").finish_non_exhaustive()
    }
}

impl GatewaySession {
    pub(super) fn new(gateway: Option<Gateway>) -> Self {
        let (tx, rx) = mpsc::channel(PLUGIN_LOG_BACKLOG);
        let state: Arc<Mutex<State>> = Arc::default();
        Self {
            gateway,
            sink: sink(state.clone(), tx),
            state,
            plugin_logs_rx: Mutex::new(Some(rx)),
        }
    }

    /// The sink of this session's calls.
    pub(super) fn log_sink(&self) -> ToolLogSink {
        self.sink.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn set_level(&self, level: LoggingLevel) {
        self.lock().level = Some(level);
    }

    pub(super) async fn subscribe(&self, gateway: &Gateway, uri: &str) -> Result<(), ErrorData> {
        let key = gateway.subscribe(uri).await?;
        let again = self
            .lock()
            .subscriptions
            .insert(key.clone(), uri.to_string());
        if again.is_some() {
            // One count per session: a second subscribe to the same URI changes nothing.
            gateway.unsubscribe(&key).await?;
        }
        Ok(())
    }

    pub(super) async fn unsubscribe(&self, gateway: &Gateway, uri: &str) -> Result<(), ErrorData> {
        let key = {
            let mut st = self.lock();
            let key = st
                .subscriptions
                .iter()
                .find(|(_, served)| *served == uri)
                .map(|(k, _)| k.clone());
            if let Some(k) = &key {
                st.subscriptions.remove(k);
            }
            key
        };
        // Unsubscribing from something not subscribed is not an error (nothing to stop).
        if let Some(key) = key {
            gateway.unsubscribe(&key).await?;
        }
        Ok(())
    }

    /// Passes the wrapped servers' notifications and the session's tool logs to `peer`
    /// until its transport closes. Runs once per session.
    pub(super) fn forward(&self, peer: Peer<RoleServer>) {
        let Some(mut plugin_logs) = self
            .plugin_logs_rx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        let mut events = self.gateway.as_ref().map(Gateway::events);
        let state = self.state.clone();
        tokio::spawn(async move {
            let mut bucket = LOG_BURST;
            let mut last = Instant::now();
            let mut dropped = 0u64;
            loop {
                let item = tokio::select! {
                    r = Gateway::next_event(&mut events) => match r {
                        Ok(ev) => Item::Gateway(ev),
                        Err(broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(broadcast::error::RecvError::Closed) => {
                            events = None;
                            continue;
                        }
                    },
                    Some(p) = plugin_logs.recv() => Item::Plugin(p),
                    _ = tokio::time::sleep(Duration::from_secs(30)) => {
                        if peer.is_transport_closed() { break }
                        continue;
                    }
                };
                if peer.is_transport_closed() {
                    break;
                }
                let (log, other) = match item {
                    Item::Plugin(p) => (Some(bounded_data(p)), None),
                    Item::Gateway(GatewayEvent::Log { server, params }) => {
                        let level = state.lock().unwrap_or_else(|e| e.into_inner()).level;
                        let wanted =
                            level.is_some_and(|l| level_rank(params.level) >= level_rank(l));
                        if !wanted {
                            continue;
                        }
                        (Some(bounded_log(&server, params)), None)
                    }
                    Item::Gateway(ev) => (None, Some(ev)),
                };
                let sent = match (log, other) {
                    (Some(params), _) => {
                        let now = Instant::now();
                        bucket = (bucket + now.duration_since(last).as_secs_f64() * LOG_PER_SECOND)
                            .min(LOG_BURST);
                        last = now;
                        if bucket < 1.0 {
                            dropped += 1;
                            tracing::trace!(
                                dropped,
                                "log message over the session's rate, dropped"
                            );
                            continue;
                        }
                        bucket -= 1.0;
                        peer.notify_logging_message(params).await
                    }
                    (None, Some(GatewayEvent::ResourceUpdated { server, uri })) => {
                        let served = state
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .subscriptions
                            .get(&(server, uri))
                            .cloned();
                        match served {
                            Some(uri) => {
                                peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(
                                    uri,
                                ))
                                .await
                            }
                            None => continue,
                        }
                    }
                    (None, Some(GatewayEvent::ResourcesChanged)) => {
                        peer.notify_resource_list_changed().await
                    }
                    (None, Some(GatewayEvent::PromptsChanged)) => {
                        peer.notify_prompt_list_changed().await
                    }
                    _ => continue,
                };
                if sent.is_err() {
                    break;
                }
            }
        });
    }
}

impl Drop for GatewaySession {
    fn drop(&mut self) {
        let Some(gateway) = self.gateway.clone() else {
            return;
        };
        let keys: Vec<(String, String)> =
            self.lock().subscriptions.drain().map(|(k, _)| k).collect();
        if keys.is_empty() {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                for key in keys {
                    if let Err(e) = gateway.unsubscribe(&key).await {
                        tracing::debug!("gateway: unsubscribe after the session ended: {e}");
                    }
                }
            });
        }
    }
}

/// The sink of a session's calls: their log lines reach the client as
/// `notifications/message` once it set a level, at that level or above (rate-limited with
/// the wrapped servers' logs by the forwarding task).
fn sink(
    state: Arc<Mutex<State>>,
    tx: mpsc::Sender<LoggingMessageNotificationParam>,
) -> ToolLogSink {
    ToolLogSink(Arc::new(move |level, logger, message| {
        let level = match level {
            ToolLogLevel::Trace | ToolLogLevel::Debug => LoggingLevel::Debug,
            ToolLogLevel::Info => LoggingLevel::Info,
            ToolLogLevel::Warn => LoggingLevel::Warning,
            ToolLogLevel::Error => LoggingLevel::Error,
        };
        let wanted = state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .level
            .is_some_and(|l| level_rank(level) >= level_rank(l));
        if wanted {
            let mut p =
                LoggingMessageNotificationParam::new(level, Value::String(message.to_string()));
            p.logger = Some(head(logger, 256).to_string());
            // A full backlog drops the line: a tool cannot grow the session's memory.
            let _ = tx.try_send(p);
        }
    }))
}

/// The message under `server/logger`, its data cut to [`MAX_LOG_DATA_BYTES`] of JSON.
fn bounded_log(
    server: &str,
    mut params: LoggingMessageNotificationParam,
) -> LoggingMessageNotificationParam {
    params.logger = Some(match &params.logger {
        Some(l) => format!("{server}/{}", head(l, 256)),
        None => server.to_string(),
    });
    bounded_data(params)
}

/// The message with its data cut to [`MAX_LOG_DATA_BYTES`] of JSON and no `_meta`.
fn bounded_data(mut params: LoggingMessageNotificationParam) -> LoggingMessageNotificationParam {
    let json = params.data.to_string();
    if json.len() > MAX_LOG_DATA_BYTES {
        params.data = Value::String(format!(
            "{}… (cut at {MAX_LOG_DATA_BYTES} bytes)",
            head(&json, MAX_LOG_DATA_BYTES)
        ));
    }
    params.meta = None;
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_are_named_and_bounded() {
        let p = LoggingMessageNotificationParam::new(
            LoggingLevel::Info,
            Value::String("x".repeat(100_000)),
        );
        let b = bounded_log("srv", p);
        assert_eq!(b.logger.as_deref(), Some("srv"));
        assert!(b.data.to_string().len() < MAX_LOG_DATA_BYTES + 100);
        let mut p = LoggingMessageNotificationParam::new(LoggingLevel::Info, Value::Bool(true));
        p.logger = Some("é".repeat(1000));
        let b = bounded_log("s", p);
        assert!(
            b.logger
                .is_some_and(|l| l.starts_with("s/") && l.len() <= 260)
        );
        assert_eq!(b.data, Value::Bool(true));
    }
}

/// Per-session state.
#[derive(Debug)]
pub(super) struct Session {
    /// The registry's change generation when `initialize` was answered (`u64::MAX`
    /// before). The client's view is at least that old: if the registry changed since
    /// (tools still loading in the background), `on_initialized` says so at once.
    pub(super) initialized_at: std::sync::atomic::AtomicU64,
    /// The session id the tools see (`ToolContext::session_id`): `mcp-N`, unique in this
    /// process, so "allow for this session" approvals stay with the client that gave them.
    pub(super) id: String,
    /// Its log level and resource subscriptions, when serving as a gateway.
    pub(super) gateway: GatewaySession,
}

impl Session {
    pub(super) fn new(gateway: Option<crate::Gateway>) -> Arc<Session> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Arc::new(Session {
            initialized_at: std::sync::atomic::AtomicU64::new(u64::MAX),
            id: format!("mcp-{n}"),
            gateway: GatewaySession::new(gateway),
        })
    }
}
