//! `calc`: pure arithmetic tools. Needs no permission. Each tool is a plain function
//! marked `#[tool]`: its doc comment is the description, its parameters (with their doc
//! comments) the argument schema.

use toolhost_sdk::{ToolError, tool};

/// Adds two numbers x and y
#[tool]
fn add(
    /// The first operand.
    x: f64,
    /// The second operand.
    y: f64,
) -> f64 {
    x + y
}

/// Multiplies two numbers x and y
#[tool]
fn multiply(
    /// The first operand.
    x: f64,
    /// The second operand.
    y: f64,
) -> f64 {
    x * y
}

/// Divides x by y (y must not be zero)
#[tool]
fn divide(
    /// The first operand.
    x: f64,
    /// The second operand.
    y: f64,
) -> Result<f64, ToolError> {
    if y == 0.0 {
        return Err(ToolError::invalid("division by zero: y must not be 0"));
    }
    Ok(x / y)
}

/// Arithmetic mean of a non-empty list of numbers
#[tool]
fn mean(
    /// The numbers.
    values: Vec<f64>,
) -> Result<f64, ToolError> {
    if values.is_empty() {
        return Err(ToolError::invalid("values must not be empty"));
    }
    Ok(values.iter().sum::<f64>() / values.len() as f64)
}

toolhost_sdk::export!([add, multiply, divide, mean]);
