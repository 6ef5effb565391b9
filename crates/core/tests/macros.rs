//! `#[tool]` and `#[toolbox]` (crate `toolhost-macros`), through the real registry: the
//! generated definitions (name, description, schema, permissions, metadata), calls through
//! the whole pipeline, bad arguments from the model (refused by validation, the tool not
//! run, a good call after still served), and errors of every kind the function can return.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;
use toolhost_core::tools::{Permission, ToolContext, ToolError, ToolRegistry, ToolSource};
use toolhost_core::{tool, toolbox};

static ADD_RUNS: AtomicUsize = AtomicUsize::new(0);
/// Held by every test that calls `add` (through the registry or directly): tests run in
/// parallel, and one of them counts `add`'s runs.
static ADD_CALLS: Mutex<()> = Mutex::const_new(());

/// Adds two integers x and y and returns their sum.
#[tool(tags = ["math"], category = "arithmetic", timeout = "2s")]
async fn add(
    /// The first addend.
    x: i64,
    /// The second addend.
    y: i64,
) -> Result<i64, ToolError> {
    ADD_RUNS.fetch_add(1, Ordering::SeqCst);
    x.checked_add(y)
        .ok_or_else(|| ToolError::InvalidArguments("add".into(), "the sum overflows".into()))
}

/// A greeting.
#[derive(Serialize)]
struct Greeting {
    text: String,
    shout: bool,
}

/// Greets someone by name, optionally in capitals.
#[tool(name = "say-hello", permissions = [read, "greet.people"])]
fn greet(
    #[arg(description = "Who to greet.")] name: String,
    /// Whether to shout.
    #[arg(rename = "loud")]
    shout: Option<bool>,
    ctx: &ToolContext,
) -> Greeting {
    let shout = shout.unwrap_or(false);
    let text = format!("hello {name} from {}", ctx.session_id());
    Greeting {
        text: if shout { text.to_uppercase() } else { text },
        shout,
    }
}

/// An error type of the tool's own, known only by its `Display`.
#[derive(Debug)]
struct NotFound(String);

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no entry named {}", self.0)
    }
}

/// Looks up an entry of a fixed phone book by its key.
#[tool]
async fn lookup(
    /// The key to look up.
    key: String,
) -> Result<String, NotFound> {
    match key.as_str() {
        "alice" => Ok("555-0100".into()),
        _ => Err(NotFound(key)),
    }
}

/// Reads a line from a file, failing with the operating system's error.
#[tool(permissions = [Read])]
fn first_line(
    /// The file to read.
    path: String,
) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    Ok(text.lines().next().unwrap_or_default().to_string())
}

/// Counts calls: state shared by the tools of one value.
struct Notes {
    items: Mutex<Vec<String>>,
}

#[toolbox]
impl Notes {
    /// Adds a note to the list and returns how many there are.
    #[tool(name = "note_add", tags = ["notes"])]
    async fn add(
        &self,
        /// The text of the note.
        text: String,
    ) -> Result<usize, ToolError> {
        let mut items = self.items.lock().await;
        items.push(text);
        Ok(items.len())
    }

    /// Lists every note taken so far, oldest first.
    #[tool(name = "note_list")]
    async fn list(&self) -> Vec<String> {
        self.items.lock().await.clone()
    }

    /// Not a tool: a plain method stays as it is.
    fn count(&self) -> usize {
        self.items.try_lock().map(|i| i.len()).unwrap_or(0)
    }
}

fn registry() -> ToolRegistry {
    let r = ToolRegistry::new();
    r.register(AddTool.into_dyn()).unwrap();
    r.register(GreetTool.into_dyn()).unwrap();
    r.register(LookupTool.into_dyn()).unwrap();
    r.register(FirstLineTool.into_dyn()).unwrap();
    r
}

use toolhost_core::tools::Tool as _;

#[tokio::test]
async fn a_function_becomes_a_tool_with_its_docs_schema_and_metadata() {
    let _one_at_a_time = ADD_CALLS.lock().await;
    let r = registry();
    let entry = r.entry("add").unwrap();
    assert_eq!(
        entry.description(),
        "Adds two integers x and y and returns their sum."
    );
    assert_eq!(
        entry.parameters(),
        &json!({
            "type": "object",
            "properties": {
                "x": {"type": "integer", "format": "int64", "description": "The first addend."},
                "y": {"type": "integer", "format": "int64", "description": "The second addend."}
            },
            "required": ["x", "y"]
        })
    );
    assert_eq!(entry.metadata().tags, vec!["math".to_string()]);
    assert_eq!(entry.metadata().category, "arithmetic");
    assert_eq!(entry.metadata().timeout, Some(Duration::from_secs(2)));
    assert_eq!(entry.metadata().source, ToolSource::Native);
    assert!(entry.permissions().is_empty());

    let greet = r.entry("say-hello").unwrap();
    assert_eq!(
        greet.permissions(),
        &[Permission::Read, Permission::Custom("greet.people".into())]
    );
    let schema = greet.parameters();
    assert_eq!(schema["properties"]["name"]["description"], "Who to greet.");
    assert_eq!(
        schema["properties"]["loud"]["description"],
        "Whether to shout."
    );
    // The context is not a parameter; an `Option` is not required.
    assert!(schema["properties"].get("ctx").is_none(), "{schema}");
    assert!(schema["properties"].get("shout").is_none(), "{schema}");
    assert_eq!(schema["required"], json!(["name"]));

    let first = r.entry("first_line").unwrap();
    assert_eq!(first.permissions(), &[Permission::Read]);
    // The function stays callable as it is.
    assert_eq!(add(2, 3).await.unwrap(), 5);
}

