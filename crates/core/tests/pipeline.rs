//! Integration tests of the tool core: registry, pipeline, permissions, approvals, events.
//! Covers seed 000 acceptance criteria 4–9, 18 (docs: enforced by `missing_docs` + clippy)
//! and 20, and seed 002's two pipeline tests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{Barrier, Notify};
use toolhost_core::tools::*;

fn obj_schema() -> Value {
    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
}

/// A tool that counts its executions and echoes `text`.
fn counting_tool(name: &str, perms: Vec<Permission>, runs: Arc<AtomicUsize>) -> Arc<dyn BaseTool> {
    DynamicTool::builder(name)
        .description("Echo the text back and count the call")
        .parameters(obj_schema())
        .permissions(perms)
        .handler(move |args, _ctx| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::json(args["text"].clone()))
            }
        })
        .build_dyn()
}

// ---------- seed 000 criterion 4: BaseTool implemented by a custom tool ----------

struct Weather;

#[async_trait]
impl BaseTool for Weather {
    fn name(&self) -> &str {
        "get_weather"
    }
    fn description(&self) -> &str {
        "Get the current weather of a city"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    }
    fn required_permissions(&self) -> Vec<Permission> {
        vec![Permission::Network]
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let city = args["city"].as_str().unwrap_or_default().to_string();
        Ok(ToolOutput::new(
            json!({"city": city, "temperature": 22, "session": ctx.session_id()}),
            format!("{city}: 22 °C"),
        ))
    }
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// First addend.
    x: i64,
    /// Second addend.
    y: i64,
}

#[derive(Serialize)]
struct Sum {
    sum: i64,
}

struct Add;

impl Tool for Add {
    const NAME: &'static str = "add";
    type Args = AddArgs;
    type Output = Sum;
    type Error = ToolError;
    fn description(&self) -> String {
        "Add two integers x and y".into()
    }
    fn metadata(&self) -> ToolMetadata {
        ToolMetadata {
            tags: vec!["math".into()],
            category: "math".into(),
            ..Default::default()
        }
    }
    async fn call(&self, a: AddArgs, _ctx: &ToolContext) -> Result<Sum, ToolError> {
        Ok(Sum { sum: a.x + a.y })
    }
}

#[tokio::test]
async fn three_kinds_of_tools_register_and_run_by_name() {
    let reg = ToolRegistry::new();
    reg.register(Arc::new(Weather)).unwrap();
    reg.register(Add.into_dyn()).unwrap();
    reg.register(counting_tool("echo", vec![], Arc::default()))
        .unwrap();
    assert_eq!(reg.list_tools(), vec!["get_weather", "add", "echo"]);

    let ctx = ToolContext::new("session-7", "trace-1");
    let w = reg
        .invoke_call(
            ToolCall::with_id("c1", "get_weather", json!({"city": "Beijing"})),
            &ctx,
        )
        .await;
    let out = w.output.unwrap();
    assert_eq!(out.canonical["session"], "session-7");
    assert_eq!(out.render, "Beijing: 22 °C");
    assert_eq!(w.call_id, "c1");

    let a = reg.invoke("add", json!({"x": 2, "y": 3})).await;
    assert_eq!(a.output.unwrap().canonical, json!({"sum": 5}));
    let e = reg.invoke("echo", json!({"text": "hi"})).await;
    assert_eq!(e.output.unwrap().render, "hi");
}

#[test]
fn typed_tool_schema_is_derived() {
    let t = Add.into_dyn();
    let p = t.parameters();
    assert_eq!(p["type"], "object");
    assert_eq!(p["properties"]["x"]["type"], "integer");
    assert_eq!(p["required"], json!(["x", "y"]));
    assert!(p.get("$schema").is_none());
}

// ---------- registration checks ----------

