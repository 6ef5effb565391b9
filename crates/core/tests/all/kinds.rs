//! Tools of three kinds (a `BaseTool` impl, a typed `Tool`, a closure `DynamicTool`)
//! register and run by name; typed schemas are derived.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolhost_core::tools::*;

use crate::support::*;

struct Weather;

#[async_trait]
impl BaseTool for Weather {
    fn name(&self) -> &str {
        "get_weather"
    }
    fn description(&self) -> &str {
        "Get the current weather of a city"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    }
    fn required_permissions(&self) -> Vec<Permission> {
        vec![Permission::Network]
    }
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let city = args["city"].as_str().unwrap_or_default().to_string();
        Ok(ToolOutput::new(
            json!({"city": city, "temperature": 22, "session": ctx.session_id()}),
            format!("{city}: 22 °C"),
        ))
    }
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct AddArgs {
    /// First addend.
    x: i64,
    /// Second addend.
    y: i64,
}

#[derive(Serialize)]
pub(crate) struct Sum {
    sum: i64,
}

pub(crate) struct Add;

impl Tool for Add {
    const NAME: &'static str = "add";
    type Args = AddArgs;
    type Output = Sum;
    type Error = ToolError;
    fn description(&self) -> String {
        "Add two integers x and y".into()
    }
    fn metadata(&self) -> ToolMetadata {
        ToolMetadata {
            tags: vec!["math".into()],
            category: "math".into(),
            ..Default::default()
        }
    }
    async fn call(&self, a: AddArgs, _ctx: &ToolContext) -> Result<Sum, ToolError> {
        Ok(Sum { sum: a.x + a.y })
    }
}

#[tokio::test]
async fn three_kinds_of_tools_register_and_run_by_name() {
    let reg = ToolRegistry::new();
    reg.register(Arc::new(Weather)).unwrap();
    reg.register(Add.into_dyn()).unwrap();
    reg.register(counting_tool("echo", vec![], Arc::default()))
        .unwrap();
    assert_eq!(reg.list_tools(), vec!["get_weather", "add", "echo"]);

    let ctx = ToolContext::new("session-7", "trace-1");
    let w = reg
        .invoke_call(
            ToolCall::with_id("c1", "get_weather", json!({"city": "Beijing"})),
            &ctx,
        )
        .await;
    let out = w.output.unwrap();
    assert_eq!(out.canonical["session"], "session-7");
    assert_eq!(out.render, "Beijing: 22 °C");
    assert_eq!(w.call_id, "c1");

    let a = reg.invoke_recorded("add", json!({"x": 2, "y": 3})).await;
    assert_eq!(a.output.unwrap().canonical, json!({"sum": 5}));
    let e = reg.invoke_recorded("echo", json!({"text": "hi"})).await;
    assert_eq!(e.output.unwrap().render, "hi");
}

#[test]
fn typed_tool_schema_is_derived() {
    let t = Add.into_dyn();
    let p = t.parameters();
    assert_eq!(p["type"], "object");
    assert_eq!(p["properties"]["x"]["type"], "integer");
    assert_eq!(p["required"], json!(["x", "y"]));
    assert!(p.get("$schema").is_none());
}

/// A typed tool with a hand-written schema (as Rig's `Tool::parameters`).
struct Bounded;

impl Tool for Bounded {
    const NAME: &'static str = "bounded_add";
    type Args = AddArgs;
    type Output = Sum;
    type Error = ToolError;
    fn description(&self) -> String {
        "Add two integers between 0 and 10".into()
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "required": ["x", "y"], "additionalProperties": false,
               "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 10},
                              "y": {"type": "integer", "minimum": 0, "maximum": 10}}})
    }
    async fn call(&self, a: AddArgs, _ctx: &ToolContext) -> Result<Sum, ToolError> {
        Ok(Sum { sum: a.x + a.y })
    }
}

#[tokio::test]
async fn a_typed_tool_may_hand_write_its_schema_and_the_registry_holds_calls_to_it() {
    let reg = ToolRegistry::new();
    reg.register(Bounded.into_dyn()).unwrap();
    let entry = reg.entry("bounded_add").unwrap();
    assert_eq!(entry.parameters()["properties"]["x"]["maximum"], 10);
    let ok = reg
        .invoke_recorded("bounded_add", json!({"x": 3, "y": 4}))
        .await;
    assert_eq!(ok.output.unwrap().canonical, json!({"sum": 7}));
    // Past the hand-written bound: refused before `call`, though `Args` would take it.
    let err = reg
        .invoke_recorded("bounded_add", json!({"x": 30, "y": 4}))
        .await
        .output
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_arguments", "{err}");
}
