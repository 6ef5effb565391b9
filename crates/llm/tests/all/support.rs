//! Shared test helpers: the scripted model server, the fakellm launcher, native test tools
//! and the history checker.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{Context, bail};
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::{StreamExt, stream};
use serde_json::{Value, json};
use toolhost_core::tools::{DynamicTool, ToolContext, ToolOutput};
use toolhost_llm::ChatMessage;

// ---------------------------------------------------------------------------------------
// The scripted model server
// ---------------------------------------------------------------------------------------

/// One scripted answer of the model server.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A blocking Chat Completions answer.
    Json(Value),
    /// An SSE answer: each string is sent as its own body frame, verbatim.
    Sse(Vec<String>),
    /// An error status with extra headers and a body.
    Status(u16, Vec<(&'static str, String)>, String),
    /// An SSE answer that sends this frame again and again, never ending.
    SseForever(String),
}

#[derive(Default)]
struct ServerState {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Value>>,
    headers: Mutex<Vec<HeaderMap>>,
}

/// A local model server that answers each request with the next scripted reply and
/// records every request body. Stops when dropped.
pub struct Scripted {
    /// The API root, e.g. `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    state: Arc<ServerState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Scripted {
    /// Starts a server on a free 127.0.0.1 port.
    pub async fn start(replies: Vec<Reply>) -> anyhow::Result<Self> {
        let state = Arc::new(ServerState {
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(Vec::new()),
            headers: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .route("/v1/messages", post(handle))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            base_url: format!("http://{addr}/v1"),
            state,
            task,
        })
    }

    /// The request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.state
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// The request headers received so far.
    pub fn headers(&self) -> Vec<HeaderMap> {
        self.state
            .headers
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// How many scripted replies are left.
    pub fn remaining(&self) -> usize {
        self.state.replies.lock().map(|r| r.len()).unwrap_or(0)
    }
}

async fn handle(
    State(state): State<Arc<ServerState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if let Ok(mut h) = state.headers.lock() {
        h.push(headers);
    }
    let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if let Ok(mut r) = state.requests.lock() {
        r.push(value);
    }
    let next = state.replies.lock().ok().and_then(|mut r| r.pop_front());
    match next {
        None => (StatusCode::INTERNAL_SERVER_ERROR, "the script is exhausted").into_response(),
        Some(Reply::Json(v)) => axum::Json(v).into_response(),
        Some(Reply::Status(code, headers, body)) => {
            let mut h = HeaderMap::new();
            for (k, v) in headers {
                if let Ok(v) = HeaderValue::from_str(&v) {
                    h.insert(k, v);
                }
            }
            let code = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (code, h, body).into_response()
        }
        Some(Reply::SseForever(frame)) => {
            let frames = stream::repeat(frame)
                .map(|f| Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(f)));
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(frames))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
        Some(Reply::Sse(frames)) => {
            let frames = stream::iter(
                frames
                    .into_iter()
                    .map(|f| Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(f))),
            );
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(frames))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
    }
}

