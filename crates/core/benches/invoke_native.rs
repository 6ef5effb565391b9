//! `invoke_native`: the whole registry pipeline (lookup, schema validation, permission
//! gate, concurrency permit, timeout, render) on a trivial native tool, against calling the
//! same function directly and through `BaseTool::execute`, in the same run.
//!
//! Run: `cargo bench -p toolhost-core --bench invoke_native`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolhost_core::tools::{
    PermissionChecker, Tool, ToolCall, ToolContext, ToolError, ToolRegistry,
};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    x: i64,
    y: i64,
}

#[derive(Serialize)]
struct Sum {
    sum: i64,
}

#[inline(never)]
fn add(a: i64, b: i64) -> i64 {
    a + b
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
    async fn call(&self, a: AddArgs, _ctx: &ToolContext) -> Result<Sum, ToolError> {
        Ok(Sum { sum: add(a.x, a.y) })
    }
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
    g.finish();
    assert!(Arc::strong_count(&tool) >= 2);
}

criterion_group!(benches, bench);
criterion_main!(benches);
