//! The session store of the Streamable HTTP server. [`CappedSessionManager`] wraps rmcp's
//! [`LocalSessionManager`] (which runs the session workers) with a table of who owns each
//! session, when it was last used and how many requests it has in flight, and admits a
//! new session within two bounds (docs/mcp.md, "HTTP resource limits"):
//!
//! - at most `max_sessions` live sessions. At the cap, the least recently used session
//!   with no request in flight is closed for the newcomer (its client gets HTTP 404 on its
//!   next request and must `initialize` again, as the protocol says); the newcomer is
//!   refused (HTTP 503) only when every session has a request in flight;
//! - at most `max_sessions_per_client` of them held by one client ([`ClientKey`]: its
//!   bearer token when tokens are configured, else its IP address). A client at its share
//!   has its own least recently used idle session closed, and is refused only when every
//!   one of its sessions is busy. So one client can neither fill the server nor push
//!   another client out while it stays within its share.
//!
//! A session is busy while it initializes and while a POST to it is being answered (until
//! the response body is sent or dropped); a standalone GET stream does not pin it, or a
//! client could hold sessions forever by listening. Evictions and refusals are counted in
//! [`SessionCounters`] (atomics, for a metrics endpoint) and logged, at most one line per
//! kind every [`LOG_EVERY`] (a flooding client cannot flood the log).
//!
//! The table is a plain map scanned for the least recently used idle session: it holds at
//! most `max_sessions` entries and is scanned only when a session must be evicted, which
//! costs less than keeping an ordered index current on every request (and an LRU crate
//! cannot skip the busy entries).

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

use super::http_limits::HttpLimits;

/// The shortest time between two log lines about evictions (and between two about
/// refusals); each line carries the totals and how many happened since the previous one.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// Who a session belongs to, for the per-client share.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ClientKey {
    /// The n-th configured bearer token (0-based), when tokens are in use.
    Token(usize),
    /// The peer's IP address. Not the port: every connection has a new one.
    Addr(IpAddr),
}

impl std::fmt::Display for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Never the token itself: its position among the configured ones.
            ClientKey::Token(i) => write!(f, "bearer token #{}", i + 1),
            ClientKey::Addr(ip) => write!(f, "{ip}"),
        }
    }
}

/// The owner of a session: `None` when the request carried no identity (rmcp's service
/// used without [`super::http`]'s guard); such sessions count against the cap only.
type Owner = Option<ClientKey>;

fn show(owner: &Owner) -> String {
    owner
        .as_ref()
        .map_or_else(|| "an unidentified client".to_string(), ToString::to_string)
}

/// Counts of the session store's decisions, shared with whoever wants to read them (a
/// metrics endpoint): `HttpServeOptions::session_counters`.
#[derive(Debug, Default)]
pub struct SessionCounters {
    live: AtomicUsize,
    evicted_at_cap: AtomicU64,
    evicted_over_share: AtomicU64,
    refused_all_busy: AtomicU64,
    refused_share_busy: AtomicU64,
}

impl SessionCounters {
    /// The counts now.
    pub fn snapshot(&self) -> SessionCounts {
        SessionCounts {
            live: self.live.load(Ordering::Relaxed),
            evicted_at_cap: self.evicted_at_cap.load(Ordering::Relaxed),
            evicted_over_share: self.evicted_over_share.load(Ordering::Relaxed),
            refused_all_busy: self.refused_all_busy.load(Ordering::Relaxed),
            refused_share_busy: self.refused_share_busy.load(Ordering::Relaxed),
        }
    }
}

/// A snapshot of [`SessionCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionCounts {
    /// Sessions alive now (including ones being initialized).
    pub live: usize,
    /// Idle sessions closed because the server was at `max_sessions`.
    pub evicted_at_cap: u64,
    /// Idle sessions closed because their client was at its share.
    pub evicted_over_share: u64,
    /// `initialize` requests refused: the server was at its cap and every session busy.
    pub refused_all_busy: u64,
    /// `initialize` requests refused: the client was at its share and all its sessions busy.
    pub refused_share_busy: u64,
}

impl SessionCounts {
    /// Sessions closed to make room, for either reason.
    pub fn evicted(&self) -> u64 {
        self.evicted_at_cap + self.evicted_over_share
    }

