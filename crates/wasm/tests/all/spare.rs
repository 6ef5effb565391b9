//! Spare sandboxes: every call still gets an instance nobody ran before, whose start-up
//! code runs inside the call with the call's grant (spares on or off alike), the engine's cap on spares holds however many tools are called, and every
//! limit (fuel, deadline, memory) stops a call that runs in a spare as it stops any other,
//! with a good call after each.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_core::tools::ToolRegistry;
use toolhost_wasm::{EngineOptions, WasmEngine, folder};

use crate::support::{call, err_text, install, still_works};

/// An engine with `spares` spare sandboxes, for every tool however quickly its sandbox
/// builds, and its own compile cache in `cache`.
fn engine(cache: &Path, spares: usize) -> WasmEngine {
    WasmEngine::with_options(EngineOptions {
        cache_dir: Some(cache.to_path_buf()),
        spare_sandboxes: spares,
        spare_min_build: Duration::ZERO,
        ..EngineOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The hostile fixture with `policy`, loaded on `engine`.
async fn hostile(engine: &WasmEngine, policy: &str) -> (ToolRegistry, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    install(dir.path(), "hostile", Some(policy));
    let registry = ToolRegistry::new();
    let (_p, errors) = folder::load_into(engine, &registry, dir.path()).await;
    assert!(errors.is_empty(), "load errors: {errors:?}");
    (registry, dir)
}

/// Waits until the engine holds `n` spares, built (the one a call ordered is built in the
/// background); false after 20 s.
async fn spares_settle(engine: &WasmEngine, n: usize) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        if engine.spare_sandboxes() == n {
            // Give a build that holds its place the moment to finish.
            tokio::time::sleep(Duration::from_millis(50)).await;
            if engine.spare_sandboxes() == n {
                return true;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_gets_an_instance_nobody_ran_with_its_grant_spares_or_not() {
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let policy = format!(
        "read = [{:?}]\nenv = [\"PATH\"]\n",
        data.path().display().to_string()
    );
    for spares in [0, 4] {
        let engine = engine(cache.path(), spares);
        let (reg, _dir) = hostile(&engine, &policy).await;
        for i in 0..6 {
            let inv = call(&reg, "start_saw", json!({})).await;
            let Ok(out) = &inv.output else {
                panic!("start_saw failed: {}", inv.model_text());
            };
            let saw: Value = out.canonical.clone();
            // The call has its grant (one folder, one variable). A Rust component's
            // start-up code (constructors) runs on entry to its first export, so inside
            // the call, with the same grant; the instantiation (in the background for a
            // spare) runs none of its code.
            assert_eq!(
                saw["call"],
                json!({"env": 1, "dirs": 1}),
                "spares {spares}, call {i}: {saw}"
            );
            assert_eq!(saw["start"], saw["call"], "{saw}");
            assert_eq!(
                saw["calls"],
                json!(1),
                "an instance served two calls: {saw}"
            );
            if spares > 0 {
                assert!(spares_settle(&engine, 1).await, "no spare was built");
            }
        }
        if spares == 0 {
            assert_eq!(engine.spare_sandboxes(), 0);
            assert_eq!(engine.spare_sandboxes_used(), 0);
        } else {
            // Five of the six calls ran in the spare the call before had ordered.
            assert_eq!(engine.spare_sandboxes_used(), 5);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engines_cap_on_spares_holds_whatever_is_called() {
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let engine = engine(cache.path(), 2);
    let (reg, _dir) = hostile(&engine, "").await;
    // Four tools called, each would order a spare of its own: two are built.
    for tool in ["burn", "recurse", "sieve", "start_saw"] {
        let args = match tool {
            "start_saw" => json!({}),
            _ => json!({"depth": 10}),
        };
        let inv = call(&reg, tool, args).await;
        assert!(inv.is_ok(), "{tool}: {}", inv.model_text());
        assert!(engine.spare_sandboxes() <= 2, "over the cap");
    }
    assert!(spares_settle(&engine, 2).await, "the cap was not reached");
    // Many calls in parallel: each takes a spare or prepares its own, the cap holds.
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..16 {
        let reg = reg.clone();
        calls.spawn(async move { call(&reg, "burn", json!({"depth": i})).await });
    }
    while let Some(inv) = calls.join_next().await {
        let inv = inv.unwrap_or_else(|e| panic!("{e}"));
        assert!(inv.is_ok(), "{}", inv.model_text());
    }
    assert!(engine.spare_sandboxes() <= 2, "over the cap");
    still_works(&reg).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_limit_stops_a_call_in_a_spare_and_the_next_call_works() {
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // (policy, tool, a harmless call, the hostile call, what must stop it).
    let cases = [
        (
            "fuel = 50000000\ntimeout_ms = 60000\n",
            "burn",
            json!({"depth": 10}),
            json!({"depth": 1_000_000_000_000u64}),
            "ran out of fuel (limit 50000000)",
        ),
        (
            "fuel = 10000000000000\ntimeout_ms = 300\n",
            "burn",
            json!({"depth": 10}),
            json!({"depth": 1_000_000_000_000_000u64}),
            "timed out after 300 ms",
        ),
        (
            "memory_mb = 32\n",
            "sieve",
            json!({"depth": 100}),
            json!({"depth": 50_000_000}),
            "memory limit 32 MiB exceeded",
        ),
        (
            "",
            "recurse",
            json!({"depth": 10}),
            json!({"depth": 100_000_000u64}),
            "stack",
        ),
    ];
    for (policy, tool, good, bad, expected) in cases {
        let engine = engine(cache.path(), 4);
        let (reg, _dir) = hostile(&engine, policy).await;
        // The harmless call orders the spare the hostile call then runs in: the limits
        // are the call's own, whatever building the spare used.
        let inv = call(&reg, tool, good.clone()).await;
        assert!(inv.is_ok(), "{tool}: {}", inv.model_text());
        assert!(spares_settle(&engine, 1).await, "no spare was built");
        let inv = call(&reg, tool, bad).await;
        let text = err_text(&inv);
        assert!(text.contains(expected), "{tool} ({policy:?}): {text}");
        assert_eq!(
            engine.spare_sandboxes_used(),
            1,
            "the hostile call ran in no spare"
        );
        // A trapped call orders no spare; the next call prepares its own and works.
        let inv = call(&reg, tool, good).await;
        assert!(inv.is_ok(), "{tool} after the trap: {}", inv.model_text());
        still_works(&reg).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_whose_sandbox_builds_quicker_than_the_threshold_gets_no_more_spares() {
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // Any build is "quick" against 10 s: the first spare measures it, and is the last.
    let engine = WasmEngine::with_options(EngineOptions {
        cache_dir: Some(cache.path().to_path_buf()),
        spare_sandboxes: 4,
        spare_min_build: Duration::from_secs(10),
        ..EngineOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let (reg, _dir) = hostile(&engine, "").await;
    for _ in 0..4 {
        let inv = call(&reg, "burn", json!({"depth": 10})).await;
        assert!(inv.is_ok(), "{}", inv.model_text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        engine.spare_sandboxes_used(),
        1,
        "one spare, the measuring one"
    );
    assert_eq!(
        engine.spare_sandboxes(),
        0,
        "a spare was built after the first"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_c_component_reads_its_granted_folder_from_a_spare() {
    // The C plugin's WASI adapter lists its preopened folders when it is instantiated: a
    // spare must be instantiated with the grant for the call's file access to work.
    let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fox = data.path().join("fox.txt");
    std::fs::write(&fox, "The quick brown fox jumps over the lazy dog\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let engine = engine(cache.path(), 4);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let policy = format!("read = [{:?}]\n", data.path().display().to_string());
    install(dir.path(), "c_checksum", Some(&policy));
    let reg = ToolRegistry::new();
    let (_p, errors) = folder::load_into(&engine, &reg, dir.path()).await;
    assert!(errors.is_empty(), "load errors: {errors:?}");
    let path = fox.canonicalize().unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..3 {
        let inv = call(&reg, "c_checksum", json!({"path": path})).await;
        let Ok(out) = &inv.output else {
            panic!("c_checksum failed: {}", inv.model_text());
        };
        assert_eq!(out.canonical["crc32"], "6d93c138", "{:?}", out.canonical);
        assert!(spares_settle(&engine, 1).await, "no spare was built");
    }
    assert_eq!(
        engine.spare_sandboxes_used(),
        2,
        "the later calls ran in spares"
    );
}
