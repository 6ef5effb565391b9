//! `toolhost-macros`: the `#[tool]` and `#[toolbox]` attributes, which turn a plain
//! (async) function, or the methods of a type that holds state, into native toolhost
//! tools. Reach them through `toolhost::tool` / `toolhost::toolbox` (or
//! `toolhost_core::tool` / `toolhost_core::toolbox`); `docs/writing-plugins.md` walks
//! through them.
//!
//! What is generated, for `#[tool] async fn add(x: i64, y: i64) -> Result<i64, E>`:
//! the function, unchanged; a unit struct `AddTool` (the function's name in
//! UpperCamelCase plus `Tool`) implementing the typed `Tool` trait, whose argument struct
//! has one field a parameter (serde + schemars: the JSON Schema the model sees), whose
//! output is the `Ok` type (any `Serialize`), and whose errors go through the error type:
//! one that converts `Into<ToolError>` is passed on as it is, any other `Display` error
//! becomes `ToolError::ExecutionFailed` with its message.

mod args;
mod expand;
mod model;

use proc_macro::TokenStream;
use quote::quote;

/// Turns a plain (async) function into a native tool (reached as `toolhost::tool`).
///
/// The tool's name is the function's (`name = "..."` overrides it), its description the
/// doc comment (`description = "..."` overrides it), each parameter's description its doc
/// comment or `#[arg(description = "...")]` (`#[arg(rename = "...")]` sets its JSON
/// name). One parameter may be `&ToolContext`. Other arguments: `permissions = [read,
/// network, "db.admin"]`, `tags = ["..."]`, `category = "..."`, `timeout = "30s"`,
/// `crate = path` (where the tool API is, for a renamed dependency).
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(quote!(::toolhost), attr.into(), item.into()).into()
}

/// Turns the methods marked `#[tool]` of an inherent impl block into tools that share the
/// value (reached as `toolhost::toolbox`). Adds `fn tools(self: &Arc<Self>) -> Vec<Arc<dyn
/// BaseTool>>`. Tool methods take `&self`.
#[proc_macro_attribute]
pub fn toolbox(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::toolbox(quote!(::toolhost), attr.into(), item.into()).into()
}

/// [`tool`] for users of `toolhost-core` alone (reached as `toolhost_core::tool`).
#[proc_macro_attribute]
pub fn core_tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::tool(quote!(::toolhost_core), attr.into(), item.into()).into()
}

/// [`toolbox`] for users of `toolhost-core` alone (reached as `toolhost_core::toolbox`).
#[proc_macro_attribute]
pub fn core_toolbox(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::toolbox(quote!(::toolhost_core), attr.into(), item.into()).into()
}
