//! Criterion benchmark `llm_loop`: the tool loop's own cost per turn.
//!
//! A tiny keep-alive HTTP/1.1 server on 127.0.0.1 plays the model: when the last message
//! is the user's it asks for `add(2, 3)`, when it is a tool result it answers with text.
//! So one `submit_with_tools` is two turns (two requests) and one native tool call.
//!
//! Measured in the same run:
//! - `provider_request`: one `OpenAiProvider::complete` on a 3-message history (the HTTP
//!   round trip and JSON work every turn pays anyway; the baseline);
//! - `tool_invoke`: one `ToolRegistry::invoke_calls` of `add` (the tool's time);
//! - `loop_two_turns`: a whole `submit_with_tools` on a fresh `LlmCycle` (compaction off);
//! - `loop_two_turns_budget_unreached`: the same with a token budget far above the
//!   history (compaction on; only the byte bound is computed each turn);
//! - `loop_two_turns_compacting`: the same with a budget of one token, counted with the
//!   gpt-4o BPE (compaction on and running every turn: every message tokenised, the
//!   compaction pass done, nothing left that it may drop);
//! - `loop_two_turns_in_process` and `..._compacting_in_process`: the same loops against
//!   an in-process provider that returns the two answers without HTTP or JSON. On a
//!   shared VM the HTTP baseline swings by ±50 % between runs, more than the loop costs;
//!   without it the loop's own cost per turn is (time − tool_invoke) / 2 directly.
//!
//! Loop overhead per turn = (loop_two_turns - 2 x provider_request - tool_invoke) / 2.
//! `docs/benchmarks/llm.md` has the figures.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use toolhost::llm::{
    AssistantMessage, AssistantToolCall, ChatMessage, ChatProvider, ChatRequest, ChatResponse,
    CycleConfig, DeltaStream, FinishReason, LlmCycle, LlmError, OpenAiProvider, TokenCounter,
};

/// The model in process: a tool call on a user message, text on a tool result.
struct InProcess;

#[async_trait::async_trait]
impl ChatProvider for InProcess {
    async fn complete(&self, request: ChatRequest<'_>) -> Result<ChatResponse, LlmError> {
        let last_is_tool = matches!(request.messages.last(), Some(ChatMessage::Tool { .. }));
        let message = if last_is_tool {
            AssistantMessage {
                content: Some("2 + 3 = 5".into()),
                tool_calls: Vec::new(),
            }
        } else {
            AssistantMessage {
                content: None,
                tool_calls: vec![AssistantToolCall::new("call_1", "add", "{\"x\":2,\"y\":3}")],
            }
        };
        Ok(ChatResponse {
            stop_reason: Some(if last_is_tool {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            }),
            message,
            usage: None,
            model: "in-process".into(),
            structured: None,
        })
    }

    async fn stream(&self, _request: ChatRequest<'_>) -> Result<DeltaStream, LlmError> {
        Err(LlmError::Config(
            "the in-process bench model does not stream".into(),
        ))
    }

    fn model(&self) -> &str {
        "in-process"
    }
}
use toolhost::tools::{DynamicTool, ToolCall, ToolContext, ToolOutput, ToolRegistry};

fn tool_reply() -> String {
    json!({"id": "b", "object": "chat.completion", "model": "bench", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"x\":2,\"y\":3}"}}]},
        "finish_reason": "tool_calls"}]})
    .to_string()
}

