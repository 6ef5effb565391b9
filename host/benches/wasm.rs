//! Criterion benchmark `wasm` (placeholder until its owner fills it).

fn main() {}
