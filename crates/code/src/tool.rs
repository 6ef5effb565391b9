//! [`RunCodeTool`]: the `run_code` tool, a [`CodeRunner`] in a registry.

use std::collections::BTreeSet;

use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::Arc;

use toolhost_core::tools::{
    BaseTool, Caller, Permission, Slots, ToolContext, ToolError, ToolMetadata, ToolOutput,
    ToolRegistry, Visible,
};

use crate::{CodeError, CodeRunner, RunLimits};

/// The tool's name.
pub const RUN_CODE: &str = "run_code";

/// Names a run never calls: itself (no runs inside runs) and the server's discovery
/// tools (a script calls tools directly).
const NEVER_INNER: [&str; 3] = [RUN_CODE, "search_tools", "call_tool"];

/// The most bytes of a script.
const MAX_SCRIPT_BYTES: usize = 100_000;

/// `run_code {code}`: runs a script whose `tools.NAME(args)` calls go through `registry`
/// as the caller's own calls (see the crate docs).
pub struct RunCodeTool {
    runner: CodeRunner,
    registry: ToolRegistry,
    limits: RunLimits,
    /// Places for runs in flight, shared fairly by callers (the registry's own execution
    /// slots are for the inner calls: `run_code` takes none of them).
    runs: Arc<Slots>,
}

impl RunCodeTool {
    /// The tool over `registry` (the registry it is registered in) with `limits`.
    pub fn new(runner: CodeRunner, registry: ToolRegistry, limits: RunLimits) -> Self {
        let runs = Slots::new(limits.max_runs.max(1));
        Self {
            runner,
            registry,
            limits,
            runs,
        }
    }

    /// The tools a run by the asker of `ctx` may call.
    fn callable(&self, ctx: &ToolContext) -> BTreeSet<String> {
        let visible = ctx.get::<Visible>();
        self.registry
            .list_tools()
            .into_iter()
            .filter(|n| !NEVER_INNER.contains(&n.as_str()))
            .filter(|n| visible.is_none_or(|v| v.sees(n)))
            .collect()
    }
}

#[async_trait]
impl BaseTool for RunCodeTool {
    fn name(&self) -> &str {
        RUN_CODE
    }

    fn description(&self) -> &str {
        "Run a short JavaScript program that calls tools, to do several steps in one go. \
         `code` is the body of an async function: call a tool with \
         `await tools.NAME(args)` (or `tools[\"NAME-WITH-DASHES\"](args)`), which returns \
         the tool's result as a value; start several calls before awaiting them \
         (`await Promise.all([...])`) to run them in parallel; `return` the answer (any \
         JSON value). `console.log` output comes back too. A failed tool call throws an \
         Error with the reason. No files, network or modules: only the tools."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The body of an async JavaScript function",
                    "maxLength": MAX_SCRIPT_BYTES
                }
            },
            "required": ["code"],
            "additionalProperties": false
        })
    }

    fn required_permissions(&self) -> Vec<Permission> {
        Vec::new()
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata {
            category: "code".into(),
            // The run waits for its inner calls, which take their own slots.
            orchestrates: true,
            timeout: Some(self.limits.timeout + std::time::Duration::from_secs(1)),
            ..ToolMetadata::default()
        }
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let code = args.get("code").and_then(Value::as_str).unwrap_or_default();
        let tools = self.callable(ctx);
        // A caller flooding runs waits for its own; another caller's run still starts
        // (the fair share of `Slots`). Waiting counts against the call's timeout.
        let _place = self.runs.acquire(ctx.get::<Caller>()).await;
        let run = self
            .runner
            .run(code, tools, &self.registry, ctx, &self.limits)
            .await;
        let out = match run {
            Ok(out) => out,
            Err(f) if matches!(f.error, CodeError::Cancelled) => {
                return Err(ToolError::Cancelled(RUN_CODE.into()));
            }
            Err(f) => {
                // What the script printed before it failed goes with the reason: it is
                // often what tells the model how to fix the script.
                let mut why = f.error.to_string();
                push_console(&mut why, &f.console, f.console_dropped);
                return Err(ToolError::ExecutionFailed(RUN_CODE.into(), why));
            }
        };
        let mut render = serde_json::to_string_pretty(&out.value).unwrap_or_default();
        push_console(&mut render, &out.console, out.console_dropped);
        Ok(ToolOutput::new(
            json!({"result": out.value, "console": out.console, "calls": out.calls}),
            render,
        ))
    }
}

/// Appends a run's console lines (and how many were not kept) to `text`.
fn push_console(text: &mut String, lines: &[String], dropped: usize) {
    if !lines.is_empty() {
        text.push_str("\n\nconsole:\n");
        text.push_str(&lines.join("\n"));
    }
    if dropped > 0 {
        text.push_str(&format!("\n({dropped} more console lines not kept)"));
    }
}
