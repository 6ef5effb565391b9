//! A borrowed parameter: arguments are deserialised, so they must be owned.

/// Counts the characters of a text.
#[toolhost_sdk::tool]
fn count(
    /// The text.
    text: &str,
) -> usize {
    text.chars().count()
}

fn main() {}
