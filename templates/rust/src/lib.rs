//! {{name}}: a toolhost plugin written in Rust with `toolhost-sdk`.
//!
//! Each [`Tool`] has a name, a description, typed arguments (their JSON Schema comes from
//! `schemars`, doc comments become descriptions) and a handler. `Tool::new` takes a handler
//! returning any `Serialize` value; `Tool::with_context` one returning an [`Output`] with
//! render text for the model. Fail with a [`ToolError`]. Declare what a tool needs with
//! `.permissions([Permission::Read])`; the policy file {{name}}.toml grants it.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Output, Tool, ToolError, json};

/// Arguments of `{{tool}}`.
#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet.
    name: String,
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::with_context("{{tool}}", "Greets someone by name.", |a: GreetArgs, _ctx| {
            if a.name.is_empty() {
                return Err(ToolError::invalid("`name` must not be empty"));
            }
            let greeting = format!("Hello, {}!", a.name);
            Ok(Output::rendered(json!({ "greeting": greeting }), greeting))
        })
        .tags(["example"]),
    ]
}

toolhost_sdk::export!(tools);
