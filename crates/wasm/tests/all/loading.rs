//! The thin path (calc through the registry) and the loader's handling of bad plugins.

use serde_json::json;
use toolhost_core::tools::{ToolContext, ToolSource};
use toolhost_wasm::{Plugin, PluginError, folder};

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
    // The SDK's schemas carry what the model needs and nothing else.
    let params = entry.parameters();
    assert_eq!(params["required"], json!(["x", "y"]));
    assert!(params.get("$schema").is_none() && params.get("title").is_none());
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
    let (plugins, errors) = folder::load_into(support::engine(), &reg, d).await;
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
async fn compile_cache_is_reused_and_never_trusted_blindly() {
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cdir = cache.path().join("c");
    let engine = toolhost_wasm::WasmEngine::with_options(toolhost_wasm::EngineOptions {
        cache_dir: Some(cdir.clone()),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let plugins = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = plugins.path().join("p.wasm");
    std::fs::copy(support::wasm("calc"), &path).unwrap_or_else(|e| panic!("{e}"));
    let load = || Plugin::load(&engine, &path);
    let cached = |ext: &str| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&cdir)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.path())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .into_iter()
            .filter(|p| p.to_string_lossy().ends_with(ext))
            .collect()
    };
    let ctx = ToolContext::default();
    let run = |p: &Plugin, tool: &str, args: serde_json::Value| {
        let t = p.tools().iter().find(|t| t.spec().name == tool).cloned();
        let t = t.unwrap_or_else(|| panic!("no {tool}"));
        let ctx = ctx.clone();
        async move { t.run(&args, &ctx).await }
    };

    // First load compiles, links and describes; the cache gets the artifact, the
    // describe() result and the file's index entry.
    let p1 = load().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(p1.is_linked());
    assert_eq!(cached(".cwasm").len(), 1);
    assert_eq!(cached(".json").len(), 1);
    assert_eq!(
        std::fs::read_dir(cdir.join("index"))
            .map(|d| d.count())
            .unwrap_or(0),
        1
    );

    // Second load comes from the cache: listed without linking, linked on first use.
    let p2 = load().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!p2.is_linked());
    assert_eq!(p2.tools().len(), 4);
    let out = run(&p2, "add", json!({"x": 1, "y": 2}))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.canonical, json!(3.0));
    assert!(p2.is_linked());

    // A corrupt artifact is discarded and recompiled on first use, never trusted.
    // (Replaced through a new inode, like the cache itself does.)
    let art = cached(".cwasm").remove(0);
    std::fs::remove_file(&art).ok();
    std::fs::write(&art, b"junk").ok();
    let p3 = load().await.unwrap_or_else(|e| panic!("{e}"));
    let out = run(&p3, "add", json!({"x": 2, "y": 2}))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.canonical, json!(4.0));
    assert_ne!(std::fs::read(&art).unwrap_or_default(), b"junk");

    // The file is overwritten in place by another plugin: its identity changed, so it
    // is hashed again and the new tools are listed (not the cached ones).
    std::fs::copy(support::wasm("files"), &path).unwrap_or_else(|e| panic!("{e}"));
    let p4 = load().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(p4.is_linked());
    assert!(p4.tools().iter().any(|t| t.spec().name == "read_file"));

    // Listed from the cache, then the artifacts vanish and the file changes before the
    // first call: the call fails with a clear error instead of running other code.
    let p5 = load().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!p5.is_linked());
    for f in cached(".cwasm") {
        std::fs::remove_file(f).ok();
    }
    std::fs::copy(support::wasm("calc"), &path).unwrap_or_else(|e| panic!("{e}"));
    let err = run(&p5, "list_dir", json!({"path": "/"})).await.err();
    let err = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("changed since it was loaded"), "{err}");
    // The failure is kept: warming reports the same cause, typed.
    match p5.warm() {
        Err(PluginError::Link { cause, .. }) => {
            assert!(matches!(*cause, PluginError::Changed { .. }), "{cause}")
        }
        other => panic!("expected a link error, got {other:?}"),
    }
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
