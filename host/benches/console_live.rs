//! Benchmark `console_live`: what the console's live view adds to a tool call, measured
//! where it is paid. With the console on, each completed call goes through
//! `LiveCalls::on_event` (one lock, a few counters, a bounded push) on the calling task;
//! each open live page costs one `snapshot()` a second, off the call path.
//!
//! Prints the nanoseconds of each (median of `ROUNDS` rounds of `N` events over 50 tool
//! names and 4 clients, as a busy serve sees them), and the listener's share of a call:
//! against 115 µs, the server CPU of one `tools/call` of `serve --stdio` on this machine
//! (docs/benchmarks.md, "serve's per-call path"). The goal is ≤ 2 %.
//! Run: `cargo bench -p toolhost --bench console_live`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use toolhost::console::LiveCalls;
use toolhost::tools::{ToolEvent, ToolEventListener, ToolSource};

const N: usize = 200_000;
const ROUNDS: usize = 7;
/// Server CPU of one `tools/call` through `serve --stdio`, µs (docs/benchmarks.md).
const CALL_CPU_US: f64 = 115.0;

fn event(i: usize) -> ToolEvent {
    ToolEvent::Completed {
        call_id: format!("c{i}"),
        invocation: i as u64,
        tool: format!("tool_{}", i % 50),
        session: String::new(),
        client: Some(format!("client_{}", i % 4)),
        source: Some(ToolSource::Wasm {
            path: "/p/calc.wasm".into(),
        }),
        input: serde_json::Value::Null,
        ok: !i.is_multiple_of(20),
        error_kind: i.is_multiple_of(20).then(|| "timeout".to_string()),
        error: None,
        duration: Duration::from_micros(100 + (i % 300) as u64),
        truncated: false,
        result: None,
        output: None,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let events: Vec<ToolEvent> = (0..N).map(event).collect();
    let live = LiveCalls::new();
    let mut per_event = Vec::new();
    let mut per_snapshot = Vec::new();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for e in &events {
            live.on_event(e);
        }
        per_event.push(t.elapsed().as_nanos() as f64 / N as f64);
        let t = Instant::now();
        for _ in 0..100 {
            std::hint::black_box(live.snapshot());
        }
        per_snapshot.push(t.elapsed().as_nanos() as f64 / 100.0);
    }
    let e = median(per_event);
    let s = median(per_snapshot);
    println!("LiveCalls::on_event (per completed call): {e:.0} ns");
    println!(
        "LiveCalls::snapshot (per open live page, once a second): {:.1} µs",
        s / 1000.0
    );
    println!(
        "share of a call ({CALL_CPU_US} µs of server CPU): {:.3} % (goal ≤ 2 %)",
        e / (CALL_CPU_US * 1000.0) * 100.0
    );
}
