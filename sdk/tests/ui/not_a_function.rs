//! `#[tool]` on a struct: it goes on a function.

/// Two operands of an operation.
#[toolhost_sdk::tool]
struct Pair;

fn main() {}
