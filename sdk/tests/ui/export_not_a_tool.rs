//! `export!` of a type that is not a `#[tool]` function.

struct Helper;

toolhost_sdk::export!([Helper]);

fn main() {}
