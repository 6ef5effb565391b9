//! Native Rust tools without JSON plumbing:
//!
//! - [`Tool`]: a typed trait. `Args` is deserialised for you, its JSON Schema is derived by
//!   `schemars`, and `Output` is serialised for you.
//! - [`DynamicTool`]: a tool defined at run time from a closure.
//!
//! Both become an `Arc<dyn BaseTool>` (with [`Tool::into_dyn`] or [`DynamicTool::build`]),
//! so they register like any other tool. Most `Tool`s need not be written by hand:
//! `#[toolhost::tool]` (or [`crate::tool`]) on a plain function generates one, and
//! `#[toolhost::toolbox]` one per `&self` method (`docs/writing-plugins.md`).

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tools::base::{BaseTool, ToolContext, ToolMetadata, ToolOutput};
use crate::tools::error::ToolError;
use crate::tools::permission::Permission;

/// A strongly typed native tool.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use toolhost_core::tools::{Tool, ToolContext, ToolError, ToolRegistry};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs { x: i64, y: i64 }
///
/// struct Add;
/// impl Tool for Add {
///     const NAME: &'static str = "add";
///     type Args = AddArgs;
///     type Output = i64;
///     type Error = ToolError;
///     fn description(&self) -> String { "Add x and y together".into() }
///     async fn call(&self, args: AddArgs, _ctx: &ToolContext) -> Result<i64, ToolError> {
///         Ok(args.x + args.y)
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = ToolRegistry::new();
/// registry.register(Add.into_dyn()).unwrap();
/// let inv = registry.invoke("add", serde_json::json!({"x": 2, "y": 3})).await.unwrap();
/// assert_eq!(inv.output.unwrap().canonical, 5);
/// assert!(registry.invoke("nope", serde_json::json!({})).await.is_err());
/// # });
/// ```
pub trait Tool: Send + Sync + Sized + 'static {
    /// The tool's name.
    const NAME: &'static str;
    /// The arguments, deserialised from the model's JSON. Their schema is the tool's
    /// parameter schema.
    type Args: DeserializeOwned + JsonSchema + Send;
    /// The result, serialised into the canonical output.
    type Output: Serialize;
    /// The error; converted into a [`ToolError`].
    type Error: Into<ToolError>;

    /// What the tool does, for the model.
    fn description(&self) -> String;

    /// The parameter schema the model sees. Default: derived from [`Tool::Args`]
    /// ([`schema_for`]); override it to hand-write one (the arguments are still
    /// deserialised into `Args`, and the registry validates them against this schema).
    fn parameters(&self) -> Value {
        schema_for::<Self::Args>()
    }

    /// The permissions the tool needs. Default: none.
    fn permissions(&self) -> Vec<Permission> {
        Vec::new()
    }

    /// Registry metadata. Default: no tags, no category, native source.
    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::default()
    }

    /// Renders the output for the model. Default: a JSON string as its contents, anything
    /// else as compact JSON.
    fn render(&self, output: &Value) -> String {
        ToolOutput::json(output.clone()).render
    }

    /// Runs the tool.
    fn call(
        &self,
        args: Self::Args,
        ctx: &ToolContext,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;

    /// Wraps the tool as an `Arc<dyn BaseTool>` ready to register.
    fn into_dyn(self) -> Arc<dyn BaseTool> {
        Arc::new(TypedTool::new(self))
    }
}

/// The JSON Schema of `T` as a tool parameter schema: derived by `schemars`, with the
/// `$schema` and `title` keys removed (chat APIs do not want them).
pub fn schema_for<T: JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Some(obj) = v.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
    }
    v
}

/// The [`BaseTool`] adapter of a [`Tool`]. Built by [`Tool::into_dyn`].
pub struct TypedTool<T: Tool> {
    tool: T,
    description: String,
    schema: Value,
    _p: PhantomData<fn() -> T>,
}

impl<T: Tool> TypedTool<T> {
    /// Wraps a typed tool, taking its schema once ([`Tool::parameters`]).
    pub fn new(tool: T) -> Self {
        Self {
            description: tool.description(),
            schema: tool.parameters(),
            tool,
            _p: PhantomData,
        }
    }
}

