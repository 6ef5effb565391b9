//! Tool-selection evals through the real loop, against a scripted model whose choice
//! depends on the tool descriptions it is sent: degrading a description breaks a case.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::post;
use serde_json::{Value, json};
use toolhost_core::tools::{DynamicTool, ToolOutput, ToolRegistry};
use toolhost_llm::eval::{EvalFile, run_case};
use toolhost_llm::{ChatProvider, CycleConfig, OpenAiProvider};

/// Words of three letters or more, lowercased, without the commonest ones.
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.len() >= 3 && !["the", "and", "what", "two"].contains(&w.as_str()))
        .collect()
}

/// The model: after a tool result it answers; otherwise it calls the tool whose
/// description shares the most words with the prompt (none shared: no tool), with the
/// prompt's numbers as `x` and `y`.
async fn choose(body: axum::body::Bytes) -> axum::Json<Value> {
    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let text = |content: &str| {
        json!({"id": "e", "object": "chat.completion", "model": "chooser", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]})
    };
    if last["role"] == "tool" {
        return axum::Json(text("done"));
    }
    let prompt = last["content"].as_str().unwrap_or("");
    let wanted = words(prompt);
    let best = req["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let d = words(t["function"]["description"].as_str().unwrap_or(""));
            let score = wanted.iter().filter(|w| d.contains(w)).count();
            (
                score,
                t["function"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .filter(|(score, _)| *score > 0)
        .max_by_key(|(score, _)| *score);
    let Some((_, name)) = best else {
        return axum::Json(text("I have no tool for that."));
    };
    let nums: Vec<i64> = prompt
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let args = json!({"x": nums.first(), "y": nums.get(1)}).to_string();
    axum::Json(
        json!({"id": "e", "object": "chat.completion", "model": "chooser", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "e1", "type": "function", "function": {"name": name, "arguments": args}}]},
        "finish_reason": "tool_calls"}]}),
    )
}

fn registry(product_description: &str) -> anyhow::Result<ToolRegistry> {
    let r = ToolRegistry::new();
    let op = |name: &str, description: &str, f: fn(i64, i64) -> i64| {
        DynamicTool::builder(name)
            .description(description)
            .handler(move |a: Value, _c| async move {
                let (x, y) = (a["x"].as_i64().unwrap_or(0), a["y"].as_i64().unwrap_or(0));
                Ok(ToolOutput::text(f(x, y).to_string()))
            })
            .build_dyn()
    };
    r.register(op(
        "sum",
        "Adds two numbers and returns their sum",
        |x, y| x + y,
    ))?;
    r.register(op("product", product_description, |x, y| x * y))?;
    Ok(r)
}

const CASES: &str = r#"
[[case]]
name = "sum"
prompt = "What is the sum of 2 and 3?"
expect_tool = "sum"
args = { x = 2, y = { one_of = [3, 4] } }

[[case]]
name = "product"
prompt = "What is the product of 6 and 7?"
expect_tool = "product"
args = { x = 6, y = 7 }

[[case]]
name = "chit-chat"
prompt = "Hello there!"
"#;

#[tokio::test]
async fn a_degraded_description_breaks_its_case_and_only_that_one() -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            Router::new().route("/v1/chat/completions", post(choose)),
        )
        .await;
    });
    let provider: Arc<dyn ChatProvider> = Arc::new(OpenAiProvider::without_key(
        format!("http://{addr}/v1"),
        "chooser",
    )?);
    let file: EvalFile = toml_cases()?;
    let run = |reg: ToolRegistry| {
        let provider = provider.clone();
        let cases = file.cases.clone();
        async move {
            let mut out = Vec::new();
            for c in &cases {
                out.push(run_case(provider.clone(), &reg, c, &CycleConfig::default()).await);
            }
            out
        }
    };
    let good = run(registry(
        "Multiplies two numbers and returns their product",
    )?)
    .await;
    for o in &good {
        assert!(o.passed, "{o:?}");
    }
    assert_eq!(good[1].calls[0].1, json!({"x": 6, "y": 7}));

    let degraded = run(registry("Does arithmetic.")?).await;
    let verdicts: Vec<(&str, bool)> = degraded
        .iter()
        .map(|o| (o.name.as_str(), o.passed))
        .collect();
    assert_eq!(
        verdicts,
        [("sum", true), ("product", false), ("chit-chat", true)]
    );
    assert!(
        degraded[1].problems[0].contains("expected a call of 'product'"),
        "{:?}",
        degraded[1]
    );
    server.abort();
    Ok(())
}

/// The cases above, parsed as `toolhost eval` parses a file (TOML).
fn toml_cases() -> anyhow::Result<EvalFile> {
    Ok(toml::from_str(CASES)?)
}
