//! No description for the tool or its parameters.

#[toolhost_core::tool]
fn add(x: i64, y: i64) -> i64 {
    x + y
}

fn main() {}
