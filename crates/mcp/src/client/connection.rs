//! A live connection and keeping it alive: [`Conn`], why one closed (the framing error, the
//! child's exit status, its last stderr lines), reconnecting with exponential back-off
//! (100 ms doubling, at most 10 s), and turning rmcp's request failures into
//! [`McpClientError`]s: an HTTP 401/403 on any request becomes `Unauthorized` with what to
//! do, and no message carries rmcp's internal type names.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};

use super::McpClient;
use super::hooks::Hooks;
use super::transport::{Credential, kill_child, request_auth_failure};
use crate::error::{McpClientError, service_error_text};
use crate::stdio::{ChildState, exit_note};

/// The first back-off step after repeated failures.
const BACKOFF_BASE: Duration = Duration::from_millis(100);
/// The longest back-off.
const BACKOFF_MAX: Duration = Duration::from_secs(10);

pub(super) struct Conn {
    pub(super) service: RunningService<RoleClient, Hooks>,
    pub(super) child: Option<Arc<tokio::sync::Mutex<tokio::process::Child>>>,
    pub(super) state: Arc<ChildState>,
    pub(super) protocol: String,
    /// The credential the handshake sent (what a later 401 refused).
    pub(super) credential: Credential,
    /// The `subscriptions/listen` of a 2026-07-28 connection, stopped with it.
    pub(super) _listening: Option<super::listen::Listening>,
}

impl Conn {
    pub(super) fn alive(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }

    /// Why the connection died, as far as it can be told.
    pub(super) async fn death_note(&self) -> String {
        why_closed(self.child.as_ref(), &self.state).await
    }

    /// Closes the service and kills the child, if any.
    pub(super) async fn shutdown(self) {
        let Conn { service, child, .. } = self;
        let _ = service.cancel().await;
        if let Some(child) = child {
            kill_child(&child).await;
        }
    }
}

/// Why a connection closed, as far as it can be told: the framing error, if any; the
/// child's exit status (a child still running is killed); its last stderr lines.
pub(super) async fn why_closed(
    child: Option<&Arc<tokio::sync::Mutex<tokio::process::Child>>>,
    state: &ChildState,
) -> String {
    let mut parts = Vec::new();
    if let Some(b) = state.broken.get() {
        parts.push(b.clone());
    }
    if let Some(child) = child {
        match exit_note(child).await {
            Some(note) => parts.push(note),
            None => kill_child(child).await,
        }
        state.settle().await;
    }
    if parts.is_empty() {
        parts.push("the transport closed".into());
    }
    let tail = state.tail_text();
    if !tail.is_empty() {
        parts.push(format!("last stderr: {tail}"));
    }
    parts.join("; ")
}

/// The wait before reconnect attempt number `failures` (none for the first).
pub(super) fn backoff(failures: u32) -> Duration {
    if failures <= 1 {
        return Duration::ZERO;
    }
    let base = u64::try_from(BACKOFF_BASE.as_millis()).unwrap_or(u64::MAX);
    let ms = base.saturating_mul(1u64 << (failures - 2).min(10));
    Duration::from_millis(ms).min(BACKOFF_MAX)
}

impl McpClient {
    /// A live peer, reconnecting (with back-off) if the connection died.
    pub(super) async fn peer(&self) -> Result<Peer<RoleClient>, McpClientError> {
        let server = &self.cfg.server;
        let mut slot = self.shared.slot.lock().await;
        if let Some(conn) = &slot.conn
            && conn.alive()
        {
            return Ok(conn.service.peer().clone());
        }
        if let Some(dead) = slot.conn.take() {
            slot.last_error = dead.death_note().await;
            let n = self.shared.failures.fetch_add(1, Ordering::Relaxed) + 1;
            slot.not_before = Some(Instant::now() + backoff(n));
            tokio::spawn(dead.shutdown());
        }
        if !slot.connected_once || self.shared.closed.load(Ordering::SeqCst) {
            return Err(McpClientError::NotConnected(server.clone()));
        }
        if let Some(nb) = slot.not_before {
            let now = Instant::now();
            if nb > now {
                let wait = nb - now;
                if wait > self.cfg.timeout / 2 {
                    return Err(McpClientError::BackingOff {
                        server: server.clone(),
                        message: slot.last_error.clone(),
                        retry_in: wait,
                    });
                }
                tokio::time::sleep(wait).await;
            }
        }
        tracing::info!(server = %server, "reconnecting to MCP server");
        match self.open().await {
            Ok(conn) => {
                let peer = conn.service.peer().clone();
                slot.conn = Some(conn);
                slot.not_before = None;
                self.shared.reconnects.fetch_add(1, Ordering::Relaxed);
                // A new process may have other tools.
                self.shared.changed.send_modify(|g| *g += 1);
                Ok(peer)
            }
            Err(e) => {
                let n = self.shared.failures.fetch_add(1, Ordering::Relaxed) + 1;
                slot.not_before = Some(Instant::now() + backoff(n));
                slot.last_error = e.to_string();
                Err(e)
            }
        }
    }

    /// Turns a request failure into a client error; for a dead connection, says why.
    pub(super) async fn request_error(&self, e: ServiceError, what: &str) -> McpClientError {
        let server = self.cfg.server.clone();
        match e {
            ServiceError::Timeout { timeout } => McpClientError::Timeout {
                server,
                what: what.to_string(),
                timeout,
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let refused = request_auth_failure(&e);
                let mut slot = self.shared.slot.lock().await;
                let how = slot
                    .conn
                    .as_ref()
                    .map_or(Credential::None, |c| c.credential);
                let message = match slot.conn.take() {
                    Some(conn) if !conn.alive() || matches!(e, ServiceError::TransportClosed) => {
                        let note = conn.death_note().await;
                        slot.last_error = note.clone();
                        let n = self.shared.failures.fetch_add(1, Ordering::Relaxed) + 1;
                        slot.not_before = Some(Instant::now() + backoff(n));
                        tokio::spawn(conn.shutdown());
                        note
                    }
                    Some(conn) => {
                        slot.conn = Some(conn);
                        service_error_text(&e)
                    }
                    None => slot.last_error.clone(),
                };
                drop(slot);
                // An HTTP server that ended the session with 403 `insufficient_scope`.
                let denied = self
                    .shared
                    .denied
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take();
                if let Some(challenge) = denied {
                    let hint = super::transport::unauthorized_hint(
                        &server,
                        403,
                        Some(&challenge),
                        Credential::OAuth,
                        true,
                    );
                    return McpClientError::Unauthorized {
                        server,
                        status: 403,
                        hint,
                        challenge: Some(challenge),
                    };
                }
                // Refused for want of authorization (a token revoked or expired, or a
                // server that lets `initialize` through but guards the rest).
                if let Some((status, challenge)) = refused {
                    return self.unauthorized(status, challenge, how).await;
                }
                McpClientError::Closed {
                    server,
                    message: format!("{message} (during {what}); the next call reconnects"),
                }
            }
            other => McpClientError::Protocol {
                server,
                what: what.to_string(),
                message: service_error_text(&other),
            },
        }
    }
}