#[async_trait]
impl<T: Tool> BaseTool for TypedTool<T> {
    fn name(&self) -> &str {
        T::NAME
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        self.schema.clone()
    }
    fn required_permissions(&self) -> Vec<Permission> {
        self.tool.permissions()
    }
    fn metadata(&self) -> ToolMetadata {
        self.tool.metadata()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: T::Args = serde_json::from_value(args)
            .map_err(|e| ToolError::InvalidArguments(T::NAME.to_string(), e.to_string()))?;
        let out = self.tool.call(args, ctx).await.map_err(Into::into)?;
        let canonical = serde_json::to_value(out).map_err(|e| {
            ToolError::ExecutionFailed(
                T::NAME.to_string(),
                format!("cannot serialise the result: {e}"),
            )
        })?;
        let render = self.tool.render(&canonical);
        Ok(ToolOutput::new(canonical, render))
    }
}

type Handler =
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// A tool defined at run time by a closure.
///
/// ```
/// use toolhost_core::tools::{DynamicTool, ToolOutput};
/// let echo = DynamicTool::builder("echo")
///     .description("Return the given text unchanged")
///     .parameters(serde_json::json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}))
///     .handler(|args, _ctx| async move { Ok(ToolOutput::json(args["text"].clone())) })
///     .build();
/// assert_eq!(echo.name(), "echo");
/// ```
pub struct DynamicTool {
    name: String,
    description: String,
    parameters: Value,
    permissions: Vec<Permission>,
    metadata: ToolMetadata,
    handler: Arc<Handler>,
}

impl DynamicTool {
    /// Starts a builder for a tool with this name.
    pub fn builder(name: impl Into<String>) -> DynamicToolBuilder {
        DynamicToolBuilder {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
            permissions: Vec::new(),
            metadata: ToolMetadata::default(),
            handler: None,
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Builder of a [`DynamicTool`].
pub struct DynamicToolBuilder {
    name: String,
    description: String,
    parameters: Value,
    permissions: Vec<Permission>,
    metadata: ToolMetadata,
    handler: Option<Arc<Handler>>,
}

impl DynamicToolBuilder {
    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = d.into();
        self
    }
    /// Sets the parameter schema (default: an object with no properties).
    pub fn parameters(mut self, schema: Value) -> Self {
        self.parameters = schema;
        self
    }
    /// Sets the parameter schema from a type.
    pub fn parameters_from<T: JsonSchema>(mut self) -> Self {
        self.parameters = schema_for::<T>();
        self
    }
    /// Sets the declared permissions.
    pub fn permissions(mut self, p: Vec<Permission>) -> Self {
        self.permissions = p;
        self
    }
    /// Sets the registry metadata.
    pub fn metadata(mut self, m: ToolMetadata) -> Self {
        self.metadata = m;
        self
    }
    /// Sets the closure that runs the tool.
    pub fn handler<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        self.handler = Some(Arc::new(move |args, ctx| Box::pin(f(args, ctx))));
        self
    }
    /// Builds the tool. Without a handler, calls fail with a clear error. The registry
    /// checks the name, description and schema when the tool is registered.
    pub fn build(self) -> DynamicTool {
        let name = self.name.clone();
        DynamicTool {
            handler: self.handler.unwrap_or_else(|| {
                Arc::new(move |_, _| {
                    let name = name.clone();
                    Box::pin(async move {
                        Err(ToolError::ExecutionFailed(
                            name,
                            "this tool has no handler".into(),
                        ))
                    })
                })
            }),
            name: self.name,
            description: self.description,
            parameters: self.parameters,
            permissions: self.permissions,
            metadata: self.metadata,
        }
    }
    /// Builds the tool as an `Arc<dyn BaseTool>`.
    pub fn build_dyn(self) -> Arc<dyn BaseTool> {
        Arc::new(self.build())
    }
}

#[async_trait]
impl BaseTool for DynamicTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        self.parameters.clone()
    }
    fn required_permissions(&self) -> Vec<Permission> {
        self.permissions.clone()
    }
    fn metadata(&self) -> ToolMetadata {
        self.metadata.clone()
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        (self.handler)(args, ctx.clone()).await
    }
}
