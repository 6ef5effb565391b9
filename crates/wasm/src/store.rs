//! The per-call `Store`: [`new_store`] builds a fresh sandbox ([`HostState`]) for one
//! `describe()` or tool call, as a [`CallSpec`] says, and sets fuel, the epoch deadline
//! and the memory limiter before anything runs in it; [`facts`] reads back what the trap
//! mapping needs to say which limit stopped a call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use toolhost_core::tools::ToolContext;
use wasmtime::{Store, UpdateDeadline};

use crate::component::PluginInner;
use crate::engine::WasmEngine;
use crate::error::StoreError;
use crate::grant::Grant;
use crate::limits::{StopReason, TrapFacts};
use crate::sandbox::{HostState, StateSpec};

/// What one call (a tool call, or `describe()`) runs with.
pub(crate) struct CallSpec<'a> {
    /// The effective grant (nothing for `describe()`).
    pub grant: &'a Grant,
    /// Whether the tool declared the `network` permission.
    pub declared_network: bool,
    /// The call's context (`None` for `describe()`).
    pub ctx: Option<ToolContext>,
    /// The tool's name, for logs and messages.
    pub tool: &'a str,
    /// The wall-clock budget of the call.
    pub timeout: Duration,
    /// The fuel budget; `None` for unlimited (when the engine meters fuel).
    pub fuel: Option<u64>,
}

/// A fresh store on `engine` (the one the component to run was compiled on, see
/// `PluginInner::runnable`) for one call of a component of `inner`, with limits set
/// (before anything runs in it).
pub(crate) fn new_store(
    inner: &PluginInner,
    engine: &WasmEngine,
    call: CallSpec<'_>,
) -> Result<Store<HostState>, StoreError> {
    let mut state = HostState::new(StateSpec {
        plugin: inner.name.clone(),
        tool: Arc::from(call.tool),
        grant: call.grant,
        declared_network: call.declared_network,
        ctx: call.ctx,
    })?;
    state.deadline = Instant::now() + call.timeout;
    let mut store = Store::new(engine.engine(), state);
    store.limiter(|s| &mut s.limiter);
    if engine.options().fuel {
        store
            .set_fuel(call.fuel.unwrap_or(u64::MAX))
            .map_err(|e| StoreError::Fuel {
                message: format!("{e:#}"),
            })?;
    }
    if engine.options().epoch {
        // Check every tick: stop on cancellation or once the wall-clock deadline passed,
        // otherwise yield to the executor (so a timeout or drop of the future also works).
        // The deadline is the state's: a spare sandbox gets its call's when it is taken.
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |mut cx| {
            let cancelled = cx
                .data()
                .ctx
                .as_ref()
                .is_some_and(ToolContext::is_cancelled);
            let reason = if cancelled {
                Some(StopReason::Cancelled)
            } else if Instant::now() >= cx.data().deadline {
                Some(StopReason::Deadline)
            } else {
                None
            };
            match reason {
                Some(r) => {
                    cx.data_mut().stopped = Some(r);
                    Ok(UpdateDeadline::Interrupt)
                }
                None => Ok(UpdateDeadline::Yield(1)),
            }
        });
    }
    Ok(store)
}

/// What [`crate::limits::map_trap`] needs to know about a call that trapped: its budgets
/// and what the store recorded (memory cap hit, why the epoch callback stopped it).
pub(crate) fn facts(
    store: &Store<HostState>,
    timeout: Duration,
    fuel: Option<u64>,
    max_stack: usize,
) -> TrapFacts {
    let d = store.data();
    TrapFacts {
        timeout,
        fuel,
        memory: (d.limiter.max_bytes, d.limiter.exceeded),
        max_stack,
        stopped: d.stopped,
    }
}
