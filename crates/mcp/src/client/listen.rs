//! Following a 2026-07-28 server's changes: that revision has no GET stream for
//! notifications the server sends on its own, so toolhost opens `subscriptions/listen`
//! (rmcp's [`Peer::listen`]) for the list changes the server declares (`listChanged` on
//! tools, prompts, resources), and for the resources whose updates the gateway's clients
//! subscribed to (`resourceSubscriptions`, when the server declares `resources.subscribe`;
//! the stream is opened again when that set changes), and hands each notification on as
//! the older revisions' stream did: a tools change invalidates the tool cache (the
//! registry re-lists), prompt and resource changes and updates go to the gateway's events.
//!
//! The server is not trusted: a stream the server ends is opened again after a pause
//! that doubles from [`RELISTEN_MIN`] to [`RELISTEN_MAX`] (reset once a stream has
//! delivered something), so a server that ends every stream at once costs one request per
//! [`RELISTEN_MAX`]; a notification flood costs a counter increment each (the tool
//! cache's invalidation is coalesced, the gateway's event queue is bounded).

use std::sync::Arc;
use std::time::Duration;

use std::collections::BTreeSet;

use rmcp::model::{ServerCapabilities, ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use super::hooks::UpstreamEvent;

/// The first pause before a stream the server ended is opened again.
pub(super) const RELISTEN_MIN: Duration = Duration::from_millis(500);
/// The longest pause between two streams.
pub(super) const RELISTEN_MAX: Duration = Duration::from_secs(30);
/// How long after a change of the watched resources others are gathered into the same
/// new stream.
const REWATCH_GATHER: Duration = Duration::from_millis(50);

/// The listening task of one connection; stopped when dropped (the connection closed).
#[derive(Debug)]
pub(super) struct Listening(JoinHandle<()>);

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What a listen stream asks of the server: the list changes it declares it sends, and
/// the resources in `watched` when it declares resource subscriptions (`None`: nothing).
fn filter_for(caps: &ServerCapabilities, watched: &BTreeSet<String>) -> Option<SubscriptionFilter> {
    let mut b = SubscriptionFilter::builder();
    let mut any = false;
    if caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true) {
        b = b.tools_list_changed();
        any = true;
    }
    if caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true) {
        b = b.prompts_list_changed();
        any = true;
    }
    if caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true) {
        b = b.resources_list_changed();
        any = true;
    }
    if watches(caps) && !watched.is_empty() {
        b = b.resource_subscriptions(watched.iter().cloned());
        any = true;
    }
    any.then(|| b.build())
}

/// Whether the server sends the updates of resources asked for (`resources.subscribe`).
fn watches(caps: &ServerCapabilities) -> bool {
    caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true)
}

/// Starts following the changes of the server behind `peer` (a 2026-07-28 connection),
/// or `None` when it declares none it could send. The stream is opened again, at once,
/// whenever `watched` (the resources whose updates are wanted) changes.
pub(super) fn follow(
    server: Arc<str>,
    peer: Peer<RoleClient>,
    changed: Arc<watch::Sender<u64>>,
    events: broadcast::Sender<UpstreamEvent>,
    mut watched: watch::Receiver<BTreeSet<String>>,
) -> Option<Listening> {
    let caps = peer.peer_info()?.capabilities.clone();
    if filter_for(&caps, &BTreeSet::new()).is_none() && !watches(&caps) {
        return None;
    }
    let task = tokio::spawn(async move {
        let mut pause = RELISTEN_MIN;
        while !peer.is_transport_closed() {
            let wanted = watched.borrow_and_update().clone();
            let Some(filter) = filter_for(&caps, &wanted) else {
                // Nothing to follow until a resource is watched.
                if watched.changed().await.is_err() {
                    break;
                }
                continue;
            };
            let mut delivered = false;
            let mut rewatch = false;
            match peer.listen(filter).await {
                Ok(mut sub) => {
                    tracing::debug!(server = %server, "subscriptions/listen open");
                    loop {
                        tokio::select! {
                            n = sub.next() => match n {
                                Ok(Some(n)) => {
                                    delivered = true;
                                    pass_on(&server, n, &changed, &events);
                                }
                                _ => break,
                            },
                            r = watched.changed() => {
                                // The client is gone when the sender is: stop.
                                if r.is_err() {
                                    return;
                                }
                                rewatch = true;
                                break;
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::debug!(server = %server, "subscriptions/listen refused: {e}");
                }
            }
            if rewatch {
                // Changes made together become one new stream.
                tokio::time::sleep(REWATCH_GATHER).await;
                continue;
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
