//! `invoke_native`: the whole registry pipeline (lookup, schema validation, permission
//! gate, concurrency permit, timeout, render) on a trivial native tool, against calling the
//! same function directly and through `BaseTool::execute`, in the same run.
//!
//! Run: `cargo bench -p toolhost-core --bench invoke_native`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolhost_core::tools::audit::{AuditLog, RotatingFile};
use toolhost_core::tools::{PermissionChecker, Tool, ToolCall, ToolContext, ToolRegistry};
use toolhost_testkit::tools::Add;

/// The function the tool computes, called directly as the baseline.
#[inline(never)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tool = Add.into_dyn();
    let registry = ToolRegistry::new().with_permission_checker(PermissionChecker::default());
    registry.register(tool.clone()).unwrap();
    let args = json!({"x": 2, "y": 3});
    let ctx = ToolContext::new("bench", "bench");

    let mut g = c.benchmark_group("invoke_native");
    g.bench_function("direct_fn", |b| b.iter(|| add(black_box(2), black_box(3))));
    g.bench_function("base_tool_execute", |b| {
        b.to_async(&rt).iter(|| {
            let (tool, args, ctx) = (tool.clone(), args.clone(), ctx.clone());
            async move { black_box(tool.execute(args, &ctx).await.unwrap()) }
        })
    });
    g.bench_function("registry_invoke", |b| {
        b.to_async(&rt).iter(|| {
            let (registry, args, ctx) = (registry.clone(), args.clone(), ctx.clone());
            async move {
                let inv = registry
                    .invoke_call(ToolCall::with_id("c", "add", args), &ctx)
                    .await;
                black_box(inv.output.unwrap())
            }
        })
    });
    // The same pipeline with the audit trail attached: one record per call, written to
    // a rotating file (the cost `serve` and `chat` pay by default).
    let dir = tempfile::tempdir().unwrap();
    let audited = ToolRegistry::new().with_permission_checker(PermissionChecker::default());
    audited.register(tool.clone()).unwrap();
    let file = RotatingFile::open(dir.path().join("audit.jsonl"), 10 << 20, 2).unwrap();
    audited.add_listener(Arc::new(AuditLog::new(file)));
    g.bench_function("registry_invoke_audited", |b| {
        b.to_async(&rt).iter(|| {
            let (registry, args, ctx) = (audited.clone(), args.clone(), ctx.clone());
            async move {
                let inv = registry
                    .invoke_call(ToolCall::with_id("c", "add", args), &ctx)
                    .await;
                black_box(inv.output.unwrap())
            }
        })
    });
    g.finish();
    assert!(Arc::strong_count(&tool) >= 2);
}

criterion_group!(benches, bench);
criterion_main!(benches);
