//! Prompt caching: Anthropic's cache breakpoints as they go over the wire, and the cached
//! tokens both providers report, in the loop's usage (scripted servers on 127.0.0.1).

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_llm::{AnthropicProvider, CycleConfig, LlmCycle, OpenAiProvider, RetryPolicy, Usage};

use crate::support::*;

fn anthropic(s: &Scripted, cache: bool) -> anyhow::Result<AnthropicProvider> {
    let base = s.base_url.trim_end_matches("/v1");
    Ok(AnthropicProvider::without_key(base, "claude-test")?
        .with_api_key("sk-ant-test")?
        .with_retry(RetryPolicy::none())
        .with_prompt_caching(cache))
}

/// An Anthropic answer with `content` and this usage.
fn answer(content: Value, stop: &str, usage: Value) -> Reply {
    Reply::Json(json!({
        "id": "msg", "type": "message", "role": "assistant", "model": "claude-test",
        "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage
    }))
}

fn marks(request: &Value) -> Vec<String> {
    let mut at = Vec::new();
    if let Some(tools) = request["tools"].as_array() {
        for t in tools {
            if t.get("cache_control").is_some() {
                at.push(format!("tool {}", t["name"].as_str().unwrap_or("?")));
            }
        }
    }
    if let Some(system) = request["system"].as_array()
        && system.iter().any(|b| b.get("cache_control").is_some())
    {
        at.push("system".into());
    }
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    for (i, m) in messages.iter().enumerate() {
        if let Some(blocks) = m["content"].as_array()
            && blocks.iter().any(|b| b.get("cache_control").is_some())
        {
            at.push(format!("message {i} of {}", messages.len()));
        }
    }
    at
}

#[tokio::test]
async fn anthropic_marks_tools_system_and_history_and_reports_cache_reads_and_writes()
-> anyhow::Result<()> {
    let server = Scripted::start(vec![
        answer(
            json!([{"type": "tool_use", "id": "t1", "name": "add", "input": {"x": 2, "y": 3}}]),
            "tool_use",
            json!({"input_tokens": 20, "output_tokens": 5,
                   "cache_creation_input_tokens": 900, "cache_read_input_tokens": 0}),
        ),
        answer(
            json!([{"type": "text", "text": "5"}]),
            "end_turn",
            json!({"input_tokens": 30, "output_tokens": 2,
                   "cache_creation_input_tokens": 40, "cache_read_input_tokens": 900}),
        ),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(
        anthropic(&server, true)?,
        CycleConfig {
            system_prompt: Some("You add numbers.".into()),
            ..Default::default()
        },
    );
    c.submit_with_tools("2 + 3?", &registry).await?;
    let sent = server.requests();
    assert_eq!(
        marks(&sent[0]),
        ["tool mul", "system", "message 0 of 1"],
        "{}",
        sent[0]
    );
    // The second turn moves the history's mark to its new end (the tool result).
    assert_eq!(marks(&sent[1]), ["tool mul", "system", "message 2 of 3"]);
    assert_eq!(
        c.usage(),
        Usage {
            prompt_tokens: 920 + 970,
            completion_tokens: 7,
            total_tokens: 920 + 970 + 7,
            cached_tokens: 900,
            cache_write_tokens: 940,
        }
    );

    // Off (the default): not one mark.
    let server = Scripted::start(vec![answer(
        json!([{"type": "text", "text": "hi"}]),
        "end_turn",
        json!({"input_tokens": 5, "output_tokens": 1}),
    )])
    .await?;
    let mut c = LlmCycle::new(anthropic(&server, false)?, CycleConfig::default());
    c.submit_with_tools("hi", &registry).await?;
    assert!(marks(&server.requests()[0]).is_empty());
    Ok(())
}

#[tokio::test]
async fn openai_cached_tokens_reach_the_usage() -> anyhow::Result<()> {
    let server = Scripted::start(vec![Reply::Json(json!({
        "id": "c", "object": "chat.completion", "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 2000, "completion_tokens": 3, "total_tokens": 2003,
                  "prompt_tokens_details": {"cached_tokens": 1920}}
    }))])
    .await?;
    let provider =
        OpenAiProvider::without_key(&server.base_url, "scripted")?.with_retry(RetryPolicy {
            initial_backoff: Duration::ZERO,
            ..RetryPolicy::default()
        });
    let mut c = LlmCycle::new(provider, CycleConfig::default());
    c.submit("hi").await?;
    assert_eq!(c.usage().cached_tokens, 1920);
    assert_eq!(c.usage().prompt_tokens, 2000);
    Ok(())
}
