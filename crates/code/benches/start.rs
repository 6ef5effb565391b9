//! `run_code` start to first instruction: a fresh sandbox (store, instance, Boa context,
//! `tools` object) per run, timed over 300 runs after 20 warm-up runs, p50 and p99, for
//! `return 1` (start and finish of the engine alone) and for a script making one inner
//! call. The baseline, same run: the same native tool called directly through the
//! registry. Figures in docs/benchmarks.md, "Tool search and progressive discovery".
//!
//! Run: `cargo bench -p toolhost-code --bench start`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_code::{CodeRunner, RunLimits};
use toolhost_core::tools::{DynamicTool, ToolContext, ToolOutput, ToolRegistry};
use toolhost_wasm::{EngineOptions, WasmEngine};

fn percentiles(mut t: Vec<Duration>) -> (Duration, Duration) {
    t.sort();
    let at = |p: f64| t[((t.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.99))
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let engine = WasmEngine::with_options(EngineOptions {
        cache_dir: Some(std::env::temp_dir().join("toolhost-code-bench-cache")),
        ..EngineOptions::default()
    })
    .unwrap();
    let t0 = Instant::now();
    let runner = CodeRunner::new(&engine).unwrap();
    println!(
        "runner compiled or loaded from the cache in {:.1?}",
        t0.elapsed()
    );
    let registry = ToolRegistry::new();
    registry
        .register(
            DynamicTool::builder("mul")
                .description("Multiply two integers x and y")
                .parameters(json!({"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}}}))
                .handler(|a, _| async move {
                    Ok(ToolOutput::json(json!(a["x"].as_i64().unwrap_or(0) * a["y"].as_i64().unwrap_or(0))))
                })
                .build_dyn(),
        )
        .unwrap();
    let tools: BTreeSet<String> = ["mul".to_string()].into();
    let limits = RunLimits::default();
    let ctx = ToolContext::new("bench", "bench").child("run");
    let time = |code: &str| {
        let mut times = Vec::new();
        for i in 0..320 {
            let t = Instant::now();
            rt.block_on(runner.run(code, tools.clone(), &registry, &ctx, &limits))
                .unwrap();
            if i >= 20 {
                times.push(t.elapsed());
            }
        }
        percentiles(times)
    };
    let (e50, e99) = time("return 1;");
    let (c50, c99) = time("return await tools.mul({x: 6, y: 7});");
    let mut direct = Vec::new();
    for i in 0..320 {
        let t = Instant::now();
        rt.block_on(registry.invoke_recorded("mul", json!({"x": 6, "y": 7})));
        if i >= 20 {
            direct.push(t.elapsed());
        }
    }
    let (d50, d99) = percentiles(direct);
    println!("run_code `return 1;`           p50 {e50:>9.1?}  p99 {e99:>9.1?}");
    println!("run_code, one inner call        p50 {c50:>9.1?}  p99 {c99:>9.1?}");
    println!("direct registry call (baseline) p50 {d50:>9.1?}  p99 {d99:>9.1?}");
    println!(
        "ratio run_code with one call / direct call (p50): {:.0}",
        c50.as_secs_f64() / d50.as_secs_f64()
    );
}
