//! An error type that neither converts into `ToolError` nor implements `Display`.

struct Opaque;

/// Fails with an error that cannot be printed.
#[toolhost_core::tool]
fn fail(
    /// Anything.
    x: i64,
) -> Result<i64, Opaque> {
    let _ = x;
    Err(Opaque)
}

fn main() {}
