//! The structured final answer (`CycleConfig::answer_schema`) in the real loop against a
//! scripted server: the schema goes out as OpenAI's `response_format`, a tool turn comes
//! first, an answer that breaks the schema goes back to the model with what is wrong,
//! and the repairs are bounded.

use futures::StreamExt;
use serde_json::{Value, json};
use toolhost_llm::{ChatMessage, CycleConfig, LlmCycle, LlmError, StreamEvent};

use crate::support::*;

fn schema() -> Value {
    json!({"type": "object", "required": ["sum"], "additionalProperties": false,
           "properties": {"sum": {"type": "number"}}})
}

fn config(repairs: usize) -> CycleConfig {
    CycleConfig {
        answer_schema: Some(schema()),
        max_answer_repairs: repairs,
        ..Default::default()
    }
}

#[tokio::test]
async fn a_prose_answer_is_sent_back_once_and_the_json_one_is_the_value() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[("a1", "add", r#"{"x": 2, "y": 3}"#)]),
        text_reply("The sum is 5."),
        text_reply("```json\n{\"sum\": 5}\n```"),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(openai_provider(&server)?, config(2));
    let answer = c.submit_with_tools("2 + 3?", &registry).await?;
    assert_eq!(answer.structured, Some(json!({"sum": 5})));
    let sent = server.requests();
    assert_eq!(sent.len(), 3);
    for r in &sent {
        assert_eq!(
            r["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": schema()}})
        );
    }
    // The repair prompt names the problem; the history stays valid.
    let last_user = c
        .messages()
        .iter()
        .rev()
        .find_map(|m| match m {
            ChatMessage::User { content } => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_default();
    assert!(last_user.contains("not JSON"), "{last_user}");
    assert_history_valid(c.messages());
    Ok(())
}

#[tokio::test]
async fn repairs_are_bounded_and_the_stream_says_each_rejection() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        sse_text(&["{\"sum\": \"five\"}"]),
        sse_text(&["{\"total\": 5}"]),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(openai_provider(&server)?, config(1));
    let mut rejected = Vec::new();
    let mut end = None;
    {
        let mut s = c.submit_stream_with_tools("2 + 3?", &registry);
        while let Some(ev) = s.next().await {
            match ev {
                Ok(StreamEvent::AnswerRejected { problem }) => rejected.push(problem),
                Ok(_) => {}
                Err(e) => end = Some(e),
            }
        }
    }
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert!(rejected[0].contains("at /sum"), "{}", rejected[0]);
    match end {
        Some(LlmError::InvalidAnswer { problem, messages }) => {
            assert!(problem.contains("total"), "{problem}");
            assert!(!messages.is_empty());
        }
        other => panic!("expected InvalidAnswer, got {other:?}"),
    }
    assert_eq!(
        server.requests().len(),
        2,
        "one answer, one repair, no more"
    );
    Ok(())
}
