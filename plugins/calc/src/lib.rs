//! `calc`: pure arithmetic tools. Needs no permission.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError};

/// Two operands.
#[derive(Deserialize, JsonSchema)]
struct Pair {
    /// The first operand.
    x: f64,
    /// The second operand.
    y: f64,
}

/// A list of numbers.
#[derive(Deserialize, JsonSchema)]
struct Numbers {
    /// The numbers.
    values: Vec<f64>,
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new("add", "Adds two numbers x and y", |p: Pair| Ok(p.x + p.y)),
        Tool::new("multiply", "Multiplies two numbers x and y", |p: Pair| Ok(p.x * p.y)),
        Tool::new("divide", "Divides x by y (y must not be zero)", |p: Pair| {
            if p.y == 0.0 {
                return Err(ToolError::invalid("division by zero: y must not be 0"));
            }
            Ok(p.x / p.y)
        }),
        Tool::new("mean", "Arithmetic mean of a non-empty list of numbers", |n: Numbers| {
            if n.values.is_empty() {
                return Err(ToolError::invalid("values must not be empty"));
            }
            Ok(n.values.iter().sum::<f64>() / n.values.len() as f64)
        }),
    ]
}

toolhost_sdk::export!(tools);
