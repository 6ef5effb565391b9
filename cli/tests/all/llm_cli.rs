//! `toolhost chat --provider anthropic` and `toolhost eval` end to end: the real binary,
//! the real calc plugin, and a scripted model server on 127.0.0.1 (only the model's
//! answers are scripted).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// One request the scripted server received: path, headers (lowercased names), body.
pub(crate) type Seen = Arc<Mutex<Vec<(String, Vec<(String, String)>, Value)>>>;

/// Serves the answers in order (`(content type, body)`), one per connection, closing
/// each; records every request.
pub(crate) fn scripted(answers: Vec<(&'static str, String)>) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for (answer, conn) in answers.into_iter().zip(listener.incoming()) {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut headers = Vec::new();
            let mut len = 0usize;
            loop {
                line.clear();
                reader.read_line(&mut line).unwrap();
                let l = line.trim_end();
                if l.is_empty() {
                    break;
                }
                if let Some((k, v)) = l.split_once(':') {
                    let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
                    if k == "content-length" {
                        len = v.parse().unwrap_or(0);
                    }
                    headers.push((k, v));
                }
            }
            let mut body = vec![0u8; len];
            reader.read_exact(&mut body).unwrap();
            log.lock().unwrap().push((
                path,
                headers,
                serde_json::from_slice(&body).unwrap_or(Value::Null),
            ));
            let (kind, text) = answer;
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\nconnection: close\r\n\r\n{text}"
            );
        }
    });
    (format!("http://{addr}"), seen)
}

fn work() -> Option<tempfile::TempDir> {
    let built = toolhost_testkit::built_plugins(&["calc.wasm"])?;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::copy(
        built.join("calc.wasm"),
        dir.path().join("plugins/calc.wasm"),
    )
    .unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), "").unwrap();
    Some(dir)
}

pub(crate) fn toolhost(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir)
        .args(args)
        .arg("--config")
        .arg(dir.join("toolhost.toml"))
        .arg("--plugins")
        .arg(dir.join("plugins"))
        .arg("--no-audit")
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("ANTHROPIC_API_KEY", "sk-ant-cli-test")
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("OPENAI_API_KEY")
        .env_remove("TOOLHOST_LLM_PROVIDER")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Runs `toolhost COMMAND... --base-url URL --model m` against a scripted model server
/// giving `answers`; returns the run and what the server saw.
pub(crate) fn against_script(
    dir: &Path,
    command: &[&str],
    answers: Vec<(&'static str, String)>,
) -> (Output, Seen) {
    let (base, seen) = scripted(answers);
    let url = format!("{base}/v1");
    let mut args = command.to_vec();
    args.extend(["--base-url", &url, "--model", "m"]);
    (toolhost(dir, &args), seen)
}

/// Asserts that the run exited with `code` and that its stdout holds every line of
/// `wanted` (the whole run is shown when not).
pub(crate) fn exits_saying(out: &Output, code: i32, wanted: &[&str]) {
    let shown = toolhost_testkit::show(out);
    assert_eq!(out.status.code(), Some(code), "{shown}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for w in wanted {
        assert!(stdout.contains(w), "missing {w:?}: {shown}");
    }
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

#[test]
fn chat_speaks_anthropic_and_reports_tokens() {
    let Some(dir) = work() else { return };
    let start = json!({"type": "message_start", "message": {"id": "m", "type": "message",
        "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null,
        "usage": {"input_tokens": 40, "output_tokens": 1}}});
    let turn1 = sse(&[
        start.clone(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"x\": 40,"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": " \"y\": 2}"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 10}}),
        json!({"type": "message_stop"}),
    ]);
    // The second request reads most of its input from the prompt cache (`--prompt-caching`).
    let cached_start = json!({"type": "message_start", "message": {"id": "m", "type": "message",
        "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null,
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 30, "output_tokens": 1}}});
    let turn2 = sse(&[
        cached_start,
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "The sum is 42."}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ]);
    let (base, seen) = scripted(vec![
        ("text/event-stream", turn1),
        ("text/event-stream", turn2),
    ]);
    let out = toolhost(
        dir.path(),
        &[
            "chat",
            "--provider",
            "anthropic",
            "--base-url",
            &base,
            "--model",
            "claude-test",
            "--prompt-caching",
            "--prompt",
            "What is 40 + 2?",
        ],
    );
    let shown = toolhost_testkit::show(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("The sum is 42."),
        "{shown}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[tokens: 80 in (30 cached), 15 out; conversation 95]"),
        "{shown}"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    let (path, headers, first) = &seen[0];
    assert_eq!(path, "/v1/messages");
    let header = |k: &str| {
        headers
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(header("x-api-key"), Some("sk-ant-cli-test"));
    assert_eq!(header("anthropic-version"), Some("2023-06-01"));
    assert!(header("authorization").is_none());
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "add")
    );
    // `--prompt-caching`: the last tool definition is a cache breakpoint.
    let tools = first["tools"].as_array().unwrap();
    assert_eq!(
        tools.last().map(|t| &t["cache_control"]),
        Some(&json!({"type": "ephemeral"})),
        "{first}"
    );
    let results: Vec<&Value> = seen[1].2["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap().iter())
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["tool_use_id"], "toolu_1");
    assert_eq!(results[0]["is_error"], false);
    assert!(results[0]["content"].as_str().unwrap().contains("42"));
}

