//! MCP 2026-07-28 `subscriptions/listen`: what [`super::McpServer`] sends on a client's
//! subscription stream. The registry's tool list changes and, as a gateway, its wrapped
//! servers' prompt and resource list changes, as the client's filter accepts them (the
//! sink drops the others; a refused kind does not end the stream), and
//! `notifications/resources/updated` for the resources the filter names
//! (`resourceSubscriptions`, at most [`MAX_LISTEN_RESOURCES`]): each is subscribed to on
//! its wrapped server for as long as the stream lasts (shared with the sessions of older
//! clients, so the last one to go unsubscribes), and one that cannot be (unknown, or its
//! server does not offer subscriptions) is left out.

use rmcp::service::{SubscriptionContext, SubscriptionSendError};
use tokio::sync::broadcast::error::RecvError;
use toolhost_core::tools::ToolRegistry;

use crate::{Gateway, GatewayEvent};

/// Resources one `subscriptions/listen` stream may follow; a filter naming more is cut
/// to the first ones.
pub const MAX_LISTEN_RESOURCES: usize = 64;

/// `filter` with its resource subscriptions cut to [`MAX_LISTEN_RESOURCES`].
pub(super) fn bounded(filter: &rmcp::model::SubscriptionFilter) -> rmcp::model::SubscriptionFilter {
    let mut f = filter.clone();
    if let Some(uris) = &mut f.resource_subscriptions {
        uris.truncate(MAX_LISTEN_RESOURCES);
    }
    f
}

/// Subscribes to the resources `context`'s filter follows: (the wrapped server's key,
/// the URI the client knows it by).
async fn follow(
    gateway: &Gateway,
    context: &SubscriptionContext,
) -> Vec<((String, String), String)> {
    let uris = context
        .accepted()
        .resource_subscriptions
        .clone()
        .unwrap_or_default();
    let mut keys = Vec::new();
    for uri in uris.into_iter().take(MAX_LISTEN_RESOURCES) {
        if keys.iter().any(|(_, u)| *u == uri) {
            continue;
        }
        match gateway.subscribe(&uri).await {
            Ok(key) => keys.push((key, uri)),
            Err(e) => tracing::debug!(error = %e, "subscriptions/listen: a resource left out"),
        }
    }
    keys
}

/// Forwards the changes until the subscription ends or its stream breaks.
pub(super) async fn forward_changes(
    registry: &ToolRegistry,
    gateway: Option<&Gateway>,
    context: SubscriptionContext,
) {
    let mut tools = registry.watch_changes();
    tools.borrow_and_update();
    let mut events = gateway.map(Gateway::events);
    let followed = Followed {
        gateway: gateway.cloned(),
        keys: match gateway {
            Some(g) => follow(g, &context).await,
            None => Vec::new(),
        },
    };
    loop {
        let sent = tokio::select! {
            _ = context.cancelled() => break,
            r = tools.changed() => {
                if r.is_err() { break }
                context.sink().notify_tool_list_changed().await
            }
            ev = Gateway::next_event(&mut events) => match ev {
                Ok(GatewayEvent::PromptsChanged) => context.sink().notify_prompt_list_changed().await,
                Ok(GatewayEvent::ResourcesChanged) => {
                    context.sink().notify_resource_list_changed().await
                }
                Ok(GatewayEvent::ResourceUpdated { server, uri }) => {
                    match followed.served(&server, &uri) {
                        Some(served) => context.sink().notify_resource_updated(served).await,
                        None => continue,
                    }
                }
                Ok(_) | Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => {
                    events = None;
                    continue;
                }
            },
        };
        match sent {
            Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_)) => {}
            Err(_) => break,
        }
    }
}

/// The resources a stream follows; dropped with the stream (however it ends), it gives
/// the subscriptions back.
struct Followed {
    gateway: Option<Gateway>,
    keys: Vec<((String, String), String)>,
}

impl Followed {
    fn served(&self, server: &str, uri: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|((s, u), _)| s == server && u == uri)
            .map(|(_, served)| served.as_str())
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        let (Some(g), keys) = (self.gateway.take(), std::mem::take(&mut self.keys)) else {
            return;
        };
        if keys.is_empty() {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                for (key, _) in &keys {
                    if let Err(e) = g.unsubscribe(key).await {
                        tracing::debug!(error = %e, "subscriptions/listen: unsubscribing failed");
                    }
                }
            });
        }
    }
}
