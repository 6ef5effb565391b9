//! A tool name the registry would refuse, and a timeout without a unit.

/// Adds two integers x and y.
#[toolhost_core::tool(name = "add numbers")]
fn add(
    /// The first addend.
    x: i64,
) -> i64 {
    x
}

/// Subtracts two integers x and y.
#[toolhost_core::tool(timeout = "30")]
fn sub(
    /// The first operand.
    x: i64,
) -> i64 {
    x
}

fn main() {}
