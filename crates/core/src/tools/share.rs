//! Clients' fair shares of a bounded resource, and the fair scheduler of execution slots.
//!
//! A host that serves several clients (`toolhost serve --http`) holds resources they all
//! draw on: execution slots, parked calls, spent request states, tasks. Each is one
//! [`Share`]: a shared **pool**, a per-client **cap**, and a small per-client **reserve**
//! beyond the pool, up to a hard **ceiling**. The rule ([`Share::admit`]):
//!
//! 1. a client at its own cap is refused (its own limit, named);
//! 2. else, while the pool has room, anyone is admitted: a lone client may use all of it
//!    (work-conserving);
//! 3. else a client holding fewer than `reserve` is still admitted, up to `ceiling` in
//!    all: however much another client holds, a client's first few are never refused
//!    or queued behind it;
//! 4. else it is refused (or, for slots, waits its turn).
//!
//! So no client can crowd another out, and what all clients together hold is bounded by
//! the ceiling (docs/design.md, "Clients are tenants").
//!
//! [`Slots`] applies the rule to execution slots, asynchronously: a call that cannot be
//! admitted waits, and a freed slot goes to the waiting call whose client holds the
//! fewest (the earliest among equals). With the reserve of one, a client's call waits at
//! most for one of its own calls to end, whatever another client runs. Calls admitted
//! beyond the pool count in it: until the total is below the pool again, only reserves
//! are admitted, so the overflow is given back as soon as calls end.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use super::permission::Permission;

/// Who a call is made for, when a host serves several clients: its identity (a
/// configured client's name, else a token's position, a session or a peer address; never
/// a secret), and what the operator set for it. Put in a [`super::ToolContext`] with
/// [`super::ToolContext::with`]; calls without one share the identity `local`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The identity shares are counted by, and what the audit trail and metrics show.
    pub id: Arc<str>,
    /// Execution slots this client may hold at once (else the registry's limit).
    pub max_concurrent: Option<usize>,
    /// Permission levels this client's calls may use, narrowing the host's policy (else
    /// the host's policy alone decides).
    pub allowed: Option<Arc<[Permission]>>,
}

impl Caller {
    /// A caller known only by its identity.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Caller {
            id: id.into(),
            max_concurrent: None,
            allowed: None,
        }
    }

    /// The identity of calls made without a [`Caller`] (the CLI, the chat loop).
    pub const LOCAL: &'static str = "local";
}

/// One bounded resource shared by clients (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// Held by all clients together before the reserve applies.
    pub pool: usize,
    /// Held by one client at most (a configured client's own limit may be lower).
    pub per_client: usize,
    /// Held by each client beyond a full pool.
    pub reserve: usize,
    /// Held by all clients together, at most.
    pub ceiling: usize,
}

/// Why a [`Share`] refused a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The client holds its own limit.
    #[error("this client already holds {cap}, its limit")]
    Own {
        /// The client's limit.
        cap: usize,
    },
    /// The pool is full and the client holds at least its reserve (or the ceiling is
    /// reached).
    #[error("all {pool} are in use and this client holds {held}")]
    Full {
        /// The shared pool.
        pool: usize,
        /// What the client holds.
        held: usize,
    },
}

impl Share {
    /// A share of `pool` where one client may use it all, keeps `reserve` beyond it, and
    /// all together hold at most twice the pool.
    pub const fn elastic(pool: usize, reserve: usize) -> Self {
        Share {
            pool,
            per_client: pool,
            reserve,
            ceiling: pool * 2,
        }
    }

    /// Whether a client holding `mine` of `total` held may take one more (`cap`: its own
    /// limit, when lower than [`Share::per_client`]).
    pub fn admit(&self, total: usize, mine: usize, cap: Option<usize>) -> Result<(), Refusal> {
        let cap = cap
            .map_or(self.per_client, |c| c.min(self.per_client))
            .max(1);
        if mine >= cap {
            return Err(Refusal::Own { cap });
        }
        if total < self.pool || (mine < self.reserve && total < self.ceiling) {
            return Ok(());
        }
        Err(Refusal::Full {
            pool: self.pool,
            held: mine,
        })
    }
}

/// What each client holds of a resource, and the total: the bookkeeping beside a
/// [`Share`] for tables that count per client.
#[derive(Debug, Default)]
pub struct Holdings {
    by_client: HashMap<Arc<str>, usize>,
    total: usize,
}

impl Holdings {
    /// What `client` holds.
    pub fn of(&self, client: &str) -> usize {
        self.by_client.get(client).copied().unwrap_or(0)
    }

