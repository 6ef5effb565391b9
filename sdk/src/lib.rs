//! # toolhost-sdk
//!
//! Write toolhost tools in Rust. A plugin is a WebAssembly component (target
//! `wasm32-wasip2`) implementing the WIT world `toolhost:tool/tool`; this crate's version
//! is that world's version. It hides the bindings: each tool is a plain function marked
//! [`tool`] (the name from the function, the description from its doc comment, the JSON
//! Schema from its parameters and their doc comments, any `Serialize` result or an
//! [`Output`], a [`ToolError`] or any printable error), and [`export!`] generates the
//! component's `describe` and `call`.
//!
//! ```ignore
//! // Cargo.toml: crate-type = ["cdylib"]; dependency toolhost-sdk.
//! use toolhost_sdk::{ToolError, tool};
//!
//! /// Adds two numbers x and y
//! #[tool]
//! fn add(
//!     /// The first operand.
//!     x: f64,
//!     /// The second operand.
//!     y: f64,
//! ) -> f64 {
//!     x + y
//! }
//!
//! /// Reads a UTF-8 text file
//! #[tool(permissions = [read])]
//! fn read_file(
//!     /// Absolute path of the file.
//!     path: String,
//! ) -> Result<String, ToolError> {
//!     std::fs::read_to_string(&path).map_err(ToolError::failed)
//! }
//!
//! toolhost_sdk::export!([add, read_file]);
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2`; the `.wasm` in
//! `target/wasm32-wasip2/release/` is the component. The arguments are parsed with serde
//! and described with schemars (a mismatch is an `invalid-arguments` error the model can
//! fix). [`Tool::new`] with `export!(fn_returning_tools)` builds a tool list at run time.

/// Plugin tools from plain functions: see the crate documentation.
pub use toolhost_sdk_macros::tool;

pub use schemars::{self, JsonSchema};
pub use serde::{self, Deserialize, Serialize};
pub use serde_json::{self, Value, json};

/// The generated bindings of the `tool` world (guest side).
#[allow(missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "tool",
        pub_export_macro: true,
        export_macro_name: "__export_tool_world",
        default_bindings_module: "toolhost_sdk::bindings",
    });
}

pub use bindings::toolhost::tool::types::{CallContext, Permission};
use bindings::toolhost::tool::types::{ToolError as WitError, ToolInfo, ToolOutput};

/// Why a call failed. Maps one-to-one onto the WIT `tool-error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The arguments were wrong: the model should fix them.
    InvalidArguments(String),
    /// The tool ran and failed.
    Failed(String),
    /// The tool refused (a path outside what it may touch, ...).
    Denied(String),
}

impl ToolError {
    /// A [`ToolError::Failed`] from anything printable.
    pub fn failed(msg: impl std::fmt::Display) -> Self {
        ToolError::Failed(msg.to_string())
    }
    /// A [`ToolError::InvalidArguments`] from anything printable.
    pub fn invalid(msg: impl std::fmt::Display) -> Self {
        ToolError::InvalidArguments(msg.to_string())
    }
    /// A [`ToolError::Denied`] from anything printable.
    pub fn denied(msg: impl std::fmt::Display) -> Self {
        ToolError::Denied(msg.to_string())
    }
}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError::Failed(e.to_string())
    }
}

impl From<ToolError> for WitError {
    fn from(e: ToolError) -> Self {
        match e {
            ToolError::InvalidArguments(m) => WitError::InvalidArguments(m),
            ToolError::Failed(m) => WitError::ExecutionFailed(m),
            ToolError::Denied(m) => WitError::Denied(m),
        }
    }
}

/// A result with render text for the model besides the structured value.
#[derive(Debug, Clone)]
pub struct Output {
    /// The structured result.
    pub value: Value,
    /// The text the model sees (when `None`, the host renders `value`).
    pub render: Option<String>,
}

impl Output {
    /// A result with explicit render text.
    pub fn rendered(value: impl Serialize, render: impl Into<String>) -> Self {
        Output {
            value: serde_json::to_value(value).unwrap_or(Value::Null),
            render: Some(render.into()),
        }
    }
}

type Handler = Box<dyn Fn(&str, &CallContext) -> Result<Output, ToolError>>;

