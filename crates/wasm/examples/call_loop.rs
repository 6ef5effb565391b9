//! Profiling helper: calls one tool of one component N times in a loop, fresh sandbox per
//! call, and prints the mean and median. Run it under `perf record` to see where a call's
//! time goes, without the compile work of the criterion benches in the profile.
//!
//! `cargo run --release -p toolhost-wasm --example call_loop -- PLUGIN.wasm TOOL 'JSON' [N]`
//! (`native` for PLUGIN.wasm: a native `add` tool, the baseline)
//!
//! Env: `CONCURRENCY=1` turns component-model concurrency support on, `NO_FUEL=1`,
//! `NO_EPOCH=1`, `NO_POOLING=1` switch those off; `KEEP_RESIDENT=BYTES` and
//! `TABLE_KEEP_RESIDENT=BYTES` set `EngineOptions::keep_resident` and
//! `table_keep_resident`; `TABLE_EAGER=1` turns `table_lazy_init` off; `SPARES=N` sets
//! `spare_sandboxes` (`SPARE_MIN_BUILD_US=N` its `spare_min_build`); `PACE_US=N` waits N µs between calls (outside the timed part),
//! as a caller that is not saturating the tool would; `MULTI=1` runs on a two-worker
//! runtime (as `serve` does) instead of the current thread, so a spare is built while
//! the loop waits (use it for both sides of a spares comparison).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use toolhost_core::tools::{BaseTool, DynamicTool, ToolContext, ToolOutput};
use toolhost_wasm::{EngineOptions, Plugin, WasmEngine};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let path = std::path::PathBuf::from(&a[1]);
    let tool = &a[2];
    let args: serde_json::Value = serde_json::from_str(&a[3]).expect("args JSON");
    let n: usize = a.get(4).map(|s| s.parse().expect("N")).unwrap_or(20_000);
    let on = |k: &str| std::env::var_os(k).is_none();
    let bytes = |k: &str, default: usize| {
        std::env::var(k)
            .map(|v| v.parse().expect("a number of bytes"))
            .unwrap_or(default)
    };
    let d = EngineOptions::default();
    let opts = EngineOptions {
        concurrency_support: !on("CONCURRENCY"),
        fuel: on("NO_FUEL"),
        epoch: on("NO_EPOCH"),
        pooling: on("NO_POOLING"),
        keep_resident: bytes("KEEP_RESIDENT", d.keep_resident),
        table_keep_resident: bytes("TABLE_KEEP_RESIDENT", d.table_keep_resident),
        table_lazy_init: on("TABLE_EAGER"),
        spare_sandboxes: bytes("SPARES", 0),
        spare_min_build: std::time::Duration::from_micros(bytes(
            "SPARE_MIN_BUILD_US",
            d.spare_min_build.as_micros() as usize,
        ) as u64),
        ..d
    };
    let pace = std::time::Duration::from_micros(bytes("PACE_US", 0) as u64);
    let rt = if on("MULTI") {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    };
    let engine = WasmEngine::with_options(opts).unwrap();
    let t: std::sync::Arc<dyn BaseTool> = if path.as_os_str() == "native" {
        // The baseline: a native `add` (no sandbox), called the same way.
        DynamicTool::builder("add")
            .description("Adds x and y")
            .parameters(serde_json::json!({"type": "object"}))
            .handler(|a, _| async move {
                let s = a["x"].as_f64().unwrap_or(0.0) + a["y"].as_f64().unwrap_or(0.0);
                Ok(ToolOutput::json(serde_json::json!(s)))
            })
            .build_dyn()
    } else {
        let plugin = rt.block_on(Plugin::load(&engine, &path)).unwrap();
        plugin
            .tools()
            .iter()
            .find(|t| t.spec().name == *tool)
            .expect("no such tool")
            .clone()
    };
    let ctx = ToolContext::default();
    for _ in 0..200 {
        rt.block_on(t.execute(args.clone(), &ctx)).unwrap();
    }
    let mut times = Vec::with_capacity(n);
    let start = Instant::now();
    for _ in 0..n {
        if !pace.is_zero() {
            std::thread::sleep(pace);
        }
        let s = Instant::now();
        rt.block_on(t.execute(args.clone(), &ctx)).unwrap();
        times.push(s.elapsed());
    }
    let total = start.elapsed();
    times.sort();
    println!(
        "{n} calls: mean {:?} (wall, pauses included), median {:?}, p99 {:?}, {} in a spare",
        total / n as u32,
        times[n / 2],
        times[n * 99 / 100],
        engine.spare_sandboxes_used()
    );
}
