//! [`EngineOptions`]: the settings of a [`crate::WasmEngine`] (allocator, limits' machinery,
//! compile tiers, spare sandboxes) and [`Compiler`], which code generator it uses. Apart
//! from the engine itself so each stays readable.

use std::path::PathBuf;
use std::time::Duration;

/// Engine settings. The defaults suit the CLI; benchmarks switch fuel/epoch off to
/// measure their cost.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Use the pooling instance allocator (fast instantiation). Default: on.
    pub pooling: bool,
    /// Compile fuel metering in, so policies may set `fuel`. Default: on.
    pub fuel: bool,
    /// Compile epoch checks in, so the wall-clock deadline works. Default: on.
    pub epoch: bool,
    /// wasmtime's component-model concurrency support (the component-model `async`
    /// features). It costs about 10 µs on every call (the store's task machinery is set
    /// up and torn down), and none of our guest toolchains (Rust, componentize-js,
    /// componentize-py, C) emit those features, so it is off by default. A component
    /// that does use them fails to compile without it; the loader then compiles it on a
    /// second engine that has it on (created on first need), so such plugins still load.
    /// Default: off.
    pub concurrency_support: bool,
    /// Epoch tick period (deadline resolution). Default: 10 ms.
    pub epoch_tick: Duration,
    /// Max native wasm stack per call, bytes. Default: 1 MiB.
    pub max_wasm_stack: usize,
    /// Max concurrent instances (pooling slots). Default: 64.
    pub max_instances: u32,
    /// Bytes of each linear memory (and table) the pooling allocator keeps mapped between
    /// calls. After a call, the pages the guest wrote (found with Linux's `PAGEMAP_SCAN`,
    /// kernel 6.7+) are reset by copying the original contents back, up to this many
    /// bytes; only memory beyond it is given back with `madvise`. A small tool thus
    /// costs no page faults and no TLB shootdowns per call, and every call still starts
    /// from the pristine initial memory. 0 turns this off. Default: 2 MiB.
    pub keep_resident: usize,
    /// Bytes of each table the pooling allocator keeps mapped between calls (reset by
    /// `memset`, the rest given back with `madvise`). Default: 1 MiB.
    pub table_keep_resident: usize,
    /// Initialize funcref tables lazily (wasmtime's `table_lazy_init`): an element is
    /// filled in on its first use, at the cost of a check on every indirect call and a
    /// host call per element used; off fills every element at instantiation. Default: on.
    pub table_lazy_init: bool,
    /// The compile cache folder; `None` disables the cache. Default: the platform cache
    /// dir + `toolhost/wasm`.
    pub cache_dir: Option<PathBuf>,
    /// Largest `.wasm` file the loader accepts, bytes. Default: 64 MiB.
    pub max_plugin_bytes: u64,
    /// The code generator of this engine. Default: [`Compiler::Cranelift`].
    pub compiler: Compiler,
    /// Tier up: a component missing from the compile cache is first compiled with Winch
    /// (wasmtime's baseline compiler, 4-8x quicker to compile, slower code) on a sibling
    /// engine, so its tools are described and callable within about a second of work;
    /// the Cranelift build is then compiled on a background thread, written to the
    /// cache and swapped in: calls started after the swap run the optimized code, calls
    /// in flight finish on the baseline code they started with. Every limit (fuel,
    /// epoch deadline, memory, stack) holds on both tiers. Suits a long-lived host
    /// (`serve`); a one-shot command would exit before the Cranelift build is cached and
    /// pay the baseline compile again next time, so it is off by default. A component
    /// Winch cannot compile (e.g. one using tail calls or GC) takes the Cranelift path
    /// directly. See docs/design.md, "Compile tiers". Default: off.
    pub baseline_first: bool,
    /// Spare sandboxes: after a call, the next single-use sandbox of that tool (a store
    /// and an instance, built with the tool's grant) is prepared in the background, so
    /// the next call does not wait for the instantiation; the call's context, deadline
    /// and fuel are put in when it takes the spare. At most one spare per tool, and at
    /// most this many in the whole engine (each holds a pooling slot and its memory); 0
    /// turns spares off. Every call still runs in an instance nobody ran before. See
    /// docs/design.md, "Spare sandboxes". Default: 0 (off).
    pub spare_sandboxes: usize,
    /// A tool whose sandbox takes less than this to build gets no spare (building it on
    /// another thread costs the call more than it saves; measured in
    /// docs/benchmarks.md, "Spare sandboxes"). Default: 200 µs, which a Python component
    /// takes (about 0.8 ms) and Rust, C and JS components do not (50-65 µs).
    pub spare_min_build: Duration,
}

/// Which of wasmtime's code generators an engine uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compiler {
    /// The optimizing compiler: slow to compile, fast code. Its artifacts are cached.
    #[default]
    Cranelift,
    /// The baseline compiler: one pass, fast to compile, slower code.
    Winch,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            pooling: true,
            fuel: true,
            epoch: true,
            concurrency_support: false,
            epoch_tick: Duration::from_millis(10),
            max_wasm_stack: 1 << 20,
            max_instances: 64,
            keep_resident: 2 << 20,
            table_keep_resident: 1 << 20,
            table_lazy_init: true,
            cache_dir: dirs::cache_dir().map(|d| d.join("toolhost").join("wasm")),
            max_plugin_bytes: 64 << 20,
            compiler: Compiler::Cranelift,
            baseline_first: false,
            spare_sandboxes: 0,
            spare_min_build: Duration::from_micros(200),
        }
    }
}
