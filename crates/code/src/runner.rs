//! [`CodeRunner`]: one run of a script = one fresh instance of the runner component in a
//! fresh store, with the inner tool calls bridged to the registry (see the crate docs).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::task::JoinSet;
use toolhost_core::tools::{ToolCall, ToolContext, ToolRegistry};
use toolhost_wasm::WasmEngine;
use toolhost_wasm::limits::MemoryLimiter;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::CodeError;
use crate::bindings::{Runner, RunnerPre};

/// The limits of one run, and how many runs may be in flight. Defaults: 30 s, 64 MiB,
/// fuel for about a second of computation, 100 inner calls, 64 KiB of returned JSON,
/// 16 KiB of console output, 8 runs at once.
#[derive(Debug, Clone)]
pub struct RunLimits {
    /// Wall-clock time of the whole run, inner calls included.
    pub timeout: Duration,
    /// The runner's memory (the engine's heap and the script's objects).
    pub memory_bytes: usize,
    /// The runner's fuel (its own computation; time spent in inner calls costs none).
    pub fuel: u64,
    /// Inner tool calls one run may start; further calls fail in the script.
    pub max_calls: u32,
    /// The most bytes of JSON the script may return.
    pub max_result_bytes: usize,
    /// The most bytes of console output kept (the rest is counted, not kept).
    pub max_console_bytes: usize,
    /// Runs in flight at once, shared fairly by the callers (each run may hold
    /// `memory_bytes`): [`crate::RunCodeTool`] takes a place in its own fair pool
    /// (`toolhost_core::tools::Slots`) before a run starts.
    pub max_runs: usize,
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            memory_bytes: 64 << 20,
            fuel: 10_000_000_000,
            max_calls: 100,
            max_result_bytes: 64 << 10,
            max_console_bytes: 16 << 10,
            max_runs: 8,
        }
    }
}

/// What a run gave back.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutput {
    /// The script's return value.
    pub value: Value,
    /// The console lines kept, in order (`warn:` and `error:` prefixed).
    pub console: Vec<String>,
    /// Console lines dropped past [`RunLimits::max_console_bytes`].
    pub console_dropped: usize,
    /// Inner calls started.
    pub calls: u32,
}

/// A run that did not give a result: why, and what its console printed before it stopped
/// (a script's own `console.log` lines are often the best clue to what went wrong).
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct RunFailure {
    /// Why.
    pub error: CodeError,
    /// The console lines kept, in order.
    pub console: Vec<String>,
    /// Console lines dropped past [`RunLimits::max_console_bytes`].
    pub console_dropped: usize,
    /// Inner calls started.
    pub calls: u32,
}

impl From<CodeError> for RunFailure {
    fn from(error: CodeError) -> Self {
        Self {
            error,
            console: Vec::new(),
            console_dropped: 0,
            calls: 0,
        }
    }
}

/// The runner compiled on an engine, ready to run scripts.
#[derive(Clone)]
pub struct CodeRunner {
    engine: WasmEngine,
    pre: RunnerPre<RunState>,
}

impl std::fmt::Debug for CodeRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeRunner").finish_non_exhaustive()
    }
}

/// The state of one run's store.
struct RunState {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: MemoryLimiter,
    bridge: Bridge,
    deadline: Instant,
    timed_out: bool,
}

impl WasiView for RunState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// The inner calls of a run: who may be called, how many, and those running.
struct Bridge {
    registry: ToolRegistry,
    ctx: ToolContext,
    tools: BTreeSet<String>,
    run_id: String,
    started: u32,
    max_calls: u32,
    running: JoinSet<(u32, Result<String, String>)>,
    console: Vec<String>,
    console_bytes: usize,
    console_dropped: usize,
    max_console_bytes: usize,
}

impl crate::bindings::toolhost::code::host::Host for RunState {
    async fn start_call(&mut self, name: String, args: String) -> Result<u32, String> {
        let b = &mut self.bridge;
        if !b.tools.contains(&name) {
            // The same answer for a tool this run may not see as for one that does not
            // exist.
            return Err(format!(
                "no tool named '{}' is available to this script",
                toolhost_core::tools::escape::escape_line(&name)
            ));
        }
        if b.started >= b.max_calls {
            return Err(format!(
                "this run has made its {} tool calls, the most one run may make; return what \
                 you have, or do the rest in another run",
                b.max_calls
            ));
        }
        let args: Value = serde_json::from_str(&args)
            .map_err(|e| format!("the arguments of '{name}' are not JSON: {e}"))?;
        b.started += 1;
        let handle = b.started;
        let id = format!("{}/{handle}", b.run_id);
        let ctx = b.ctx.child(&id);
        let registry = b.registry.clone();
        b.running.spawn(async move {
            let inv = registry
                .invoke_call(ToolCall::with_id(id, name, args), &ctx)
                .await;
            let out = match inv.output {
                Ok(out) => Ok(out.canonical.to_string()),
                Err(e) => Err(e.to_string()),
            };
            (handle, out)
        });
        Ok(handle)
    }

    async fn wait_any(&mut self) -> Option<(u32, Result<String, String>)> {
        loop {
            match self.bridge.running.join_next().await? {
                Ok(done) => return Some(done),
                // A call's task panicked: its promise is left pending; the script then
                // reports that it waits for something that never happens.
                Err(e) => tracing::warn!("a code-mode inner call failed: {e}"),
            }
        }
    }