    /// `initialize` requests refused, for either reason.
    pub fn refused(&self) -> u64 {
        self.refused_all_busy + self.refused_share_busy
    }
}

/// Why [`CappedSessionManager`] refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionLimitError {
    /// Every session slot is taken and every session has a request in flight.
    #[error(
        "session limit reached: {0} MCP sessions are open and every one has a request in \
         flight (retry when one finishes, or raise --max-sessions)"
    )]
    Full(usize),
    /// The client holds its whole share and every one of its sessions is busy.
    #[error(
        "session share reached: this client holds {0} MCP sessions, its share of the \
         server (--max-sessions-per-client), and every one has a request in flight (retry \
         when one finishes, or close sessions with HTTP DELETE)"
    )]
    ShareFull(usize),
    /// The underlying session manager failed.
    #[error(transparent)]
    Session(#[from] LocalSessionManagerError),
}

#[derive(Debug)]
struct Entry {
    owner: Owner,
    /// The table's use counter at the last request: larger is more recent.
    last_used: u64,
    in_flight: usize,
    /// Created, `initialize` not answered yet (counted in `in_flight`).
    initializing: bool,
}

/// At most one log line per [`LOG_EVERY`], with the count since the previous line.
#[derive(Debug, Default)]
struct Throttle {
    last: Option<Instant>,
    total_at_last: u64,
}

impl Throttle {
    /// `Some(events since the last line)` when a line is due.
    fn due(&mut self, total: u64) -> Option<u64> {
        let now = Instant::now();
        if self.last.is_some_and(|t| now.duration_since(t) < LOG_EVERY) {
            return None;
        }
        self.last = Some(now);
        let since = total.saturating_sub(self.total_at_last);
        self.total_at_last = total;
        Some(since)
    }
}

#[derive(Debug, Default)]
struct Table {
    sessions: HashMap<SessionId, Entry>,
    /// Live sessions plus admitted, not yet created ones, per owner.
    held: HashMap<Owner, usize>,
    /// Admitted sessions not created yet (they count against the cap).
    reserved: usize,
    /// The use counter ([`Entry::last_used`]).
    clock: u64,
    evictions_log: Throttle,
    refusals_log: Throttle,
}

impl Table {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn release(&mut self, owner: &Owner) {
        if let Some(n) = self.held.get_mut(owner) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.held.remove(owner);
            }
        }
    }

    fn remove(&mut self, id: &SessionId) -> Option<Entry> {
        let entry = self.sessions.remove(id)?;
        self.release(&entry.owner);
        Some(entry)
    }

    /// The least recently used session without a request in flight, of `owner` if given.
    fn lru_idle(&self, owner: Option<&Owner>) -> Option<SessionId> {
        self.sessions
            .iter()
            .filter(|(_, e)| e.in_flight == 0 && owner.is_none_or(|o| &e.owner == o))
            .min_by_key(|(_, e)| e.last_used)
            .map(|(id, _)| id.clone())
    }
}

/// State shared by the manager, its reservations and its in-flight marks.
#[derive(Debug)]
struct Shared {
    table: Mutex<Table>,
    counters: Arc<SessionCounters>,
    max_sessions: usize,
    share: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Table> {
        // Every update of the table completes before the guard is dropped (nothing in it
        // panics half-way), so a poisoned table is still consistent.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish_live(&self, table: &Table) {
        self.counters
            .live
            .store(table.sessions.len(), Ordering::Relaxed);
    }
}

/// A slot admitted for a new session and not yet filled; dropping it gives the slot back.
#[derive(Debug)]
pub(crate) struct Reservation {
    shared: Arc<Shared>,
    owner: Owner,
    open: bool,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.open {
            let mut table = self.shared.lock();
            table.reserved = table.reserved.saturating_sub(1);
            table.release(&self.owner);
        }
    }
}

/// What [`CappedSessionManager::admit`] decided: a reserved slot, and the idle sessions
/// taken out of the table to make room (still to be closed:
/// [`CappedSessionManager::close_evicted`]).
#[derive(Debug)]
pub(crate) struct Admission {
    pub(crate) reservation: Reservation,
    pub(crate) evicted: Vec<SessionId>,
}

