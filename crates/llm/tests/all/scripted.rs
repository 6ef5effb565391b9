//! The tool loop against the scripted server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tokio::sync::Barrier;
use toolhost_core::tools::{
    ApprovalDecision, DynamicTool, Permission, StaticApprover, ToolError, ToolMetadata, ToolOutput,
    ToolRegistry,
};
use toolhost_llm::{
    ChatMessage, CycleConfig, FinishReason, InvalidToolCallPolicy, LlmCycle, LlmError,
    OpenAiProvider, RetryPolicy, StreamEvent,
};

use crate::support::*;

fn provider(s: &Scripted) -> anyhow::Result<OpenAiProvider> {
    Ok(
        OpenAiProvider::without_key(&s.base_url, "scripted")?.with_retry(RetryPolicy {
            initial_backoff: Duration::ZERO,
            ..RetryPolicy::default()
        }),
    )
}

fn cycle(s: &Scripted) -> anyhow::Result<LlmCycle> {
    Ok(LlmCycle::new(provider(s)?, CycleConfig::default()))
}

#[tokio::test]
async fn single_tool_turn_feeds_the_result_back_and_answers() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[("call_1", "add", r#"{"x": 2, "y": 3}"#)]),
        text_reply("2 + 3 = 5"),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            system_prompt: Some("You add numbers.".into()),
            ..Default::default()
        },
    );
    let answer = c.submit_with_tools("What is 2 + 3?", &registry).await?;
    assert_eq!(answer.text(), "2 + 3 = 5");
    assert_eq!(answer.stop_reason, Some(FinishReason::Stop));
    assert_eq!(
        roles(c.messages()),
        ["system", "user", "assistant", "tool", "assistant"]
    );
    let answers = assert_history_valid(c.messages());
    assert_eq!(answers["call_1"], "5");

    // What went over the wire: the tools on every request, and the tool message on the
    // second one.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0]["model"], "scripted");
    let names: Vec<&str> = reqs[0]["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(names, ["add", "mul"]);
    assert_eq!(
        reqs[1]["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "5"})
    );
    assert_eq!(
        reqs[1]["messages"][2]["tool_calls"][0]["function"]["name"],
        "add"
    );
    Ok(())
}

#[tokio::test]
async fn a_loop_of_three_turns_chains_tool_results() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[("a", "add", r#"{"x": 2, "y": 3}"#)]),
        tools_reply(&[("b", "mul", r#"{"x": 5, "y": 4}"#)]),
        text_reply("(2 + 3) * 4 = 20"),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = cycle(&server)?;
    let answer = c.submit_with_tools("(2+3)*4?", &registry).await?;
    assert_eq!(answer.text(), "(2 + 3) * 4 = 20");
    let answers = assert_history_valid(c.messages());
    assert_eq!((answers["a"].as_str(), answers["b"].as_str()), ("5", "20"));
    assert_eq!(
        roles(c.messages()),
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant"
        ]
    );
    assert_eq!(server.requests().len(), 3);
    Ok(())
}

#[tokio::test]
async fn two_calls_in_one_turn_run_in_parallel() -> anyhow::Result<()> {
    // Each call waits at a barrier for two parties: it is passed only if both calls are
    // running at the same time. Run one after the other, the first would wait until the
    // tool deadline and fail, and the test with it.
    let barrier = Arc::new(Barrier::new(2));
    let registry = ToolRegistry::new();
    let b = barrier.clone();
    registry.register(
        DynamicTool::builder("meet")
            .description("Wait for the other caller to arrive")
            .handler(move |_args, _ctx| {
                let b = b.clone();
                async move {
                    b.wait().await;
                    Ok(ToolOutput::text("met"))
                }
            })
            .build_dyn(),
    )?;
    let server = Scripted::start(vec![
        tools_reply(&[("p1", "meet", "{}"), ("p2", "meet", "{}")]),
        text_reply("both met"),
    ])
    .await?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            tool_timeout_secs: 30,
            ..Default::default()
        },
    );
    c.submit_with_tools("meet twice", &registry).await?;
    let answers = assert_history_valid(c.messages());
    assert_eq!(
        (answers["p1"].as_str(), answers["p2"].as_str()),
        ("met", "met")
    );
    // The tool messages keep the model's order.
    assert_eq!(
        c.messages()[2..4]
            .iter()
            .map(|m| match m {
                ChatMessage::Tool { tool_call_id, .. } => tool_call_id.as_str(),
                _ => "",
            })
            .collect::<Vec<_>>(),
        ["p1", "p2"]
    );
    Ok(())
}

#[tokio::test]
async fn streaming_joins_split_arguments_and_orders_events_as_documented() -> anyhow::Result<()> {
    // Turn 1: text, then two tool calls whose argument JSON is split over several events,
    // and one event itself split across two network frames.
    let turn1 = Reply::Sse(vec![
        sse_chunk(json!({"role": "assistant", "content": ""}), None),
        sse_chunk(json!({"content": "Let me "}), None),
        sse_chunk(json!({"content": "compute."}), None),
        sse_chunk(
            json!({"tool_calls": [{"index": 0, "id": "s1", "type": "function", "function": {"name": "add", "arguments": ""}}]}),
            None,
        ),
        sse_chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"x\": "}}]}),
            None,
        ),
        sse_chunk(
            json!({"tool_calls": [{"index": 1, "id": "s2", "type": "function", "function": {"name": "mul", "arguments": "{\"x\""}}]}),
            None,
        ),
        {
            let ev = sse_chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "2, \"y\": 3}"}}]}),
                None,
            );
            let (a, b) = ev.split_at(ev.len() / 2);
            format!("{a}\u{0}{b}")
        },
        sse_chunk(
            json!({"tool_calls": [{"index": 1, "function": {"arguments": ": 6, \"y\": 7}"}}]}),
            None,
        ),
        sse_chunk(json!({}), Some("tool_calls")),
        sse_done(),
    ]);
    // The \0 above marks where the frame is cut; make it two frames.
    let turn1 = match turn1 {
        Reply::Sse(frames) => Reply::Sse(
            frames
                .into_iter()
                .flat_map(|f| f.split('\u{0}').map(str::to_string).collect::<Vec<_>>())
                .collect(),
        ),
        other => other,
    };
    let server = Scripted::start(vec![turn1, sse_text(&["5 and ", "42"])]).await?;
    let registry = math_registry()?;
    let mut c = cycle(&server)?;
    let events: Vec<StreamEvent> = {
        let mut s = c.submit_stream_with_tools("add and multiply", &registry);
        let mut out = Vec::new();
        while let Some(ev) = s.next().await {
            out.push(ev?);
        }
        out
    };
    let summary: Vec<String> = events
        .iter()
        .map(|e| match e {
            StreamEvent::AssistantTextDelta { text } => format!("text {text}"),
            StreamEvent::ToolExecutionStarted {
                id,
                tool_name: name,
                input,
            } => {
                format!("started {id} {name} {input}")
            }
            StreamEvent::TurnComplete { reason } => format!("turn {reason:?}"),
            StreamEvent::ToolExecutionCompleted { id, output, .. } => {
                format!("completed {id} {output:?}")
            }
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        summary,
        [
            "text Let me ",
            "text compute.",
            r#"started s1 add {"x":2,"y":3}"#,
            r#"started s2 mul {"x":6,"y":7}"#,
            "turn ToolCalls",
            r#"completed s1 Ok("5")"#,
            r#"completed s2 Ok("42")"#,
            "text 5 and ",
            "text 42",
            "turn Stop",
        ]
    );
    let answers = assert_history_valid(c.messages());
    assert_eq!(answers.len(), 2);
    let Some(ChatMessage::Assistant(first)) = c.messages().get(1) else {
        anyhow::bail!("no assistant message");
    };
    assert_eq!(first.content.as_deref(), Some("Let me compute."));
    assert_eq!(
        first.tool_calls[0].function.arguments,
        r#"{"x": 2, "y": 3}"#
    );
    assert_eq!(
        c.messages().last().and_then(ChatMessage::text),
        Some("5 and 42")
    );
    // Streaming requests ask for a stream.
    assert_eq!(server.requests()[0]["stream"], true);
    Ok(())
}

