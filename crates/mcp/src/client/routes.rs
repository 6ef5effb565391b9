//! Where a wrapped server's progress and requests back go: the [`Route`] of each call in
//! flight (its context), and [`Pending`], the route of a request being sent, filed before
//! the request can reach the server and forgotten when dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::ProgressToken;
use toolhost_core::tools::ToolContext;

/// The route of a call whose request is being sent, filed under a progress token of
/// toolhost's own (`toolhost-pending-N`, unique in this process) until rmcp's token is
/// known (see `call_tool_once`); forgotten when dropped, so a call given up while sending
/// leaves nothing in flight.
pub(super) struct Pending {
    progress: Arc<Mutex<HashMap<ProgressToken, Route>>>,
    pub(super) token: ProgressToken,
}

impl Pending {
    pub(super) fn file(progress: &Arc<Mutex<HashMap<ProgressToken, Route>>>, route: Route) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let token = ProgressToken(rmcp::model::NumberOrString::String(
            format!("toolhost-pending-{n}").into(),
        ));
        progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token.clone(), route);
        Pending {
            progress: progress.clone(),
            token,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.token);
    }
}

/// Where a call's progress notifications (and a server's requests back) go: the call's
/// context, whether the server reported progress for it, and whether the call was answered
/// already (its route is then only kept for late progress, see `PROGRESS_GRACE` in `client.rs`).
pub(crate) struct Route {
    pub(crate) ctx: ToolContext,
    pub(crate) reported: bool,
    pub(crate) answered: bool,
}

impl Route {
    /// The route of the call whose context is `ctx`, nothing reported or answered yet.
    pub(crate) fn of(ctx: &ToolContext) -> Self {
        Route {
            ctx: ctx.clone(),
            reported: false,
            answered: false,
        }
    }
}