/// A request in flight on a session: the session cannot be evicted until this is dropped.
#[derive(Debug)]
pub(crate) struct InFlight {
    shared: Arc<Shared>,
    id: SessionId,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut table = self.shared.lock();
        let now = table.tick();
        if let Some(e) = table.sessions.get_mut(&self.id) {
            e.in_flight = e.in_flight.saturating_sub(1);
            e.last_used = now;
        }
    }
}

tokio::task_local! {
    /// The slot the HTTP guard admitted for the `initialize` it is passing on: rmcp's
    /// `create_session` takes no arguments, and runs inside the guard's future.
    static RESERVATION: RefCell<Option<Reservation>>;
}

/// Runs `f` (the rest of the request handling) with `reservation` as the slot for the
/// session it creates; an unused reservation is given back when `f` ends.
pub(crate) async fn with_reservation<F: Future>(reservation: Reservation, f: F) -> F::Output {
    RESERVATION.scope(RefCell::new(Some(reservation)), f).await
}

/// A [`LocalSessionManager`] with the idle expiry of [`HttpLimits`], a cap on live
/// sessions with least-recently-used eviction of idle ones, and a per-client share (the
/// rules: this module's documentation). Sessions leave the table when rmcp closes them
/// (client DELETE, idle expiry, shutdown) or when they are evicted.
#[derive(Debug)]
pub struct CappedSessionManager {
    inner: LocalSessionManager,
    shared: Arc<Shared>,
}

impl CappedSessionManager {
    /// A manager for `limits.max_sessions` sessions, at most
    /// [`HttpLimits::session_share`] per client, that expire after `limits.session_idle`
    /// without traffic.
    pub fn new(limits: &HttpLimits) -> Self {
        Self::with_counters(limits, Arc::default())
    }

