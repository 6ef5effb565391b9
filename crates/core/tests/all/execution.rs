//! Pipeline stage 4: parallel fan-out in input order, the concurrency limit, timeouts,
//! cancellation, panics, truncation, and the registry changing while calls run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio::sync::{Barrier, Notify};
use toolhost_core::tools::*;

use crate::support::*;

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
    let inv = reg.invoke_recorded("sleepy", json!({})).await;
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
        reg2.invoke_recorded("sleepy2", json!({})).await.output,
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
    reg.register(toolhost_testkit::tools::panicking()).unwrap();
    reg.register(counting_tool("echo", vec![], Arc::default()))
        .unwrap();
    let inv = reg.invoke_recorded("boom", json!({})).await;
    let err = inv.output.unwrap_err();
    assert!(
        err.to_string().contains("kaboom") && err.is_recoverable() && err.kind() == "panicked",
        "{err}"
    );
    assert!(
        reg.invoke_recorded("echo", json!({"text": "still fine"}))
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
    let inv = reg.invoke_recorded("big", json!({})).await;
    assert!(inv.truncated);
    let out = inv.output.unwrap();
    assert!(out.render.starts_with("00000\n00001\n"));
    assert!(out.render.trim_end().ends_with("04999"));
    assert!(out.render.contains("[truncated: "), "{}", out.render);
    assert!(out.render.len() < 1_300);
    // The canonical value stays whole for the host.
    assert_eq!(out.canonical.as_str().unwrap().len(), 30_000);
}

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
        async move { reg.invoke_recorded("slow_v1", json!({})).await }
    });
    entered.notified().await;
    // Mutate through another clone of the handle while the call is running.
    let other = reg.clone();
    assert!(other.unregister("slow_v1").is_some());
    other
        .register(counting_tool("newcomer", vec![], Arc::default()))
        .unwrap();
    assert!(matches!(
        reg.invoke_recorded("slow_v1", json!({})).await.output,
        Err(ToolError::NotFound(_))
    ));
    assert!(
        reg.invoke_recorded("newcomer", json!({"text": "n"}))
            .await
            .is_ok()
    );
    gate.notify_one();
    let done = inflight.await.unwrap();
    assert_eq!(
        done.output.unwrap().render,
        "v1",
        "the in-flight call finishes normally"
    );
}

