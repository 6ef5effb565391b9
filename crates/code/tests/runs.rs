//! Code mode end to end: the real runner component (Boa, built by `build.rs`) on a real
//! engine, inner calls through a real registry's pipeline (native tools, a permission
//! hook that denies one tool, the audit events), and every hostile script of the
//! design followed by a good run that must still work.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_code::{CodeError, CodeRunner, RunFailure, RunLimits};
use toolhost_core::tools::{
    DynamicTool, ToolContext, ToolEvent, ToolEventListener, ToolOutput, ToolRegistry,
};
use toolhost_wasm::{EngineOptions, WasmEngine};

fn runner() -> CodeRunner {
    static RUNNER: OnceLock<CodeRunner> = OnceLock::new();
    RUNNER
        .get_or_init(|| {
            let dir = std::env::temp_dir().join("toolhost-code-tests-cache");
            let engine = WasmEngine::with_options(EngineOptions {
                cache_dir: Some(dir),
                ..EngineOptions::default()
            })
            .unwrap();
            CodeRunner::new(&engine).unwrap()
        })
        .clone()
}

/// Records the call ids of finished calls.
#[derive(Default)]
struct Calls(Mutex<Vec<(String, String)>>);

impl ToolEventListener for Calls {
    fn on_event(&self, event: &ToolEvent) {
        if let ToolEvent::Completed { call_id, tool, .. } = event {
            self.0.lock().unwrap().push((call_id.clone(), tool.clone()));
        }
    }
}

struct World {
    registry: ToolRegistry,
    calls: Arc<Calls>,
    peak: Arc<AtomicUsize>,
}

