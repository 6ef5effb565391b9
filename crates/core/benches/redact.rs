//! `redact`: what replacing a plugin's config values costs on a tool's output
//! (`Redactor::output`: the render text, every string of the structured value), against
//! passing the same output through with no values given (the path of every plugin
//! without config), in the same run. Outputs: a small result (the size of `calc.add`'s)
//! and a 20 KB one (the render budget a model is shown).
//!
//! Run: `cargo bench -p toolhost-core --bench redact`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolhost_core::secrets::Redactor;
use toolhost_core::tools::ToolOutput;

fn outputs() -> [(&'static str, ToolOutput); 2] {
    let small = ToolOutput::new(json!({"sum": 5}), "5");
    let line = "station 42: 17.5 C, wind 12 km/h from the north-west, humidity 61 %\n";
    let text: String = line.repeat(20_000 / line.len());
    let rows: Vec<_> = (0..200)
        .map(|i| json!({"station": i, "note": line.trim()}))
        .collect();
    let large = ToolOutput::new(json!({ "rows": rows }), text);
    [("small", small), ("20k", large)]
}

fn bench(c: &mut Criterion) {
    let none = Redactor::default();
    let one = Redactor::new([("API_KEY", "sk-live-7f3a9c21e4b8d6055aa1")]);
    let keys: Vec<(String, String)> = (0..16)
        .map(|i| (format!("KEY_{i}"), format!("secret-value-{i:04}-abcdefgh")))
        .collect();
    let sixteen = Redactor::new(keys.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mut g = c.benchmark_group("redact");
    for (name, out) in outputs() {
        for (label, r) in [("none", &none), ("1_key", &one), ("16_keys", &sixteen)] {
            g.bench_function(format!("{name}/{label}"), |b| {
                b.iter(|| black_box(r.output(black_box(out.clone()))))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
