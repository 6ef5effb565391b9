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
