//! The Anthropic provider in the real loop against a scripted server speaking the Messages
//! API: blocking and streamed answers (deltas split across events and network frames),
//! parallel tool use, `is_error`, and hostile answers each followed by a good turn.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolhost_llm::{
    AnthropicProvider, ChatMessage, CycleConfig, FinishReason, LlmCycle, LlmError, RetryPolicy,
    StreamEvent,
};

use crate::support::*;

fn provider(s: &Scripted) -> anyhow::Result<AnthropicProvider> {
    // The scripted server serves `/v1/messages` under the same root.
    let base = s.base_url.trim_end_matches("/v1");
    Ok(AnthropicProvider::without_key(base, "claude-test")?
        .with_api_key("sk-ant-test")?
        .with_retry(RetryPolicy::none()))
}

/// A blocking Messages answer.
fn message(content: Value, stop_reason: &str) -> Reply {
    Reply::Json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": 20, "output_tokens": 5}
    }))
}

/// One SSE event of the Messages stream.
fn ev(data: Value) -> String {
    let kind = data["type"].as_str().unwrap_or("unknown").to_string();
    format!("event: {kind}\ndata: {data}\n\n")
}

fn start() -> String {
    ev(
        json!({"type": "message_start", "message": {"id": "msg_s", "type": "message",
        "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null,
        "usage": {"input_tokens": 30, "output_tokens": 1}}}),
    )
}

fn stop(reason: &str) -> Vec<String> {
    vec![
        ev(
            json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": 9}}),
        ),
        ev(json!({"type": "message_stop"})),
    ]
}

fn text_stream(pieces: &[&str]) -> Reply {
    let mut f = vec![
        start(),
        ev(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
    ];
    for p in pieces {
        f.push(ev(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}),
        ));
    }
    f.push(ev(json!({"type": "content_block_stop", "index": 0})));
    f.extend(stop("end_turn"));
    Reply::Sse(f)
}

/// A streamed tool_use block whose input JSON arrives in these pieces.
fn tool_stream(index: usize, id: &str, name: &str, pieces: &[&str]) -> Vec<String> {
    let mut f = vec![ev(
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
    )];
    for p in pieces {
        f.push(ev(
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}}),
        ));
    }
    f.push(ev(json!({"type": "content_block_stop", "index": index})));
    f
}

fn tool_results(req: &Value) -> Vec<Value> {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .collect()
}

#[tokio::test]
async fn parallel_tool_use_round_trips_with_is_error_and_headers() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        message(
            json!([
                {"type": "text", "text": "Both at once."},
                {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"x": 2, "y": 3}},
                {"type": "tool_use", "id": "toolu_2", "name": "mul", "input": {"x": "six"}}
            ]),
            "tool_use",
        ),
        message(
            json!([{"type": "text", "text": "5, and mul failed"}]),
            "end_turn",
        ),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            system_prompt: Some("Be exact.".into()),
            ..Default::default()
        },
    );
    let answer = c.submit_with_tools("add and multiply", &registry).await?;
    assert_eq!(answer.text(), "5, and mul failed");
    assert_eq!(answer.stop_reason, Some(FinishReason::Stop));
    let answers = assert_history_valid(c.messages());
    assert_eq!(answers["toolu_1"], "5");
    assert!(answers["toolu_2"].starts_with("Error: "));
    assert_eq!(c.usage().total_tokens, 50);

    let headers = server.headers();
    assert_eq!(headers[0]["x-api-key"], "sk-ant-test");
    assert_eq!(headers[0]["anthropic-version"], "2023-06-01");
    let reqs = server.requests();
    let first = &reqs[0];
    assert_eq!(first["system"], "Be exact.");
    assert_eq!(first["max_tokens"], 4096);
    assert_eq!(first["model"], "claude-test");
    let tools = first["tools"].as_array().cloned().unwrap_or_default();
    assert!(tools.iter().any(|t| t["name"] == "add"
        && t["input_schema"]["type"] == "object"
        && t["description"].is_string()));
    // Both results in one user message, after the assistant's tool_use blocks.
    let second = &reqs[1];
    let msgs = second["messages"].as_array().cloned().unwrap_or_default();
    let roles: Vec<&str> = msgs.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(msgs[1]["content"][1]["input"], json!({"x": 2, "y": 3}));
    let results = tool_results(second);
    assert_eq!(results.len(), 2);
    assert_eq!(
        (&results[0]["tool_use_id"], &results[0]["is_error"]),
        (&json!("toolu_1"), &json!(false))
    );
    assert_eq!(results[1]["is_error"], true);
    Ok(())
}

