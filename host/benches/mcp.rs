//! Criterion benchmark `mcp` (placeholder until its owner fills it).

fn main() {}