#[test]
fn registration_checks_name_description_schema_and_duplicates() {
    let reg = ToolRegistry::new();
    let mk = |name: &str, desc: &str, schema: Value| {
        DynamicTool::builder(name)
            .description(desc)
            .parameters(schema)
            .build_dyn()
    };
    let good = json!({"type": "object"});
    let err =
        |r: Result<Registration, ToolError>| r.err().map(|e| e.to_string()).unwrap_or_default();

    assert!(
        err(reg.register(mk("bad name", "A long enough description", good.clone())))
            .contains("^[a-zA-Z0-9_-]{1,64}$")
    );
    assert!(
        err(reg.register(mk(
            &"x".repeat(65),
            "A long enough description",
            good.clone()
        )))
        .contains("invalid definition")
    );
    assert!(
        err(reg.register(mk("", "A long enough description", good.clone())))
            .contains("invalid definition")
    );
    assert!(
        err(reg.register(mk("short", "too short", good.clone())))
            .contains("at least 10 characters")
    );
    assert!(
        err(reg.register(mk("arr", "A long enough description", json!([1]))))
            .contains("got an array")
    );
    assert!(
        err(reg.register(mk(
            "str",
            "A long enough description",
            json!({"type": "string"})
        )))
        .contains("must describe an object")
    );
    assert!(
        err(reg.register(mk(
            "broken",
            "A long enough description",
            json!({"type": "object", "properties": {"a": {"type": 12}}})
        )))
        .contains("does not compile")
    );
    assert!(reg.is_empty());

    reg.register(mk("ok-Name_1", "A long enough description", good.clone()))
        .unwrap();
    match reg.register(mk("ok-Name_1", "Another long description", good)) {
        Err(ToolError::DuplicateTool(n)) => assert_eq!(n, "ok-Name_1"),
        other => panic!("expected DuplicateTool, got {other:?}"),
    }
    assert_eq!(reg.len(), 1);
}

// ---------- seed 000 criteria 5, 6: register, find, list, unregister, definitions ----------

#[tokio::test]
async fn unregister_get_list_and_definitions() {
    let reg = ToolRegistry::new();
    for n in ["a_tool", "b_tool", "c_tool"] {
        reg.register(counting_tool(n, vec![], Arc::default()))
            .unwrap();
    }
    assert!(reg.get("b_tool").is_some());
    assert!(reg.get("zzz").is_none());
    assert!(reg.unregister("b_tool").is_some());
    assert!(reg.unregister("b_tool").is_none());
    assert_eq!(reg.list_tools(), vec!["a_tool", "c_tool"]);

    let defs = reg.definitions();
    assert_eq!(defs.len(), 2);
    let v = serde_json::to_value(&defs[0]).unwrap();
    assert_eq!(
        v,
        json!({"type": "function", "function": {"name": "a_tool",
            "description": "Echo the text back and count the call", "parameters": obj_schema()}})
    );
    let inv = reg.invoke("b_tool", json!({"text": "x"})).await;
    assert!(matches!(inv.output, Err(ToolError::NotFound(ref n)) if n == "b_tool"));
}

#[test]
fn tags_categories_groups_and_sources() {
    let reg = ToolRegistry::new();
    reg.register(Add.into_dyn()).unwrap();
    reg.register_with(
        counting_tool("fetch", vec![Permission::Network], Arc::default()),
        ToolMetadata {
            tags: vec!["web".into(), "io".into()],
            category: "network".into(),
            source: ToolSource::Mcp {
                server: "srv".into(),
            },
            version: Some("1.2.0".into()),
            timeout: None,
        },
    )
    .unwrap();
    reg.register(counting_tool("plain", vec![], Arc::default()))
        .unwrap();

    let math: Vec<_> = reg
        .find_by_tag("math")
        .iter()
        .map(|e| e.name().to_string())
        .collect();
    assert_eq!(math, vec!["add"]);
    assert_eq!(reg.find_by_tag("io")[0].name(), "fetch");
    assert!(reg.find_by_tag("nope").is_empty());
    assert_eq!(reg.find_by_category("network")[0].version(), Some("1.2.0"));
    let groups = reg.groups();
    let keys: Vec<_> = groups.keys().cloned().collect();
    assert_eq!(keys, vec!["math", "network", ""]);
    let fetch = reg.entry("fetch").unwrap();
    assert_eq!(fetch.source().kind(), "mcp");
    assert_eq!(fetch.risk(), RiskLevel::Network);
    let filtered = reg.definitions_where(|e| e.tags().iter().any(|t| t == "web"));
    assert_eq!(filtered.len(), 1);
}

