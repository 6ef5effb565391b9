//! `#[tool]` on a struct: it goes on a function.

/// A struct is not a tool.
#[toolhost_core::tool]
struct Add;

fn main() {}
