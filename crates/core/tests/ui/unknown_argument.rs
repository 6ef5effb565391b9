//! A misspelt attribute argument.

/// Adds two integers x and y.
#[toolhost_core::tool(nmae = "plus")]
fn add(
    /// The first addend.
    x: i64,
    /// The second addend.
    y: i64,
) -> i64 {
    x + y
}

fn main() {}
