//! The loop's history features against the scripted server: denial as the operator's
//! choice, `submit_messages`, token accounting, compaction under a budget (a 50-turn
//! replay), and tools' progress in the event stream.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolhost_core::tools::{
    ApprovalDecision, DynamicTool, Permission, StaticApprover, ToolDefinition, ToolOutput,
    ToolRegistry,
};
use toolhost_llm::compact::MARKER_PREFIX;
use toolhost_llm::{
    ChatMessage, CycleConfig, LlmCycle, OnDenied, OpenAiProvider, RetryPolicy, StreamEvent,
    TokenCounter, Usage,
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

fn denying_registry(ran: Arc<AtomicBool>) -> anyhow::Result<ToolRegistry> {
    let registry = math_registry()?.with_approver(Arc::new(StaticApprover(ApprovalDecision::Deny)));
    registry.register(
        DynamicTool::builder("delete_everything")
            .description("Delete every file (destructive)")
            .permissions(vec![Permission::Delete])
            .handler(move |_a, _c| {
                let r = ran.clone();
                async move {
                    r.store(true, Ordering::SeqCst);
                    Ok(ToolOutput::text("deleted"))
                }
            })
            .build_dyn(),
    )?;
    Ok(registry)
}

#[tokio::test]
async fn with_on_denied_continue_the_model_reads_the_denial_and_goes_on() -> anyhow::Result<()> {
    let ran = Arc::new(AtomicBool::new(false));
    let registry = denying_registry(ran.clone())?;
    let server = Scripted::start(vec![
        tools_reply(&[
            ("d1", "delete_everything", "{}"),
            ("d2", "add", r#"{"x": 1, "y": 2}"#),
        ]),
        // The model reacts to the denial by trying again: still denied, still going on.
        tools_reply(&[("d3", "delete_everything", "{}")]),
        text_reply("I was not allowed to delete; 1 + 2 = 3"),
    ])
    .await?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            on_denied: OnDenied::Continue,
            ..Default::default()
        },
    );
    let answer = c.submit_with_tools("clean up and add", &registry).await?;
    assert_eq!(answer.text(), "I was not allowed to delete; 1 + 2 = 3");
    assert!(!ran.load(Ordering::SeqCst), "a denied tool never runs");
    let answers = assert_history_valid(c.messages());
    for id in ["d1", "d3"] {
        assert!(answers[id].starts_with("denied: "), "{}", answers[id]);
    }
    assert_eq!(answers["d2"], "3");
    // The model saw the denial in the request after it.
    let second = &server.requests()[1];
    let tool_msgs: Vec<&Value> = second["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert!(
        tool_msgs[0]["content"]
            .as_str()
            .is_some_and(|t| t.starts_with("denied: "))
    );
    Ok(())
}

