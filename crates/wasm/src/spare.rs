//! Spare sandboxes ([`crate::EngineOptions::spare_sandboxes`]): after a call, the next
//! single-use sandbox of the same tool (a `Store` and an instance of the component) is
//! built in the background, so the next call does not wait for the instantiation. The
//! rules (docs/design.md, "Spare sandboxes"):
//!
//! - A spare serves one call at most, and no call's guest code has run in it: it is the
//!   sandbox the call would have built, built earlier, with the tool's grant (folders,
//!   network, environment: what the component's start-up, such as a WASI adapter
//!   listing its preopened folders, may take hold of). The call's own context, its
//!   deadline and its fuel are put in when it takes the spare ([`Spare::arm`]).
//! - The fuel the instantiation used is charged to the call; the build runs under the
//!   plugin's deadline, with the same memory limit.
//! - At most one spare per tool and at most `spare_sandboxes` per engine (each holds a
//!   pooling slot and its memory). A spare made on code that has since been replaced
//!   (the optimized build swapped in, see "Compile tiers") is dropped, not used.
//! - Only a call that reached the guest orders the next spare (so a tool needing an
//!   approval has had one), not one called back to back, and not one whose sandbox
//!   builds quicker than [`crate::EngineOptions::spare_min_build`] (see
//!   [`SpareSlot::refill`]).
//!
//! Without spares, a call builds the same sandbox itself, after the permission gate
//! ([`prepare`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use wasmtime::Store;

use crate::component::PluginInner;
use crate::engine::WasmEngine;
use crate::error::StoreError;
use crate::grant::Grant;
use crate::sandbox::HostState;
use crate::store::{CallSpec, new_store};
use crate::versions::{Instantiated, WorldPre};
use toolhost_core::tools::ToolContext;

/// How many spares an engine may hold, and how many it holds.
#[derive(Debug)]
pub(crate) struct Budget {
    max: usize,
    live: AtomicUsize,
    /// Calls that ran in a spare.
    used: std::sync::atomic::AtomicU64,
}

impl Budget {
    /// A budget of `max` spares (0: spares off).
    pub(crate) fn new(max: usize) -> Self {
        Budget {
            max,
            live: AtomicUsize::new(0),
            used: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// How many spares exist now (built or being built).
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// How many calls ran in a spare so far.
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// One more spare, if under the cap; given back when the reservation is dropped.
    fn reserve(self: &Arc<Self>) -> Option<Reservation> {
        self.live
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Reservation(self.clone()))
    }
}

/// One place in a [`Budget`], held by a spare (or its build) until it is used or dropped.
struct Reservation(Arc<Budget>);

impl Drop for Reservation {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A store with the component instantiated in it, never called: a spare, or the
/// sandbox a call prepares for itself when there is none.
pub(crate) struct Spare {
    store: Store<HostState>,
    instance: Instantiated,
    /// The address of the [`WorldPre`] it was instantiated from: the code it runs.
    code: usize,
    /// Fuel the instantiation used, charged to the call.
    fuel_used: u64,
    /// Its place in the engine's budget (a spare; `None` for a sandbox a call prepares
    /// for itself).
    _held: Option<Reservation>,
}

/// The address of `pre`, to tell which code a spare was made from (a `WorldPre` lives
/// as long as its plugin, which the slot's tool keeps alive, so addresses are not reused
/// while a spare can still be compared with them).
fn code_of(pre: &WorldPre) -> usize {
    pre as *const WorldPre as usize
}

impl Spare {
    /// The store and instance of a sandbox [`prepare`]d for the call that runs in it
    /// (its context, deadline and fuel are in already).
    pub(crate) fn into_parts(self) -> (Store<HostState>, Instantiated) {
        (self.store, self.instance)
    }

    /// Makes a spare (prepared with no call in it) the sandbox of one call: its context `ctx`, the
    /// wall-clock `deadline`, and the call's fuel budget `fuel` less what the
    /// instantiation used.
    pub(crate) fn arm(
        self,
        engine: &WasmEngine,
        ctx: Option<ToolContext>,
        fuel: Option<u64>,
        deadline: Instant,
    ) -> Result<(Store<HostState>, Instantiated), StoreError> {
        let Spare {
            mut store,
            instance,
            fuel_used,
            ..
        } = self;
        let state = store.data_mut();
        state.ctx = ctx;
        state.deadline = deadline;
        if engine.options().fuel {
            store
                .set_fuel(fuel.unwrap_or(u64::MAX).saturating_sub(fuel_used))
                .map_err(|e| StoreError::Fuel {
                    message: format!("{e:#}"),
                })?;
        }
        if engine.options().epoch {
            store.set_epoch_deadline(1);
        }
        Ok((store, instance))
    }
}

/// The spare of one tool, if any, whether one is being built, and what decides whether
/// the next is worth building.
#[derive(Default)]
pub(crate) struct SpareSlot {
    spare: Mutex<Option<Spare>>,
    building: AtomicBool,
    /// When the last call of the tool ended.
    last_end: Mutex<Option<Instant>>,
    /// How long the last spare took to build, µs.
    build_us: AtomicU64,
}

impl SpareSlot {
    /// The spare, when there is one made from `code` (one made from other code is
    /// dropped).
    pub(crate) fn take(&self, code: &WorldPre) -> Option<Spare> {
        let spare = self
            .spare
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        if spare.code != code_of(code) {
            return None;
        }
        if let Some(held) = &spare._held {
            held.0.used.fetch_add(1, Ordering::Relaxed);
        }
        Some(spare)
    }

