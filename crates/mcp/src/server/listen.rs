//! MCP 2026-07-28 `subscriptions/listen`: what [`super::McpServer`] sends on a client's
//! subscription stream. The registry's tool list changes and, as a gateway, its wrapped
//! servers' prompt and resource list changes, as the client's filter accepts them (the
//! sink drops the others; a refused kind does not end the stream).

use rmcp::service::{SubscriptionContext, SubscriptionSendError};
use tokio::sync::broadcast::error::RecvError;
use toolhost_core::tools::ToolRegistry;

use crate::{Gateway, GatewayEvent};

/// Forwards the changes until the subscription ends or its stream breaks.
pub(super) async fn forward_changes(
    registry: &ToolRegistry,
    gateway: Option<&Gateway>,
    context: SubscriptionContext,
) {
    let mut tools = registry.watch_changes();
    tools.borrow_and_update();
    let mut events = gateway.map(Gateway::events);
    loop {
        let gateway_event = async {
            match &mut events {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        let sent = tokio::select! {
            _ = context.cancelled() => break,
            r = tools.changed() => {
                if r.is_err() { break }
                context.sink().notify_tool_list_changed().await
            }
            ev = gateway_event => match ev {
                Ok(GatewayEvent::PromptsChanged) => context.sink().notify_prompt_list_changed().await,
                Ok(GatewayEvent::ResourcesChanged) => {
                    context.sink().notify_resource_list_changed().await
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
