//! Compile tiers: a component missing from the cache starts on baseline (Winch) code and
//! is swapped to optimized (Cranelift) code compiled in the background; every limit holds
//! on baseline code as it does on optimized code; a later start loads the optimized build
//! from the cache.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_core::tools::{ToolError, ToolRegistry};
use toolhost_wasm::{CodeTier, Compiler, EngineOptions, Plugin, WasmEngine, folder};

use crate::support::{call, err_text, install, still_works};

/// An engine with its own compile cache in `cache`.
fn engine_with(cache: &Path, options: EngineOptions) -> WasmEngine {
    WasmEngine::with_options(EngineOptions {
        cache_dir: Some(cache.to_path_buf()),
        ..options
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Loads the plugins of `dir` into a fresh registry on `engine`.
async fn load(engine: &WasmEngine, dir: &Path) -> (ToolRegistry, Vec<Plugin>) {
    let registry = ToolRegistry::new();
    let (plugins, errors) = folder::load_into(engine, &registry, dir).await;
    assert!(errors.is_empty(), "load errors: {errors:?}");
    (registry, plugins)
}

/// The number `add` answered.
fn sum(inv: toolhost_core::tools::ToolInvocation) -> Option<f64> {
    inv.output.ok().and_then(|o| o.canonical.as_f64())
}

fn artifacts(cache: &Path) -> usize {
    toolhost_testkit::compiled_artifacts(cache)
}

#[tokio::test]
async fn a_cold_component_runs_on_baseline_code_then_on_the_optimized_build_swapped_in() {
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    install(dir.path(), "calc", None);
    let engine = engine_with(
        cache.path(),
        EngineOptions {
            baseline_first: true,
            ..EngineOptions::default()
        },
    );
    let (reg, plugins) = load(&engine, dir.path()).await;
    assert_eq!(plugins.len(), 1);
    let plugin = &plugins[0];
    assert_eq!(plugin.loaded_tier(), CodeTier::Baseline);
    // Callable at once, on whichever code is current.
    let inv = call(&reg, "add", json!({"x": 2, "y": 3})).await;
    assert_eq!(sum(inv), Some(5.0));

    // The optimized build arrives in the background. The bound only keeps a broken swap
    // from hanging the test; it is no claim about speed.
    let start = Instant::now();
    while plugin.code_tier() != CodeTier::Optimized {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "the optimized build never arrived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(plugin.loaded_tier(), CodeTier::Baseline);
    let inv = call(&reg, "add", json!({"x": 40, "y": 2})).await;
    assert_eq!(sum(inv), Some(42.0));
    // Its artifact is in the cache, the baseline build's is not.
    assert_eq!(artifacts(cache.path()), 1);

    // The next start (a new engine on the same cache) loads the optimized build.
    let again = engine_with(
        cache.path(),
        EngineOptions {
            baseline_first: true,
            ..EngineOptions::default()
        },
    );
    let (reg2, plugins2) = load(&again, dir.path()).await;
    assert_eq!(plugins2[0].loaded_tier(), CodeTier::Optimized);
    assert_eq!(plugins2[0].code_tier(), CodeTier::Optimized);
    let inv = call(&reg2, "add", json!({"x": 1, "y": 1})).await;
    assert_eq!(sum(inv), Some(2.0));
    assert_eq!(artifacts(cache.path()), 1);
}

#[tokio::test]
async fn without_baseline_first_a_cold_component_is_compiled_by_cranelift() {
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    install(dir.path(), "calc", None);
    let engine = engine_with(cache.path(), EngineOptions::default());
    let (reg, plugins) = load(&engine, dir.path()).await;
    assert_eq!(plugins[0].loaded_tier(), CodeTier::Optimized);
    assert_eq!(artifacts(cache.path()), 1);
    still_works(&reg).await;
}

/// A registry of the hostile fixture with `policy` on a Winch engine (every call runs
/// baseline code, with no swap).
async fn hostile_on_winch(policy: &str) -> (ToolRegistry, tempfile::TempDir, tempfile::TempDir) {
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    install(dir.path(), "hostile", Some(policy));
    let engine = engine_with(
        cache.path(),
        EngineOptions {
            compiler: Compiler::Winch,
            // As the baseline sibling of a tier-up engine.
            pooling: false,
            ..EngineOptions::default()
        },
    );
    let (reg, plugins) = load(&engine, dir.path()).await;
    assert_eq!(plugins[0].code_tier(), CodeTier::Baseline);
    (reg, dir, cache)
}

#[tokio::test]
async fn baseline_code_is_stopped_by_fuel_the_deadline_the_memory_limit_and_the_stack_limit() {
    // Fuel.
    let (reg, _d, _c) = hostile_on_winch("timeout_ms = 60000\nfuel = 50000000\n").await;
    let inv = call(&reg, "spin", json!({})).await;
    assert!(
        matches!(&inv.output, Err(ToolError::LimitExceeded(..))),
        "{}",
        inv.model_text()
    );
    assert!(err_text(&inv).contains("ran out of fuel (limit 50000000)"));
    still_works(&reg).await;

    // The epoch deadline (fuel out of the way).
    let (reg, _d, _c) = hostile_on_winch("timeout_ms = 200\nfuel = 10000000000000\n").await;
    let inv = call(&reg, "spin", json!({})).await;
    assert!(
        matches!(&inv.output, Err(ToolError::Timeout(_, d)) if *d == Duration::from_millis(200)),
        "{}",
        inv.model_text()
    );
    still_works(&reg).await;

    // Memory.
    let (reg, _d, _c) = hostile_on_winch("memory_mb = 32\n").await;
    let inv = call(&reg, "membomb", json!({})).await;
    assert!(
        err_text(&inv).contains("memory limit 32 MiB exceeded"),
        "{}",
        inv.model_text()
    );
    still_works(&reg).await;

    // Stack: a trap, not an abort of the host.
    let (reg, _d, _c) = hostile_on_winch("").await;
    let inv = call(&reg, "recurse", json!({"depth": 100_000_000u64})).await;
    assert!(
        matches!(&inv.output, Err(ToolError::LimitExceeded(..))),
        "{}",
        inv.model_text()
    );
    assert!(
        err_text(&inv).contains("stack overflow"),
        "{}",
        inv.model_text()
    );
    let ok = call(&reg, "recurse", json!({"depth": 1000})).await;
    assert_eq!(ok.output.map(|o| o.canonical).ok(), Some(json!(1000)));
    still_works(&reg).await;
}
