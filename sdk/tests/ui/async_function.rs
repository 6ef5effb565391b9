//! A plugin tool is a plain function: the component runs one call at a time.

/// Waits for nothing and returns.
#[toolhost_sdk::tool]
async fn wait(
    /// How long.
    ms: u64,
) -> u64 {
    ms
}

fn main() {}
