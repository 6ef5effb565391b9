//! The tool loop against the PyPI `fakellm` OpenAI-compatible server (rules in
//! `tests/fixtures/fakellm.yaml`). fakellm streams tool-call argument JSON split over
//! several chunks.

use futures::StreamExt;
use toolhost_llm::{
    ChatMessage, CycleConfig, LlmCycle, LlmError, OpenAiProvider, RetryPolicy, StreamEvent,
};

use crate::support::*;

fn provider(base: &str, scenario: &str) -> anyhow::Result<OpenAiProvider> {
    let conversation = format!("{scenario}-{}", std::process::id());
    Ok(OpenAiProvider::without_key(base, "fake-model")?
        .with_header("X-Test-Scenario", scenario)?
        .with_header("X-Fakellm-Conversation-Id", &conversation)?
        .with_retry(RetryPolicy::none()))
}

#[tokio::test]
async fn fakellm_single_tool_turn_blocking() -> anyhow::Result<()> {
    let Some(server) = start_fakellm("fakellm.yaml").await? else {
        return Ok(());
    };
    let registry = math_registry()?;
    let mut c = LlmCycle::new(
        provider(&server.base_url, "single")?,
        CycleConfig::default(),
    );
    let answer = c.submit_with_tools("What is 2 + 3?", &registry).await?;
    assert_eq!(answer.text(), "The sum is 5.");
    assert_eq!(
        roles(c.messages()),
        ["user", "assistant", "tool", "assistant"]
    );
    let answers = assert_history_valid(c.messages());
    assert_eq!(answers.values().collect::<Vec<_>>(), ["5"]);
    Ok(())
}

#[tokio::test]
async fn fakellm_streamed_loop_of_three_turns_with_split_arguments() -> anyhow::Result<()> {
    let Some(server) = start_fakellm("fakellm.yaml").await? else {
        return Ok(());
    };
    let registry = math_registry()?;
    let mut c = LlmCycle::new(provider(&server.base_url, "loop")?, CycleConfig::default());
    let mut events = Vec::new();
    {
        let mut s = c.submit_stream_with_tools("(2+3)*4 and (2+3)*10", &registry);
        while let Some(ev) = s.next().await {
            events.push(ev?);
        }
    }
    let answers = assert_history_valid(c.messages());
    let mut results: Vec<&str> = answers.values().map(String::as_str).collect();
    results.sort_unstable();
    assert_eq!(results, ["20", "5", "50"]);
    assert_eq!(
        roles(c.messages()),
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "tool",
            "assistant"
        ]
    );
    assert_eq!(
        c.messages().last().and_then(ChatMessage::text),
        Some("Results: 20 and 50.")
    );
    // The arguments arrived in pieces and were joined into JSON.
    let started: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolExecutionStarted {
                tool_name: name,
                input,
                ..
            } => Some(format!("{name} {input}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [
            r#"add {"x":2,"y":3}"#,
            r#"mul {"x":5,"y":4}"#,
            r#"mul {"x":5,"y":10}"#
        ]
    );
    let completed = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolExecutionCompleted { output: Ok(_), .. }))
        .count();
    assert_eq!(completed, 3);
    // fakellm streams content only when there are no tool calls; the final answer came as
    // text deltas.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::AssistantTextDelta { .. }))
    );
    Ok(())
}

#[tokio::test]
async fn fakellm_rate_limit_is_an_http_error() -> anyhow::Result<()> {
    let Some(server) = start_fakellm("fakellm.yaml").await? else {
        return Ok(());
    };
    let mut c = LlmCycle::new(
        provider(&server.base_url, "rate_limit")?,
        CycleConfig::default(),
    );
    let err = c.submit("hello").await;
    let Err(LlmError::Http {
        status: 429, body, ..
    }) = err
    else {
        anyhow::bail!("expected 429, got {err:?}");
    };
    assert!(body.contains("Rate limit exceeded"), "{body}");
    Ok(())
}