#[tokio::test]
async fn registration_handle_removes_only_its_own_tool() {
    let reg = ToolRegistry::new();
    let first = reg
        .register(counting_tool("t_one", vec![], Arc::default()))
        .unwrap();
    assert!(reg.unregister("t_one").is_some());
    let _second = reg
        .register(counting_tool("t_one", vec![], Arc::default()))
        .unwrap();
    // The stale handle must not remove the new registration.
    assert!(!first.dispose());
    assert!(reg.contains("t_one"));

    let mut changes = reg.watch_changes();
    let before = *changes.borrow_and_update();
    {
        let _guard = reg
            .register(counting_tool("scoped", vec![], Arc::default()))
            .unwrap()
            .into_guard();
        assert!(reg.contains("scoped"));
    }
    assert!(!reg.contains("scoped"));
    assert!(changes.has_changed().unwrap());
    assert_eq!(*changes.borrow(), before + 2);
}

#[tokio::test]
async fn stats_count_calls_failures_and_time() {
    let reg = ToolRegistry::new();
    reg.register(counting_tool("echo", vec![], Arc::default()))
        .unwrap();
    reg.invoke("echo", json!({"text": "a"})).await;
    reg.invoke("echo", json!({"text": "b"})).await;
    reg.invoke("echo", json!({"nope": 1})).await;
    let s = reg.entry("echo").unwrap().stats();
    assert_eq!((s.calls, s.failures), (3, 1));
    assert!(s.total_duration >= s.mean_duration && s.mean_duration > Duration::ZERO);
}

// ---------- seed 002 test 1: bad arguments never run the tool ----------

