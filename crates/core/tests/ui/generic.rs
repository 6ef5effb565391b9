//! A generic tool function: its schema must be fixed.

/// Echoes any value back to the model.
#[toolhost_core::tool]
fn echo<T: serde::Serialize>(
    /// The value.
    value: T,
) -> T {
    value
}

fn main() {}