fn world() -> World {
    let registry = ToolRegistry::new().with_max_concurrent(4);
    let store: Arc<Mutex<std::collections::HashMap<String, Value>>> = Arc::default();
    let s = store.clone();
    registry
        .register(
            DynamicTool::builder("kv_get")
                .description("Read the value stored under a key")
                .parameters(json!({"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}))
                .handler(move |a, _| {
                    let s = s.clone();
                    async move {
                        let v = s.lock().unwrap().get(a["key"].as_str().unwrap_or("")).cloned();
                        Ok(ToolOutput::json(v.unwrap_or(Value::Null)))
                    }
                })
                .build_dyn(),
        )
        .unwrap();
    let s = store.clone();
    registry
        .register(
            DynamicTool::builder("kv_put")
                .description("Store a value under a key")
                .parameters(json!({"type":"object","properties":{"key":{"type":"string"},"value":{}},"required":["key","value"]}))
                .handler(move |a, _| {
                    let s = s.clone();
                    async move {
                        s.lock().unwrap().insert(a["key"].as_str().unwrap_or("").into(), a["value"].clone());
                        Ok(ToolOutput::json(json!({"stored": true})))
                    }
                })
                .build_dyn(),
        )
        .unwrap();
    registry
        .register(
            DynamicTool::builder("mul")
                .description("Multiply two integers x and y")
                .parameters(json!({"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x","y"]}))
                .handler(|a, _| async move {
                    Ok(ToolOutput::json(json!(a["x"].as_i64().unwrap_or(0) * a["y"].as_i64().unwrap_or(0))))
                })
                .build_dyn(),
        )
        .unwrap();
    let peak = Arc::new(AtomicUsize::new(0));
    let now = Arc::new(AtomicUsize::new(0));
    let (p, n) = (peak.clone(), now.clone());
    registry
        .register(
            DynamicTool::builder("slow-echo")
                .description("Echo a value back after 200 ms")
                .parameters(json!({"type":"object","properties":{"v":{}}}))
                .handler(move |a, _| {
                    let (p, n) = (p.clone(), n.clone());
                    async move {
                        let in_flight = n.fetch_add(1, Ordering::SeqCst) + 1;
                        p.fetch_max(in_flight, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        n.fetch_sub(1, Ordering::SeqCst);
                        Ok(ToolOutput::json(a["v"].clone()))
                    }
                })
                .build_dyn(),
        )
        .unwrap();
    registry
        .register(
            DynamicTool::builder("wipe")
                .description("Delete every stored value")
                .permissions(vec![toolhost_core::tools::Permission::Delete])
                .build_dyn(),
        )
        .unwrap();
    let calls = Arc::new(Calls::default());
    registry.add_listener(calls.clone());
    World {
        registry,
        calls,
        peak,
    }
}

async fn run(
    w: &World,
    code: &str,
    limits: &RunLimits,
) -> Result<toolhost_code::RunOutput, CodeError> {
    run_with_console(w, code, limits).await.map_err(|f| f.error)
}

async fn run_with_console(
    w: &World,
    code: &str,
    limits: &RunLimits,
) -> Result<toolhost_code::RunOutput, RunFailure> {
    let tools: BTreeSet<String> = ["kv_get", "kv_put", "mul", "slow-echo", "wipe"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let ctx = ToolContext::new("s", "t").child("run-1");
    runner().run(code, tools, &w.registry, &ctx, limits).await
}

async fn good(w: &World) {
    let out = run(
        w,
        "return await tools.mul({x: 6, y: 7});",
        &RunLimits::default(),
    )
    .await
    .unwrap();
    assert_eq!(out.value, json!(42));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_runs_in_one_script_and_every_inner_call_is_a_registry_call() {
    let w = world();
    let code = r#"
        await tools.kv_put({key: "a", value: 6});
        const a = await tools.kv_get({key: "a"});
        const p = await tools.mul({x: a, y: 7});
        await tools.kv_put({key: "p", value: p});
        console.log("product", p, {a});
        return {product: await tools.kv_get({key: "p"})};
    "#;
    let out = run(&w, code, &RunLimits::default()).await.unwrap();
    assert_eq!(out.value, json!({"product": 42}));
    assert_eq!(out.calls, 5);
    assert_eq!(out.console, ["product 42 {\"a\":6}"]);
    // Every inner call went through the pipeline, its id linked to the run.
    let calls = w.calls.0.lock().unwrap().clone();
    let ids: Vec<&str> = calls.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["run-1/1", "run-1/2", "run-1/3", "run-1/4", "run-1/5"]);
    assert_eq!(calls[2].1, "mul");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_started_together_run_in_parallel() {
    let w = world();
    let code = r#"
        const r = await Promise.all([1, 2, 3].map(v => tools["slow-echo"]({v})));
        return r;
    "#;
    let out = run(&w, code, &RunLimits::default()).await.unwrap();
    assert_eq!(out.value, json!([1, 2, 3]));
    assert_eq!(
        w.peak.load(Ordering::SeqCst),
        3,
        "all three were in flight at once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_reach_the_script_and_the_model_as_text() {
    let w = world();
    // A syntax error.
    let e = run(&w, "return 1 +;", &RunLimits::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&e, CodeError::Script(m) if m.contains("SyntaxError")),
        "{e}"
    );
    // A thrown error.
    let e = run(
        &w,
        "throw new TypeError('bad input')",
        &RunLimits::default(),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("TypeError: bad input"), "{e}");
    // A tool error is an Error the script may catch; the destructive tool is denied
    // (no approver), in a loop, and the script goes on.
    let code = r#"
        let denied = 0;
        for (let i = 0; i < 20; i++) {
            try { await tools.wipe({}); } catch (e) { if (String(e).includes("denied")) denied++; }
        }
        let invalid = "";
        try { await tools.mul({x: "six"}); } catch (e) { invalid = String(e); }
        return {denied, invalid};
    "#;
    let out = run(&w, code, &RunLimits::default()).await.unwrap();
    assert_eq!(out.value["denied"], 20);
    assert!(
        out.value["invalid"]
            .as_str()
            .unwrap()
            .contains("invalid arguments"),
        "{}",
        out.value
    );
    // A tool this run may not see, and one that does not exist: the same answer.
    let code = r#"
        const r = [];
        try { await tools.secret_tool({}); } catch (e) { r.push(String(e)); }
        return r;
    "#;
    let out = run(&w, code, &RunLimits::default()).await.unwrap();
    assert!(
        out.value[0]
            .as_str()
            .unwrap()
            .contains("not a callable function")
            || out.value[0].as_str().unwrap().contains("undefined"),
        "{}",
        out.value
    );
    good(&w).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_keeps_what_its_console_printed() {
    let w = world();
    // A throw after a call and two lines of output.
    let code = r#"
        console.log("got", await tools.mul({x: 6, y: 7}));
        console.warn("about to fail");
        throw new Error("gave up");
    "#;
    let f = run_with_console(&w, code, &RunLimits::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&f.error, CodeError::Script(m) if m.contains("gave up")),
        "{f}"
    );
    assert_eq!(f.console, vec!["got 42", "warn: about to fail"]);
    assert_eq!(f.calls, 1);
    // A loop that never ends, after printing: the line survives the stop.
    let quick = RunLimits {
        fuel: 50_000_000,
        timeout: std::time::Duration::from_secs(5),
        ..RunLimits::default()
    };
    let f = run_with_console(&w, "console.log('before the loop'); for (;;) {}", &quick)
        .await
        .unwrap_err();
    assert!(
        matches!(f.error, CodeError::OutOfFuel | CodeError::Timeout(_)),
        "{f}"
    );
    assert_eq!(f.console, vec!["before the loop"]);
    good(&w).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_scripts_end_in_clear_errors_and_the_next_run_works() {
    let w = world();
    let quick = RunLimits {
        timeout: Duration::from_secs(5),
        fuel: 2_000_000_000,
        ..RunLimits::default()
    };
    // Spins.
    let e = run(&w, "while (true) {}", &quick).await.unwrap_err();
    assert!(
        matches!(e, CodeError::OutOfFuel | CodeError::Timeout(_)),
        "{e}"
    );
    good(&w).await;
    // Allocates without end.
    let e = run(
        &w,
        "const a = []; while (true) { a.push('x'.repeat(1 << 16)); }",
        &quick,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(e, CodeError::OutOfMemory(64) | CodeError::OutOfFuel),
        "{e}"
    );
    good(&w).await;
    // Recurses.
    let e = run(
        &w,
        "function f(n) { return f(n + 1) + 1; } return f(0);",
        &quick,
    )
    .await
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("stack") || text.contains("recursive calls") || text.contains("RangeError"),
        "{text}"
    );
    good(&w).await;
    // Returns far too much.
    let e = run(&w, "return 'x'.repeat(200000);", &quick)
        .await
        .unwrap_err();
    assert!(
        matches!(e, CodeError::ResultTooLarge { max: 65536, .. }),
        "{e}"
    );
    let e = run(&w, "return 'x'.repeat(100 * 1024 * 1024);", &quick)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            CodeError::OutOfMemory(_) | CodeError::ResultTooLarge { .. } | CodeError::Script(_)
        ),
        "{e}"
    );
    good(&w).await;
    // Floods its output: a bounded head is kept, the rest counted.
    let out = run(
        &w,
        "for (let i = 0; i < 100000; i++) console.log('line', i); return 1;",
        &RunLimits::default(),
    )
    .await
    .unwrap();
    assert!(out.console.iter().map(String::len).sum::<usize>() <= 16 << 10);
    assert!(out.console_dropped > 90_000, "{}", out.console_dropped);
    // Ten thousand inner calls: the first hundred run, the rest fail in the script.
    let code = r#"
        let ok = 0, refused = "";
        for (let i = 0; i < 10000; i++) {
            try { await tools.mul({x: i, y: 1}); ok++; } catch (e) { refused = String(e); break; }
        }
        return {ok, refused};
    "#;
    let out = run(&w, code, &RunLimits::default()).await.unwrap();
    assert_eq!(out.value["ok"], 100);
    assert!(
        out.value["refused"]
            .as_str()
            .unwrap()
            .contains("100 tool calls"),
        "{}",
        out.value
    );
    // Pollutes prototypes and the tools object: the calls are not reached.
    let code = r#"
        Object.prototype.mul = () => 666;
        Function.prototype.call = () => 666;
        try { tools.mul = () => 666; } catch (e) {}
        try { delete tools.mul; } catch (e) {}
        try { Object.setPrototypeOf(tools, {mul: () => 666}); } catch (e) {}
        return [await tools.mul({x: 2, y: 3}), typeof tools.toString, Object.isFrozen(tools)];
    "#;
    let out = run(&w, code, &RunLimits::default()).await.unwrap();
    assert_eq!(out.value, json!([6, "undefined", true]));
    // Awaits what never comes.
    let e = run(&w, "await new Promise(() => {}); return 1;", &quick)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("never happens"), "{e}");
    good(&w).await;
}

/// One caller flooding `run_code` (more runs than the pool holds, each waiting on slow
/// tools) does not hold up another caller's run: it starts and finishes while the
/// flood's runs are still going, and the flood's own extra runs wait their turn (each
/// run may hold 64 MiB: runs in flight are bounded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_flooding_runs_does_not_hold_up_another_callers_run() {
    use toolhost_core::tools::{Caller, ToolCall};
    let w = world();
    let tool = toolhost_code::RunCodeTool::new(
        runner(),
        w.registry.clone(),
        RunLimits {
            max_runs: 2,
            ..RunLimits::default()
        },
    );
    w.registry.register(Arc::new(tool)).unwrap();
    let slow =
        "for (let i = 0; i < 10; i++) { await tools[\"slow-echo\"]({v: i}); } return 'done';";
    let hog = ToolContext::new("hog", "t").with(Caller::new("hog"));
    let flood: Vec<_> = (0..6)
        .map(|i| {
            let (r, ctx) = (w.registry.clone(), hog.clone());
            tokio::spawn(async move {
                r.invoke_call(
                    ToolCall::with_id(format!("hog-{i}"), "run_code", json!({"code": slow})),
                    &ctx,
                )
                .await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let victim = ToolContext::new("victim", "t").with(Caller::new("victim"));
    let inv = w
        .registry
        .invoke_call(
            ToolCall::with_id(
                "v-1",
                "run_code",
                json!({"code": "return await tools.mul({x: 6, y: 7});"}),
            ),
            &victim,
        )
        .await;
    let out = inv.output.unwrap();
    assert_eq!(out.canonical["result"], 42);
    let running = flood.iter().filter(|h| !h.is_finished()).count();
    assert!(
        running >= 4,
        "the flood's runs were still going: {running} of 6"
    );
    for h in flood {
        let inv = h.await.unwrap();
        assert_eq!(inv.output.unwrap().canonical["result"], "done");
    }
    // The flood never had more runs going than the pool: its slow calls (one per run at
    // a time) never overlapped beyond two.
    assert!(
        w.peak.load(Ordering::SeqCst) <= 2,
        "{}",
        w.peak.load(Ordering::SeqCst)
    );
    good(&w).await;
}
