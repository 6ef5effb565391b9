//! Tool selection of the loop against the scripted server: `Search { k }` offers the few
//! tools a search of the conversation ranks first among many (plus those the model has
//! been calling), far fewer definitions than `All`, and a registry tool the model names
//! that this turn did not offer still runs through the pipeline.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_core::tools::{DynamicTool, ToolOutput};
use toolhost_llm::{CycleConfig, LlmCycle, OpenAiProvider, RetryPolicy, ToolSelection};

use crate::support::*;

/// The math tools and forty others a host with many servers carries.
fn many_tools() -> anyhow::Result<toolhost_core::tools::ToolRegistry> {
    let registry = math_registry()?;
    let verbs = [
        "read", "write", "list", "delete", "send", "archive", "rename", "share",
    ];
    let things = ["file", "email", "calendar event", "ticket", "invoice"];
    for verb in verbs {
        for thing in things {
            let name = format!("{verb}_{}", thing.replace(' ', "_"));
            let tool = DynamicTool::builder(&name)
                .description(format!("{verb} a {thing} by its id, returning the {thing} as JSON"))
                .parameters(json!({"type": "object", "properties": {"id": {"type": "string", "description": format!("The {thing}'s id")}}}))
                .handler(move |args, _| async move {
                    Ok(ToolOutput::json(json!({"done": args["id"]})))
                })
                .build_dyn();
            registry.register(tool)?;
        }
    }
    Ok(registry)
}

/// Registers code mode's `run_code` over `registry` (the runner compiled through a cache
/// shared by these tests).
fn with_run_code(registry: &toolhost_core::tools::ToolRegistry) -> anyhow::Result<()> {
    let engine = toolhost_wasm::WasmEngine::with_options(toolhost_wasm::EngineOptions {
        cache_dir: Some(std::env::temp_dir().join("toolhost-llm-code-tests-cache")),
        ..Default::default()
    })?;
    registry.register(std::sync::Arc::new(toolhost_code::RunCodeTool::new(
        toolhost_code::CodeRunner::new(&engine)?,
        registry.clone(),
        toolhost_code::RunLimits::default(),
    )))?;
    Ok(())
}

fn names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn provider(s: &Scripted) -> anyhow::Result<OpenAiProvider> {
    Ok(
        OpenAiProvider::without_key(&s.base_url, "scripted")?.with_retry(RetryPolicy {
            initial_backoff: Duration::ZERO,
            ..RetryPolicy::default()
        }),
    )
}

