//! A toolbox method taking `&mut self`: tools may run concurrently.

struct Counter(u64);

#[toolhost_core::toolbox]
impl Counter {
    /// Increments the counter and returns the new value.
    #[tool]
    fn bump(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

fn main() {}
