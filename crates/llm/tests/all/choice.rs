//! Tool choice, the parallel-calls switch and the active tools, as both providers send
//! them over the wire (scripted servers on 127.0.0.1), and the loop's rule: a forced
//! choice holds for the first request of a submit only.

use serde_json::{Value, json};
use toolhost_llm::{CycleConfig, LlmCycle, ToolChoice};

use crate::support::*;

/// An Anthropic answer calling `add`, then one with text.
fn anthropic_turns() -> Vec<Reply> {
    let usage = json!({"input_tokens": 20, "output_tokens": 5});
    vec![
        Reply::Json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "tool_use", "id": "t1", "name": "add", "input": {"x": 2, "y": 3}}],
            "stop_reason": "tool_use", "stop_sequence": null, "usage": usage
        })),
        Reply::Json(json!({
            "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "text", "text": "5"}],
            "stop_reason": "end_turn", "stop_sequence": null, "usage": usage
        })),
    ]
}

fn field<'a>(request: &'a Value, key: &str) -> Option<&'a Value> {
    request.get(key)
}

#[tokio::test]
async fn openai_gets_the_forced_choice_first_then_auto_and_the_parallel_switch()
-> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[("c1", "add", r#"{"x": 2, "y": 3}"#)]),
        text_reply("5"),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(
        openai_provider(&server)?,
        CycleConfig {
            tool_choice: ToolChoice::Tool("add".into()),
            parallel_tool_calls: Some(false),
            ..Default::default()
        },
    );
    c.submit_with_tools("2 + 3?", &registry).await?;
    let sent = server.requests();
    assert_eq!(
        field(&sent[0], "tool_choice"),
        Some(&json!({"type": "function", "function": {"name": "add"}}))
    );
    // After the forced call the model must be free to answer: no choice sent (auto).
    assert_eq!(field(&sent[1], "tool_choice"), None, "{}", sent[1]);
    for r in &sent {
        assert_eq!(field(r, "parallel_tool_calls"), Some(&json!(false)));
    }
    Ok(())
}

#[tokio::test]
async fn openai_none_holds_for_every_request_and_nothing_is_sent_without_tools()
-> anyhow::Result<()> {
    let server = Scripted::start(vec![text_reply("no tools today"), text_reply("hi")]).await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(
        openai_provider(&server)?,
        CycleConfig {
            tool_choice: ToolChoice::None,
            parallel_tool_calls: Some(true),
            ..Default::default()
        },
    );
    c.submit_with_tools("2 + 3?", &registry).await?;
    // A plain `submit` offers no tools: neither field may go out (OpenAI refuses them).
    c.submit("hello").await?;
    let sent = server.requests();
    assert_eq!(field(&sent[0], "tool_choice"), Some(&json!("none")));
    assert_eq!(field(&sent[0], "parallel_tool_calls"), Some(&json!(true)));
    assert_eq!(field(&sent[1], "tool_choice"), None, "{}", sent[1]);
    assert_eq!(field(&sent[1], "parallel_tool_calls"), None, "{}", sent[1]);
    Ok(())
}

#[tokio::test]
async fn anthropic_maps_each_choice_and_switches_parallel_calls_off_inside_it() -> anyhow::Result<()>
{
    let cases = [
        (ToolChoice::Required, None, json!({"type": "any"})),
        (
            ToolChoice::Tool("add".into()),
            Some(false),
            json!({"type": "tool", "name": "add", "disable_parallel_tool_use": true}),
        ),
        (
            ToolChoice::Auto,
            Some(false),
            json!({"type": "auto", "disable_parallel_tool_use": true}),
        ),
    ];
    for (choice, parallel, expected) in cases {
        let server = Scripted::start(anthropic_turns()).await?;
        let registry = math_registry()?;
        let mut c = LlmCycle::new(
            anthropic_provider(&server)?,
            CycleConfig {
                tool_choice: choice.clone(),
                parallel_tool_calls: parallel,
                ..Default::default()
            },
        );
        c.submit_with_tools("2 + 3?", &registry).await?;
        let sent = server.requests();
        assert_eq!(
            field(&sent[0], "tool_choice"),
            Some(&expected),
            "{choice:?}"
        );
        // The second request: auto, still without parallel calls when switched off.
        let second = field(&sent[1], "tool_choice");
        match parallel {
            Some(false) => assert_eq!(
                second,
                Some(&json!({"type": "auto", "disable_parallel_tool_use": true}))
            ),
            _ => assert_eq!(second, None, "{choice:?}"),
        }
    }
    // The default sends no choice at all.
    let server = Scripted::start(anthropic_turns()).await?;
    let mut c = LlmCycle::new(anthropic_provider(&server)?, CycleConfig::default());
    c.submit_with_tools("2 + 3?", &math_registry()?).await?;
    assert_eq!(field(&server.requests()[0], "tool_choice"), None);
    Ok(())
}

#[tokio::test]
async fn active_tools_narrow_the_offer_per_turn_and_a_call_outside_is_unknown() -> anyhow::Result<()>
{
    let server = Scripted::start(vec![
        // Turn 1 offers `add` only; the model calls `mul` anyway.
        tools_reply(&[("m1", "mul", r#"{"x": 6, "y": 7}"#)]),
        text_reply("I cannot multiply here"),
        // Turn 2, after the caller widened the set: `mul` is offered and runs.
        tools_reply(&[("m2", "mul", r#"{"x": 6, "y": 7}"#)]),
        text_reply("42"),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(
        openai_provider(&server)?,
        CycleConfig {
            active_tools: Some(vec!["add".into()]),
            ..Default::default()
        },
    );
    c.submit_with_tools("6 * 7?", &registry).await?;
    c.config_mut().active_tools = Some(vec!["add".into(), "mul".into()]);
    let answer = c.submit_with_tools("and now?", &registry).await?;
    assert_eq!(answer.text(), "42");
    let sent = server.requests();
    let offered = |r: &Value| -> Vec<String> {
        r["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
            .collect()
    };
    assert_eq!(offered(&sent[0]), ["add"]);
    assert_eq!(offered(&sent[2]), ["add", "mul"]);
    let answers = assert_history_valid(c.messages());
    assert!(
        answers["m1"].contains("no tool named 'mul'"),
        "{}",
        answers["m1"]
    );
    assert_eq!(answers["m2"], "42");
    Ok(())
}

/// A registry whose `add` carries two input examples.
fn registry_with_examples() -> anyhow::Result<toolhost_core::tools::ToolRegistry> {
    use toolhost_core::tools::{DynamicTool, ToolMetadata, ToolOutput, ToolRegistry};
    let registry = ToolRegistry::new();
    registry.register_with(
        DynamicTool::builder("add")
            .description("Adds x and y")
            .parameters(json!({"type": "object", "required": ["x", "y"],
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}))
            .handler(|_, _| async { Ok(ToolOutput::text("5")) })
            .build_dyn(),
        ToolMetadata {
            input_examples: vec![json!({"x": 1, "y": 2}), json!({"x": 0.5, "y": -3})],
            ..Default::default()
        },
    )?;
    Ok(registry)
}

#[tokio::test]
async fn input_examples_go_where_each_provider_takes_them() -> anyhow::Result<()> {
    let registry = registry_with_examples()?;
    // OpenAI has no field for them: folded into the description.
    let server = Scripted::start(vec![text_reply("ok")]).await?;
    let mut c = LlmCycle::new(openai_provider(&server)?, CycleConfig::default());
    c.submit_with_tools("go", &registry).await?;
    let description = server.requests()[0]["tools"][0]["function"]["description"].clone();
    assert_eq!(
        description,
        json!("Adds x and y\n\nExample arguments: {\"x\":1,\"y\":2} | {\"x\":0.5,\"y\":-3}")
    );
    // Anthropic with the beta field: `input_examples`, and the beta header.
    let server = Scripted::start(anthropic_turns()).await?;
    let provider = anthropic_provider(&server)?.with_input_examples_field()?;
    let mut c = LlmCycle::new(provider, CycleConfig::default());
    c.submit_with_tools("go", &registry).await?;
    let tool = server.requests()[0]["tools"][0].clone();
    assert_eq!(tool["description"], "Adds x and y");
    assert_eq!(
        tool["input_examples"],
        json!([{"x": 1, "y": 2}, {"x": 0.5, "y": -3}])
    );
    assert_eq!(
        server.headers()[0]
            .get("anthropic-beta")
            .and_then(|v| v.to_str().ok()),
        Some("advanced-tool-use-2025-11-20")
    );
    // Anthropic without it: folded, as for OpenAI; no beta header.
    let server = Scripted::start(anthropic_turns()).await?;
    let mut c = LlmCycle::new(anthropic_provider(&server)?, CycleConfig::default());
    c.submit_with_tools("go", &registry).await?;
    let tool = server.requests()[0]["tools"][0].clone();
    assert!(tool.get("input_examples").is_none());
    assert!(
        tool["description"]
            .as_str()
            .unwrap_or_default()
            .contains("Example arguments")
    );
    assert!(server.headers()[0].get("anthropic-beta").is_none());
    Ok(())
}