fn text_reply() -> String {
    json!({"id": "b", "object": "chat.completion", "model": "bench", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": "2 + 3 = 5"}, "finish_reason": "stop"}]})
    .to_string()
}

/// Serves until the runtime stops. Errors end the connection.
async fn serve(listener: TcpListener) {
    let (tool, text) = (Arc::new(tool_reply()), Arc::new(text_reply()));
    while let Ok((sock, _)) = listener.accept().await {
        let (tool, text) = (tool.clone(), text.clone());
        let _ = sock.set_nodelay(true);
        tokio::spawn(async move {
            let (r, mut w) = sock.into_split();
            let mut r = BufReader::new(r);
            loop {
                let mut len = 0usize;
                let mut line = String::new();
                loop {
                    line.clear();
                    match r.read_line(&mut line).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    let l = line.trim_end();
                    if l.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = l.split_once(':')
                        && k.eq_ignore_ascii_case("content-length")
                    {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0u8; len];
                if r.read_exact(&mut body).await.is_err() {
                    return;
                }
                let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let last_is_tool = v["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .is_some_and(|m| m["role"] == "tool");
                let reply = if last_is_tool { &text } else { &tool };
                // One write (head and body together): two small writes would meet Nagle's
                // algorithm and delayed ACKs and add ~40 ms.
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{reply}",
                    reply.len()
                );
                if w.write_all(response.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

fn registry() -> ToolRegistry {
    let r = ToolRegistry::new();
    let add = DynamicTool::builder("add")
        .description("Add two integers x and y")
        .parameters(json!({"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}))
        .handler(|a, _c| async move {
            Ok(ToolOutput::json(json!(a["x"].as_i64().unwrap_or(0) + a["y"].as_i64().unwrap_or(0))))
        })
        .build_dyn();
    if let Err(e) = r.register(add) {
        panic!("register: {e}");
    }
    r
}

fn bench(c: &mut Criterion) {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("runtime: {e}"),
    };
    let addr = rt.block_on(async {
        let l = match TcpListener::bind("127.0.0.1:0").await {
            Ok(l) => l,
            Err(e) => panic!("bind: {e}"),
        };
        let addr = l.local_addr().map_err(|e| e.to_string());
        tokio::spawn(serve(l));
        addr
    });
    let addr = match addr {
        Ok(a) => a,
        Err(e) => panic!("addr: {e}"),
    };
    let provider = match OpenAiProvider::without_key(format!("http://{addr}/v1"), "bench") {
        Ok(p) => Arc::new(p),
        Err(e) => panic!("provider: {e}"),
    };
    let registry = registry();
    let defs = registry.definitions();
    let history = vec![
        ChatMessage::user("What is 2 + 3?"),
        ChatMessage::Assistant(toolhost::llm::AssistantMessage {
            content: None,
            tool_calls: vec![toolhost::llm::AssistantToolCall::new(
                "call_1",
                "add",
                "{\"x\":2,\"y\":3}",
            )],
        }),
        ChatMessage::tool("call_1", "5"),
    ];

    let mut g = c.benchmark_group("llm_loop");
    g.bench_function("provider_request", |b| {
        b.iter(|| {
            rt.block_on(async {
                let r = provider.complete(ChatRequest::new(&history, &defs)).await;
                black_box(r.is_ok())
            })
        })
    });
    g.bench_function("tool_invoke", |b| {
        b.iter(|| {
            rt.block_on(async {
                let calls = vec![ToolCall::with_id("call_1", "add", json!({"x": 2, "y": 3}))];
                black_box(registry.invoke_calls(calls, &ToolContext::default()).await)
            })
        })
    });
    g.bench_function("loop_two_turns", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut cycle = LlmCycle::with_provider(provider.clone(), CycleConfig::default());
                let r = cycle.submit_with_tools("What is 2 + 3?", &registry).await;
                assert!(r.is_ok(), "{r:?}");
                black_box(cycle.messages().len())
            })
        })
    });
    let budgets = [
        (
            "loop_two_turns_budget_unreached",
            CycleConfig {
                token_budget: Some(1_000_000),
                ..CycleConfig::default()
            },
        ),
        (
            "loop_two_turns_compacting",
            CycleConfig {
                token_budget: Some(1),
                token_counter: Some(TokenCounter::for_model("gpt-4o")),
                ..CycleConfig::default()
            },
        ),
    ];
    let in_process: Arc<dyn ChatProvider> = Arc::new(InProcess);
    let in_process_runs = [
        ("loop_two_turns_in_process", CycleConfig::default()),
        (
            "loop_two_turns_compacting_in_process",
            CycleConfig {
                token_budget: Some(1),
                token_counter: Some(TokenCounter::for_model("gpt-4o")),
                ..CycleConfig::default()
            },
        ),
    ];
    for (name, config) in in_process_runs {
        g.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let mut cycle = LlmCycle::with_provider(in_process.clone(), config.clone());
                    let r = cycle.submit_with_tools("What is 2 + 3?", &registry).await;
                    assert!(r.is_ok(), "{r:?}");
                    black_box(cycle.messages().len())
                })
            })
        });
    }
    for (name, config) in budgets {
        g.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let mut cycle = LlmCycle::with_provider(provider.clone(), config.clone());
                    let r = cycle.submit_with_tools("What is 2 + 3?", &registry).await;
                    assert!(r.is_ok(), "{r:?}");
                    black_box(cycle.messages().len())
                })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