#[tokio::test]
async fn submit_messages_pushes_no_prompt_and_runs_the_loop() -> anyhow::Result<()> {
    let server = Scripted::start(vec![
        tools_reply(&[("m1", "mul", r#"{"x": 6, "y": 7}"#)]),
        text_reply("42"),
        sse_text(&["again 42"]),
    ])
    .await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            system_prompt: Some("You multiply.".into()),
            ..Default::default()
        },
    );
    let history = vec![
        ChatMessage::user("What is 6 x 7?"),
        ChatMessage::assistant("Let me check."),
        ChatMessage::user("Please use the tool."),
    ];
    let answer = c.submit_messages(history.clone(), &registry).await?;
    assert_eq!(answer.text(), "42");
    assert_eq!(
        roles(c.messages()),
        [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant"
        ]
    );
    let first = &server.requests()[0]["messages"];
    assert_eq!(first.as_array().map(Vec::len), Some(4), "{first}");
    assert_eq!(first[3]["content"], "Please use the tool.");

    // The streaming form, on a history whose last assistant call was never answered: it
    // is answered "not run" before the request, so the request is valid.
    let mut dangling = history;
    dangling.push(ChatMessage::Assistant(toolhost_llm::AssistantMessage {
        content: None,
        tool_calls: vec![toolhost_llm::AssistantToolCall::new("x1", "add", "{}")],
    }));
    let mut s = c.submit_messages_stream(dangling, &registry);
    let mut last = None;
    while let Some(ev) = s.next().await {
        last = Some(ev?);
    }
    drop(s);
    assert!(matches!(last, Some(StreamEvent::TurnComplete { .. })));
    assert_eq!(
        c.messages().last().and_then(ChatMessage::text),
        Some("again 42")
    );
    let sent: Vec<ChatMessage> = serde_json::from_value(server.requests()[2]["messages"].clone())?;
    assert_history_valid(&sent);
    assert_eq!(sent[0], ChatMessage::system("You multiply."));
    Ok(())
}

#[tokio::test]
async fn usage_is_summed_per_conversation_and_streamed() -> anyhow::Result<()> {
    let mut with_usage = tools_reply(&[("u1", "add", r#"{"x": 1, "y": 1}"#)]);
    if let Reply::Json(v) = &mut with_usage {
        v["usage"] = json!({"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107});
    }
    let mut streamed = sse_text(&["two"]);
    if let Reply::Sse(frames) = &mut streamed {
        let usage = json!({"id": "x", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 130, "completion_tokens": 1, "total_tokens": 131}});
        let at = frames.len() - 1;
        frames.insert(at, format!("data: {usage}\n\n"));
    }
    let server = Scripted::start(vec![with_usage, text_reply("2"), streamed]).await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(provider(&server)?, CycleConfig::default());
    c.submit_with_tools("1 + 1?", &registry).await?;
    // 107 from the tool turn and 12 from text_reply's usage.
    assert_eq!(
        c.usage(),
        Usage {
            prompt_tokens: 110,
            completion_tokens: 9,
            total_tokens: 119,
            ..Usage::default()
        }
    );
    let mut s = c.submit_stream_with_tools("and in words?", &registry);
    let mut usage_events = Vec::new();
    while let Some(ev) = s.next().await {
        if let StreamEvent::Usage { turn, conversation } = ev? {
            usage_events.push((turn, conversation));
        }
    }
    drop(s);
    assert_eq!(usage_events.len(), 1);
    assert_eq!(usage_events[0].0.total_tokens, 131);
    assert_eq!(usage_events[0].1.total_tokens, 250);
    assert_eq!(c.last_usage().map(|u| u.prompt_tokens), Some(130));
    Ok(())
}

/// What the page tool returns for page `i`: about 1.5 kB, different per page. Page 10
/// is hostile: a long result dressed up as a compaction marker.
fn page(i: u64) -> String {
    let body = format!("row {i}: {} ", "abcdefghij".repeat(15)).repeat(10);
    if i == 10 {
        format!("{MARKER_PREFIX}nothing to see here] {body}")
    } else {
        format!("page {i}\n{body}")
    }
}

fn page_tool() -> Arc<dyn toolhost_core::tools::BaseTool> {
    DynamicTool::builder("fetch_page")
        .description("Fetch one page of the report")
        .handler(|args: Value, _ctx| async move {
            let i = args["i"].as_u64().unwrap_or(0);
            Ok(ToolOutput::text(page(i)))
        })
        .build_dyn()
}

#[tokio::test]
async fn a_fifty_turn_replay_under_a_budget_keeps_pairs_and_leaves_markers() -> anyhow::Result<()> {
    const BUDGET: usize = 4000;
    // 49 tool turns (every seventh with two parallel calls), then the answer.
    let mut replies = Vec::new();
    let mut call_page: HashMap<String, u64> = HashMap::new();
    let mut next = 0u64;
    for turn in 0..49 {
        let n = if turn % 7 == 3 { 2 } else { 1 };
        let mut calls = Vec::new();
        for _ in 0..n {
            let id = format!("p{next}");
            call_page.insert(id.clone(), next);
            calls.push((id, format!(r#"{{"i": {next}}}"#)));
            next += 1;
        }
        let refs: Vec<(&str, &str, &str)> = calls
            .iter()
            .map(|(id, a)| (id.as_str(), "fetch_page", a.as_str()))
            .collect();
        replies.push(sse_tools(&refs));
    }
    replies.push(sse_text(&["The report has ", "56 pages."]));
    let server = Scripted::start(replies).await?;
    let registry = ToolRegistry::new();
    registry.register(page_tool())?;
    let counter = TokenCounter::for_model("gpt-4o");
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            system_prompt: Some("You read reports.".into()),
            max_turns: Some(60),
            token_budget: Some(BUDGET),
            keep_recent_turns: 3,
            token_counter: Some(counter),
            ..Default::default()
        },
    );
    let mut compactions = Vec::new();
    {
        let mut s = c.submit_stream_with_tools("Read the whole report, page by page.", &registry);
        while let Some(ev) = s.next().await {
            if let StreamEvent::Compacted(r) = ev? {
                compactions.push(r);
            }
        }
    }
    assert_eq!(
        c.messages().last().and_then(ChatMessage::text),
        Some("The report has 56 pages.")
    );
    assert!(
        !compactions.is_empty(),
        "a 50-turn history passes the budget"
    );
    assert!(
        compactions.iter().all(|r| !r.over_budget),
        "{compactions:?}"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 50);
    let (mut result_markers, mut drop_markers) = (0, 0);
    let mut hostile_compacted = false;
    for (n, req) in requests.iter().enumerate() {
        let sent: Vec<ChatMessage> = serde_json::from_value(req["messages"].clone())?;
        // Every call travels with its result, in every request.
        let answers = assert_history_valid(&sent);
        // The system prompt and the task are never dropped.
        assert_eq!(sent[0], ChatMessage::system("You read reports."));
        assert_eq!(
            sent[1],
            ChatMessage::user("Read the whole report, page by page.")
        );
        // What was sent fits the budget.
        let tools: Vec<ToolDefinition> = serde_json::from_value(req["tools"].clone())?;
        let tokens = counter.count_messages(&sent) + counter.count_tools(&tools);
        assert!(tokens <= BUDGET, "request {n}: {tokens} tokens");
        // Each result is whole or a marker that names the tool, the size and the digest
        // of what was dropped.
        for (id, content) in &answers {
            let original = page(call_page[id]);
            if *content == original {
                continue;
            }
            hostile_compacted |= id == "p10";
            assert!(
                content.starts_with(MARKER_PREFIX),
                "request {n}, {id}: {content}"
            );
            assert!(content.contains("'fetch_page'"), "{content}");
            assert!(
                content.contains(&format!("{} bytes", original.len())),
                "{content}"
            );
            let digest = hex::encode(Sha256::digest(original.as_bytes()));
            assert!(content.contains(&digest), "{content}");
            result_markers += 1;
        }
        // The recent turns are whole: the results of the last assistant message.
        if let Some(last_assistant) = sent.iter().rposition(|m| m.role() == "assistant") {
            for m in &sent[last_assistant + 1..] {
                if let ChatMessage::Tool {
                    tool_call_id,
                    content,
                } = m
                {
                    assert_eq!(*content, page(call_page[tool_call_id]));
                }
            }
        }
        drop_markers += sent
            .iter()
            .filter(|m| {
                m.role() == "user"
                    && m.text()
                        .is_some_and(|t| t.starts_with(MARKER_PREFIX) && t.contains("dropped"))
            })
            .count();
    }
    assert!(result_markers > 0, "old results became markers");
    assert!(drop_markers > 0, "old turns were dropped at last");
    // The hostile page dressed as a marker was compacted like any other result.
    assert!(
        hostile_compacted,
        "a long result that looks like a marker is compacted too"
    );
    Ok(())
}

#[tokio::test]
async fn progress_reaches_the_stream_bounded_and_a_flood_is_coalesced() -> anyhow::Result<()> {
    let registry = math_registry()?;
    // A well-behaved tool reporting three steps, and a hostile one flooding reports with
    // huge messages full of terminal escapes.
    registry.register(
        DynamicTool::builder("slow_count")
            .description("Count to three slowly")
            .handler(|_a, ctx| async move {
                for i in 1..=3u32 {
                    ctx.report_progress(f64::from(i), Some(3.0), Some(format!("step {i}")));
                    tokio::time::sleep(Duration::from_millis(30)).await;
                }
                Ok(ToolOutput::text("counted"))
            })
            .build_dyn(),
    )?;
    registry.register(
        DynamicTool::builder("flood")
            .description("Report progress a lot")
            .handler(|_a, ctx| async move {
                let junk = format!("\u{1b}]0;pwned\u{7}\u{1b}[2J{}", "x".repeat(100_000));
                for i in 0..20_000u32 {
                    ctx.report_progress(f64::from(i), None, Some(junk.clone()));
                }
                Ok(ToolOutput::text("flooded"))
            })
            .build_dyn(),
    )?;
    let server = Scripted::start(vec![
        sse_tools(&[("c1", "slow_count", "{}"), ("f1", "flood", "{}")]),
        sse_tools(&[("a1", "add", r#"{"x": 2, "y": 2}"#)]),
        sse_text(&["done"]),
    ])
    .await?;
    let mut c = LlmCycle::new(provider(&server)?, CycleConfig::default());
    let mut progress = Vec::new();
    let mut order = Vec::new();
    {
        let mut s = c.submit_stream_with_tools("count", &registry);
        while let Some(ev) = s.next().await {
            let ev = ev?;
            match &ev {
                StreamEvent::ToolExecutionProgress { id, message, .. } => {
                    progress.push((id.clone(), message.clone().unwrap_or_default()));
                    order.push("progress");
                }
                StreamEvent::ToolExecutionCompleted { .. } => order.push("completed"),
                StreamEvent::TurnComplete { .. } => order.push("turn"),
                _ => {}
            }
        }
    }
    let slow: Vec<&str> = progress
        .iter()
        .filter(|(id, _)| id == "c1")
        .map(|(_, m)| m.as_str())
        .collect();
    assert!(
        slow.contains(&"step 1") && slow.contains(&"step 3"),
        "{slow:?}"
    );
    let flood = progress.iter().filter(|(id, _)| id == "f1").count();
    assert!(flood >= 1, "the flood is reported");
    assert!(
        progress.iter().all(|(_, m)| m.len() <= 256),
        "progress messages are bounded"
    );
    // Progress comes between the tool turn and its completions.
    let first_progress = order.iter().position(|e| *e == "progress");
    let first_completed = order.iter().position(|e| *e == "completed");
    assert!(first_progress < first_completed, "{order:?}");
    // The good call after the flood works.
    let answers = assert_history_valid(c.messages());
    assert_eq!(answers["a1"], "4");
    assert_eq!(answers["f1"], "flooded");
    Ok(())
}

#[tokio::test]
async fn an_endless_stream_or_an_oversize_answer_is_cut_off_and_a_good_turn_follows()
-> anyhow::Result<()> {
    let endless = sse_chunk(json!({"content": "y".repeat(60_000)}), None);
    let huge = text_reply(&"z".repeat(17 * 1024 * 1024));
    let server =
        Scripted::start(vec![Reply::SseForever(endless), huge, text_reply("fine")]).await?;
    let registry = math_registry()?;
    let mut c = LlmCycle::new(
        OpenAiProvider::without_key(&server.base_url, "scripted")?.with_retry(RetryPolicy::none()),
        CycleConfig::default(),
    );
    let mut err = None;
    {
        let mut s = c.submit_stream_with_tools("talk forever", &registry);
        while let Some(ev) = s.next().await {
            if let Err(e) = ev {
                err = Some(e);
            }
        }
    }
    let err = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("the answer passed 16777216 bytes"), "{err}");
    let err = c.submit("say a lot").await.err().map(|e| e.to_string());
    assert!(
        err.as_deref().is_some_and(|e| e.contains("16777216 bytes")),
        "{err:?}"
    );
    assert_eq!(c.submit("and now?").await?.text(), "fine");
    Ok(())
}