/// A tool that sleeps an hour unless stopped, with a 10 s timeout of its own.
fn hour_sleeper(reg: &ToolRegistry) {
    reg.register_with(
        DynamicTool::builder("hour")
            .description("Sleep for an hour unless stopped")
            .handler(|_, _| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(ToolOutput::text("woke"))
            })
            .build_dyn(),
        ToolMetadata {
            timeout: Some(Duration::from_secs(10)),
            ..Default::default()
        },
    )
    .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_caller_deadline_tighter_than_the_tool_timeout_ends_the_call_as_timeout() {
    let reg = ToolRegistry::new();
    hour_sleeper(&reg);
    let ctx = ToolContext::default()
        .with_deadline(tokio::time::Instant::now() + Duration::from_millis(300));
    let inv = reg
        .invoke_call(ToolCall::new("hour", json!({})), &ctx)
        .await;
    match inv.output {
        Err(ToolError::Timeout(name, d)) => {
            assert_eq!((name.as_str(), d), ("hour", Duration::from_millis(300)));
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    // A looser caller deadline leaves the tool's own timeout in force.
    let ctx = ToolContext::default()
        .with_deadline(tokio::time::Instant::now() + Duration::from_secs(3000));
    let inv = reg
        .invoke_call(ToolCall::new("hour", json!({})), &ctx)
        .await;
    assert!(
        matches!(&inv.output, Err(ToolError::Timeout(_, d)) if *d == Duration::from_secs(10)),
        "{:?}",
        inv.output
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_waiting_for_a_slot_past_the_caller_deadline_times_out_without_running() {
    let reg = ToolRegistry::new().with_max_concurrent(1);
    hour_sleeper(&reg);
    let runs = Arc::new(AtomicUsize::new(0));
    reg.register(counting_tool("counted", vec![], runs.clone()))
        .unwrap();
    // The only slot is held by a call that sleeps until its own 10 s timeout.
    let busy = tokio::spawn({
        let reg = reg.clone();
        async move { reg.invoke_recorded("hour", json!({})).await }
    });
    tokio::task::yield_now().await;
    let ctx = ToolContext::default()
        .with_deadline(tokio::time::Instant::now() + Duration::from_millis(500));
    let inv = reg
        .invoke_call(ToolCall::new("counted", json!({"text": "x"})), &ctx)
        .await;
    assert!(
        matches!(inv.output, Err(ToolError::Timeout(..))),
        "{:?}",
        inv.output
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "it never ran");
    busy.await.unwrap();
    // With the slot free again, the same tool runs.
    assert!(
        reg.invoke_recorded("counted", json!({"text": "x"}))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn the_caller_result_limit_applies_when_tighter_and_errors_are_bounded_too() {
    let reg = ToolRegistry::new();
    reg.register(
        DynamicTool::builder("long")
            .description("Return or fail with a long text")
            .parameters(json!({"type": "object", "properties": {"fail": {"type": "boolean"}}}))
            .handler(|args, _| async move {
                let text = "é".repeat(15_000);
                if args["fail"] == json!(true) {
                    Err(ToolError::failed("long", text))
                } else {
                    Ok(ToolOutput::text(text))
                }
            })
            .build_dyn(),
    )
    .unwrap();
    let ctx = ToolContext::default().with_max_result_bytes(1_000);
    let ok = reg
        .invoke_call(ToolCall::new("long", json!({})), &ctx)
        .await;
    assert!(ok.truncated);
    assert!(ok.model_text().len() < 1_200, "{}", ok.model_text().len());
    let err = reg
        .invoke_call(ToolCall::new("long", json!({"fail": true})), &ctx)
        .await;
    let text = err.model_text();
    assert!(text.len() < 1_300, "{}", text.len());
    assert!(text.contains("truncated"), "{text}");
    assert!(matches!(err.output, Err(ToolError::ExecutionFailed(..))));
    // Without a caller limit, the registry's own (20 000 bytes) applies.
    let ok = reg.invoke_recorded("long", json!({})).await;
    assert!(ok.truncated && ok.model_text().len() > 10_000);
}

/// A tool that keeps its deadline: it reads it from its context. With `late`, it answers
/// after it (the registry must not race it); without, it reports `Timeout` at once with a
/// budget of its own reckoning.
fn deadline_keeper(reg: &ToolRegistry, seen: Arc<std::sync::Mutex<Vec<Duration>>>) {
    reg.register_with(
        DynamicTool::builder("keeper")
            .description("Stops itself at the deadline the registry hands it")
            .handler(move |args, ctx| {
                let seen = seen.clone();
                async move {
                    let now = tokio::time::Instant::now();
                    let Some(deadline) = ctx.deadline() else {
                        return Ok(ToolOutput::text("no deadline"));
                    };
                    seen.lock().unwrap().push(deadline - now);
                    if args["late"] == true {
                        tokio::time::sleep_until(deadline + Duration::from_secs(5)).await;
                        return Ok(ToolOutput::text("answered late"));
                    }
                    Err(ToolError::Timeout("keeper".into(), Duration::from_secs(1)))
                }
            })
            .build_dyn(),
        ToolMetadata {
            timeout: Some(Duration::from_secs(10)),
            keeps_deadline: true,
            ..Default::default()
        },
    )
    .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_keeps_its_deadline_gets_it_in_its_context_and_no_second_timer() {
    let reg = ToolRegistry::new();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    deadline_keeper(&reg, seen.clone());
    // The tool's own timeout, then a tighter caller deadline: each is the one deadline.
    let own = reg.invoke_recorded("keeper", json!({})).await;
    let ctx = ToolContext::default()
        .with_deadline(tokio::time::Instant::now() + Duration::from_millis(300));
    let tight = reg
        .invoke_call(ToolCall::new("keeper", json!({})), &ctx)
        .await;
    assert_eq!(
        *seen.lock().unwrap(),
        [Duration::from_secs(10), Duration::from_millis(300)]
    );
    // The tool's `Timeout` speaks of the call's budget, as the registry reckons it.
    match (own.output, tight.output) {
        (Err(ToolError::Timeout(_, a)), Err(ToolError::Timeout(_, b))) => {
            assert_eq!(
                (a, b),
                (Duration::from_secs(10), Duration::from_millis(300))
            );
        }
        other => panic!("expected Timeout twice, got {other:?}"),
    }
    // The registry started no timer of its own: a keeper that answers past the deadline
    // is not cut off.
    let late = reg.invoke_recorded("keeper", json!({"late": true})).await;
    assert_eq!(late.output.unwrap().render, "answered late");
}

#[tokio::test]
async fn a_tool_may_end_with_a_json_value_into_its_output() {
    let reg = ToolRegistry::new();
    reg.register(
        DynamicTool::builder("weather")
            .description("The weather, as the design's example writes it")
            .handler(|_, _| async { Ok(json!({"city": "Beijing", "temp_c": 22}).into()) })
            .build_dyn(),
    )
    .unwrap();
    let out = reg
        .invoke_recorded("weather", json!({}))
        .await
        .output
        .unwrap();
    assert_eq!(out.canonical, json!({"city": "Beijing", "temp_c": 22}));
    assert_eq!(out.render, r#"{"city":"Beijing","temp_c":22}"#);
}

/// Records the `output` of every `Completed` event; asks for it when `wants` is set.
struct Outputs {
    wants: bool,
    seen: std::sync::Mutex<Vec<Option<serde_json::Value>>>,
}

impl ToolEventListener for Outputs {
    fn on_event(&self, event: &ToolEvent) {
        if let ToolEvent::Completed { output, .. } = event {
            self.seen.lock().unwrap().push(output.as_deref().cloned());
        }
    }

    fn wants_output(&self) -> bool {
        self.wants
    }
}

#[tokio::test]
async fn a_listener_that_asks_sees_the_canonical_value_and_the_audit_line_does_not() {
    let reg = ToolRegistry::new();
    reg.register(
        DynamicTool::builder("structured")
            .description("Answers with a structured value")
            .handler(|_, _| async { Ok(json!({"answer": 42}).into()) })
            .build_dyn(),
    )
    .unwrap();
    let quiet = Arc::new(Outputs {
        wants: false,
        seen: Default::default(),
    });
    reg.add_listener(quiet.clone());
    reg.invoke_recorded("structured", json!({})).await;
    assert_eq!(*quiet.seen.lock().unwrap(), [None], "nobody asked");

    let asks = Arc::new(Outputs {
        wants: true,
        seen: Default::default(),
    });
    reg.add_listener(asks.clone());
    let mut events = reg.subscribe();
    reg.invoke_recorded("structured", json!({})).await;
    assert_eq!(*asks.seen.lock().unwrap(), [Some(json!({"answer": 42}))]);
    // Serialised (what an audit trail writes), the event holds the digest, not the value.
    let line = loop {
        let ev = events.recv().await.unwrap();
        if let ToolEvent::Completed { output, .. } = &ev {
            assert!(output.is_some());
            break serde_json::to_string(&ev).unwrap();
        }
    };
    assert!(
        line.contains("\"result\"") && !line.contains("\"answer\""),
        "{line}"
    );
}