#[tokio::test]
async fn search_selection_offers_the_few_tools_the_conversation_needs() -> anyhow::Result<()> {
    let registry = many_tools()?;
    let script = || {
        vec![
            tools_reply(&[("m1", "mul", r#"{"x": 6, "y": 7}"#)]),
            // `archive_ticket` is in no search of this conversation: it still runs.
            tools_reply(&[
                ("a1", "add", r#"{"x": 42, "y": 1}"#),
                ("t1", "archive_ticket", r#"{"id": "T-9"}"#),
            ]),
            text_reply("43"),
        ]
    };
    let prompt = "Multiply the integers 6 and 7, then add 1 to the result";

    let server = Scripted::start(script()).await?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            tool_selection: ToolSelection::Search { k: 3 },
            ..Default::default()
        },
    );
    let answer = c.submit_with_tools(prompt, &registry).await?;
    assert_eq!(answer.text(), "43");
    let answers = assert_history_valid(c.messages());
    assert_eq!(answers["m1"], "42");
    assert_eq!(answers["a1"], "43");
    assert!(answers["t1"].contains("T-9"), "{}", answers["t1"]);
    let requests = server.requests();
    let first = names(&requests[0]);
    assert!(first.len() <= 3, "{first:?}");
    assert!(
        first.contains(&"mul".to_string()) && first.contains(&"add".to_string()),
        "{first:?}"
    );
    // The tool the model has been calling stays on offer.
    let second = names(&requests[1]);
    assert!(second.contains(&"mul".to_string()), "{second:?}");
    let searched_bytes = requests[0]["tools"].to_string().len();

    // The same conversation with every tool offered, for comparison.
    let server = Scripted::start(script()).await?;
    let mut c = LlmCycle::new(provider(&server)?, CycleConfig::default());
    c.submit_with_tools(prompt, &registry).await?;
    let all = server.requests();
    assert_eq!(names(&all[0]).len(), registry.len());
    let all_bytes = all[0]["tools"].to_string().len();
    assert!(
        searched_bytes * 5 < all_bytes,
        "{searched_bytes} vs {all_bytes}"
    );
    Ok(())
}

#[tokio::test]
async fn search_selection_still_honours_the_tag_filter() -> anyhow::Result<()> {
    let registry = many_tools()?;
    let server = Scripted::start(vec![
        tools_reply(&[("m1", "mul", r#"{"x": 2, "y": 2}"#)]),
        text_reply("no"),
    ])
    .await?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            tool_selection: ToolSelection::Search { k: 3 },
            tool_tags: vec!["no-such-tag".into()],
            ..Default::default()
        },
    );
    c.submit_with_tools("multiply 2 by 2", &registry).await?;
    assert!(names(&server.requests()[0]).is_empty());
    let answers = assert_history_valid(c.messages());
    assert!(
        answers["m1"].contains("no tool named 'mul'"),
        "{}",
        answers["m1"]
    );
    Ok(())
}

/// A five-step chain (add, multiply, add, multiply, add) under a scripted model: one tool
/// turn per step when every tool is offered, against one `run_code` turn in code mode,
/// whose five inner calls each pass the registry's pipeline. Prints both conversations'
/// model requests and tokens (docs/benchmarks.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_mode_runs_a_five_step_chain_in_one_model_turn() -> anyhow::Result<()> {
    use std::sync::{Arc, Mutex};
    use toolhost_core::tools::{ToolEvent, ToolEventListener};

    struct Completed(Mutex<Vec<(String, String)>>);
    impl ToolEventListener for Completed {
        fn on_event(&self, event: &ToolEvent) {
            if let ToolEvent::Completed { call_id, tool, .. } = event {
                self.0.lock().unwrap().push((call_id.clone(), tool.clone()));
            }
        }
    }

    let registry = many_tools()?;
    with_run_code(&registry)?;
    let completed = Arc::new(Completed(Mutex::new(Vec::new())));
    registry.add_listener(completed.clone());
    let prompt = "Compute ((((1 + 2) * 4) + 5) * 2) + 8 with the tools";
    let tokens = toolhost_llm::tokens::TokenCounter::for_model("gpt-4o");
    let cost = |requests: &[Value]| -> usize {
        requests
            .iter()
            .map(|r| tokens.count_text(&r.to_string()))
            .sum()
    };

    // Every tool offered, one call per turn.
    let server = Scripted::start(vec![
        tools_reply(&[("c1", "add", r#"{"x": 1, "y": 2}"#)]),
        tools_reply(&[("c2", "mul", r#"{"x": 3, "y": 4}"#)]),
        tools_reply(&[("c3", "add", r#"{"x": 12, "y": 5}"#)]),
        tools_reply(&[("c4", "mul", r#"{"x": 17, "y": 2}"#)]),
        tools_reply(&[("c5", "add", r#"{"x": 34, "y": 8}"#)]),
        text_reply("42"),
    ])
    .await?;
    let mut c = LlmCycle::new(provider(&server)?, CycleConfig::default());
    assert_eq!(c.submit_with_tools(prompt, &registry).await?.text(), "42");
    let direct = server.requests();

    // Code mode: one script.
    let script = "let v = await tools.add({x: 1, y: 2}); v = await tools.mul({x: v, y: 4}); \
                  v = await tools.add({x: v, y: 5}); v = await tools.mul({x: v, y: 2}); \
                  return await tools.add({x: v, y: 8});";
    let args = json!({ "code": script }).to_string();
    let server = Scripted::start(vec![
        tools_reply(&[("r1", "run_code", &args)]),
        text_reply("42"),
    ])
    .await?;
    completed.0.lock().unwrap().clear();
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            tool_selection: ToolSelection::CodeMode,
            ..Default::default()
        },
    );
    assert_eq!(c.submit_with_tools(prompt, &registry).await?.text(), "42");
    let answers = assert_history_valid(c.messages());
    assert!(answers["r1"].starts_with("42"), "{}", answers["r1"]);
    let code = server.requests();
    assert_eq!(names(&code[0]), ["run_code"]);
    // The five inner calls were registry calls, under the run's id.
    let inner: Vec<(String, String)> = completed
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, t)| t != "run_code")
        .cloned()
        .collect();
    assert_eq!(inner.len(), 5, "{inner:?}");
    assert!(
        inner.iter().all(|(id, _)| id.starts_with("r1/")),
        "{inner:?}"
    );

    assert_eq!((direct.len(), code.len()), (6, 2));
    let (d, k) = (cost(&direct), cost(&code));
    println!(
        "five-step chain: direct {} model requests, {d} tokens sent; code mode {} requests, {k} tokens sent ({:.2}×)",
        direct.len(),
        code.len(),
        k as f64 / d as f64
    );
    assert!(k * 2 < d, "{k} vs {d}");
    Ok(())
}

/// Code mode under `tool_tags`: `run_code`'s offer declares, in TypeScript, the tools the
/// tags allow and no other, and a script cannot reach a tool the tags hide (it is not in
/// the run's `tools` at all), while the allowed tool runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_mode_declares_and_reaches_only_the_tools_the_tags_allow() -> anyhow::Result<()> {
    use toolhost_core::tools::ToolMetadata;

    let registry = many_tools()?;
    let desk = ToolMetadata {
        tags: vec!["desk".into()],
        ..ToolMetadata::default()
    };
    registry.register(
        DynamicTool::builder("open_ticket")
            .description("Open a help-desk ticket by its id")
            .parameters(json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}))
            .metadata(desk)
            .handler(|args, _| async move { Ok(ToolOutput::json(json!({"opened": args["id"]}))) })
            .build_dyn(),
    )?;
    with_run_code(&registry)?;
    let script = "const r = []; \
                  try { await tools.delete_invoice({id: '1'}); } catch (e) { r.push(String(e)); } \
                  r.push(typeof tools.add); \
                  r.push(await tools.open_ticket({id: '7'})); return r;";
    let server = Scripted::start(vec![
        tools_reply(&[("r1", "run_code", &json!({ "code": script }).to_string())]),
        text_reply("done"),
    ])
    .await?;
    let mut c = LlmCycle::new(
        provider(&server)?,
        CycleConfig {
            tool_selection: ToolSelection::CodeMode,
            tool_tags: vec!["desk".into()],
            ..Default::default()
        },
    );
    c.submit_with_tools("open ticket 7", &registry).await?;
    let requests = server.requests();
    assert_eq!(names(&requests[0]), ["run_code"]);
    let offer = requests[0]["tools"][0]["function"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        offer.contains("/** Open a help-desk ticket by its id */")
            && offer.contains("open_ticket(args: {\n")
            && offer.contains("id: string;"),
        "{offer}"
    );
    assert!(
        !offer.contains("delete_invoice") && !offer.contains("add("),
        "{offer}"
    );
    let answers = assert_history_valid(c.messages());
    let run: Value = serde_json::from_str(
        answers["r1"]
            .lines()
            .take_while(|l| !l.is_empty())
            .collect::<String>()
            .as_str(),
    )
    .unwrap_or(Value::Null);
    assert!(
        run[0]
            .as_str()
            .is_some_and(|e| e.contains("not a callable function") || e.contains("undefined")),
        "{}",
        answers["r1"]
    );
    assert_eq!(run[1], "undefined", "{}", answers["r1"]);
    assert_eq!(run[2], json!({"opened": "7"}), "{}", answers["r1"]);
    Ok(())
}