    /// After a call of `tool` that started at `started`: starts building the next spare
    /// in the background, unless the engine's spares are off or full, there is one, one
    /// is being built, there is no tokio runtime to build it on, or the tool is called
    /// back to back. Back to back (this call started before the last one ended, or less
    /// than a build's time after) a spare would be built while the next call is already
    /// waiting, on the same cores: measured, that costs the caller more than it saves
    /// (docs/benchmarks.md, "Spare sandboxes"). A tool called with pauses, as a model
    /// calls tools between its turns, gets its sandbox built during the pause. A tool
    /// whose sandbox builds in less than [`crate::EngineOptions::spare_min_build`] (its
    /// first spare measures it) gets no more spares: handing the build to another
    /// thread costs the call a wake-up and the instance its warm cache, more than such
    /// a build takes (measured: a Rust tool called with pauses got slower).
    pub(crate) fn refill(
        self: &Arc<Self>,
        plugin: &Arc<PluginInner>,
        tool: &Arc<str>,
        grant: &Grant,
        declared_network: bool,
        started: Instant,
    ) {
        let budget = &plugin.engine.inner.spares;
        if budget.max == 0 {
            return;
        }
        let previous = self
            .last_end
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(Instant::now());
        let pause = previous.map(|end| started.saturating_duration_since(end));
        let build = std::time::Duration::from_micros(self.build_us.load(Ordering::Relaxed));
        let cheap = !build.is_zero() && build < plugin.engine.options().spare_min_build;
        if cheap
            || pause.is_some_and(|p| p <= build)
            || self.has_spare()
            || self.building.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let (Some(held), Ok(rt)) = (budget.reserve(), tokio::runtime::Handle::try_current()) else {
            self.building.store(false, Ordering::Release);
            return;
        };
        let (slot, plugin, tool, grant) =
            (self.clone(), plugin.clone(), tool.clone(), grant.clone());
        rt.spawn(async move {
            let t0 = Instant::now();
            let built = match plugin.runnable() {
                Ok((engine, pre)) => {
                    let deadline = Instant::now() + plugin.policy.timeout();
                    let call = CallSpec {
                        grant: &grant,
                        declared_network,
                        ctx: None,
                        tool: &tool,
                        timeout: plugin.policy.timeout(),
                        fuel: plugin.policy.fuel(),
                    };
                    prepare_held(&plugin, engine, pre, call, deadline, Some(held))
                        .await
                        .map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            };
            let us = u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX);
            slot.build_us.store(us, Ordering::Relaxed);
            match built {
                Ok(spare) => {
                    let mut s = slot.spare.lock().unwrap_or_else(|e| e.into_inner());
                    if s.is_none() {
                        *s = Some(spare);
                    }
                }
                Err(why) => {
                    tracing::debug!(target: "toolhost::sandbox", plugin = %plugin.name, tool = %tool, "no spare sandbox: {why}");
                }
            }
            slot.building.store(false, Ordering::Release);
        });
    }

    fn has_spare(&self) -> bool {
        self.spare
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }
}

/// Why a sandbox could not be prepared.
pub(crate) enum Unprepared {
    /// The store could not be built (a granted folder gone, fuel not settable).
    Store(StoreError),
    /// The instantiation trapped (the store, for the facts that say which limit).
    Trap(wasmtime::Error, Store<HostState>),
    /// The instantiation outlived the deadline.
    Timeout(Store<HostState>),
}

impl std::fmt::Display for Unprepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unprepared::Store(e) => write!(f, "{e}"),
            Unprepared::Trap(e, _) => write!(f, "the instantiation trapped: {e:#}"),
            Unprepared::Timeout(_) => f.write_str("the instantiation outlived the deadline"),
        }
    }
}

/// Prepares one sandbox for the call `call` (its grant, context, limits): a store built
/// as [`new_store`] builds it, under `deadline`, and the component `pre` (compiled on
/// `engine`) instantiated in it, not yet called ([`Spare::into_parts`]).
pub(crate) async fn prepare(
    plugin: &PluginInner,
    engine: &WasmEngine,
    pre: &WorldPre,
    call: CallSpec<'_>,
    deadline: Instant,
) -> Result<Spare, Unprepared> {
    prepare_held(plugin, engine, pre, call, deadline, None).await
}

async fn prepare_held(
    plugin: &PluginInner,
    engine: &WasmEngine,
    pre: &WorldPre,
    mut call: CallSpec<'_>,
    deadline: Instant,
    held: Option<Reservation>,
) -> Result<Spare, Unprepared> {
    let policy = &plugin.policy;
    call.timeout = deadline.saturating_duration_since(Instant::now());
    let mut store = new_store(plugin, engine, call).map_err(Unprepared::Store)?;
    let instance = match tokio::time::timeout_at(deadline.into(), pre.instantiate(&mut store)).await
    {
        Err(_) => return Err(Unprepared::Timeout(store)),
        Ok(Err(e)) => return Err(Unprepared::Trap(e, store)),
        Ok(Ok(i)) => i,
    };
    let fuel_used = match store.get_fuel() {
        Ok(left) => policy.fuel().unwrap_or(u64::MAX).saturating_sub(left),
        Err(_) => 0,
    };
    Ok(Spare {
        store,
        instance,
        code: code_of(pre),
        fuel_used,
        _held: held,
    })
}
