//! No description for the tool or its parameter.

#[toolhost_sdk::tool]
fn add(x: f64) -> f64 {
    x
}

fn main() {}
