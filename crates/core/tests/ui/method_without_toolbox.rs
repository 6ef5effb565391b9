//! `#[tool]` on a method, without `#[toolbox]` on its impl block.

struct Counter;

impl Counter {
    /// Returns the current count of the counter.
    #[toolhost_core::tool]
    fn get(&self) -> u64 {
        0
    }
}

fn main() {}
