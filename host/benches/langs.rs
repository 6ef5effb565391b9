//! Criterion benchmark `langs` (placeholder until its owner fills it).

fn main() {}