/// One tool: name, description, argument schema, permissions and handler.
pub struct Tool {
    name: String,
    description: String,
    // Generated only by `describe`: schemars work is the bulk of building a `Tool`, and
    // every call builds the plugin's tool list afresh in a fresh instance.
    parameters: fn() -> Value,
    permissions: Vec<Permission>,
    tags: Vec<String>,
    handler: Handler,
}

fn parse<A: serde::de::DeserializeOwned>(args: &str) -> Result<A, ToolError> {
    serde_json::from_str(args).map_err(ToolError::invalid)
}

fn schema<A: JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(A))
        .unwrap_or_else(|_| json!({"type": "object"}));
    // `$schema` and `title` (the Rust type name) mean nothing to the model and cost
    // tokens in every request that lists the tools.
    if let Value::Object(m) = &mut v {
        m.remove("$schema");
        m.remove("title");
    }
    v
}

impl Tool {
    /// A tool whose handler takes typed arguments `A` and returns any serializable value.
    pub fn new<A, R, F>(name: &str, description: &str, handler: F) -> Self
    where
        A: serde::de::DeserializeOwned + JsonSchema + 'static,
        R: Serialize + 'static,
        F: Fn(A) -> Result<R, ToolError> + 'static,
    {
        Self::with_context(name, description, move |a: A, _ctx: &CallContext| {
            handler(a).map(|r| Output {
                value: serde_json::to_value(r).unwrap_or(Value::Null),
                render: None,
            })
        })
    }

    /// A tool whose handler also sees the call context and returns an [`Output`].
    pub fn with_context<A, F>(name: &str, description: &str, handler: F) -> Self
    where
        A: serde::de::DeserializeOwned + JsonSchema + 'static,
        F: Fn(A, &CallContext) -> Result<Output, ToolError> + 'static,
    {
        Tool {
            name: name.to_string(),
            description: description.to_string(),
            parameters: schema::<A>,
            permissions: Vec::new(),
            tags: Vec::new(),
            handler: Box::new(move |args, ctx| handler(parse::<A>(args)?, ctx)),
        }
    }

    /// Declares the permissions the tool needs (the host grants capabilities only for
    /// declared permissions its policy allows).
    pub fn permissions(mut self, perms: impl IntoIterator<Item = Permission>) -> Self {
        self.permissions.extend(perms);
        self
    }

    /// Adds tags.
    pub fn tags(mut self, tags: impl IntoIterator<Item = &'static str>) -> Self {
        self.tags.extend(tags.into_iter().map(String::from));
        self
    }
}

/// A function marked `#[tool]`: the generated struct of the same name implements this,
/// and [`export!`] calls it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool function",
    label = "`export!([...])` lists functions marked `#[toolhost_sdk::tool]`",
    note = "to export tools built at run time, write `export!(fn_returning_vec_of_tools)`"
)]
pub trait ToolFn {
    /// The tool.
    fn tool() -> Tool;
}

/// What the code generated by `#[tool]` names. Not a public API.
#[doc(hidden)]
pub mod __private {
    use super::{Output, ToolError, Value};
    use std::fmt::Display;

    /// A `Result` taken apart, so that an alias such as `io::Result<T>` works as a
    /// tool's return type.
    pub trait ToolResult {
        /// The success type.
        type Ok;
        /// The error type.
        type Err;
        /// The result itself.
        fn into_result(self) -> Result<Self::Ok, Self::Err>;
    }

    impl<T, E> ToolResult for Result<T, E> {
        type Ok = T;
        type Err = E;
        fn into_result(self) -> Result<T, E> {
            self
        }
    }

