//! An error type that neither converts into `ToolError` nor implements `Display`.

struct Opaque;

/// Fails with an error that cannot be printed.
#[toolhost_sdk::tool]
fn fail(
    /// Anything.
    x: f64,
) -> Result<f64, Opaque> {
    let _ = x;
    Err(Opaque)
}

fn main() {}
