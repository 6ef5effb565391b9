//! Criterion benchmark `llm_loop` (placeholder until its owner fills it).

fn main() {}
