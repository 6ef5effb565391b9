//! {{name}}: a toolhost plugin written in Rust with `toolhost-sdk`.
//!
//! Each tool is a plain function marked `#[tool]`: its doc comment is the description the
//! model reads, each parameter (with its own doc comment) a property of the JSON Schema
//! of the arguments, its result any `Serialize` value (or an [`Output`] with render text
//! for the model). Fail with a [`ToolError`]. Declare what a tool needs with
//! `#[tool(permissions = [read])]`; the policy file {{name}}.toml grants it. `export!`
//! lists the tools of the plugin.

use toolhost_sdk::{Output, ToolError, json, tool};

/// Greets someone by name.
#[tool(name = "{{tool}}", tags = ["example"])]
fn greet(
    /// Who to greet.
    name: String,
) -> Result<Output, ToolError> {
    if name.is_empty() {
        return Err(ToolError::invalid("`name` must not be empty"));
    }
    let greeting = format!("Hello, {name}!");
    Ok(Output::rendered(json!({ "greeting": greeting }), greeting))
}

toolhost_sdk::export!([greet]);
