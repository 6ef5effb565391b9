//! Small native tools for pipeline and loop tests: `add` and `mul` of two integers.

use std::sync::Arc;

use toolhost_core::tools::{BaseTool, DynamicTool, Tool, ToolContext, ToolError, ToolRegistry};

/// Arguments of the arithmetic tools.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Pair {
    /// The first operand.
    pub x: i64,
    /// The second operand.
    pub y: i64,
}

/// `add(x, y)`.
pub struct Add;

impl Tool for Add {
    const NAME: &'static str = "add";
    type Args = Pair;
    type Output = i64;
    type Error = ToolError;
    fn description(&self) -> String {
        "Add two integers x and y".into()
    }
    async fn call(&self, a: Pair, _ctx: &ToolContext) -> Result<i64, ToolError> {
        Ok(a.x + a.y)
    }
}

/// `mul(x, y)`.
pub struct Mul;

impl Tool for Mul {
    const NAME: &'static str = "mul";
    type Args = Pair;
    type Output = i64;
    type Error = ToolError;
    fn description(&self) -> String {
        "Multiply two integers x and y".into()
    }
    async fn call(&self, a: Pair, _ctx: &ToolContext) -> Result<i64, ToolError> {
        Ok(a.x * a.y)
    }
}

/// A registry holding [`Add`] and [`Mul`].
pub fn math_registry() -> Result<ToolRegistry, ToolError> {
    let r = ToolRegistry::new();
    r.register(Add.into_dyn())?;
    r.register(Mul.into_dyn())?;
    Ok(r)
}

/// `boom`: a tool that panics on purpose (message `kaboom`), to show a crash stays one
/// call's error.
pub fn panicking() -> Arc<dyn BaseTool> {
    DynamicTool::builder("boom")
        .description("Panics on purpose")
        .handler(|_, _| async { panic!("kaboom") })
        .build_dyn()
}
