//! Registration: the definition checks, lookup, listing, definitions, tags and groups,
//! the `Registration` handle, statistics.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_core::tools::*;

use crate::kinds::Add;
use crate::support::*;

#[test]
fn registration_checks_name_description_schema_and_duplicates() {
    let reg = ToolRegistry::new();
    let mk = |name: &str, desc: &str, schema: Value| {
        DynamicTool::builder(name)
            .description(desc)
            .parameters(schema)
            .build_dyn()
    };
    let good = json!({"type": "object"});
    let err =
        |r: Result<Registration, ToolError>| r.err().map(|e| e.to_string()).unwrap_or_default();

    assert!(
        err(reg.register(mk("bad name", "A long enough description", good.clone())))
            .contains("^[a-zA-Z0-9_-]{1,64}$")
    );
    assert!(
        err(reg.register(mk(
            &"x".repeat(65),
            "A long enough description",
            good.clone()
        )))
        .contains("invalid definition")
    );
    assert!(
        err(reg.register(mk("", "A long enough description", good.clone())))
            .contains("invalid definition")
    );
    assert!(
        err(reg.register(mk("short", "too short", good.clone())))
            .contains("at least 10 characters")
    );
    assert!(
        err(reg.register(mk("arr", "A long enough description", json!([1]))))
            .contains("got an array")
    );
    assert!(
        err(reg.register(mk(
            "str",
            "A long enough description",
            json!({"type": "string"})
        )))
        .contains("must describe an object")
    );
    assert!(
        err(reg.register(mk(
            "broken",
            "A long enough description",
            json!({"type": "object", "properties": {"a": {"type": 12}}})
        )))
        .contains("does not compile")
    );
    assert!(reg.is_empty());

    reg.register(mk("ok-Name_1", "A long enough description", good.clone()))
        .unwrap();
    match reg.register(mk("ok-Name_1", "Another long description", good)) {
        Err(ToolError::DuplicateTool(n)) => assert_eq!(n, "ok-Name_1"),
        other => panic!("expected DuplicateTool, got {other:?}"),
    }
    assert_eq!(reg.len(), 1);
}

#[tokio::test]
async fn unregister_get_list_and_definitions() {
    let reg = ToolRegistry::new();
    for n in ["a_tool", "b_tool", "c_tool"] {
        reg.register(counting_tool(n, vec![], Arc::default()))
            .unwrap();
    }
    assert!(reg.get("b_tool").is_some());
    assert!(reg.get("zzz").is_none());
    assert!(reg.unregister("b_tool").is_some());
    assert!(reg.unregister("b_tool").is_none());
    assert_eq!(reg.list_tools(), vec!["a_tool", "c_tool"]);

    let defs = reg.definitions();
    assert_eq!(defs.len(), 2);
    let v = serde_json::to_value(&defs[0]).unwrap();
    assert_eq!(
        v,
        json!({"type": "function", "function": {"name": "a_tool",
            "description": "Echo the text back and count the call", "parameters": obj_schema()}})
    );
    let inv = reg.invoke_recorded("b_tool", json!({"text": "x"})).await;
    assert!(matches!(inv.output, Err(ToolError::NotFound(ref n)) if n == "b_tool"));
}

#[test]
fn tags_categories_groups_and_sources() {
    let reg = ToolRegistry::new();
    reg.register(Add.into_dyn()).unwrap();
    reg.register_with(
        counting_tool("fetch", vec![Permission::Network], Arc::default()),
        ToolMetadata {
            tags: vec!["web".into(), "io".into()],
            category: "network".into(),
            source: ToolSource::Mcp {
                server: "srv".into(),
            },
            version: Some("1.2.0".into()),
            timeout: None,
            risk: None,
            ..Default::default()
        },
    )
    .unwrap();
    reg.register(counting_tool("plain", vec![], Arc::default()))
        .unwrap();

    let math: Vec<_> = reg
        .find_by_tag("math")
        .iter()
        .map(|e| e.name().to_string())
        .collect();
    assert_eq!(math, vec!["add"]);
    assert_eq!(reg.find_by_tag("io")[0].name(), "fetch");
    assert!(reg.find_by_tag("nope").is_empty());
    assert_eq!(reg.find_by_category("network")[0].version(), Some("1.2.0"));
    let groups = reg.groups();
    let keys: Vec<_> = groups.keys().cloned().collect();
    assert_eq!(keys, vec!["math", "network", ""]);
    let fetch = reg.entry("fetch").unwrap();
    assert_eq!(fetch.source().kind(), "mcp");
    assert_eq!(fetch.risk(), RiskLevel::Network);
    let filtered = reg.definitions_where(|e| e.tags().iter().any(|t| t == "web"));
    assert_eq!(filtered.len(), 1);
}