#[tokio::test]
async fn invalid_arguments_give_a_path_and_reason_and_never_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let reg = ToolRegistry::new();
    reg.register(
        DynamicTool::builder("typed")
            .description("A tool with a typed schema")
            .parameters(json!({"type": "object", "properties": {
                "count": {"type": "integer", "minimum": 1},
                "name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}))
            .handler({
                let runs = runs.clone();
                move |_, _| {
                    let runs = runs.clone();
                    async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                        Ok(ToolOutput::text("ran"))
                    }
                }
            })
            .build_dyn(),
    )
    .unwrap();

    let inv = reg
        .invoke("typed", json!({"name": "x", "count": "three"}))
        .await;
    let msg = match inv.output {
        Err(ToolError::InvalidArguments(t, m)) => {
            assert_eq!(t, "typed");
            m
        }
        other => panic!("expected InvalidArguments, got {other:?}"),
    };
    assert!(msg.contains("'/count'") && msg.contains("integer"), "{msg}");

    let inv = reg
        .invoke("typed", json!({"count": 0, "extra": true}))
        .await;
    let msg = inv.output.unwrap_err().to_string();
    assert!(msg.contains("top level") && msg.contains("name"), "{msg}");
    assert!(msg.contains("'/count'"), "{msg}");
    assert!(
        reg.invoke("typed", json!("not an object"))
            .await
            .output
            .is_err()
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the tool must never run on invalid arguments"
    );

    assert!(reg.invoke("typed", json!({"name": "ok"})).await.is_ok());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

// ---------- seed 000 criterion 7: permission check before execution ----------

#[tokio::test]
async fn permission_checker_runs_before_execution() {
    let runs = Arc::new(AtomicUsize::new(0));
    let reg = ToolRegistry::new().with_permission_checker(PermissionChecker::default());
    reg.register(counting_tool(
        "writer",
        vec![Permission::Write],
        runs.clone(),
    ))
    .unwrap();
    reg.register(counting_tool(
        "reader",
        vec![Permission::Read],
        runs.clone(),
    ))
    .unwrap();
    let mut events = reg.subscribe();

    let inv = reg.invoke("writer", json!({"text": "x"})).await;
    assert!(matches!(inv.output, Err(ToolError::PermissionDenied(..))));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(!inv.output.unwrap_err().is_recoverable());
    match events.recv().await.unwrap() {
        ToolEvent::PermissionDenied { tool, reason, .. } => {
            assert_eq!(tool, "writer");
            assert!(reason.contains("add \"write\" to `allowed`"), "{reason}");
        }
        other => panic!("expected PermissionDenied event, got {other:?}"),
    }
    assert!(matches!(
        events.recv().await.unwrap(),
        ToolEvent::Completed { ok: false, .. }
    ));

    assert!(reg.invoke("reader", json!({"text": "x"})).await.is_ok());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

// ---------- seed 002 test 2 + approvals ----------

fn destructive_file_tool(name: &str) -> Arc<dyn BaseTool> {
    DynamicTool::builder(name)
        .description("Create a marker file at the given path (destructive test tool)")
        .parameters(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))
        .permissions(vec![Permission::Delete])
        .handler(|args, _| async move {
            let path = args["path"].as_str().unwrap_or_default().to_string();
            std::fs::write(&path, b"ran").map_err(ToolError::from)?;
            Ok(ToolOutput::text("done"))
        })
        .build_dyn()
}

#[tokio::test]
async fn destructive_tool_without_approver_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("mark");
    let reg = ToolRegistry::new();
    reg.register(destructive_file_tool("rm_rf")).unwrap();
    let inv = reg
        .invoke("rm_rf", json!({"path": mark.to_str().unwrap()}))
        .await;
    let err = inv.output.unwrap_err();
    assert!(matches!(err, ToolError::PermissionDenied(..)), "{err:?}");
    assert!(err.to_string().contains("no approver is configured"));
    assert!(!mark.exists(), "the destructive tool ran without approval");
}

struct Scripted {
    answers: std::sync::Mutex<Vec<ApprovalDecision>>,
    asked: AtomicUsize,
}

#[async_trait]
impl Approver for Scripted {
    async fn approve(&self, req: &ApprovalRequest) -> ApprovalDecision {
        assert_eq!(req.risk, RiskLevel::Destructive);
        assert!(req.reason.contains("delete"));
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.answers.lock().unwrap().remove(0)
    }
}

#[tokio::test]
async fn approver_deny_once_and_always() {
    let dir = tempfile::tempdir().unwrap();
    let approver = Arc::new(Scripted {
        answers: std::sync::Mutex::new(vec![
            ApprovalDecision::Deny,
            ApprovalDecision::AllowOnce,
            ApprovalDecision::AllowAlways,
        ]),
        asked: AtomicUsize::new(0),
    });
    let reg = ToolRegistry::new().with_approver(approver.clone());
    reg.register(destructive_file_tool("rm_rf")).unwrap();
    let mut events = reg.subscribe();
    let path = |n: &str| dir.path().join(n).to_str().unwrap().to_string();

    let denied = reg.invoke("rm_rf", json!({"path": path("a")})).await;
    assert!(
        denied
            .output
            .unwrap_err()
            .to_string()
            .contains("approver denied")
    );
    assert!(!dir.path().join("a").exists());
    assert!(
        reg.invoke("rm_rf", json!({"path": path("b")}))
            .await
            .is_ok()
    );
    assert!(
        reg.invoke("rm_rf", json!({"path": path("c")}))
            .await
            .is_ok()
    );
    // "Allow always" is remembered: the approver is not asked again.
    assert!(
        reg.invoke("rm_rf", json!({"path": path("d")}))
            .await
            .is_ok()
    );
    assert_eq!(approver.asked.load(Ordering::SeqCst), 3);
    assert!(dir.path().join("b").exists() && dir.path().join("d").exists());

    let mut decided = Vec::new();
    while let Ok(ev) = events.try_recv() {
        if let ToolEvent::ApprovalDecided { decision, by, .. } = ev {
            decided.push((decision, by));
        }
    }
    assert_eq!(
        decided,
        vec![
            (ApprovalDecision::Deny, "approver".to_string()),
            (ApprovalDecision::AllowOnce, "approver".to_string()),
            (ApprovalDecision::AllowAlways, "approver".to_string()),
            (ApprovalDecision::AllowAlways, "remembered".to_string()),
        ]
    );
    // After a reset the approver is asked again; a panicking approver counts as a denial.
    reg.reset_approvals();
    let inv = reg.invoke("rm_rf", json!({"path": path("e")})).await;
    assert!(matches!(inv.output, Err(ToolError::PermissionDenied(..))));
    assert_eq!(approver.asked.load(Ordering::SeqCst), 4);
    assert!(!dir.path().join("e").exists());
}

// ---------- seed 000 criterion 8: invoke_all in parallel ----------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invoke_all_runs_in_parallel_and_keeps_input_order() {
    // Both calls wait on a barrier of 2: they can only finish if they run at the same time.
    let barrier = Arc::new(Barrier::new(2));
    let reg = ToolRegistry::new();
    reg.register(
        DynamicTool::builder("meet")
            .description("Wait until the other call arrives, then answer")
            .parameters(json!({"type": "object", "properties": {"n": {"type": "integer"}}}))
            .handler({
                let barrier = barrier.clone();
                move |args, _| {
                    let barrier = barrier.clone();
                    async move {
                        barrier.wait().await;
                        Ok(ToolOutput::json(args["n"].clone()))
                    }
                }
            })
            .build_dyn(),
    )
    .unwrap();
    reg.register(counting_tool("echo", vec![], Arc::default()))
        .unwrap();
    let calls = vec![
        ("meet".to_string(), json!({"n": 1})),
        ("missing".to_string(), json!({})),
        ("meet".to_string(), json!({"n": 2})),
        ("echo".to_string(), json!({"text": "e"})),
    ];
    let results = tokio::time::timeout(Duration::from_secs(30), reg.invoke_all(calls))
        .await
        .expect("calls did not run in parallel (barrier never released)");
    assert_eq!(results.len(), 4);
    assert_eq!(results[0].output.as_ref().unwrap().canonical, 1);
    assert!(matches!(results[1].output, Err(ToolError::NotFound(_))));
    assert_eq!(results[2].output.as_ref().unwrap().canonical, 2);
    assert_eq!(results[3].output.as_ref().unwrap().render, "e");
    let ids: std::collections::HashSet<_> = results.iter().map(|r| r.call_id.clone()).collect();
    assert_eq!(ids.len(), 4, "call ids are unique");
}

// ---------- execution limits ----------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifth_call_waits_for_a_free_slot() {
    let running = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicUsize::new(0));
    let max_seen = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(Notify::new());
    let reg = ToolRegistry::new(); // default limit: 4
    reg.register(
        DynamicTool::builder("hold")
            .description("Hold a concurrency slot until released")
            .handler({
                let (running, started, max_seen, gate) = (
                    running.clone(),
                    started.clone(),
                    max_seen.clone(),
                    gate.clone(),
                );
                move |_, _| {
                    let (running, started, max_seen, gate) = (
                        running.clone(),
                        started.clone(),
                        max_seen.clone(),
                        gate.clone(),
                    );
                    async move {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        started.fetch_add(1, Ordering::SeqCst);
                        max_seen.fetch_max(now, Ordering::SeqCst);
                        gate.notified().await;
                        running.fetch_sub(1, Ordering::SeqCst);
                        Ok(ToolOutput::text("released"))
                    }
                }
            })
            .build_dyn(),
    )
    .unwrap();
    let calls: Vec<_> = (0..5).map(|_| ("hold".to_string(), json!({}))).collect();
    let task = tokio::spawn({
        let reg = reg.clone();
        async move { reg.invoke_all(calls).await }
    });
    // Wait (bounded) until four calls hold a slot.
    for _ in 0..2_000 {
        if started.load(Ordering::SeqCst) == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Give the fifth every chance to (wrongly) start.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        started.load(Ordering::SeqCst),
        4,
        "the fifth call must wait"
    );
    // Release one slot at a time until all five are done.
    for _ in 0..2_000 {
        gate.notify_waiters();
        if task.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let results = task.await.unwrap();
    assert!(results.iter().all(|r| r.is_ok()));
    assert_eq!(started.load(Ordering::SeqCst), 5);
    assert_eq!(max_seen.load(Ordering::SeqCst), 4);
}

