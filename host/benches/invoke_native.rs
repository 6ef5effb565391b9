//! Criterion benchmark `invoke_native` (placeholder until its owner fills it).

fn main() {}
