//! Per-call limits: the epoch deadline (wall clock), fuel (optional, deterministic), the
//! linear-memory cap (a [`ResourceLimiter`]) and the max wasm stack (engine-wide, see
//! [`EngineOptions`](crate::EngineOptions)). A trap caused by a limit becomes a
//! [`ToolError`] that says which limit and its value.
//!
//! | limit | default | set by |
//! |---|---|---|
//! | wall-clock deadline | 10 s | policy `timeout_ms` |
//! | fuel | off | policy `fuel` (engine option `fuel`, on by default) |
//! | memory (sum of all memories and tables of the call) | 64 MiB | policy `memory_mb` (max 1024) |
//! | wasm stack | 1 MiB | engine option `max_wasm_stack` |
//! | stdout / stderr kept | 64 KiB each | policy `output_kb` |

use std::time::Duration;

use toolhost_core::tools::ToolError;
use wasmtime::{ResourceLimiter, Trap};

/// Table elements one store may hold, summed over all its tables.
pub const MAX_TABLE_ELEMENTS: usize = 1 << 20;

/// Bytes one table element is counted as against the memory cap (a pointer-sized
/// function reference; wasmtime's real cost per element is about this).
pub const TABLE_ELEMENT_BYTES: usize = 8;

/// Linear memories one store may create (a component may have several: multi-memory,
/// or several core instances each with its own).
pub const MAX_MEMORIES: usize = 16;

/// Tables one store may create.
pub const MAX_TABLES: usize = 64;

/// Core and component instances one store may create.
pub const MAX_INSTANCES: usize = 256;

/// Why the host stopped a call (recorded in the store, read after the trap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The wall-clock deadline passed.
    Deadline,
    /// The caller cancelled the call.
    Cancelled,
}

/// The memory limiter of one store (one call). The cap holds for the **sum** of every
/// linear memory and table the call's instances create or grow, not per memory: a
/// component with several memories (multi-memory, or several core instances) shares one
/// budget. wasmtime asks the limiter before it creates a memory (from 0 to its initial
/// size) and before every grow, so the running total is exact for memories that only
/// grow; when a grow the limiter allowed fails later, the total stays counted
/// (conservative). Records that the cap was hit, so the trap can be reported as
/// "memory limit N MiB exceeded" rather than a bare `unreachable`.
#[derive(Debug)]
pub struct MemoryLimiter {
    /// The cap, bytes (memories plus table elements at [`TABLE_ELEMENT_BYTES`] each).
    pub max_bytes: usize,
    /// Bytes in use: all memories plus all table elements, as allowed so far.
    pub used_bytes: usize,
    /// Table elements in use, summed over all tables.
    pub table_elements: usize,
    /// Set when a grow past the cap was refused.
    pub exceeded: bool,
}

impl MemoryLimiter {
    /// A limiter with this cap.
    pub fn new(max_bytes: usize) -> Self {
        MemoryLimiter {
            max_bytes,
            used_bytes: 0,
            table_elements: 0,
            exceeded: false,
        }
    }

    fn exceeded_error(&mut self) -> wasmtime::Error {
        self.exceeded = true;
        wasmtime::format_err!("memory limit {} exceeded", human_bytes(self.max_bytes))
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let more = desired.saturating_sub(current);
        let total = self.used_bytes.saturating_add(more);
        if total > self.max_bytes {
            // Trap at once: a guest that cannot allocate would only abort anyway.
            return Err(self.exceeded_error());
        }
        self.used_bytes = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let more = desired.saturating_sub(current);
        let elements = self.table_elements.saturating_add(more);
        if elements > MAX_TABLE_ELEMENTS {
            return Ok(false);
        }
        let total = self
            .used_bytes
            .saturating_add(more.saturating_mul(TABLE_ELEMENT_BYTES));
        if total > self.max_bytes {
            return Err(self.exceeded_error());
        }
        self.table_elements = elements;
        self.used_bytes = total;
        Ok(true)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
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