/// The tool message of a chat request's history.
fn tool_message(request: &Value) -> Value {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap()
}

pub(crate) fn openai_call(name: &str, args: &str) -> String {
    json!({"id": "c", "object": "chat.completion", "model": "m", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": name, "arguments": args}}]},
        "finish_reason": "tool_calls"}]})
    .to_string()
}

pub(crate) fn openai_text(text: &str) -> String {
    json!({"id": "c", "object": "chat.completion", "model": "m", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
    .to_string()
}

/// An OpenAI stream calling one tool.
fn openai_sse_call(name: &str, args: &str) -> (&'static str, String) {
    let chunk = |delta: Value, finish: Value| {
        let c = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let body = [
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": name, "arguments": args}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    ("text/event-stream", body)
}

/// An OpenAI stream answering with text.
fn openai_sse_text(text: &str) -> (&'static str, String) {
    let c = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]});
    (
        "text/event-stream",
        format!("data: {c}\n\ndata: [DONE]\n\n"),
    )
}

const CASES: &str = r#"
[[case]]
name = "adds"
prompt = "What is 40 + 2?"
expect_tool = "add"
args = { x = 40, y = 2 }

[[case]]
name = "no tool for greetings"
prompt = "Hello"
"#;

#[test]
fn eval_passes_and_a_regression_exits_non_zero() {
    let Some(dir) = work() else { return };
    let cases = dir.path().join("cases.toml");
    std::fs::write(&cases, CASES).unwrap();
    let cases_arg = cases.to_str().unwrap();
    let run = |answers| against_script(dir.path(), &["eval", cases_arg], answers).0;
    let json = "application/json";
    let good = run(vec![
        (json, openai_call("add", r#"{"x": 40, "y": 2}"#)),
        (json, openai_text("42")),
        (json, openai_text("Hello!")),
    ]);
    exits_saying(&good, 0, &["PASS adds", "2 of 2 case(s) passed"]);

    // The model now picks the wrong arguments for the first case and a tool for the
    // second: both fail, and the exit status says so.
    let bad = run(vec![
        (json, openai_call("add", r#"{"x": 4, "y": 2}"#)),
        (json, openai_text("6")),
        (json, openai_call("add", r#"{"x": 1, "y": 1}"#)),
        (json, openai_text("2")),
    ]);
    exits_saying(
        &bad,
        1,
        &[
            "FAIL adds",
            "argument 'x' should be 40, it is 4",
            "FAIL no tool for greetings",
            "0 of 2 case(s) passed",
        ],
    );
}

#[test]
fn chat_on_deny_continue_gives_the_model_the_denial_and_stop_ends_the_answer() {
    let Some(python) = toolhost_testkit::peers::python() else {
        return;
    };
    let Some(dir) = work() else { return };
    // An MCP server whose tools are unannotated, so rated destructive: without a terminal
    // every call of `shout` is denied.
    let script = toolhost_testkit::peers::mcp_fixture("py_server.py");
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "[mcp.servers.py]\ncommand = {:?}\nargs = [{:?}]\ntimeout_secs = 30\n",
            python.display().to_string(),
            script.display().to_string()
        ),
    )
    .unwrap();
    let chat = |extra: &[&str], answers: Vec<(&'static str, String)>| {
        let (base, seen) = scripted(answers);
        let url = format!("{base}/v1");
        let mut args = vec![
            "chat",
            "--base-url",
            &url,
            "--model",
            "m",
            "--prompt",
            "Shout hi",
        ];
        args.extend_from_slice(extra);
        (toolhost(dir.path(), &args), seen)
    };

    let (out, seen) = chat(
        &["--on-deny", "continue"],
        vec![
            openai_sse_call("shout", r#"{"text": "hi"}"#),
            openai_sse_text("I may not shout here."),
        ],
    );
    let shown = toolhost_testkit::show(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("I may not shout here."),
        "{shown}"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "{shown}");
    let tool_msg = tool_message(&seen[1].2);
    assert!(
        tool_msg["content"]
            .as_str()
            .unwrap()
            .starts_with("denied: "),
        "{tool_msg}"
    );
    drop(seen);

    // The default: the denial ends the answer with an error, the model is not asked again.
    let (out, seen) = chat(
        &[],
        vec![
            openai_sse_call("shout", r#"{"text": "hi"}"#),
            openai_sse_text("never sent"),
        ],
    );
    let shown = toolhost_testkit::show(&out);
    assert!(!out.status.success(), "{shown}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("permission denied"),
        "{shown}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1, "{shown}");
}

/// `chat --tools code`: the model is offered `run_code` alone, its description declaring
/// the calc plugin's tools in TypeScript; the model's one script chains two of them in
/// the plugin's sandbox and the answer comes from the next turn.
#[test]
fn chat_tools_code_offers_run_code_with_declarations_and_runs_the_script() {
    let Some(dir) = work() else { return };
    let script = json!({"code": "const s = await tools.add({x: 2, y: 3}); \
                                 return await tools.multiply({x: s, y: 4});"})
    .to_string();
    let (base, seen) = scripted(vec![
        openai_sse_call("run_code", &script),
        openai_sse_text("The answer is 20."),
    ]);
    let url = format!("{base}/v1");
    let out = toolhost(
        dir.path(),
        &[
            "chat",
            "--base-url",
            &url,
            "--model",
            "m",
            "--tools",
            "code",
            "--prompt",
            "(2 + 3) * 4?",
        ],
    );
    let shown = toolhost_testkit::show(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("The answer is 20."),
        "{shown}"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "{shown}");
    let offered: Vec<&str> = seen[0].2["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(offered, ["run_code"], "{shown}");
    let description = seen[0].2["tools"][0]["function"]["description"]
        .as_str()
        .unwrap();
    assert!(
        description.contains("declare const tools: {")
            && description.contains("  add(args: {")
            && description.contains("  multiply(args: {"),
        "{description}"
    );
    let tool_msg = tool_message(&seen[1].2);
    assert!(
        tool_msg["content"].as_str().unwrap().starts_with("20"),
        "{tool_msg}"
    );
}

/// `chat --tool-choice NAME --no-parallel-tool-calls --active-tools ...`: what goes over
/// the wire, and a name the registry does not hold refused before any request.
#[test]
fn chat_sends_the_tool_choice_the_parallel_switch_and_only_the_active_tools() {
    let Some(dir) = work() else { return };
    let chat = |extra: &[&str], answers| {
        let mut args = vec!["chat", "--prompt", "2 + 3?"];
        args.extend_from_slice(extra);
        against_script(dir.path(), &args, answers)
    };
    let answers = vec![
        openai_sse_call("add", r#"{"x": 2, "y": 3}"#),
        openai_sse_text("5"),
    ];
    let (out, seen) = chat(
        &[
            "--tool-choice",
            "add",
            "--no-parallel-tool-calls",
            "--active-tools",
            "add,multiply",
        ],
        answers,
    );
    let shown = toolhost_testkit::show(&out);
    assert!(out.status.success(), "{shown}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "{shown}");
    let first = &seen[0].2;
    assert_eq!(
        first["tool_choice"],
        json!({"type": "function", "function": {"name": "add"}}),
        "{shown}"
    );
    assert_eq!(first["parallel_tool_calls"], json!(false), "{shown}");
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(offered, ["add", "multiply"], "{shown}");
    assert!(seen[1].2.get("tool_choice").is_none(), "{shown}");
    drop(seen);

    let (refused, _) = chat(&["--tool-choice", "nosuch"], Vec::new());
    let shown = toolhost_testkit::show(&refused);
    assert!(!refused.status.success(), "{shown}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("no tool named 'nosuch'"),
        "{shown}"
    );
}

/// `chat --answer-schema FILE`: a prose answer is sent back with what is wrong, the JSON
/// one ends the answer; a file that is not JSON is refused before any request.
#[test]
fn chat_answer_schema_sends_a_bad_answer_back_and_takes_the_json_one() {
    let Some(dir) = work() else { return };
    let schema = dir.path().join("answer.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "required": ["sum"], "properties": {"sum": {"type": "number"}}}"#,
    )
    .unwrap();
    let schema_arg = schema.display().to_string();
    let args = ["chat", "--answer-schema", &schema_arg, "--prompt", "2 + 3?"];
    let answers = vec![
        openai_sse_text("It is five."),
        openai_sse_text(r#"{"sum": 5}"#),
    ];
    let (out, seen) = against_script(dir.path(), &args, answers);
    let shown = toolhost_testkit::show(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("[answer rejected, asking again: the answer is not JSON"),
        "{shown}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(r#"{"sum": 5}"#),
        "{shown}"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "{shown}");
    assert_eq!(
        seen[0].2["response_format"]["type"], "json_schema",
        "{shown}"
    );
    drop(seen);

    std::fs::write(&schema, "not json").unwrap();
    let (refused, _) = against_script(dir.path(), &args, Vec::new());
    let shown = toolhost_testkit::show(&refused);
    assert!(!refused.status.success(), "{shown}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("is not JSON"),
        "{shown}"
    );
}
