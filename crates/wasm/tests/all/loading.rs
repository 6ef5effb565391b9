//! The thin path (calc through the registry) and the loader's handling of bad plugins.

use serde_json::json;
use toolhost_core::tools::ToolSource;
use toolhost_wasm::{Plugin, PluginError, loader};

use crate::support::{self, call, install};

#[tokio::test]
async fn calc_add_through_the_registry() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    install(dir.path(), "calc", None);
    let reg = support::registry(dir.path()).await;
    let mut names = reg.list_tools();
    names.sort();
    assert_eq!(names, ["add", "divide", "mean", "multiply"]);
    let inv = call(&reg, "add", json!({"x": 1, "y": 2})).await;
    let out = inv.output.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.canonical, json!(3.0));
    assert_eq!(out.render, "3.0");
    // A typed error from the guest, then schema validation by the registry.
    let inv = call(&reg, "divide", json!({"x": 1, "y": 0})).await;
    assert!(support::err_text(&inv).contains("division by zero"));
    let inv = call(&reg, "add", json!({"x": "one"})).await;
    assert!(support::err_text(&inv).contains("invalid arguments"));
    let entry = reg.entry("add").unwrap_or_else(|| panic!("no add"));
    assert!(matches!(entry.source(), ToolSource::Wasm { path } if path.ends_with("calc.wasm")));
    // Calls share no state and each gets a fresh sandbox: many in parallel all succeed.
    let calls = (0..16).map(|i| call(&reg, "add", json!({"x": i, "y": 1})));
    for (i, inv) in futures_join(calls).await.into_iter().enumerate() {
        assert_eq!(
            inv.output.map(|o| o.canonical).ok(),
            Some(json!(i as f64 + 1.0))
        );
    }
}

async fn futures_join<F: std::future::Future>(fs: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut out = Vec::new();
    for f in fs {
        out.push(f.await);
    }
    out
}

#[tokio::test]
async fn bad_plugins_are_reported_by_file_and_good_ones_still_load() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let d = dir.path();
    install(d, "calc", None);
    install(d, "files", None);
    std::fs::write(
        d.join("garbage.wasm"),
        b"this is not wasm at all, just text",
    )
    .ok();
    // A core module (the 8-byte header of an empty module).
    std::fs::write(d.join("core.wasm"), b"\0asm\x01\0\0\0").ok();
    // An empty component: valid, but without the tool world's exports.
    std::fs::write(d.join("empty.wasm"), b"\0asm\x0d\0\x01\0").ok();
    // A good component with a broken policy.
    std::fs::copy(support::wasm("calc"), d.join("typo.wasm")).ok();
    std::fs::write(
        d.join("typo.toml"),
        "timeout_ms = 100\nnetwrok = [\"https://x.com\"]\n",
    )
    .ok();
    // describe() returns a tool that fails the registration checks.
    install(d, "baddesc", None);

    let reg = toolhost_core::tools::ToolRegistry::new();
    let (plugins, errors) = loader::load_into(support::engine(), &reg, d).await;
    let loaded: Vec<_> = plugins.iter().map(Plugin::name).collect();
    assert_eq!(loaded, ["calc", "files"]);
    assert!(reg.contains("add") && reg.contains("read_file"));
    let find = |file: &str| {
        errors
            .iter()
            .find(|e| e.path().ends_with(file))
            .unwrap_or_else(|| panic!("no error for {file}: {errors:?}"))
    };
    assert!(matches!(
        find("garbage.wasm"),
        PluginError::NotAComponent { .. }
    ));
    let core = find("core.wasm").to_string();
    assert!(
        core.contains("core.wasm") && core.contains("core wasm module"),
        "{core}"
    );
    let empty = find("empty.wasm");
    assert!(matches!(empty, PluginError::WrongWorld { .. }), "{empty}");
    let typo = find("typo.wasm").to_string();
    assert!(
        typo.contains("typo.toml") && typo.contains("`netwrok`"),
        "{typo}"
    );
    let bad = find("baddesc.wasm");
    assert!(matches!(bad, PluginError::Definition { .. }), "{bad}");
    assert!(bad.to_string().contains("bad name!"), "{bad}");
    assert_eq!(errors.len(), 5, "{errors:?}");
    support::still_works(&reg).await;
}

#[tokio::test]
async fn oversized_files_are_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    install(dir.path(), "calc", None);
    let engine = toolhost_wasm::WasmEngine::with_options(toolhost_wasm::EngineOptions {
        max_plugin_bytes: 1000,
        cache_dir: None,
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let err = Plugin::load(&engine, &dir.path().join("calc.wasm"))
        .await
        .err()
        .unwrap_or_else(|| panic!("loaded an oversized plugin"));
    assert!(
        matches!(err, PluginError::TooLarge { max: 1000, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn compile_cache_is_reused() {
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let engine = toolhost_wasm::WasmEngine::with_options(toolhost_wasm::EngineOptions {
        cache_dir: Some(cache.path().join("c")),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let path = support::wasm("calc");
    let p1 = Plugin::load(&engine, &path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let files: Vec<_> = std::fs::read_dir(cache.path().join("c"))
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].extension().is_some_and(|e| e == "cwasm"));
    let p2 = Plugin::load(&engine, &path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p1.tools().len(), p2.tools().len());
    // A corrupt artifact is discarded and recompiled, never trusted. (Replaced through a
    // new inode, like the cache itself does: p1 and p2 still map the old file.)
    std::fs::remove_file(&files[0]).ok();
    std::fs::write(&files[0], b"junk").ok();
    let p3 = Plugin::load(&engine, &path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p3.tools().len(), 4);
}

/// A component that uses a component-model `async` builtin (`context.get`) cannot compile
/// on the default engine (concurrency support off, the fast path); the loader retries on
/// the engine with concurrency support, so it gets past compilation. This one then fails
/// the world check (it exports nothing), which proves the retry happened: without it the
/// error would be a compile error.
#[tokio::test]
async fn a_component_using_async_builtins_loads_on_the_concurrent_engine() {
    let wat = r#"(component
        (core func $get (canon context.get i32 0))
        (core module $m (import "" "get" (func (result i32))))
        (core instance (instantiate $m (with "" (instance (export "get" (func $get))))))
    )"#;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("uses_async.wasm");
    let bytes = wat::parse_str(wat).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&path, &bytes).unwrap_or_else(|e| panic!("{e}"));
    let engine = support::engine();
    assert!(!engine.options().concurrency_support);
    match engine.compile(&bytes, &path) {
        Err(PluginError::Compile { message, .. }) => {
            assert!(message.contains("async"), "{message}")
        }
        other => panic!("expected a compile error on the fast engine, got {other:?}"),
    }
    let (used, _) = engine
        .compile_any(&bytes, &path)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(used.options().concurrency_support);
    match Plugin::load(engine, &path).await {
        Err(PluginError::WrongWorld { .. }) => {}
        other => panic!("expected WrongWorld after the retry, got {other:?}"),
    }
}