#[tokio::test(start_paused = true)]
async fn a_sleeping_tool_times_out_and_sees_cancellation() {
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let reg = ToolRegistry::new();
    reg.register_with(
        DynamicTool::builder("sleepy")
            .description("Sleep for an hour unless cancelled")
            .handler({
                let saw_cancel = saw_cancel.clone();
                move |_, ctx| {
                    let saw_cancel = saw_cancel.clone();
                    async move {
                        // Watch for cancellation on a separate task so it is observed even
                        // after the registry drops this future.
                        let token = ctx.cancellation_token().clone();
                        tokio::spawn(async move {
                            token.cancelled().await;
                            saw_cancel.fetch_add(1, Ordering::SeqCst);
                        });
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        Ok(ToolOutput::text("woke"))
                    }
                }
            })
            .build_dyn(),
        ToolMetadata {
            timeout: Some(Duration::from_millis(200)),
            ..Default::default()
        },
    )
    .unwrap();
    let inv = reg.invoke("sleepy", json!({})).await;
    match inv.output {
        Err(ToolError::Timeout(name, d)) => {
            assert_eq!((name.as_str(), d), ("sleepy", Duration::from_millis(200)));
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    tokio::task::yield_now().await;
    assert_eq!(saw_cancel.load(Ordering::SeqCst), 1);
    // Registry-wide default applies when the tool sets none.
    let reg2 = ToolRegistry::new().with_timeout(Duration::from_millis(50));
    reg2.register(
        DynamicTool::builder("sleepy2")
            .description("Sleep for an hour, no timeout of its own")
            .handler(|_, _| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(ToolOutput::text("woke"))
            })
            .build_dyn(),
    )
    .unwrap();
    assert!(matches!(
        reg2.invoke("sleepy2", json!({})).await.output,
        Err(ToolError::Timeout(..))
    ));
}

#[tokio::test]
async fn caller_cancellation_stops_the_call() {
    let reg = ToolRegistry::new();
    reg.register(
        DynamicTool::builder("forever")
            .description("Never finishes on its own")
            .handler(|_, _| async {
                futures::future::pending::<()>().await;
                Ok(ToolOutput::text("unreachable"))
            })
            .build_dyn(),
    )
    .unwrap();
    let ctx = ToolContext::default();
    let token = ctx.cancellation_token().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        token.cancel();
    });
    let inv = reg
        .invoke_call(ToolCall::new("forever", json!({})), &ctx)
        .await;
    assert!(matches!(inv.output, Err(ToolError::Cancelled(_))));
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_and_others_still_work() {
    let reg = ToolRegistry::new();
    reg.register(
        DynamicTool::builder("boom")
            .description("Panics on purpose")
            .handler(|_, _| async { panic!("kaboom") })
            .build_dyn(),
    )
    .unwrap();
    reg.register(counting_tool("echo", vec![], Arc::default()))
        .unwrap();
    let inv = reg.invoke("boom", json!({})).await;
    let err = inv.output.unwrap_err();
    assert!(
        err.to_string().contains("kaboom") && err.is_recoverable(),
        "{err}"
    );
    assert!(
        reg.invoke("echo", json!({"text": "still fine"}))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn long_results_are_truncated_head_and_tail_with_a_marker() {
    let reg = ToolRegistry::new().with_max_result_bytes(1_000);
    reg.register(
        DynamicTool::builder("big")
            .description("Return a long text")
            .handler(|_, _| async {
                let text: String = (0..5_000).map(|i| format!("{:05}\n", i)).collect();
                Ok(ToolOutput::text(text))
            })
            .build_dyn(),
    )
    .unwrap();
    let inv = reg.invoke("big", json!({})).await;
    assert!(inv.truncated);
    let out = inv.output.unwrap();
    assert!(out.render.starts_with("00000\n00001\n"));
    assert!(out.render.trim_end().ends_with("04999"));
    assert!(out.render.contains("[truncated: "), "{}", out.render);
    assert!(out.render.len() < 1_300);
    // The canonical value stays whole for the host.
    assert_eq!(out.canonical.as_str().unwrap().len(), 30_000);
}

// ---------- the registry changes while calls are in flight ----------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_changes_while_calls_are_in_flight() {
    let gate = Arc::new(Notify::new());
    let entered = Arc::new(Notify::new());
    let reg = ToolRegistry::new();
    reg.register(
        DynamicTool::builder("slow_v1")
            .description("Waits for the gate, then answers v1")
            .handler({
                let (gate, entered) = (gate.clone(), entered.clone());
                move |_, _| {
                    let (gate, entered) = (gate.clone(), entered.clone());
                    async move {
                        entered.notify_one();
                        gate.notified().await;
                        Ok(ToolOutput::text("v1"))
                    }
                }
            })
            .build_dyn(),
    )
    .unwrap();
    let inflight = tokio::spawn({
        let reg = reg.clone();
        async move { reg.invoke("slow_v1", json!({})).await }
    });
    entered.notified().await;
    // Mutate through another clone of the handle while the call is running.
    let other = reg.clone();
    assert!(other.unregister("slow_v1").is_some());
    other
        .register(counting_tool("newcomer", vec![], Arc::default()))
        .unwrap();
    assert!(matches!(
        reg.invoke("slow_v1", json!({})).await.output,
        Err(ToolError::NotFound(_))
    ));
    assert!(reg.invoke("newcomer", json!({"text": "n"})).await.is_ok());
    gate.notify_one();
    let done = inflight.await.unwrap();
    assert_eq!(
        done.output.unwrap().render,
        "v1",
        "the in-flight call finishes normally"
    );
}

// ---------- context, events, audit ----------

#[derive(Clone, Debug, PartialEq)]
struct ApiToken(String);
#[derive(Clone, Debug, PartialEq)]
struct RowsScanned(u64);

#[tokio::test]
async fn context_values_flow_in_and_result_values_flow_out() {
    let reg = ToolRegistry::new();
    reg.register(
        DynamicTool::builder("authed")
            .description("Needs an API token from the host")
            .handler(|_, ctx| async move {
                let token = ctx.require::<ApiToken>()?.0.clone();
                ctx.insert_result(RowsScanned(42));
                Ok(ToolOutput::text(format!("used {}", token.len())))
            })
            .build_dyn(),
    )
    .unwrap();
    let ctx = ToolContext::new("s", "t").with(ApiToken("abc".into()));
    let inv = reg
        .invoke_call(ToolCall::new("authed", json!({})), &ctx)
        .await;
    assert_eq!(inv.output.as_ref().unwrap().render, "used 3");
    assert_eq!(inv.extensions.get::<RowsScanned>(), Some(&RowsScanned(42)));
    // Without the value the tool gets a clear error.
    let inv = reg.invoke("authed", json!({})).await;
    assert!(inv.output.unwrap_err().to_string().contains("ApiToken"));
}

#[tokio::test]
async fn events_and_audit_log_with_redaction() {
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let reg = ToolRegistry::new();
    reg.add_listener(Arc::new(JsonlAuditSink::open(&audit).unwrap()));
    reg.register(
        DynamicTool::builder("login")
            .description("Log in with a user name and password")
            .parameters(json!({"type": "object", "properties": {"user": {"type": "string"}, "password": {"type": "string"}}}))
            .handler(|_, _| async { Ok(ToolOutput::text("welcome")) })
            .build_dyn(),
    )
    .unwrap();
    let mut rx = reg.subscribe();
    reg.invoke_call(
        ToolCall::with_id(
            "c-9",
            "login",
            json!({"user": "bob", "password": "hunter2"}),
        ),
        &ToolContext::default(),
    )
    .await;
    let first = rx.recv().await.unwrap();
    let second = rx.recv().await.unwrap();
    assert!(matches!(first, ToolEvent::Started { ref call_id, .. } if call_id == "c-9"));
    assert!(matches!(second, ToolEvent::Completed { ok: true, .. }));

    let text = std::fs::read_to_string(&audit).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["event"], "started");
    assert_eq!(lines[0]["input"]["user"], "bob");
    assert_eq!(lines[0]["input"]["password"], "[REDACTED]");
    assert!(!text.contains("hunter2"));
    assert_eq!(lines[1]["event"], "completed");
    assert!(lines[1]["duration"].as_f64().unwrap() >= 0.0);
}