#[tokio::test]
async fn registration_handle_removes_only_its_own_tool() {
    let reg = ToolRegistry::new();
    let first = reg
        .register(counting_tool("t_one", vec![], Arc::default()))
        .unwrap();
    assert!(reg.unregister("t_one").is_some());
    let _second = reg
        .register(counting_tool("t_one", vec![], Arc::default()))
        .unwrap();
    // The stale handle must not remove the new registration.
    assert!(!first.dispose());
    assert!(reg.contains("t_one"));

    let mut changes = reg.watch_changes();
    let before = *changes.borrow_and_update();
    {
        let _guard = reg
            .register(counting_tool("scoped", vec![], Arc::default()))
            .unwrap()
            .into_guard();
        assert!(reg.contains("scoped"));
    }
    assert!(!reg.contains("scoped"));
    assert!(changes.has_changed().unwrap());
    assert_eq!(*changes.borrow(), before + 2);
}

#[tokio::test]
async fn stats_count_calls_failures_and_time() {
    let reg = ToolRegistry::new();
    reg.register(counting_tool("echo", vec![], Arc::default()))
        .unwrap();
    reg.invoke_recorded("echo", json!({"text": "a"})).await;
    reg.invoke_recorded("echo", json!({"text": "b"})).await;
    reg.invoke_recorded("echo", json!({"nope": 1})).await;
    let s = reg.entry("echo").unwrap().stats();
    assert_eq!((s.calls, s.failures), (3, 1));
    assert!(s.total_duration >= s.mean_duration && s.mean_duration > Duration::ZERO);
}

#[tokio::test]
async fn invoke_is_err_not_found_for_an_unknown_name_and_ok_otherwise() {
    let reg = ToolRegistry::new();
    reg.register(Add.into_dyn()).unwrap();
    // Found: Ok, with the tool's result (or its error) in the invocation.
    let inv = reg.invoke("add", json!({"x": 2, "y": 3})).await.unwrap();
    assert_eq!(inv.output.unwrap().canonical, json!({"sum": 5}));
    let inv = reg.invoke("add", json!({"x": "two"})).await.unwrap();
    assert!(matches!(inv.output, Err(ToolError::InvalidArguments(..))));
    // Not found: Err, so `invoke(..).await?` stops there.
    let err = reg.invoke("nope", json!({})).await.err();
    assert!(
        matches!(err, Some(ToolError::NotFound(ref n)) if n == "nope"),
        "{err:?}"
    );
    // The recording form keeps the attempt as an invocation.
    let inv = reg.invoke_recorded("nope", json!({})).await;
    assert!(matches!(inv.output, Err(ToolError::NotFound(_))));
    assert_eq!(inv.tool_name, "nope");
}

#[test]
fn input_examples_must_meet_the_schema_and_stay_few() {
    let reg = ToolRegistry::new();
    let tool = || {
        DynamicTool::builder("add")
            .description("Adds x and y")
            .parameters(serde_json::json!({"type": "object", "required": ["x", "y"],
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}))
            .handler(|_, _| async { Ok(ToolOutput::text("5")) })
            .build_dyn()
    };
    let with = |examples: Vec<serde_json::Value>| ToolMetadata {
        input_examples: examples,
        ..Default::default()
    };
    // A wrong example would teach the model the wrong shape: refused, nothing registered.
    let err = reg
        .register_with(tool(), with(vec![serde_json::json!({"x": "one"})]))
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_definition", "{err}");
    assert!(err.to_string().contains("input example 0"), "{err}");
    let many = vec![serde_json::json!({"x": 1, "y": 2}); MAX_INPUT_EXAMPLES + 1];
    assert!(reg.register_with(tool(), with(many)).is_err());
    assert!(!reg.contains("add"));
    // Good ones are kept and reach the definition.
    reg.register_with(tool(), with(vec![serde_json::json!({"x": 1, "y": 2})]))
        .unwrap();
    let defs = reg.definitions();
    assert_eq!(
        defs[0].input_examples,
        [serde_json::json!({"x": 1, "y": 2})]
    );
}
