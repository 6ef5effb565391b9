//! The call hook (`CycleConfig::call_hook`) and the invalid-call policy's history, in the
//! real loop against a scripted server: rewrite, rename, skip and stop, decided with the
//! conversation in view; the history shows what ran.

use serde_json::json;
use toolhost_llm::{
    CallDecision, CallHook, ChatMessage, CycleConfig, InvalidToolCallAction, InvalidToolCallPolicy,
    LlmCycle, LlmError,
};

use crate::support::*;

/// A cycle against `server` whose calls go through `hook`.
fn hooked(server: &Scripted, hook: CallHook) -> anyhow::Result<LlmCycle> {
    let config = CycleConfig {
        call_hook: Some(hook),
        ..Default::default()
    };
    Ok(LlmCycle::new(openai_provider(server)?, config))
}

/// Whether the user asked, anywhere in `history`, for `text`.
fn user_said(history: &[ChatMessage], text: &str) -> bool {
    history
        .iter()
        .any(|m| matches!(m, ChatMessage::User { content } if content.contains(text)))
}

#[tokio::test]
async fn the_hook_rewrites_renames_and_skips_with_the_history_in_view() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[
            ("h1", "add", r#"{"x": 2, "y": 2}"#),
            ("h2", "mul", r#"{"x": 6, "y": 7}"#),
            ("h3", "add", r#"{"x": 6, "y": 7}"#),
        ]),
        text_reply("done"),
    ])
    .await?;
    let registry = math_registry()?;
    let hook = CallHook::new(|call| {
        // The person said no multiplying: `mul` is skipped, whatever the model wants.
        if call.tool_name == "mul" && user_said(call.history, "no multiplying") {
            return CallDecision::Skip {
                reason: "multiplying is off for this conversation".into(),
            };
        }
        match (call.call_id, call.tool_name) {
            ("h1", _) => CallDecision::Rewrite {
                arguments: json!({"x": 40, "y": 2}),
            },
            ("h3", _) if call.available_tools.iter().any(|t| t == "mul") => CallDecision::Rename {
                tool_name: "mul".into(),
            },
            _ => CallDecision::Run,
        }
    });
    let mut c = hooked(&server, hook)?;
    c.submit_with_tools("Add things; no multiplying please.", &registry)
        .await?;
    let answers = assert_history_valid(c.messages());
    assert_eq!(answers["h1"], "42", "rewritten before it ran");
    assert_eq!(answers["h2"], "multiplying is off for this conversation");
    assert_eq!(answers["h3"], "42", "renamed to mul: 6 * 7");
    // The history shows what ran, not what the model asked for.
    let Some(ChatMessage::Assistant(a)) = c.messages().get(1) else {
        anyhow::bail!("no assistant message");
    };
    assert_eq!(a.tool_calls[0].function.arguments, r#"{"x":40,"y":2}"#);
    assert_eq!(a.tool_calls[2].function.name, "mul");
    Ok(())
}

#[tokio::test]
async fn the_hook_stops_the_run_and_no_call_of_the_turn_runs() -> anyhow::Result<()> {
    let server = Scripted::start(vec![tools_reply(&[
        ("s1", "add", r#"{"x": 1, "y": 1}"#),
        ("s2", "mul", r#"{"x": 1, "y": 1}"#),
    ])])
    .await?;
    let registry = math_registry()?;
    let hook = CallHook::new(|call| match call.tool_name {
        "mul" => CallDecision::Stop {
            reason: "budget spent".into(),
        },
        _ => CallDecision::Run,
    });
    let mut c = hooked(&server, hook)?;
    match c.submit_with_tools("go", &registry).await {
        Err(LlmError::Stopped { reason, messages }) => {
            assert_eq!(reason, "budget spent");
            let answers = assert_history_valid(&messages);
            assert!(answers["s1"].contains("not run"), "{}", answers["s1"]);
        }
        other => panic!("expected Stopped, got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn the_invalid_call_policy_sees_the_history_too() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[("i1", "multiply", r#"{"x": 6, "y": 7}"#)]),
        text_reply("42"),
    ])
    .await?;
    let registry = math_registry()?;
    // A repair decided from the conversation: the person asked for a product.
    let policy = InvalidToolCallPolicy::custom(|call| {
        if user_said(&call.history, "product") {
            InvalidToolCallAction::Repair {
                tool_name: "mul".into(),
            }
        } else {
            InvalidToolCallAction::Fail
        }
    });
    let mut c = LlmCycle::new(
        openai_provider(&server)?,
        CycleConfig {
            invalid_tool_calls: policy,
            ..Default::default()
        },
    );
    c.submit_with_tools("The product of 6 and 7?", &registry)
        .await?;
    assert_eq!(assert_history_valid(c.messages())["i1"], "42");
    Ok(())
}
