//! A loop of three turns whose tools are real WebAssembly components: the `calc` plugin
//! built by `cargo xtask plugins` (target/plugins, or `$TOOLHOST_TEST_PLUGINS`), loaded by
//! toolhost-wasm into the same registry the loop uses; and a loop over a plain WIT
//! component (`fixtures/plain_wit`), whose tools the host derives from its exported
//! functions. Only the model is scripted.

use std::path::PathBuf;

use futures::StreamExt;
use toolhost_core::tools::{ToolRegistry, ToolSource};
use toolhost_llm::{CycleConfig, LlmCycle, OpenAiProvider, StreamEvent};
use toolhost_wasm::{EngineOptions, Plugin, WasmEngine};

use crate::support::*;

fn calc_wasm() -> anyhow::Result<Option<PathBuf>> {
    built_wasm("calc.wasm")
}

/// `FILE` of the built plugins folder; missing is an error in CI, a skip otherwise.
fn built_wasm(file: &str) -> anyhow::Result<Option<PathBuf>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var("TOOLHOST_TEST_PLUGINS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("target/plugins"));
    let p = dir.join(file);
    if p.is_file() {
        return Ok(Some(p));
    }
    let msg = format!(
        "{} is missing: run `cargo xtask plugins` (or `cargo xtask test`)",
        p.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        anyhow::bail!("{msg}");
    }
    eprintln!("SKIPPED (not CI): {msg}");
    Ok(None)
}

#[tokio::test]
async fn a_three_turn_loop_with_wasm_tools() -> anyhow::Result<()> {
    let Some(calc) = calc_wasm()? else {
        return Ok(());
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let engine = WasmEngine::with_options(EngineOptions {
        cache_dir: Some(root.join("target/guest/llm-test-cache")),
        ..EngineOptions::default()
    })?;
    let plugin = Plugin::load(&engine, &calc).await?;
    let registry = ToolRegistry::new();
    toolhost_wasm::folder::register_plugin(&registry, &plugin)?;
    assert!(matches!(
        registry.entry("multiply").map(|e| e.source().clone()),
        Some(ToolSource::Wasm { .. })
    ));

    let server = Scripted::start(vec![
        sse_tools(&[("w1", "add", r#"{"x": 2, "y": 3}"#)]),
        sse_tools(&[
            ("w2", "multiply", r#"{"x": 5, "y": 4}"#),
            ("w3", "divide", r#"{"x": 5, "y": 0}"#),
        ]),
        sse_text(&["20, and 5/0 is undefined"]),
    ])
    .await?;
    let provider = OpenAiProvider::without_key(&server.base_url, "scripted")?;
    let mut c = LlmCycle::new(provider, CycleConfig::default());
    let mut events = Vec::new();
    {
        let mut s = c.submit_stream_with_tools("(2+3)*4 and 5/0", &registry);
        while let Some(ev) = s.next().await {
            events.push(ev?);
        }
    }
    let answers = assert_history_valid(c.messages());
    assert_eq!(answers["w1"].parse::<f64>().ok(), Some(5.0));
    assert_eq!(answers["w2"].parse::<f64>().ok(), Some(20.0));
    // A guest error is recoverable: it went back to the model, which answered.
    assert!(
        answers["w3"].contains("division by zero"),
        "{}",
        answers["w3"]
    );
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
    let completed = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolExecutionCompleted { .. }))
        .count();
    assert_eq!(completed, 3);
    assert_eq!(server.requests().len(), 3);
    Ok(())
}

#[tokio::test]
async fn a_loop_over_a_plain_wit_component() -> anyhow::Result<()> {
    let Some(wasm) = built_wasm("fixtures/plain_wit.wasm")? else {
        return Ok(());
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let engine = WasmEngine::with_options(EngineOptions {
        cache_dir: Some(root.join("target/guest/llm-test-cache")),
        ..EngineOptions::default()
    })?;
    let plugin = Plugin::load(&engine, &wasm).await?;
    let registry = ToolRegistry::new();
    toolhost_wasm::folder::register_plugin(&registry, &plugin)?;

    let server = Scripted::start(vec![
        sse_tools(&[
            ("p1", "reverse", r#"{"text": "loop"}"#),
            ("p2", "divide", r#"{"a": 7, "b": 0}"#),
            (
                "p3",
                "kinds_ints",
                r#"{"a": 256, "b": 0, "c": 0, "d": 0, "e": 0, "f": 0, "g": 0, "h": 0}"#,
            ),
        ]),
        sse_text(&["pool; 7/0 is an error; 256 does not fit a u8"]),
    ])
    .await?;
    let provider = OpenAiProvider::without_key(&server.base_url, "scripted")?;
    let mut c = LlmCycle::new(provider, CycleConfig::default());
    {
        let mut s = c.submit_stream_with_tools("try them", &registry);
        while let Some(ev) = s.next().await {
            ev?;
        }
    }
    let answers = assert_history_valid(c.messages());
    assert!(answers["p1"].contains("pool"), "{}", answers["p1"]);
    // The `err` of a WIT result and an out-of-range argument both reach the model.
    assert!(
        answers["p2"].contains("cannot divide 7 by zero"),
        "{}",
        answers["p2"]
    );
    assert!(answers["p3"].contains("256"), "{}", answers["p3"]);
    // The model saw the derived schema and the WIT doc comment.
    let first = &server.requests()[0];
    let tools = first["tools"].as_array().cloned().unwrap_or_default();
    let reverse = tools
        .iter()
        .find(|t| t["function"]["name"] == "reverse")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        reverse["function"]["description"],
        "Reverses a piece of text."
    );
    assert_eq!(
        reverse["function"]["parameters"]["required"],
        serde_json::json!(["text"])
    );
    Ok(())
}
