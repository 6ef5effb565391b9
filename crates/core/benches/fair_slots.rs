//! `fair_slots`: the throughput cost of fair scheduling. The registry's whole pipeline on
//! a trivial native tool, called by 1, 8 and 64 clients at once (each its own `Caller`),
//! against the same calls through a plain `tokio::sync::Semaphore` of the same size
//! around the pipeline with fairness taken out of the way (every call as one client, the
//! registry's slots made large), in the same run.
//!
//! Run: `cargo bench -p toolhost-core --bench fair_slots`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use tokio::sync::Semaphore;
use toolhost_core::tools::{Caller, PermissionChecker, Tool, ToolCall, ToolContext, ToolRegistry};
use toolhost_testkit::tools::Add;

/// Calls each client makes per iteration.
const CALLS: usize = 32;
/// Execution slots (the registry's default).
const SLOTS: usize = 4;

fn registry(slots: usize) -> ToolRegistry {
    let r = ToolRegistry::new()
        .with_permission_checker(PermissionChecker::default())
        .with_max_concurrent(slots);
    r.register(Add.into_dyn()).unwrap();
    r
}

/// `clients` tasks each making [`CALLS`] calls; `gate` (the baseline) wraps every call.
async fn run(registry: &ToolRegistry, clients: usize, gate: Option<Arc<Semaphore>>) {
    let mut tasks = Vec::with_capacity(clients);
    for c in 0..clients {
        let registry = registry.clone();
        let gate = gate.clone();
        let mut ctx = ToolContext::new("bench", "bench");
        if gate.is_none() {
            ctx = ctx.with(Caller::new(format!("client-{c}")));
        }
        tasks.push(tokio::spawn(async move {
            for _ in 0..CALLS {
                let call = ToolCall::with_id("b", "add", json!({"x": 2, "y": 3}));
                let _permit = match &gate {
                    Some(g) => Some(g.clone().acquire_owned().await.unwrap()),
                    None => None,
                };
                let inv = registry.invoke_call(call, &ctx).await;
                assert!(inv.output.is_ok());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fair = registry(SLOTS);
    // The baseline: today's semaphore of SLOTS outside, the registry's own slots never
    // the bottleneck (one client, a pool larger than any number of calls in flight).
    let plain = registry(1 << 20);
    let mut g = c.benchmark_group("fair_slots");
    for clients in [1usize, 8, 64] {
        g.throughput(Throughput::Elements((clients * CALLS) as u64));
        g.bench_with_input(BenchmarkId::new("fair", clients), &clients, |b, &n| {
            b.to_async(&rt).iter(|| run(&fair, n, None));
        });
        g.bench_with_input(BenchmarkId::new("semaphore", clients), &clients, |b, &n| {
            let gate = Arc::new(Semaphore::new(SLOTS));
            b.to_async(&rt).iter(|| run(&plain, n, Some(gate.clone())));
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