    async fn log(&mut self, level: u8, text: String) {
        let b = &mut self.bridge;
        let line = match level {
            0 => text,
            1 => format!("warn: {text}"),
            _ => format!("error: {text}"),
        };
        if b.console_bytes + line.len() > b.max_console_bytes {
            b.console_dropped += 1;
            return;
        }
        b.console_bytes += line.len();
        b.console.push(line);
    }
}

impl CodeRunner {
    /// Compiles the embedded runner on `engine` (through its compile cache) and links it.
    pub fn new(engine: &WasmEngine) -> Result<Self, CodeError> {
        let component = engine
            .compile(crate::RUNNER_WASM, Path::new("toolhost-code-runner.wasm"))
            .map_err(|e| CodeError::Unavailable(e.to_string()))?;
        let mut linker: Linker<RunState> = Linker::new(engine.engine());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| CodeError::Unavailable(format!("wasi: {e:#}")))?;
        Runner::add_to_linker::<RunState, HasSelf<RunState>>(&mut linker, |s| s)
            .map_err(|e| CodeError::Unavailable(format!("host: {e:#}")))?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(RunnerPre::new)
            .map_err(|e| CodeError::Unavailable(format!("link: {e:#}")))?;
        Ok(Self {
            engine: engine.clone(),
            pre,
        })
    }

    /// Runs `script` with `tools` callable through `registry` on behalf of the asker of
    /// `ctx` (inner calls get children of `ctx`, ids `CALL_ID/N`).
    pub async fn run(
        &self,
        script: &str,
        tools: BTreeSet<String>,
        registry: &ToolRegistry,
        ctx: &ToolContext,
        limits: &RunLimits,
    ) -> Result<RunOutput, RunFailure> {
        let names: Vec<String> = tools.iter().cloned().collect();
        let state = RunState {
            // Nothing granted: no folders, no network, no environment; stdout and stderr
            // go nowhere (the script's output is its console and its value).
            wasi: WasiCtxBuilder::new().build(),
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(limits.memory_bytes),
            bridge: Bridge {
                registry: registry.clone(),
                ctx: ctx.clone(),
                tools,
                run_id: ctx.call_id().to_string(),
                started: 0,
                max_calls: limits.max_calls,
                running: JoinSet::new(),
                console: Vec::new(),
                console_bytes: 0,
                console_dropped: 0,
                max_console_bytes: limits.max_console_bytes,
            },
            deadline: Instant::now() + limits.timeout,
            timed_out: false,
        };
        let mut store = Store::new(self.engine.engine(), state);
        store.limiter(|s| &mut s.limiter);
        let options = self.engine.options();
        if options.fuel {
            store
                .set_fuel(limits.fuel)
                .map_err(|e| CodeError::Unavailable(format!("fuel: {e:#}")))?;
        }
        if options.epoch {
            store.set_epoch_deadline(1);
            store.epoch_deadline_callback(|mut cx| {
                if Instant::now() >= cx.data().deadline {
                    cx.data_mut().timed_out = true;
                    Ok(UpdateDeadline::Interrupt)
                } else {
                    Ok(UpdateDeadline::Yield(1))
                }
            });
        }
        let secs = limits.timeout.as_secs();
        let work = async {
            let runner = self.pre.instantiate_async(&mut store).await?;
            runner.call_run(&mut store, script, &names).await
        };
        // The wall-clock bound covers the time spent waiting on inner calls too (the
        // epoch only ticks while the script itself runs).
        let outcome = tokio::select! {
            r = tokio::time::timeout(limits.timeout, work) => Some(r),
            _ = ctx.cancellation_token().cancelled() => None,
        };
        let state = store.data();
        let b = &state.bridge;
        let fail = |error| RunFailure {
            error,
            console: b.console.clone(),
            console_dropped: b.console_dropped,
            calls: b.started,
        };
        let result = match outcome {
            None => return Err(fail(CodeError::Cancelled)),
            Some(Err(_)) => return Err(fail(CodeError::Timeout(secs))),
            Some(Ok(Err(trap))) => {
                return Err(fail(if state.timed_out {
                    CodeError::Timeout(secs)
                } else if state.limiter.exceeded {
                    CodeError::OutOfMemory(limits.memory_bytes >> 20)
                } else if matches!(
                    trap.downcast_ref::<wasmtime::Trap>(),
                    Some(wasmtime::Trap::OutOfFuel)
                ) {
                    CodeError::OutOfFuel
                } else if matches!(
                    trap.downcast_ref::<wasmtime::Trap>(),
                    Some(wasmtime::Trap::StackOverflow)
                ) {
                    CodeError::Trap("the stack was exhausted (recursion too deep)".into())
                } else {
                    CodeError::Trap(format!("{trap:#}"))
                }));
            }
            Some(Ok(Ok(Err(script_error)))) => return Err(fail(CodeError::Script(script_error))),
            Some(Ok(Ok(Ok(json)))) => json,
        };
        if result.len() > limits.max_result_bytes {
            return Err(fail(CodeError::ResultTooLarge {
                bytes: result.len(),
                max: limits.max_result_bytes,
            }));
        }
        let value = serde_json::from_str(&result).unwrap_or(Value::String(result));
        Ok(RunOutput {
            value,
            console: b.console.clone(),
            console_dropped: b.console_dropped,
            calls: b.started,
        })
    }
}
