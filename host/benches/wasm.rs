//! Criterion benchmark `wasm`.
//!
//! - `add/*`: `calc.add` through the registry with a fresh sandbox per call (default
//!   engine; with concurrency support on; with `keep_resident = 0`, i.e. wasmtime's
//!   default madvise reset), the direct `WasmTool::run` without the registry, and the
//!   same add as a native tool through the same registry pipeline.
//! - `cpu/*`: CPU-heavy guests (`burn`: 1e6 rounds of a multiply chain; `sieve`: primes
//!   below 2e6, branchy and memory-bound) on engines with no interruption, epoch only, fuel
//!   only, and both.
//! - `load/*`: loading the example plugins folder (calc, files, fetch) cold (compiling),
//!   from the compile cache (listed from the cached `describe()`, linked on first use),
//!   and from the cache including linking every plugin.
//!
//! Run: `cargo bench -p toolhost --bench wasm` (the guests are built first by cargo).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolhost::tools::{BaseTool, DynamicTool, ToolContext, ToolOutput, ToolRegistry};
use toolhost::wasm::{EngineOptions, Plugin, WasmEngine, folder};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Builds the guests (a no-op when up to date); returns the folder of the `.wasm` files.
fn guests() -> PathBuf {
    let target = root().join("target").join("guest");
    for ws in ["plugins", "tests/fixtures"] {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(root().join(ws))
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-wasip2",
                "--target-dir",
            ])
            .arg(&target)
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "guest build of {ws} failed"
        );
    }
    target.join("wasm32-wasip2").join("release")
}

fn engine(opts: EngineOptions) -> WasmEngine {
    WasmEngine::with_options(opts).unwrap_or_else(|e| panic!("{e}"))
}

fn folder(built: &Path, names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    for n in names {
        std::fs::copy(
            built.join(format!("{n}.wasm")),
            dir.path().join(format!("{n}.wasm")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
    dir
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let built = guests();
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let opts = |f: &dyn Fn(&mut EngineOptions)| {
        let mut o = EngineOptions {
            cache_dir: Some(cache.path().join("c")),
            ..EngineOptions::default()
        };
        f(&mut o);
        o
    };

    // --- add: wasm vs native, through the registry ---
    let calc = folder(&built, &["calc"]);
    let mut g = c.benchmark_group("add");
    for (label, o) in [
        ("wasm_registry", opts(&|_| {})),
        (
            "wasm_registry_concurrency",
            opts(&|o| o.concurrency_support = true),
        ),
        (
            "wasm_registry_no_keep_resident",
            opts(&|o| o.keep_resident = 0),
        ),
    ] {
        let eng = engine(o);
        let reg = ToolRegistry::new();
        let (_p, errs) = rt.block_on(folder::load_into(&eng, &reg, calc.path()));
        assert!(errs.is_empty(), "{errs:?}");
        g.bench_function(label, |b| {
            b.iter(|| {
                let inv = rt.block_on(reg.invoke_recorded("add", json!({"x": 1, "y": 2})));
                assert!(inv.is_ok());
            })
        });
    }
    {
        let eng = engine(opts(&|_| {}));
        let p = rt
            .block_on(Plugin::load(&eng, &calc.path().join("calc.wasm")))
            .unwrap_or_else(|e| panic!("{e}"));
        let tool = p.tools().iter().find(|t| t.name() == "add").cloned();
        let tool = tool.unwrap_or_else(|| panic!("no add"));
        let ctx = ToolContext::default();
        let args = json!({"x": 1, "y": 2});
        g.bench_function("wasm_direct", |b| {
            b.iter(|| rt.block_on(tool.run(&args, &ctx)).is_ok())
        });
    }
    {
        let reg = ToolRegistry::new();
        let native: Arc<dyn BaseTool> = DynamicTool::builder("add")
            .description("Adds two numbers x and y")
            .parameters(json!({"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}))
            .handler(|a, _| async move {
                let s = a["x"].as_f64().unwrap_or(0.0) + a["y"].as_f64().unwrap_or(0.0);
                Ok(ToolOutput::json(json!(s)))
            })
            .build_dyn();
        reg.register(native).unwrap_or_else(|e| panic!("{e}"));
        g.bench_function("native_registry", |b| {
            b.iter(|| {
                rt.block_on(reg.invoke_recorded("add", json!({"x": 1, "y": 2})))
                    .is_ok()
            })
        });
    }
    g.finish();

    // --- cpu: interruption overhead on a CPU-heavy guest ---
    let hostile = folder(&built, &["hostile"]);
    let mut g = c.benchmark_group("cpu");
    g.sample_size(20);
    for (label, fuel, epoch) in [
        ("none", false, false),
        ("epoch", false, true),
        ("fuel", true, false),
        ("epoch_fuel", true, true),
    ] {
        let eng = engine(opts(&|o| {
            o.fuel = fuel;
            o.epoch = epoch;
        }));
        let p = rt
            .block_on(Plugin::load(&eng, &hostile.path().join("hostile.wasm")))
            .unwrap_or_else(|e| panic!("{e}"));
        // `burn`: a multiply chain (latency-bound); `sieve`: branchy, memory-bound loops.
        for (tool, depth) in [("burn", 1_000_000), ("sieve", 2_000_000)] {
            let t = p.tools().iter().find(|t| t.name() == tool).cloned();
            let t = t.unwrap_or_else(|| panic!("no {tool}"));
            let ctx = ToolContext::default();
            let args = json!({"depth": depth});
            g.bench_function(format!("{tool}_{label}"), |b| {
                b.iter(|| assert!(rt.block_on(t.run(&args, &ctx)).is_ok()))
            });
        }
    }
    g.finish();

    // --- load: the example plugins folder, cold vs cached ---
    let examples = folder(&built, &["calc", "files", "fetch"]);
    let mut g = c.benchmark_group("load");
    g.sample_size(10);
    let cold = engine(opts(&|o| o.cache_dir = None));
    g.bench_function("cold", |b| {
        b.iter(|| {
            let reg = ToolRegistry::new();
            let (p, e) = rt.block_on(folder::load_into(&cold, &reg, examples.path()));
            assert!(e.is_empty() && p.len() == 3);
        })
    });
    let warm = engine(opts(&|_| {}));
    let _ = rt.block_on(folder::load_dir(&warm, examples.path()));
    g.bench_function("cached", |b| {
        b.iter(|| {
            let reg = ToolRegistry::new();
            let (p, e) = rt.block_on(folder::load_into(&warm, &reg, examples.path()));
            assert!(e.is_empty() && p.len() == 3);
        })
    });
    // From the cache and linked, as after the host's background warm-up: what a first
    // call of every plugin needs.
    g.bench_function("cached_linked", |b| {
        b.iter(|| {
            let reg = ToolRegistry::new();
            let (p, e) = rt.block_on(folder::load_into(&warm, &reg, examples.path()));
            assert!(e.is_empty() && p.len() == 3);
            for plugin in &p {
                assert!(plugin.warm().is_ok());
            }
        })
    });
    g.finish();
}

criterion_group!(wasm, benches);
criterion_main!(wasm);
