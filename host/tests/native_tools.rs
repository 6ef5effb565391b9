//! `#[toolhost::tool]` and `#[toolhost::toolbox]` as a user of the `toolhost` crate writes
//! them (the generated code names only `toolhost`), through the real registry: the
//! definition, a call, and the model's bad arguments refused before the function runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;
use toolhost::tools::{Permission, Tool as _, ToolError, ToolRegistry};

/// Repeats a text a number of times. Use it to build test strings.
#[toolhost::tool(permissions = [read], tags = ["text"])]
async fn repeat(
    /// The text to repeat.
    text: String,
    /// How many times (at most 10).
    times: u8,
) -> Result<String, ToolError> {
    if times > 10 {
        return Err(ToolError::InvalidArguments(
            "repeat".into(),
            "times must be at most 10".into(),
        ));
    }
    Ok(text.repeat(usize::from(times)))
}

/// A counter shared by its tools.
struct Counter(AtomicU64);

#[toolhost::toolbox]
impl Counter {
    /// Adds to the counter and returns its new value.
    #[tool(name = "counter_add")]
    fn add(
        &self,
        /// What to add.
        by: u64,
    ) -> u64 {
        self.0.fetch_add(by, Ordering::SeqCst) + by
    }
}

#[tokio::test]
async fn generated_tools_register_and_run_through_the_pipeline() {
    let r = ToolRegistry::new();
    r.register(RepeatTool.into_dyn()).unwrap();
    let counter = Arc::new(Counter(AtomicU64::new(0)));
    for t in counter.tools() {
        r.register(t).unwrap();
    }
    let e = r.entry("repeat").unwrap();
    assert_eq!(
        e.description(),
        "Repeats a text a number of times. Use it to build test strings."
    );
    assert_eq!(e.permissions(), &[Permission::Read]);
    assert_eq!(e.parameters()["required"], json!(["text", "times"]));

    let inv = r
        .invoke_recorded("repeat", json!({"text": "ab", "times": 3}))
        .await;
    assert_eq!(inv.output.unwrap().canonical, json!("ababab"));
    // A negative count does not fit a u8: refused by the schema, the tool does not run.
    let inv = r
        .invoke_recorded("repeat", json!({"text": "ab", "times": -1}))
        .await;
    assert!(matches!(inv.output, Err(ToolError::InvalidArguments(..))));
    let inv = r
        .invoke_recorded("repeat", json!({"text": "ab", "times": 200}))
        .await;
    assert!(
        matches!(inv.output, Err(ToolError::InvalidArguments(_, ref m)) if m.contains("at most 10"))
    );

    for expected in [2, 7] {
        let by = if expected == 2 { 2 } else { 5 };
        let inv = r.invoke_recorded("counter_add", json!({"by": by})).await;
        assert_eq!(inv.output.unwrap().canonical, json!(expected));
    }
    assert_eq!(counter.0.load(Ordering::SeqCst), 7);
}
