//! Tools that are still loading: a host that starts serving before its tool sources are
//! loaded (`toolhost serve` compiles plugins in the background) marks the registry as
//! loading with [`ToolRegistry::begin_loading`]. While any load is pending, stage 1 of
//! the pipeline does not fail an unknown name at once: it waits until a tool of that name
//! is registered or every load has finished, then looks the name up again
//! (`docs/design.md`, "Start-up").
//!
//! The rule: the wait is bounded by the registry's default timeout (cut to the caller's
//! deadline) and ends on the caller's cancellation; it does not count against the tool's
//! own budget, which starts when the tool is found (a first call may have to wait for a
//! large component to compile). Once no load is pending, an unknown name fails with
//! `NotFound` immediately, as it always did.

use std::sync::Arc;
use std::time::Duration;

use super::ToolRegistry;
use super::entry::ToolEntry;
use crate::tools::base::ToolContext;
use crate::tools::error::ToolError;

/// A pending load of tools into a registry; the load counts as finished when this is
/// dropped (also on a panic or an early return of the loader).
#[derive(Debug)]
#[must_use = "the load counts as finished as soon as the guard is dropped"]
pub struct LoadingGuard {
    registry: ToolRegistry,
}

impl Drop for LoadingGuard {
    fn drop(&mut self) {
        self.registry
            .inner
            .loading
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl ToolRegistry {
    /// Marks one load of tools as pending until the returned guard is dropped. While any
    /// load is pending, a call of an unknown tool waits for it (see the module docs).
    pub fn begin_loading(&self) -> LoadingGuard {
        self.inner.loading.send_modify(|n| *n += 1);
        LoadingGuard {
            registry: self.clone(),
        }
    }

    /// Whether a load of tools is pending.
    pub fn is_loading(&self) -> bool {
        *self.inner.loading.borrow() > 0
    }

    /// Waits until no load of tools is pending (at once if none is).
    pub async fn loaded(&self) {
        let mut rx = self.inner.loading.subscribe();
        // The sender lives in `inner`, which `self` keeps alive: `wait_for` cannot fail
        // for a closed channel while we wait.
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Stage 1 while loads are pending: the entry of `name` once it is registered;
    /// `Ok(None)` when every load finished without it; an error when the wait ran out of
    /// time or the caller cancelled.
    pub(super) async fn wait_for_tool(
        &self,
        name: &str,
        ctx: &ToolContext,
    ) -> Result<Option<Arc<ToolEntry>>, ToolError> {
        let budget = self.default_timeout();
        let far = tokio::time::Instant::now() + budget;
        let deadline = ctx.deadline().map_or(far, |d| d.min(far));
        // Subscribe before looking: a change after this point wakes the loop.
        let mut changes = self.watch_changes();
        let mut loading = self.inner.loading.subscribe();
        let started = std::time::Instant::now();
        loop {
            if let Some(e) = self.entry(name) {
                tracing::debug!(tool = %name, waited_ms = started.elapsed().as_millis() as u64, "tool became ready");
                return Ok(Some(e));
            }
            if *loading.borrow_and_update() == 0 {
                // Every registration of the finished loads happened before their guards
                // were dropped: one last look decides.
                return Ok(self.entry(name));
            }
            tokio::select! {
                r = changes.changed() => if r.is_err() { return Ok(self.entry(name)) },
                r = loading.changed() => if r.is_err() { return Ok(self.entry(name)) },
                () = ctx.cancellation_token().cancelled() => {
                    return Err(ToolError::Cancelled(name.to_string()));
                }
                () = tokio::time::sleep_until(deadline) => {
                    return match self.entry(name) {
                        Some(e) => Ok(Some(e)),
                        None => Err(still_loading(name, started.elapsed())),
                    };
                }
            }
        }
    }
}

/// The error of a call whose tool did not appear while the host was still loading.
fn still_loading(name: &str, waited: Duration) -> ToolError {
    ToolError::Other(format!(
        "tool '{name}' is not registered yet: the host was still loading its tools after {} ms; call it again later, or call one of the tools listed in the tool definitions",
        waited.as_millis()
    ))
}
