//! Criterion benchmark `langs`: the same `add` tool written in Rust, C,
//! JavaScript and Python.
//!
//! - `langs_call/<lang>`: one call of `add` (`x + y`) through `WasmTool::run` with a fresh
//!   sandbox (Store + instance) per call, default engine (pooling with resident pages,
//!   fuel and epoch on, concurrency support off). The baseline is Rust's `calc.add`,
//!   measured in the same run.
//! - `langs_load_cached/<lang>`: `Plugin::load` of the component from a warm compile cache
//!   (file-identity index, cached `describe()`; linking deferred to first use) followed by
//!   `Plugin::warm` (deserialize the artifact and link), i.e. ready for a first call.
//! - `langs_call_baseline/<lang>`: the same call on baseline (Winch) code, the engine
//!   `serve` runs a component on while its Cranelift build compiles in the background
//!   (no pooling, as that sibling engine; docs/design.md, "Compile tiers").
//! - cold compile (no cache) is timed once per language outside criterion (a Python
//!   component takes seconds, and criterion wants ten samples); printed as
//!   `langs_compile_cold/<lang>: ...` (Cranelift) and `langs_compile_cold_winch/<lang>`.
//!
//! Needs the guests of `cargo xtask plugins` (built here when missing).
//! Run: `cargo bench -p toolhost --bench langs`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolhost::tools::ToolContext;
use toolhost::wasm::{Compiler, EngineOptions, Plugin, WasmEngine};

/// (language, component file, tool).
const GUESTS: [(&str, &str, &str); 4] = [
    ("rust", "calc.wasm", "add"),
    ("c", "c_checksum.wasm", "c_add"),
    ("js", "js_http.wasm", "js_add"),
    ("python", "py_files.wasm", "py_add"),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn plugins() -> PathBuf {
    let dir = std::env::var_os("TOOLHOST_TEST_PLUGINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/plugins"));
    if !GUESTS.iter().all(|(_, f, _)| dir.join(f).is_file()) {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(root())
            .args(["run", "--quiet", "-p", "xtask", "--", "plugins"])
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "cargo xtask plugins failed"
        );
    }
    dir
}

/// A folder with just `file` (no policy: defaults), so loading does not need data folders.
fn alone(plugins: &Path, file: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::copy(plugins.join(file), dir.path().join(file)).unwrap_or_else(|e| panic!("{e}"));
    dir
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let built = plugins();
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cached_engine = WasmEngine::with_options(EngineOptions {
        cache_dir: Some(cache.path().join("c")),
        ..EngineOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let cold_engine = WasmEngine::with_options(EngineOptions {
        cache_dir: None,
        ..EngineOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));

    let winch_engine = WasmEngine::with_options(EngineOptions {
        cache_dir: None,
        compiler: Compiler::Winch,
        pooling: false,
        ..EngineOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));

    let dirs: Vec<_> = GUESTS.iter().map(|(_, f, _)| alone(&built, f)).collect();

    // Cold compile, once each (this also fills the cache of `cached_engine`).
    for ((lang, file, _), dir) in GUESTS.iter().zip(&dirs) {
        let path = dir.path().join(file);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
        let t = Instant::now();
        cold_engine
            .compile(&bytes, &path)
            .unwrap_or_else(|e| panic!("{e}"));
        let cold = t.elapsed();
        cached_engine
            .compile(&bytes, &path)
            .unwrap_or_else(|e| panic!("{e}"));
        let t = Instant::now();
        winch_engine
            .compile(&bytes, &path)
            .unwrap_or_else(|e| panic!("{e}"));
        let winch = t.elapsed();
        println!(
            "langs_compile_cold/{lang}: {:.3} s ({:.1} MB)",
            cold.as_secs_f64(),
            bytes.len() as f64 / 1e6
        );
        println!(
            "langs_compile_cold_winch/{lang}: {:.3} s ({:.1}x quicker)",
            winch.as_secs_f64(),
            cold.as_secs_f64() / winch.as_secs_f64()
        );
    }

    let mut g = c.benchmark_group("langs_load_cached");
    g.sample_size(10);
    for ((lang, file, _), dir) in GUESTS.iter().zip(&dirs) {
        let path = dir.path().join(file);
        g.bench_function(*lang, |b| {
            b.iter(|| {
                let p = rt
                    .block_on(Plugin::load(&cached_engine, &path))
                    .unwrap_or_else(|e| panic!("{e}"));
                p.warm().unwrap_or_else(|e| panic!("{e}"));
                p
            })
        });
    }
    g.finish();

    let ctx = ToolContext::new("bench", "bench");
    let args = json!({"x": 1.5, "y": 2.25});
    for (group, engine) in [
        ("langs_call", &cached_engine),
        ("langs_call_baseline", &winch_engine),
    ] {
        let mut g = c.benchmark_group(group);
        for ((lang, file, tool), dir) in GUESTS.iter().zip(&dirs) {
            let plugin = rt
                .block_on(Plugin::load(engine, &dir.path().join(file)))
                .unwrap_or_else(|e| panic!("{e}"));
            let t = plugin
                .tools()
                .iter()
                .find(|t| t.spec().name == *tool)
                .unwrap_or_else(|| panic!("{tool} missing in {file}"))
                .clone();
            let out = rt
                .block_on(t.run(&args, &ctx))
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(
                out.canonical.to_string().contains("3.75"),
                "{lang}: {:?}",
                out.canonical
            );
            g.bench_function(*lang, |b| {
                b.iter(|| {
                    rt.block_on(t.run(&args, &ctx))
                        .unwrap_or_else(|e| panic!("{e}"))
                })
            });
        }
        g.finish();
    }
}

criterion_group!(langs, benches);
criterion_main!(langs);
