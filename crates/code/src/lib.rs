//! Code mode: the model writes a short JavaScript program that calls tools, instead of
//! one model turn per call, and toolhost runs it in a fresh WebAssembly sandbox
//! (docs/code-mode.md).
//!
//! - [`CodeRunner`] holds the runner component (Boa, a JavaScript engine in Rust, built
//!   for wasm32-wasip2 by `build.rs` and embedded here) compiled on the host's
//!   [`WasmEngine`](toolhost_wasm::WasmEngine). Each run is a new instance in a new store:
//!   its own fuel, wall-clock deadline, memory cap, no files, no network, no environment.
//! - Inside, `tools.NAME(args)` leaves the sandbox through the runner's host interface
//!   (`wit/runner.wit`) and becomes a registry call like any other: validation, the
//!   permission gate and approvals (put to whoever asked for the run), the caller's share
//!   of the execution slots, the audit trail (each inner call's id is the run's id, `/`,
//!   and its number: `mcp-7/3`), its timeout. Calls run in parallel when the script
//!   starts several before awaiting (`Promise.all`).
//! - The run sees only the tools its asker may see (a [`Visible`] in the context, which
//!   `serve` sets per client), never `run_code` itself or the discovery tools.
//! - Bounded: [`RunLimits`] caps the inner calls, the returned JSON, the console output
//!   kept, and the run's fuel, time and memory. Each limit reached is a clear error.
//! - [`RunCodeTool`] is the `run_code` tool that puts a runner in a registry.
//!
//! [`Visible`]: toolhost_core::tools::Visible

mod runner;
mod tool;

pub use runner::{CodeRunner, RunFailure, RunLimits, RunOutput};
pub use tool::{RUN_CODE, RunCodeTool};

/// The runner component (built from `runner/` by `build.rs`).
pub const RUNNER_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/runner.wasm"));

/// Host-side bindings of the runner world (`wit/runner.wit`).
#[allow(missing_docs)]
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "runner",
        imports: { default: async },
        exports: { default: async },
    });
}

/// Why a run did not give a result. Every variant's text is what the model is shown.
#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    /// The runner component could not be compiled or linked (a host problem).
    #[error("code mode is unavailable: {0}")]
    Unavailable(String),
    /// The script did not parse, threw, or awaited something that never came.
    #[error("the script failed: {0}")]
    Script(String),
    /// The script ran past its time.
    #[error("the script ran longer than its {0} s limit and was stopped")]
    Timeout(u64),
    /// The script used all its fuel (a loop that does not end, or too much work).
    #[error(
        "the script used up its compute budget (fuel) and was stopped: a loop that does not end, or too much work for one run"
    )]
    OutOfFuel,
    /// The script's memory grew past the cap.
    #[error("the script used more than its {0} MiB of memory and was stopped")]
    OutOfMemory(usize),
    /// The script's engine stopped in a way the others do not cover (stack exhausted by
    /// deep recursion, a trap).
    #[error("the script's engine stopped: {0}")]
    Trap(String),
    /// The returned JSON is larger than the cap.
    #[error(
        "the script returned {bytes} bytes of JSON, more than the {max} a run may return: return less (a summary, the fields you need)"
    )]
    ResultTooLarge {
        /// Its size.
        bytes: usize,
        /// [`RunLimits::max_result_bytes`].
        max: usize,
    },
    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
}
