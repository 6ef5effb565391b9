//! A tool whose output cannot be serialised to JSON.

struct Handle;

/// Opens something and returns a handle that is not JSON.
#[toolhost_sdk::tool]
fn open(
    /// What to open.
    what: String,
) -> Handle {
    let _ = what;
    Handle
}

fn main() {}