#[tokio::test]
async fn calls_run_through_the_pipeline_and_serialise_the_output() {
    let _one_at_a_time = ADD_CALLS.lock().await;
    let r = registry();
    let inv = r.invoke_recorded("add", json!({"x": 40, "y": 2})).await;
    assert_eq!(inv.output.unwrap().canonical, json!(42));

    let ctx = ToolContext::new("session-7", "trace-1");
    let inv = r
        .invoke_call(
            toolhost_core::tools::ToolCall::new("say-hello", json!({"name": "ada", "loud": true})),
            &ctx,
        )
        .await;
    let out = inv.output.unwrap();
    assert_eq!(
        out.canonical,
        json!({"text": "HELLO ADA FROM SESSION-7", "shout": true})
    );

    let inv = r.invoke_recorded("lookup", json!({"key": "alice"})).await;
    let out = inv.output.unwrap();
    assert_eq!(out.canonical, json!("555-0100"));
    assert_eq!(out.render, "555-0100");
}

#[tokio::test]
async fn bad_arguments_are_refused_before_the_function_runs() {
    let _one_at_a_time = ADD_CALLS.lock().await;
    let r = registry();
    let before = ADD_RUNS.load(Ordering::SeqCst);
    let cases = [
        json!({"x": "two", "y": 3}),
        json!({"x": 1}),
        json!({"x": 1.5, "y": 2}),
        json!(["x", "y"]),
        Value::Null,
        json!({"x": 1, "y": 2u64.pow(63)}),
    ];
    for args in cases {
        let inv = r.invoke_recorded("add", args.clone()).await;
        match inv.output {
            Err(ToolError::InvalidArguments(name, _)) => assert_eq!(name, "add", "{args}"),
            other => panic!("{args}: expected invalid arguments, got {other:?}"),
        }
    }
    assert_eq!(
        ADD_RUNS.load(Ordering::SeqCst),
        before,
        "the tool ran on bad input"
    );
    // The tool's own check still speaks, and a good call after is served.
    let inv = r
        .invoke_recorded("add", json!({"x": i64::MAX, "y": 1}))
        .await;
    assert!(
        matches!(inv.output, Err(ToolError::InvalidArguments(_, ref m)) if m.contains("overflows")),
        "{:?}",
        inv.output
    );
    let inv = r.invoke_recorded("add", json!({"x": -1, "y": 1})).await;
    assert_eq!(inv.output.unwrap().canonical, json!(0));
}

#[tokio::test]
async fn errors_keep_their_kind_or_become_execution_failures_with_their_message() {
    let r = registry();
    let inv = r.invoke_recorded("lookup", json!({"key": "mallory"})).await;
    match inv.output {
        Err(ToolError::ExecutionFailed(name, msg)) => {
            assert_eq!(name, "lookup");
            assert_eq!(msg, "no entry named mallory");
        }
        other => panic!("expected an execution failure, got {other:?}"),
    }
    // `io::Error` converts into a `ToolError` (`From`), so it keeps its kind.
    let inv = r
        .invoke_recorded(
            "first_line",
            json!({"path": "/nonexistent/toolhost-macro-test"}),
        )
        .await;
    assert!(
        matches!(inv.output, Err(ToolError::Io(_))),
        "{:?}",
        inv.output
    );

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.txt");
    std::fs::write(&file, "first\nsecond\n").unwrap();
    let inv = r
        .invoke_recorded("first_line", json!({"path": file.to_str().unwrap()}))
        .await;
    assert_eq!(inv.output.unwrap().canonical, json!("first"));
}

#[tokio::test]
async fn the_methods_of_a_toolbox_share_its_state() {
    let notes = Arc::new(Notes {
        items: Mutex::new(Vec::new()),
    });
    let r = ToolRegistry::new();
    for t in notes.tools() {
        r.register(t).unwrap();
    }
    let mut names = r.list_tools();
    names.sort();
    assert_eq!(names, ["note_add", "note_list"]);
    assert_eq!(
        r.entry("note_add").unwrap().description(),
        "Adds a note to the list and returns how many there are."
    );
    assert_eq!(r.entry("note_add").unwrap().metadata().tags, ["notes"]);
    assert_eq!(
        r.entry("note_list").unwrap().parameters(),
        &json!({"type": "object"})
    );

    for (i, text) in ["milk", "eggs"].into_iter().enumerate() {
        let inv = r.invoke_recorded("note_add", json!({"text": text})).await;
        assert_eq!(inv.output.unwrap().canonical, json!(i + 1));
    }
    let inv = r.invoke_recorded("note_add", json!({"text": 7})).await;
    assert!(matches!(inv.output, Err(ToolError::InvalidArguments(..))));
    let inv = r.invoke_recorded("note_list", json!({})).await;
    assert_eq!(inv.output.unwrap().canonical, json!(["milk", "eggs"]));
    assert_eq!(notes.count(), 2);
}
