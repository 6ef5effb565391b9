//! An argument of the native `#[tool]` that a plugin's `describe()` cannot carry.

/// Adds one to a number.
#[toolhost_sdk::tool(timeout = "2s")]
fn inc(
    /// The number.
    x: f64,
) -> f64 {
    x + 1.0
}

fn main() {}