    /// As [`CappedSessionManager::new`], counting into `counters`.
    pub fn with_counters(limits: &HttpLimits, counters: Arc<SessionCounters>) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.session_idle);
        Self {
            inner,
            shared: Arc::new(Shared {
                table: Mutex::new(Table::default()),
                counters,
                max_sessions: limits.max_sessions.max(1),
                share: limits.session_share(),
            }),
        }
    }

    /// How many sessions are alive.
    pub fn session_count(&self) -> usize {
        self.shared.lock().sessions.len()
    }

    /// The session cap.
    pub fn max_sessions(&self) -> usize {
        self.shared.max_sessions
    }

    /// The most sessions one client may hold.
    pub fn max_sessions_per_client(&self) -> usize {
        self.shared.share
    }

    /// The counters of evictions and refusals.
    pub fn counters(&self) -> &Arc<SessionCounters> {
        &self.shared.counters
    }

    /// Makes room for one more session of `owner` (see the module documentation), or says
    /// why there is none. The evicted sessions are out of the table (requests to them get
    /// 404) and must still be closed with [`CappedSessionManager::close_evicted`].
    pub(crate) fn admit(&self, owner: Option<ClientKey>) -> Result<Admission, SessionLimitError> {
        let shared = &self.shared;
        let counters = &shared.counters;
        let mut table = shared.lock();
        let mut evicted = Vec::new();
        let held = table.held.get(&owner).copied().unwrap_or(0);
        // A share as large as the cap restricts nothing: the cap's rule decides.
        if owner.is_some() && shared.share < shared.max_sessions && held >= shared.share {
            let Some(id) = table.lru_idle(Some(&owner)) else {
                let total = counters.refused_share_busy.fetch_add(1, Ordering::Relaxed) + 1;
                let all = total + counters.refused_all_busy.load(Ordering::Relaxed);
                if let Some(since) = table.refusals_log.due(all) {
                    tracing::warn!(
                        client = %show(&owner),
                        held,
                        refused_total = all,
                        refused_since_last_line = since,
                        "refused a new MCP session: the client holds its whole share \
                         (--max-sessions-per-client) and every one of its sessions has a \
                         request in flight"
                    );
                }
                return Err(SessionLimitError::ShareFull(held));
            };
            table.remove(&id);
            evicted.push(id);
            counters.evicted_over_share.fetch_add(1, Ordering::Relaxed);
        }
        if table.sessions.len() + table.reserved >= shared.max_sessions {
            let Some(id) = table.lru_idle(None) else {
                let total = counters.refused_all_busy.fetch_add(1, Ordering::Relaxed) + 1;
                let all = total + counters.refused_share_busy.load(Ordering::Relaxed);
                if let Some(since) = table.refusals_log.due(all) {
                    tracing::warn!(
                        client = %show(&owner),
                        max_sessions = shared.max_sessions,
                        refused_total = all,
                        refused_since_last_line = since,
                        "refused a new MCP session: the server is at --max-sessions and \
                         every session has a request in flight"
                    );
                }
                return Err(SessionLimitError::Full(shared.max_sessions));
            };
            table.remove(&id);
            evicted.push(id);
            counters.evicted_at_cap.fetch_add(1, Ordering::Relaxed);
        }
        if !evicted.is_empty() {
            let counts = counters.snapshot();
            if let Some(since) = table.evictions_log.due(counts.evicted()) {
                tracing::info!(
                    client = %show(&owner),
                    evicted_total = counts.evicted(),
                    evicted_at_cap = counts.evicted_at_cap,
                    evicted_over_share = counts.evicted_over_share,
                    evicted_since_last_line = since,
                    "closed the least recently used idle MCP session to admit a new one \
                     (its client gets 404 and must initialize again)"
                );
            }
        }
        table.reserved += 1;
        *table.held.entry(owner.clone()).or_insert(0) += 1;
        shared.publish_live(&table);
        Ok(Admission {
            reservation: Reservation {
                shared: shared.clone(),
                owner,
                open: true,
            },
            evicted,
        })
    }

    /// Closes the session workers of sessions [`CappedSessionManager::admit`] evicted.
    pub(crate) async fn close_evicted(&self, evicted: Vec<SessionId>) {
        for id in evicted {
            if let Err(e) = self.inner.close_session(&id).await {
                tracing::debug!(error = %e, "closing an evicted session");
            }
        }
    }

    /// Marks a request in flight on session `id` (if it exists) until the result is
    /// dropped; it also counts as a use.
    pub(crate) fn begin_request(&self, id: &SessionId) -> Option<InFlight> {
        let mut table = self.shared.lock();
        let now = table.tick();
        let e = table.sessions.get_mut(id)?;
        e.in_flight += 1;
        e.last_used = now;
        Some(InFlight {
            shared: self.shared.clone(),
            id: id.clone(),
        })
    }

    /// Counts a use of session `id` (a GET stream) without pinning it.
    pub(crate) fn touch(&self, id: &SessionId) {
        let mut table = self.shared.lock();
        let now = table.tick();
        if let Some(e) = table.sessions.get_mut(id) {
            e.last_used = now;
        }
    }
}

