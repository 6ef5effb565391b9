//! A tool whose output cannot be serialised to JSON.

struct Handle;

/// Opens something and returns a handle that is not JSON.
#[toolhost_core::tool]
fn open(
    /// What to open.
    what: String,
) -> Result<Handle, toolhost_core::ToolError> {
    let _ = what;
    Ok(Handle)
}

fn main() {}
