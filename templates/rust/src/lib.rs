//! {{name}}: a toolhost plugin written in Rust with `toolhost-sdk`.
//!
//! Each [`Tool`] has a name, a description, typed arguments (their JSON Schema comes from
//! `schemars`) and a handler returning any `Serialize` value or a [`ToolError`]. Declare
//! what a tool needs with `.permissions(...)`; the policy file {{name}}.toml grants it.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, ToolError};

/// Arguments of `{{tool}}`.
#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

fn tools() -> Vec<Tool> {
    vec![Tool::new("{{tool}}", "Greets someone by name.", |a: GreetArgs| {
        if a.name.is_empty() {
            return Err(ToolError::invalid("`name` must not be empty"));
        }
        Ok(format!("Hello, {}!", a.name))
    })]
}

toolhost_sdk::export!(tools);