#[tokio::test]
async fn reaching_max_turns_is_an_error_with_a_valid_trajectory() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[("t1", "add", r#"{"x": 1, "y": 1}"#)]),
        tools_reply(&[("t2", "add", r#"{"x": 2, "y": 2}"#)]),
        tools_reply(&[("t3", "add", r#"{"x": 3, "y": 3}"#)]),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            max_turns: Some(2),
            ..Default::default()
        },
    );
    let err = c.submit_with_tools("loop forever", &registry).await;
    let Err(LlmError::MaxTurns {
        max_turns,
        messages,
    }) = err
    else {
        anyhow::bail!("expected MaxTurns, got {err:?}");
    };
    assert_eq!(max_turns, 2);
    assert_eq!(server.requests().len(), 2, "no request beyond max_turns");
    assert_eq!(server.remaining(), 1);
    let answers = assert_history_valid(&messages);
    assert_eq!(answers.len(), 2);
    assert_eq!(messages, c.messages());
    Ok(())
}

#[tokio::test]
async fn an_unknown_tool_is_retried_with_feedback_naming_the_tools() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[
            ("u1", "subtract", r#"{"x": 1, "y": 1}"#),
            ("u2", "add", r#"{"x": 1, "y": 1}"#),
        ]),
        text_reply("sorry"),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = cycle(&server)?;
    c.submit_with_tools("1-1?", &registry).await?;
    let answers = assert_history_valid(c.messages());
    assert!(
        answers["u1"].contains("no tool named 'subtract'") && answers["u1"].contains("add, mul"),
        "feedback: {}",
        answers["u1"]
    );
    // The valid call of the same turn still ran.
    assert_eq!(answers["u2"], "2");
    // The feedback went back to the model.
    let second = &server.requests()[1]["messages"];
    assert_eq!(second[2]["tool_call_id"], "u1");
    assert_eq!(second[2]["content"].as_str(), Some(answers["u1"].as_str()));
    Ok(())
}

#[tokio::test]
async fn the_repair_policy_calls_the_closest_tool_and_rewrites_history() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[("r1", "ad", r#"{"x": 4, "y": 4}"#)]),
        text_reply("8"),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            invalid_tool_calls: InvalidToolCallPolicy::Repair,
            ..Default::default()
        },
    );
    c.submit_with_tools("4+4", &registry).await?;
    let answers = assert_history_valid(c.messages());
    assert_eq!(answers["r1"], "8");
    let Some(ChatMessage::Assistant(a)) = c.messages().get(1) else {
        anyhow::bail!("no assistant message");
    };
    assert_eq!(a.tool_calls[0].function.name, "add");
    Ok(())
}

#[tokio::test]
async fn arguments_that_are_not_json_get_feedback_and_the_loop_goes_on() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[("j1", "add", r#"{"x": 2, "y": "#)]),
        tools_reply(&[("j2", "add", r#"{"x": 2, "y": 2}"#)]),
        text_reply("4"),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = cycle(&server)?;
    let answer = c.submit_with_tools("2+2", &registry).await?;
    assert_eq!(answer.text(), "4");
    let answers = assert_history_valid(c.messages());
    assert!(
        answers["j1"].contains("not valid JSON"),
        "{}",
        answers["j1"]
    );
    assert_eq!(answers["j2"], "4");
    // Arguments that are JSON but do not fit the schema are the registry's business: a
    // recoverable InvalidArguments, fed back as well.
    let server = Scripted::start(vec![
        tools_reply(&[("k1", "add", r#"{"x": "two"}"#)]),
        text_reply("ok"),
    ])
    .await?;
    let mut c = cycle(&server)?;
    c.submit_with_tools("2+?", &registry).await?;
    let answers = assert_history_valid(c.messages());
    assert!(
        answers["k1"].starts_with("Error: invalid arguments for tool 'add'"),
        "{}",
        answers["k1"]
    );
    Ok(())
}

#[tokio::test]
async fn fail_and_stop_policies_end_the_loop_without_running_the_turn() -> anyhow::Result<()> {
    for (policy, stop) in [
        (InvalidToolCallPolicy::Fail, false),
        (InvalidToolCallPolicy::Stop, true),
    ] {
        let ran = Arc::new(AtomicBool::new(false));
        let registry = ToolRegistry::new();
        let r = ran.clone();
        registry.register(
            DynamicTool::builder("mark")
                .description("Leave a mark when run")
                .handler(move |_a, _c| {
                    let r = r.clone();
                    async move {
                        r.store(true, Ordering::SeqCst);
                        Ok(ToolOutput::text("marked"))
                    }
                })
                .build_dyn(),
        )?;
        let server = Scripted::start(vec![
            tools_reply(&[("f1", "mark", "{}"), ("f2", "nope", "{}")]),
            text_reply("never"),
        ])
        .await?;
        let mut c = LlmCycle::new(
            provider(&server)?,
            CycleConfig {
                invalid_tool_calls: policy,
                ..Default::default()
            },
        );
        let err = c.submit_with_tools("go", &registry).await;
        match (&err, stop) {
            (Err(LlmError::InvalidToolCall { tool, .. }), false) => assert_eq!(tool, "nope"),
            (Err(LlmError::Stopped { .. }), true) => {}
            _ => anyhow::bail!("unexpected result {err:?}"),
        }
        let trajectory = err
            .err()
            .and_then(|e| e.trajectory().map(<[_]>::to_vec))
            .unwrap_or_default();
        assert_eq!(assert_history_valid(&trajectory).len(), 2);
        assert!(!ran.load(Ordering::SeqCst), "no call of a failed turn runs");
        assert_eq!(server.requests().len(), 1);
    }
    Ok(())
}

#[tokio::test]
async fn a_permission_denial_stops_the_loop_and_the_tool_never_runs() -> anyhow::Result<()> {
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let registry = math_registry()?.with_approver(Arc::new(StaticApprover(ApprovalDecision::Deny)));
    registry.register(
        DynamicTool::builder("delete_everything")
            .description("Delete every file (destructive)")
            .permissions(vec![Permission::Delete])
            .handler(move |_a, _c| {
                let r = r.clone();
                async move {
                    r.store(true, Ordering::SeqCst);
                    Ok(ToolOutput::text("deleted"))
                }
            })
            .build_dyn(),
    )?;
    let server = Scripted::start(vec![
        tools_reply(&[
            ("d1", "delete_everything", "{}"),
            ("d2", "add", r#"{"x": 1, "y": 2}"#),
        ]),
        text_reply("never asked"),
    ])
    .await?;
    let mut c = cycle(&server)?;
    let err = c.submit_with_tools("clean up", &registry).await;
    let Err(LlmError::ToolFailed {
        tool,
        call_id,
        error,
        messages,
    }) = err
    else {
        anyhow::bail!("expected ToolFailed, got {err:?}");
    };
    assert_eq!(
        (tool.as_str(), call_id.as_str()),
        ("delete_everything", "d1")
    );
    assert!(matches!(*error, ToolError::PermissionDenied(..)));
    assert!(!ran.load(Ordering::SeqCst), "a denied tool never runs");
    assert_eq!(server.requests().len(), 1, "the model is not asked again");
    // Both calls are answered, the denied one with the denial, so the trajectory can be
    // resubmitted as it is.
    let answers = assert_history_valid(&messages);
    assert!(
        answers["d1"].contains("permission denied"),
        "{}",
        answers["d1"]
    );
    assert_eq!(answers["d2"], "3");
    assert_eq!(messages, c.messages());
    Ok(())
}

#[tokio::test]
async fn recoverable_tool_errors_and_timeouts_go_back_to_the_model() -> anyhow::Result<()> {
    let registry = ToolRegistry::new();
    registry.register(
        DynamicTool::builder("flaky")
            .description("Fail with a message the model can act on")
            .handler(|_a, _c| async {
                Err(ToolError::failed("flaky", "the disk is busy, try later"))
            })
            .build_dyn(),
    )?;
    registry.register(
        DynamicTool::builder("hang")
            .description("Never finish unless cancelled")
            .handler(|_a, ctx| async move {
                ctx.cancellation_token().cancelled().await;
                Err(ToolError::Cancelled("hang".into()))
            })
            .build_dyn(),
    )?;
    let server = Scripted::start(vec![
        tools_reply(&[("e1", "flaky", "{}"), ("e2", "hang", "{}")]),
        text_reply("I will try later"),
    ])
    .await?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            tool_timeout_secs: 1,
            ..Default::default()
        },
    );
    let answer = c.submit_with_tools("do it", &registry).await?;
    assert_eq!(answer.text(), "I will try later");
    let answers = assert_history_valid(c.messages());
    assert_eq!(
        answers["e1"],
        "Error: tool 'flaky' failed: the disk is busy, try later"
    );
    assert!(
        answers["e2"].starts_with("Error: tool 'hang' timed out"),
        "{}",
        answers["e2"]
    );
    Ok(())
}

#[tokio::test]
async fn tools_get_the_cycle_session_and_tag_filter_narrows_the_offer() -> anyhow::Result<()> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let registry = math_registry()?;
    registry.register_with(
        Arc::new(context_probe(seen.clone())),
        ToolMetadata {
            tags: vec!["session".into()],
            ..Default::default()
        },
    )?;
    let server = Scripted::start(vec![
        tools_reply(&[("w1", "whoami", "{}"), ("w2", "add", r#"{"x": 1, "y": 1}"#)]),
        text_reply("done"),
    ])
    .await?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            tool_tags: vec!["session".into()],
            ..Default::default()
        },
    );
    c.submit_with_tools("who am I", &registry).await?;
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, c.session_id());
    assert_eq!(seen[0].1, c.tool_context().trace_id());
    assert_eq!(seen[0].2, "w1");
    // Only the tagged tool was offered, and `add` counted as unknown.
    let tools = server.requests()[0]["tools"].clone();
    assert_eq!(tools.as_array().map(Vec::len), Some(1));
    assert_eq!(tools[0]["function"]["name"], "whoami");
    let answers = assert_history_valid(c.messages());
    assert!(answers["w2"].contains("no tool named 'add'"));
    Ok(())
}

#[tokio::test]
async fn busy_servers_are_retried_honouring_retry_after_and_client_errors_are_not()
-> anyhow::Result<()> {
    let server = Scripted::start(vec![
        Reply::Status(429, vec![("retry-after", "0".into())], "slow down".into()),
        Reply::Status(503, vec![], "overloaded".into()),
        text_reply("finally"),
    ])
    .await?;
    let mut c = cycle(&server)?;
    let answer = c.submit("hi").await?;
    assert_eq!(answer.text(), "finally");
    assert_eq!(server.requests().len(), 3);

    let server = Scripted::start(vec![
        Reply::Status(400, vec![], "bad model".into()),
        text_reply("no"),
    ])
    .await?;
    let mut c = cycle(&server)?;
    let err = c.submit("hi").await;
    let Err(LlmError::Http {
        status: 400,
        attempts: 1,
        body,
    }) = err
    else {
        anyhow::bail!("expected HTTP 400, got {err:?}");
    };
    assert_eq!(body, "bad model");
    assert_eq!(server.requests().len(), 1);
    Ok(())
}

#[tokio::test]
async fn a_confused_server_gives_errors_not_panics() -> anyhow::Result<()> {
    let registry = math_registry()?;
    for reply in [
        Reply::Json(json!({"choices": []})),
        Reply::Json(json!({"nonsense": true, "choices": "no"})),
        Reply::Sse(vec![sse_chunk(json!({"content": "half"}), None)]),
        Reply::Sse(vec!["data: {not json\n\n".into()]),
    ] {
        let streaming = matches!(reply, Reply::Sse(_));
        let server = Scripted::start(vec![reply]).await?;
        let mut c = cycle(&server)?;
        let result = if streaming {
            let mut s = c.submit_stream_with_tools("hi", &registry);
            let mut last = None;
            while let Some(ev) = s.next().await {
                last = Some(ev);
            }
            match last {
                Some(Err(e)) => Err(e),
                other => anyhow::bail!("expected an error at the end, got {other:?}"),
            }
        } else {
            c.submit_with_tools("hi", &registry).await.map(|_| ())
        };
        assert!(
            matches!(result, Err(LlmError::Decode(_) | LlmError::Incomplete(_))),
            "{result:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn dropping_a_stream_mid_turn_leaves_a_history_the_next_submit_repairs() -> anyhow::Result<()>
{
    let registry = ToolRegistry::new();
    registry.register(
        DynamicTool::builder("hang")
            .description("Never finish unless cancelled")
            .handler(|_a, ctx| async move {
                ctx.cancellation_token().cancelled().await;
                Err(ToolError::Cancelled("hang".into()))
            })
            .build_dyn(),
    )?;
    let server = Scripted::start(vec![
        sse_tools(&[("h1", "hang", "{}")]),
        text_reply("moving on"),
    ])
    .await?;
    let mut c = cycle(&server)?;
    {
        let mut s = c.submit_stream_with_tools("hang", &registry);
        // Read up to the end of the model's turn; the tool is now running. Then give up.
        while let Some(ev) = s.next().await {
            if matches!(ev?, StreamEvent::TurnComplete { .. }) {
                break;
            }
        }
    }
    assert_eq!(roles(c.messages()), ["user", "assistant"]);
    let answer = c.submit_with_tools("never mind", &registry).await?;
    assert_eq!(answer.text(), "moving on");
    let answers = assert_history_valid(c.messages());
    assert!(answers["h1"].contains("interrupted"), "{}", answers["h1"]);
    assert_eq!(
        roles(c.messages()),
        ["user", "assistant", "tool", "user", "assistant"]
    );
    Ok(())
}

#[tokio::test]
async fn a_panicking_tool_is_told_apart_on_the_event_stream() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        sse_tools(&[("p1", "boom", "{}"), ("p2", "add", r#"{"x": 2, "y": 3}"#)]),
        sse_text(&["the first tool crashed; ", "2 + 3 = 5"]),
    ])
    .await?;
    let registry = math_registry()?;
    registry.register(toolhost_testkit::tools::panicking())?;
    let mut c = cycle(&server)?;
    let mut completed = Vec::new();
    {
        let mut s = c.submit_stream_with_tools("go", &registry);
        while let Some(ev) = s.next().await {
            if let StreamEvent::ToolExecutionCompleted {
                id,
                error_kind,
                output,
                ..
            } = ev?
            {
                completed.push((id, error_kind, output.is_ok()));
            }
        }
    }
    assert_eq!(
        completed,
        [
            ("p1".to_string(), Some("panicked".to_string()), false),
            ("p2".to_string(), None, true),
        ]
    );
    // The model was told, and the conversation went on.
    assert_eq!(
        c.messages().last().and_then(ChatMessage::text),
        Some("the first tool crashed; 2 + 3 = 5")
    );
    Ok(())
}

#[tokio::test]
async fn submit_request_makes_one_request_with_the_tools_and_runs_nothing() -> anyhow::Result<()> {
    let server =
        Scripted::start(vec![tools_reply(&[("r1", "add", r#"{"x": 1, "y": 1}"#)])]).await?;
    let registry = math_registry()?;
    let mut c = cycle(&server)?;
    c.set_messages(vec![ChatMessage::user("add one and one")]);
    let before = server.requests().len();
    let tools = registry.definitions();
    let response = c.submit_request(&tools).await?;
    // One request, carrying the tools; the call is the caller's to run.
    assert_eq!(server.requests().len(), before + 1);
    let last = server.requests().pop().unwrap_or_default();
    assert_eq!(last["tools"].as_array().map(Vec::len), Some(2), "{last}");
    assert_eq!(response.message.tool_calls.len(), 1);
    assert_eq!(response.message.tool_calls[0].function.name, "add");
    assert!(matches!(
        c.messages().last(),
        Some(ChatMessage::Assistant(_))
    ));
    Ok(())
}

#[tokio::test]
async fn the_cycle_cuts_each_tool_result_to_its_limit() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[("b1", "big", "{}")]),
        text_reply("done"),
    ])
    .await?;
    let registry = ToolRegistry::new();
    registry.register(
        DynamicTool::builder("big")
            .description("Returns 10 000 characters")
            .handler(|_, _| async { Ok(ToolOutput::text("x".repeat(10_000))) })
            .build_dyn(),
    )?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            max_tool_result_bytes: 500,
            ..Default::default()
        },
    );
    c.submit_with_tools("go", &registry).await?;
    let answers = assert_history_valid(c.messages());
    let given = &answers["b1"];
    assert!(
        given.len() <= 600 && given.len() < 10_000,
        "{} bytes",
        given.len()
    );
    assert!(
        given.contains("omitted") || given.contains("truncated"),
        "{given}"
    );
    Ok(())
}

#[tokio::test]
async fn the_skip_policy_answers_an_unknown_tool_with_a_synthetic_result_and_goes_on()
-> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[
            ("k1", "no_such_tool", "{}"),
            ("k2", "add", r#"{"x": 2, "y": 3}"#),
        ]),
        text_reply("5"),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            invalid_tool_calls: InvalidToolCallPolicy::Skip,
            ..Default::default()
        },
    );
    let answer = c.submit_with_tools("go", &registry).await?;
    assert_eq!(answer.text(), "5");
    let answers = assert_history_valid(c.messages());
    assert_eq!(answers["k2"], "5");
    assert!(answers["k1"].contains("no_such_tool"), "{}", answers["k1"]);
    // Two requests: the skip cost no extra turn.
    assert_eq!(server.requests().len(), 2);
    Ok(())
}