    /// What all clients hold.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Takes one for `client` when `share` admits it.
    pub fn take(
        &mut self,
        share: &Share,
        client: &Arc<str>,
        cap: Option<usize>,
    ) -> Result<(), Refusal> {
        share.admit(self.total, self.of(client), cap)?;
        *self.by_client.entry(client.clone()).or_insert(0) += 1;
        self.total += 1;
        Ok(())
    }

    /// Gives one of `client`'s back (nothing when it holds none).
    pub fn give_back(&mut self, client: &str) {
        if let Some(n) = self.by_client.get_mut(client) {
            *n -= 1;
            self.total -= 1;
            if *n == 0 {
                self.by_client.remove(client);
            }
        }
    }
}

/// The fair scheduler of execution slots (see the module docs).
#[derive(Debug)]
pub struct Slots {
    share: Share,
    state: Mutex<SlotState>,
}

#[derive(Debug, Default)]
struct SlotState {
    held: Holdings,
    waiting: VecDeque<Waiter>,
    next: u64,
}

#[derive(Debug)]
struct Waiter {
    id: u64,
    client: Arc<str>,
    cap: Option<usize>,
    grant: oneshot::Sender<()>,
}

/// One execution slot, given back when dropped.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<Slots>,
    client: Arc<str>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.give_back(&self.client);
    }
}

/// A call's place in the queue while it waits: dropping it (the call was cancelled or
/// timed out) leaves the queue, or gives back the slot granted meanwhile.
struct Place {
    slots: Arc<Slots>,
    id: u64,
    client: Arc<str>,
    granted: oneshot::Receiver<()>,
    done: bool,
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut s = self.slots.lock();
        if let Some(i) = s.waiting.iter().position(|w| w.id == self.id) {
            s.waiting.remove(i);
            return;
        }
        drop(s);
        // Granted after the caller stopped waiting: the slot is given back at once.
        if self.granted.try_recv().is_ok() {
            self.slots.give_back(&self.client);
        }
    }
}

impl Slots {
    /// `n` slots (at least one) that one client may use all of, each client keeping one
    /// beyond a full pool, at most `2n` at once.
    pub fn new(n: usize) -> Arc<Self> {
        let n = n.max(1);
        Arc::new(Slots {
            share: Share::elastic(n, 1),
            state: Mutex::new(SlotState::default()),
        })
    }

    /// The share these slots apply.
    pub fn share(&self) -> Share {
        self.share
    }

    // A poisoned lock means a panic while holding it; every critical section here
    // leaves the counts and the queue consistent between statements, so carry on.
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for `caller`: at once when the share admits it, else when its turn comes.
    /// Cancel-safe: a dropped future leaves no trace.
    pub async fn acquire(self: &Arc<Self>, caller: Option<&Caller>) -> Slot {
        let (client, cap) = match caller {
            Some(c) => (c.id.clone(), c.max_concurrent),
            None => (Arc::from(Caller::LOCAL), None),
        };
        let mut place = {
            let mut s = self.lock();
            if s.held.take(&self.share, &client, cap).is_ok() {
                return Slot {
                    slots: self.clone(),
                    client,
                };
            }
            let (grant, granted) = oneshot::channel();
            s.next += 1;
            let id = s.next;
            s.waiting.push_back(Waiter {
                id,
                client: client.clone(),
                cap,
                grant,
            });
            Place {
                slots: self.clone(),
                id,
                client: client.clone(),
                granted,
                done: false,
            }
        };
        // The sender lives in the queue until it grants: an error would mean the queue
        // dropped it unsent, which `dispatch` never does; the slot is taken either way.
        let _ = (&mut place.granted).await;
        place.done = true;
        Slot {
            slots: self.clone(),
            client,
        }
    }

    /// How many slots `client` holds, and all clients together.
    pub fn held(&self, client: &str) -> (usize, usize) {
        let s = self.lock();
        (s.held.of(client), s.held.total())
    }

    fn give_back(&self, client: &str) {
        let mut s = self.lock();
        s.held.give_back(client);
        self.dispatch(&mut s);
    }

    /// Grants free slots to waiting calls: each time to the admissible call whose client
    /// holds the fewest, the earliest among equals.
    fn dispatch(&self, s: &mut SlotState) {
        loop {
            let best = s
                .waiting
                .iter()
                .enumerate()
                .filter(|(_, w)| {
                    self.share
                        .admit(s.held.total(), s.held.of(&w.client), w.cap)
                        .is_ok()
                })
                .min_by_key(|(_, w)| s.held.of(&w.client))
                .map(|(i, _)| i);
            let Some(i) = best else { return };
            let Some(w) = s.waiting.remove(i) else { return };
            if s.held.take(&self.share, &w.client, w.cap).is_ok() && w.grant.send(()).is_err() {
                // Its caller is gone and its `Place` already left: give it back.
                s.held.give_back(&w.client);
            }
        }
    }
}

#[cfg(test)]
mod tests;