/// A blocking answer with text.
pub fn text_reply(text: &str) -> Reply {
    Reply::Json(json!({
        "id": "chatcmpl-test", "object": "chat.completion", "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    }))
}

/// A blocking answer with tool calls `(id, name, raw argument text)`.
pub fn tools_reply(calls: &[(&str, &str, &str)]) -> Reply {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    Reply::Json(json!({
        "id": "chatcmpl-test", "object": "chat.completion", "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls}, "finish_reason": "tool_calls"}]
    }))
}

/// One SSE `data:` event of a chunk with this delta and finish reason.
pub fn sse_chunk(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {chunk}\n\n")
}

/// The closing `[DONE]` event.
pub fn sse_done() -> String {
    "data: [DONE]\n\n".to_string()
}

/// A streamed text answer, one event per piece.
pub fn sse_text(pieces: &[&str]) -> Reply {
    let mut frames = vec![sse_chunk(json!({"role": "assistant"}), None)];
    for p in pieces {
        frames.push(sse_chunk(json!({"content": p}), None));
    }
    frames.push(sse_chunk(json!({}), Some("stop")));
    frames.push(sse_done());
    Reply::Sse(frames)
}

/// A streamed tool-call answer `(id, name, raw argument text)`: each call announced with
/// its id and name, then its argument text in two pieces.
pub fn sse_tools(calls: &[(&str, &str, &str)]) -> Reply {
    let mut frames = vec![sse_chunk(json!({"role": "assistant"}), None)];
    for (i, (id, name, args)) in calls.iter().enumerate() {
        frames.push(sse_chunk(
            json!({"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            None,
        ));
        let mut cut = args.len() / 2;
        while !args.is_char_boundary(cut) {
            cut -= 1;
        }
        for piece in [&args[..cut], &args[cut..]] {
            frames.push(sse_chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    frames.push(sse_chunk(json!({}), Some("tool_calls")));
    frames.push(sse_done());
    Reply::Sse(frames)
}

// ---------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------

pub use toolhost_testkit::tools::math_registry;

/// A tool that records the context it ran in (session id, trace id, call id).
pub fn context_probe(seen: Arc<Mutex<Vec<(String, String, String)>>>) -> DynamicTool {
    DynamicTool::builder("whoami")
        .description("Report the session of the current call")
        .handler(move |_args, ctx: ToolContext| {
            let seen = seen.clone();
            async move {
                if let Ok(mut s) = seen.lock() {
                    s.push((
                        ctx.session_id().to_string(),
                        ctx.trace_id().to_string(),
                        ctx.call_id().to_string(),
                    ));
                }
                Ok(ToolOutput::text("ok"))
            }
        })
        .build()
}

// ---------------------------------------------------------------------------------------
// History checks
// ---------------------------------------------------------------------------------------

/// Checks that the history is valid to resubmit: each assistant tool call is answered by
/// exactly one tool message, and those answers come right after their assistant message,
/// before any other message. Returns the tool messages by call id.
pub fn assert_history_valid(messages: &[ChatMessage]) -> HashMap<String, String> {
    let mut answers = HashMap::new();
    let mut i = 0;
    while i < messages.len() {
        if let ChatMessage::Assistant(a) = &messages[i] {
            let ids: Vec<&str> = a.tool_calls.iter().map(|c| c.id.as_str()).collect();
            let mut j = i + 1;
            let mut got: Vec<&str> = Vec::new();
            while let Some(ChatMessage::Tool {
                tool_call_id,
                content,
            }) = messages.get(j)
            {
                got.push(tool_call_id);
                assert!(
                    answers
                        .insert(tool_call_id.clone(), content.clone())
                        .is_none(),
                    "two tool messages for call {tool_call_id}"
                );
                j += 1;
            }
            let mut want = ids.clone();
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(
                got, want,
                "the tool messages after assistant message {i} do not answer its calls exactly once"
            );
            i = j;
        } else {
            assert!(
                !matches!(messages[i], ChatMessage::Tool { .. }),
                "tool message {i} answers no assistant call"
            );
            i += 1;
        }
    }
    answers
}

/// The roles of the history, e.g. `["user", "assistant", "tool", "assistant"]`.
pub fn roles(messages: &[ChatMessage]) -> Vec<&'static str> {
    messages.iter().map(ChatMessage::role).collect()
}

// ---------------------------------------------------------------------------------------
// fakellm
// ---------------------------------------------------------------------------------------

/// A running fakellm server (killed when dropped).
pub struct FakeLlm {
    /// The API root.
    pub base_url: String,
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

/// Where the fakellm executable is: `$TOOLHOST_FAKELLM`, else the venv `cargo xtask peers`
/// makes under `target/peers/llm`.
fn fakellm_path() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("TOOLHOST_FAKELLM") {
        let p = PathBuf::from(p);
        return p.exists().then_some(p);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let p = root.join("target/peers/llm/venv/bin/fakellm");
    p.exists().then_some(p)
}

/// Starts fakellm with the rules file `tests/fixtures/NAME`. Returns `Ok(None)` when
/// fakellm is not installed and this is not CI (the test then passes with a note); in CI
/// (`CI=true`) a missing fakellm is an error.
pub async fn start_fakellm(rules: &str) -> anyhow::Result<Option<FakeLlm>> {
    let Some(exe) = fakellm_path() else {
        let msg = "fakellm is not installed: run `cargo xtask peers` (it installs PyPI fakellm into target/peers/llm), or set TOOLHOST_FAKELLM";
        if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
            bail!("{msg}");
        }
        eprintln!("SKIPPED (not CI): {msg}");
        return Ok(None);
    };
    let dir = tempfile::tempdir()?;
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rules);
    let config = dir.path().join("fakellm.yaml");
    std::fs::copy(&src, &config).with_context(|| format!("copying {}", src.display()))?;
    // A free port: bind, read, release. fakellm binds it right after.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let child = tokio::process::Command::new(&exe)
        .args([
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--config",
        ])
        .arg(&config)
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    // Wait until it answers (bounded: 300 tries, 50 ms apart).
    for _ in 0..300 {
        if let Ok(r) = client.get(format!("{base}/_fakellm/stats")).send().await
            && r.status().is_success()
        {
            return Ok(Some(FakeLlm {
                base_url: format!("{base}/v1"),
                _child: child,
                _dir: dir,
            }));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    bail!("fakellm did not start on port {port}")
}

/// An OpenAI provider for `s` that retries at once.
pub fn openai_provider(s: &Scripted) -> anyhow::Result<toolhost_llm::OpenAiProvider> {
    Ok(
        toolhost_llm::OpenAiProvider::without_key(&s.base_url, "scripted")?.with_retry(
            toolhost_llm::RetryPolicy {
                initial_backoff: std::time::Duration::ZERO,
                ..toolhost_llm::RetryPolicy::default()
            },
        ),
    )
}

/// An Anthropic provider for `s` (it serves `/v1/messages` under the same root), with a
/// key and no retries.
pub fn anthropic_provider(s: &Scripted) -> anyhow::Result<toolhost_llm::AnthropicProvider> {
    let base = s.base_url.trim_end_matches("/v1");
    Ok(
        toolhost_llm::AnthropicProvider::without_key(base, "claude-test")?
            .with_api_key("sk-ant-test")?
            .with_retry(toolhost_llm::RetryPolicy::none()),
    )
}
