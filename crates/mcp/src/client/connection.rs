//! A live connection: [`Conn`], why one closed (the framing error, the child's exit
//! status, its last stderr lines), and the back-off before the next attempt after
//! repeated failures (100 ms doubling, at most 10 s; reconnecting is `client/open.rs`).

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::{RoleClient, RunningService};

use super::hooks::Hooks;
use super::transport::{Credential, kill_child};
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
