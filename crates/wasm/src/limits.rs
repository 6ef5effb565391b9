//! Per-call limits: the epoch deadline (wall clock), fuel (optional, deterministic), the
//! linear-memory cap (a [`ResourceLimiter`]) and the max wasm stack (engine-wide, see
//! [`EngineOptions`](crate::EngineOptions)). A trap caused by a limit becomes a
//! [`ToolError`] that says which limit and its value.
//!
//! | limit | default | set by |
//! |---|---|---|
//! | wall-clock deadline | 10 s | policy `timeout_ms` |
//! | fuel | off | policy `fuel` (engine option `fuel`, on by default) |
//! | memory | 64 MiB | policy `memory_mb` (max 1024) |
//! | wasm stack | 1 MiB | engine option `max_wasm_stack` |
//! | stdout / stderr kept | 64 KiB each | policy `output_kb` |

use std::time::Duration;

use toolhost_core::tools::ToolError;
use wasmtime::{ResourceLimiter, Trap};

/// Table elements one store may grow to.
pub const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// Why the host stopped a call (recorded in the store, read after the trap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The wall-clock deadline passed.
    Deadline,
    /// The caller cancelled the call.
    Cancelled,
}

/// The memory limiter of one store. Records that the cap was hit, so the trap can be
/// reported as "memory limit N MiB exceeded" rather than a bare `unreachable`.
#[derive(Debug)]
pub struct MemoryLimiter {
    /// The cap, bytes.
    pub max_bytes: usize,
    /// Set when a grow past the cap was refused.
    pub exceeded: bool,
}

impl MemoryLimiter {
    /// A limiter with this cap.
    pub fn new(max_bytes: usize) -> Self {
        MemoryLimiter {
            max_bytes,
            exceeded: false,
        }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_bytes {
            self.exceeded = true;
            // Trap at once: a guest that cannot allocate would only abort anyway.
            return Err(wasmtime::format_err!(
                "memory limit {} exceeded",
                human_bytes(self.max_bytes)
            ));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// `64 MiB`, `512 KiB`, `100 bytes`.
pub fn human_bytes(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// What the store saw when a call failed, to name the limit that stopped it.
#[derive(Debug, Clone, Copy)]
pub struct TrapFacts {
    /// The wall-clock deadline of the call.
    pub timeout: Duration,
    /// The fuel budget, if metered.
    pub fuel: Option<u64>,
    /// The memory cap, bytes, and whether it was hit.
    pub memory: (usize, bool),
    /// The engine's max wasm stack, bytes.
    pub max_stack: usize,
    /// Set when the deadline callback stopped the call.
    pub stopped: Option<StopReason>,
}

/// Turns a wasmtime error from a call into the [`ToolError`] that says what happened.
pub fn map_trap(tool: &str, err: &wasmtime::Error, facts: TrapFacts) -> ToolError {
    let trap = err.downcast_ref::<Trap>().copied();
    match facts.stopped {
        Some(StopReason::Deadline) => return ToolError::Timeout(tool.into(), facts.timeout),
        Some(StopReason::Cancelled) => return ToolError::Cancelled(tool.into()),
        None => {}
    }
    if facts.memory.1 {
        return ToolError::LimitExceeded(
            tool.into(),
            format!("memory limit {} exceeded", human_bytes(facts.memory.0)),
        );
    }
    match trap {
        Some(Trap::Interrupt) => ToolError::Timeout(tool.into(), facts.timeout),
        Some(Trap::OutOfFuel) => ToolError::LimitExceeded(
            tool.into(),
            format!("ran out of fuel (limit {})", facts.fuel.unwrap_or(0)),
        ),
        Some(Trap::StackOverflow) => ToolError::LimitExceeded(
            tool.into(),
            format!(
                "stack overflow (max wasm stack {})",
                human_bytes(facts.max_stack)
            ),
        ),
        Some(t) => ToolError::failed(tool, format!("the plugin trapped: {t}")),
        None => ToolError::failed(tool, format!("the plugin failed: {err:#}")),
    }
}