impl SessionManager for CappedSessionManager {
    type Error = SessionLimitError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // The slot the guard admitted; without one (the service used without the guard, or
        // a request the guard did not take for an `initialize`), admit here, unidentified.
        let admitted = RESERVATION
            .try_with(|r| r.borrow_mut().take())
            .ok()
            .flatten();
        let mut reservation = match admitted {
            Some(r) => r,
            None => {
                let admission = self.admit(None)?;
                self.close_evicted(admission.evicted).await;
                admission.reservation
            }
        };
        // On failure the reservation is dropped, which gives the slot back.
        let (id, transport) = self.inner.create_session().await?;
        let mut table = self.shared.lock();
        let now = table.tick();
        table.reserved = table.reserved.saturating_sub(1);
        reservation.open = false;
        table.sessions.insert(
            id.clone(),
            Entry {
                owner: reservation.owner.take(),
                last_used: now,
                in_flight: 1,
                initializing: true,
            },
        );
        self.shared.publish_live(&table);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        // The session was created busy; it stops being busy when this returns or is
        // dropped.
        let _initializing = {
            let mut table = self.shared.lock();
            match table.sessions.get_mut(id) {
                Some(e) if e.initializing => {
                    e.initializing = false;
                    Some(InFlight {
                        shared: self.shared.clone(),
                        id: id.clone(),
                    })
                }
                _ => None,
            }
        };
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        // The table decides: an evicted session is gone at once, even while its worker is
        // still shutting down.
        if !self.shared.lock().sessions.contains_key(id) {
            return Ok(false);
        }
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        {
            let mut table = self.shared.lock();
            table.remove(id);
            self.shared.publish_live(&table);
        }
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>
    {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>
    {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>
    {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    async fn restore_session(
        &self,
        _id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // No session store is configured, and a restored session would bypass the cap.
        Ok(RestoreOutcome::NotSupported)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize, share: Option<usize>) -> HttpLimits {
        HttpLimits {
            max_sessions: max,
            max_sessions_per_client: share,
            ..HttpLimits::default()
        }
    }

    fn key(i: usize) -> Option<ClientKey> {
        Some(ClientKey::Token(i))
    }

    /// Admits and fills a slot as rmcp would (create, then initialize done).
    async fn open(m: &CappedSessionManager, owner: Option<ClientKey>) -> SessionId {
        let admission = m.admit(owner).unwrap();
        m.close_evicted(admission.evicted).await;
        let (id, _transport) = with_reservation(admission.reservation, m.create_session())
            .await
            .unwrap();
        // What initialize_session does with the initializing mark, without a handler.
        {
            let mut table = m.shared.lock();
            let e = table.sessions.get_mut(&id).unwrap();
            e.initializing = false;
            e.in_flight -= 1;
        }
        id
    }

    #[tokio::test]
    async fn the_share_evicts_the_clients_own_oldest_idle_session_only() {
        let m = CappedSessionManager::new(&limits(4, None));
        assert_eq!(m.max_sessions_per_client(), 2);
        let b = open(&m, key(1)).await;
        let a1 = open(&m, key(0)).await;
        let a2 = open(&m, key(0)).await;
        let a3 = open(&m, key(0)).await;
        let live: Vec<bool> = [&b, &a1, &a2, &a3]
            .iter()
            .map(|id| m.shared.lock().sessions.contains_key(*id))
            .collect();
        assert_eq!(live, [true, false, true, true]);
        assert_eq!(m.counters().snapshot().evicted_over_share, 1);
        // A busy session is never evicted: with both of its sessions busy, the client is
        // refused, and the other client is not disturbed.
        let _busy2 = m.begin_request(&a2).unwrap();
        let _busy3 = m.begin_request(&a3).unwrap();
        let err = m.admit(key(0)).unwrap_err();
        assert!(matches!(err, SessionLimitError::ShareFull(2)), "{err}");
        assert_eq!(m.counters().snapshot().refused_share_busy, 1);
        let b2 = open(&m, key(1)).await;
        assert!(m.shared.lock().sessions.contains_key(&b2));
        assert_eq!(m.session_count(), 4);
    }

    #[tokio::test]
    async fn at_the_cap_the_least_recently_used_idle_session_goes() {
        let m = CappedSessionManager::new(&limits(3, Some(3)));
        let s1 = open(&m, key(0)).await;
        let s2 = open(&m, key(1)).await;
        let s3 = open(&m, key(2)).await;
        drop(m.begin_request(&s1)); // s1 used after s2
        let s4 = open(&m, key(3)).await;
        assert!(!m.shared.lock().sessions.contains_key(&s2));
        assert_eq!(m.counters().snapshot().evicted_at_cap, 1);
        let held: Vec<InFlight> = [&s1, &s3, &s4]
            .iter()
            .map(|id| m.begin_request(id).unwrap())
            .collect();
        let err = m.admit(key(4)).unwrap_err();
        assert!(matches!(err, SessionLimitError::Full(3)), "{err}");
        drop(held);
        let _s5 = open(&m, key(4)).await;
        assert_eq!(m.session_count(), 3);
        assert_eq!(m.counters().snapshot().live, 3);
    }

    #[tokio::test]
    async fn an_unused_reservation_gives_its_slot_back() {
        let m = CappedSessionManager::new(&limits(1, None));
        let admission = m.admit(key(0)).unwrap();
        drop(admission);
        let _s = open(&m, key(1)).await;
        assert_eq!(m.counters().snapshot().evicted(), 0);
    }
}