#[tokio::test]
async fn streamed_split_deltas_assemble_into_calls_and_text() -> anyhow::Result<()> {
    let mut turn1 = vec![
        start(),
        ev(json!({"type": "ping"})),
        ev(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Comput"}}),
        ),
        ev(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ing."}}),
        ),
        ev(json!({"type": "content_block_stop", "index": 0})),
    ];
    turn1.extend(tool_stream(
        1,
        "toolu_a",
        "add",
        &["{\"x\": ", "2, \"y\"", ": 3}"],
    ));
    turn1.extend(tool_stream(
        2,
        "toolu_m",
        "mul",
        &["", "{\"x\": 6, \"y\": 7}"],
    ));
    turn1.extend(stop("tool_use"));
    // Cut every event in two network frames.
    let frames: Vec<String> = turn1
        .into_iter()
        .flat_map(|e| {
            let mut cut = e.len() / 2;
            while !e.is_char_boundary(cut) {
                cut -= 1;
            }
            [e[..cut].to_string(), e[cut..].to_string()]
        })
        .collect();
    let server = Scripted::start(vec![Reply::Sse(frames), text_stream(&["5 and ", "42"])]).await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(provider(&server)?, CycleConfig::default());
    let mut summary = Vec::new();
    {
        let mut s = c.submit_stream_with_tools("add and multiply", &registry);
        while let Some(e) = s.next().await {
            match e? {
                StreamEvent::AssistantTextDelta { text } => summary.push(format!("text {text}")),
                StreamEvent::ToolExecutionStarted { id, input, .. } => {
                    summary.push(format!("started {id} {input}"));
                }
                StreamEvent::ToolExecutionCompleted { id, output, .. } => {
                    summary.push(format!("completed {id} {output:?}"));
                }
                StreamEvent::TurnComplete { reason } => summary.push(format!("turn {reason:?}")),
                StreamEvent::Usage { turn, .. } => {
                    summary.push(format!("usage {}", turn.total_tokens))
                }
                _ => {}
            }
        }
    }
    assert_eq!(
        summary,
        [
            "text Comput",
            "text ing.",
            "usage 39",
            r#"started toolu_a {"x":2,"y":3}"#,
            r#"started toolu_m {"x":6,"y":7}"#,
            "turn ToolCalls",
            r#"completed toolu_a Ok("5")"#,
            r#"completed toolu_m Ok("42")"#,
            "text 5 and ",
            "text 42",
            "usage 39",
            "turn Stop",
        ]
    );
    assert_eq!(server.requests()[0]["stream"], true);
    assert_eq!(tool_results(&server.requests()[1]).len(), 2);
    Ok(())
}

#[tokio::test]
async fn hostile_answers_get_feedback_or_bounded_errors_and_good_turns_follow() -> anyhow::Result<()>
{
    // 1. A tool_use for a tool that does not exist, then a good call.
    let mut unknown = vec![start()];
    unknown.extend(tool_stream(0, "toolu_x", "rm_rf_everything", &["{}"]));
    unknown.extend(stop("tool_use"));
    // 2. Input JSON pieces that never make JSON, then a good call.
    let mut broken = vec![start()];
    broken.extend(tool_stream(
        0,
        "toolu_b",
        "add",
        &["{\"x\": 2,", " \"y\": [3"],
    ));
    broken.extend(stop("tool_use"));
    let mut good = vec![start()];
    good.extend(tool_stream(0, "toolu_g", "add", &["{\"x\": 1, \"y\": 1}"]));
    good.extend(stop("tool_use"));
    // 3. A stream that never ends and never stops growing.
    let endless = ev(
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x".repeat(60_000)}}),
    );
    let server = Scripted::start(vec![
        Reply::Sse(unknown),
        Reply::Sse(broken),
        Reply::Sse(good),
        text_stream(&["2"]),
        Reply::SseForever(endless),
        message(json!([{"type": "text", "text": "still here"}]), "end_turn"),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(provider(&server)?, CycleConfig::default());
    let mut s = c.submit_stream_with_tools("add one and one", &registry);
    while let Some(e) = s.next().await {
        e?;
    }
    drop(s);
    let answers = assert_history_valid(c.messages());
    assert!(answers["toolu_x"].contains("no tool named 'rm_rf_everything'"));
    assert!(answers["toolu_b"].contains("not valid JSON"));
    assert_eq!(answers["toolu_g"], "2");
    // The model saw both problems as errors.
    let results = tool_results(&server.requests()[2]);
    assert!(results.iter().all(|r| r["is_error"] == true), "{results:?}");

    // The endless stream fails, bounded and fast, with a clear error.
    let started = std::time::Instant::now();
    let err = {
        let mut s = c.submit_stream_with_tools("talk forever", &registry);
        let mut err = None;
        while let Some(e) = s.next().await {
            if let Err(e) = e {
                err = Some(e);
            }
        }
        err
    };
    assert!(started.elapsed() < Duration::from_secs(30));
    let Some(err) = err else {
        anyhow::bail!("an endless stream must fail");
    };
    assert!(matches!(err, LlmError::Incomplete(_)), "{err}");
    assert!(err.to_string().contains("bytes"), "{err}");
    // A good turn follows.
    let answer = c.submit("are you there?").await?;
    assert_eq!(answer.text(), "still here");
    assert!(matches!(
        c.messages().last(),
        Some(ChatMessage::Assistant(_))
    ));
    Ok(())
}
