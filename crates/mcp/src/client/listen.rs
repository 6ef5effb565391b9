//! Following a 2026-07-28 server's changes: that revision has no GET stream for
//! notifications the server sends on its own, so toolhost opens `subscriptions/listen`
//! (rmcp's [`Peer::listen`]) for the list changes the server declares (`listChanged` on
//! tools, prompts, resources) and hands each notification on as the older revisions'
//! stream did: a tools change invalidates the tool cache (the registry re-lists), prompt
//! and resource changes go to the gateway's events.
//!
//! The server is not trusted: a stream the server ends is opened again after a pause
//! that doubles from [`RELISTEN_MIN`] to [`RELISTEN_MAX`] (reset once a stream has
//! delivered something), so a server that ends every stream at once costs one request per
//! [`RELISTEN_MAX`]; a notification flood costs a counter increment each (the tool
//! cache's invalidation is coalesced, the gateway's event queue is bounded).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use super::hooks::UpstreamEvent;

/// The first pause before a stream the server ended is opened again.
pub(super) const RELISTEN_MIN: Duration = Duration::from_millis(500);
/// The longest pause between two streams.
pub(super) const RELISTEN_MAX: Duration = Duration::from_secs(30);

/// The listening task of one connection; stopped when dropped (the connection closed).
#[derive(Debug)]
pub(super) struct Listening(JoinHandle<()>);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The list changes the server declares it sends, as a listen filter (`None`: none).
fn filter_for(peer: &Peer<RoleClient>) -> Option<SubscriptionFilter> {
    let caps = peer.peer_info()?.capabilities.clone();
    let mut b = SubscriptionFilter::builder();
    let mut any = false;
    if caps.tools.and_then(|t| t.list_changed) == Some(true) {
        b = b.tools_list_changed();
        any = true;
    }
    if caps.prompts.and_then(|p| p.list_changed) == Some(true) {
        b = b.prompts_list_changed();
        any = true;
    }
    if caps.resources.and_then(|r| r.list_changed) == Some(true) {
        b = b.resources_list_changed();
        any = true;
    }
    any.then(|| b.build())
}

/// Starts following the changes of the server behind `peer` (a 2026-07-28 connection),
/// or `None` when it declares none.
pub(super) fn follow(
    server: Arc<str>,
    peer: Peer<RoleClient>,
    changed: Arc<watch::Sender<u64>>,
    events: broadcast::Sender<UpstreamEvent>,
) -> Option<Listening> {
    let filter = filter_for(&peer)?;
    let task = tokio::spawn(async move {
        let mut pause = RELISTEN_MIN;
        while !peer.is_transport_closed() {
            let mut delivered = false;
            match peer.listen(filter.clone()).await {
                Ok(mut sub) => {
                    tracing::debug!(server = %server, "subscriptions/listen open");
                    while let Ok(Some(n)) = sub.next().await {
                        delivered = true;
                        pass_on(&server, n, &changed, &events);
                    }
                }
                Err(e) => {
                    tracing::debug!(server = %server, "subscriptions/listen refused: {e}");
                }
            }
            if delivered {
                pause = RELISTEN_MIN;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RELISTEN_MAX);
        }
    });
    Some(Listening(task))
}

/// Hands one notification of the stream on, as the older revisions' handlers do.
fn pass_on(
    server: &str,
    n: ServerNotification,
    changed: &watch::Sender<u64>,
    events: &broadcast::Sender<UpstreamEvent>,
) {
    match n {
        ServerNotification::ToolListChangedNotification(_) => {
            tracing::debug!(server, "tools/list_changed (subscriptions/listen)");
            changed.send_modify(|g| *g += 1);
        }
        ServerNotification::PromptListChangedNotification(_) => {
            let _ = events.send(UpstreamEvent::PromptsChanged);
        }
        ServerNotification::ResourceListChangedNotification(_) => {
            let _ = events.send(UpstreamEvent::ResourcesChanged);
        }
        ServerNotification::ResourceUpdatedNotification(u) => {
            let _ = events.send(UpstreamEvent::ResourceUpdated(u.params.uri));
        }
        ServerNotification::LoggingMessageNotification(m) => {
            let _ = events.send(UpstreamEvent::Log(m.params));
        }
        _ => {}
    }
}
