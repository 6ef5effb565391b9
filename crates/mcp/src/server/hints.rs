//! Cache hints of `tools/list` (2026-07-28, SEP-2549: `ttlMs` and `cacheScope` on every
//! complete list): computed from what can change the list rather than left at the
//! protocol's most cautious default. [`ListHints`] is set by whoever builds the server
//! (`toolhost serve` knows whether the plugins folder is watched and whether MCP servers
//! are wrapped); [`ListHints::apply`] fills a result.
//!
//! - **ttlMs**: 0 (revalidate every time) while the tools are still loading, or when the
//!   list may change at any moment (a watched plugins folder, a wrapped MCP server, whose
//!   tools come and go); otherwise the list changes only with a restart, and it may be
//!   kept for [`STATIC_LIST_TTL`] (a bound on how stale a list gets across a rolling
//!   restart of replicas). A `list_changed` notification invalidates it in any case.
//! - **cacheScope**: `private` when bearer tokens guard the endpoint (the list is for the
//!   holders of a token, not for a shared cache to hand to anyone), `public` otherwise.

use std::time::Duration;

use rmcp::model::{CacheScope, ListToolsResult};

/// How long a list that changes only with a restart may be kept.
pub const STATIC_LIST_TTL: Duration = Duration::from_secs(300);

/// What the cache hints of `tools/list` are computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListHints {
    /// The list may change while the process runs (a watched folder, wrapped servers).
    pub changes_live: bool,
    /// Bearer tokens guard the endpoint.
    pub authenticated: bool,
}

impl Default for ListHints {
    /// The cautious default: the list may change at any moment, and only the asking
    /// client may cache it.
    fn default() -> Self {
        ListHints {
            changes_live: true,
            authenticated: true,
        }
    }
}

impl ListHints {
    /// The `ttlMs` of a `tools/list` answered now (`loading`: tools still loading).
    pub fn ttl_ms(&self, loading: bool) -> u64 {
        if loading || self.changes_live {
            0
        } else {
            u64::try_from(STATIC_LIST_TTL.as_millis()).unwrap_or(u64::MAX)
        }
    }

    /// The `cacheScope` of a `tools/list`.
    pub fn scope(&self) -> CacheScope {
        if self.authenticated {
            CacheScope::Private
        } else {
            CacheScope::Public
        }
    }

    /// Sets the hints of `result` (answered while tools are `loading` or not).
    pub fn apply(&self, result: &mut ListToolsResult, loading: bool) {
        result.ttl_ms = Some(self.ttl_ms(loading));
        result.cache_scope = Some(self.scope());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_list_that_cannot_change_is_kept_and_only_an_open_one_is_public() {
        let fixed = ListHints {
            changes_live: false,
            authenticated: false,
        };
        assert_eq!(fixed.ttl_ms(false), 300_000);
        assert_eq!(fixed.ttl_ms(true), 0, "an incomplete list is not kept");
        assert_eq!(fixed.scope(), CacheScope::Public);
        let live = ListHints {
            changes_live: true,
            authenticated: true,
        };
        assert_eq!(live.ttl_ms(false), 0);
        assert_eq!(live.scope(), CacheScope::Private);
        assert_eq!(ListHints::default(), live);
    }
}
