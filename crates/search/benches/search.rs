//! `search_tools` cost: one ranked query over 1,000 and 10,000 indexed tools, and the
//! build of the index (what a registry change costs the first search after it). The
//! baseline, same run: collecting every definition of the registry (what listing every
//! tool costs before any serialization).
//! Figures in docs/benchmarks.md, "Tool search".

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use toolhost_core::tools::{DynamicTool, ToolRegistry};
use toolhost_search::{Query, ToolIndex};

fn registry(n: usize) -> ToolRegistry {
    let verbs = [
        "read", "write", "list", "delete", "search", "convert", "send", "fetch",
    ];
    let things = [
        "file",
        "issue",
        "invoice",
        "calendar event",
        "email",
        "ticket",
        "image",
        "record",
        "forecast",
        "message",
        "repository",
        "customer",
    ];
    let r = ToolRegistry::new();
    for i in 0..n {
        let verb = verbs[i % verbs.len()];
        let thing = things[(i / verbs.len()) % things.len()];
        let name = format!("{verb}_{}_{i}", thing.replace(' ', "_"));
        let desc = format!(
            "{verb} a {thing} in service number {i}: returns the {thing} as JSON with its \
             id, owner and timestamps. Fails when the {thing} does not exist."
        );
        let params = serde_json::json!({"type": "object", "properties": {
            "id": {"type": "string", "description": format!("The {thing}'s identifier")},
            "limit": {"type": "integer", "description": "How many to return"}}});
        let tool = DynamicTool::builder(name)
            .description(desc)
            .parameters(params)
            .build_dyn();
        let _ = r.register(tool);
    }
    r
}

fn bench(c: &mut Criterion) {
    for n in [1_000, 10_000] {
        let r = registry(n);
        let index = ToolIndex::build(r.entries());
        let q = Query::new("send an email message to a customer", Some(8))
            .unwrap_or_else(|e| panic!("{e}"));
        c.bench_function(&format!("search_tools/{n}"), |b| {
            b.iter(|| black_box(index.search(&q, |_| true)))
        });
        c.bench_function(&format!("definitions/{n}"), |b| {
            b.iter(|| black_box(r.definitions()))
        });
        c.bench_function(&format!("index_build/{n}"), |b| {
            b.iter(|| black_box(ToolIndex::build(r.entries())))
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