    /// A tool's success value as an [`Output`]: an `Output` as it is, any other
    /// `Serialize` value as the structured result.
    #[diagnostic::on_unimplemented(
        message = "a tool's result must be serialisable to JSON, and `{Self}` is not",
        label = "this type is neither `Serialize` nor `toolhost_sdk::Output`",
        note = "derive `serde::Serialize` for it, or return `toolhost_sdk::Output`"
    )]
    pub trait IntoOutput {
        /// The output.
        fn into_output(self) -> Output;
    }

    impl IntoOutput for Output {
        fn into_output(self) -> Output {
            self
        }
    }

    impl<T: serde::Serialize> IntoOutput for T {
        fn into_output(self) -> Output {
            Output {
                value: serde_json::to_value(self).unwrap_or(Value::Null),
                render: None,
            }
        }
    }

    /// A tool's error on its way to a [`ToolError`]: method resolution on
    /// `(&mut ErrorSlot::new(e)).take_tool_error()` tries [`ViaInto`] first (the
    /// receiver as it is) and falls back to [`ViaDisplay`] (one more reference), so an
    /// error that converts into a `ToolError` keeps its kind and any other printable
    /// error becomes `ToolError::Failed` with its message ("autoref specialisation").
    pub struct ErrorSlot<E>(Option<E>);

    impl<E> ErrorSlot<E> {
        /// Holds an error.
        pub fn new(e: E) -> Self {
            ErrorSlot(Some(e))
        }
    }

    /// The error converts into a [`ToolError`].
    pub trait ViaInto {
        /// The error as a [`ToolError`].
        fn take_tool_error(&mut self) -> ToolError;
    }

    impl<E: Into<ToolError>> ViaInto for ErrorSlot<E> {
        fn take_tool_error(&mut self) -> ToolError {
            self.0
                .take()
                .map_or_else(|| ToolError::failed("failed"), Into::into)
        }
    }

    /// The error is only printable.
    pub trait ViaDisplay {
        /// The error as a [`ToolError::Failed`].
        fn take_tool_error(&mut self) -> ToolError;
    }

    impl<E: Display> ViaDisplay for &mut ErrorSlot<E> {
        fn take_tool_error(&mut self) -> ToolError {
            self.0
                .take()
                .map_or_else(|| ToolError::failed("failed"), ToolError::failed)
        }
    }
}

/// Writes a line to the host's log.
pub fn log(level: bindings::toolhost::tool::types::LogLevel, message: &str) {
    bindings::toolhost::tool::host::log(level, message);
}

/// Reports progress of the current call to the host.
pub fn progress(done: f64, total: Option<f64>, message: Option<&str>) {
    bindings::toolhost::tool::host::progress(done, total, message);
}

#[doc(hidden)]
pub fn __describe(tools: Vec<Tool>) -> Vec<ToolInfo> {
    tools
        .into_iter()
        .map(|t| ToolInfo {
            name: t.name,
            description: t.description,
            parameters: (t.parameters)().to_string(),
            permissions: t.permissions,
            tags: t.tags,
        })
        .collect()
}

#[doc(hidden)]
pub fn __call(
    tools: Vec<Tool>,
    name: &str,
    args: &str,
    ctx: &CallContext,
) -> Result<ToolOutput, WitError> {
    let Some(tool) = tools.into_iter().find(|t| t.name == name) else {
        return Err(WitError::InvalidArguments(format!(
            "no tool named '{name}' in this plugin"
        )));
    };
    let out = (tool.handler)(args, ctx)?;
    Ok(ToolOutput {
        canonical: out.value.to_string(),
        render: out.render,
    })
}

/// Exports the plugin's tools as this component's `describe` and `call`. Use it once per
/// plugin crate, either with the functions marked `#[tool]` in brackets,
/// `export!([add, multiply])`, or with a `fn() -> Vec<Tool>`, `export!(tools)`.
#[macro_export]
macro_rules! export {
    ([$($($tool:ident)::+),* $(,)?]) => {
        fn __toolhost_tools() -> ::std::vec::Vec<$crate::Tool> {
            ::std::vec![$(<$($tool)::+ as $crate::ToolFn>::tool()),*]
        }
        $crate::export!(__toolhost_tools);
    };
    ($tools:path) => {
        struct __ToolhostPlugin;
        impl $crate::bindings::Guest for __ToolhostPlugin {
            fn describe() -> ::std::vec::Vec<$crate::bindings::ToolInfo> {
                $crate::__describe($tools())
            }
            fn call(
                name: ::std::string::String,
                arguments: ::std::string::String,
                ctx: $crate::bindings::CallContext,
            ) -> ::std::result::Result<$crate::bindings::ToolOutput, $crate::bindings::ToolError> {
                $crate::__call($tools(), &name, &arguments, &ctx)
            }
        }
        $crate::bindings::__export_tool_world!(__ToolhostPlugin with_types_in $crate::bindings);
    };
}
