//! A registered tool: [`ToolEntry`] (the tool, its checked definition, compiled schema,
//! derived risk and statistics) and the registration checks every definition must pass.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::{MAX_OUTPUT_SCHEMA_BYTES, MIN_DESCRIPTION_CHARS};
use crate::tools::base::{BaseTool, ToolMetadata, ToolSource};
use crate::tools::definition::{FunctionDefinition, ToolDefinition};
use crate::tools::error::ToolError;
use crate::tools::permission::{Permission, RiskLevel};

/// Call statistics of one tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ToolStats {
    /// Invocations that found the tool (including ones stopped by validation or permission).
    pub calls: u64,
    /// Of those, the ones that ended in an error.
    pub failures: u64,
    /// Total pipeline time.
    pub total_duration: Duration,
    /// Mean pipeline time (zero before the first call).
    pub mean_duration: Duration,
}

#[derive(Default)]
pub(super) struct StatsCell {
    calls: AtomicU64,
    failures: AtomicU64,
    total_nanos: AtomicU64,
}

impl StatsCell {
    pub(super) fn record(&self, ok: bool, d: Duration) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.total_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    fn snapshot(&self) -> ToolStats {
        let calls = self.calls.load(Ordering::Relaxed);
        let total = Duration::from_nanos(self.total_nanos.load(Ordering::Relaxed));
        ToolStats {
            calls,
            failures: self.failures.load(Ordering::Relaxed),
            total_duration: total,
            mean_duration: if calls == 0 {
                Duration::ZERO
            } else {
                total / u32::try_from(calls).unwrap_or(u32::MAX)
            },
        }
    }
}

/// A registered tool with its metadata, compiled schema and statistics.
pub struct ToolEntry {
    pub(super) id: u64,
    pub(super) tool: Arc<dyn BaseTool>,
    pub(super) name: String,
    pub(super) description: String,
    pub(super) parameters: Value,
    pub(super) permissions: Vec<Permission>,
    pub(super) risk: RiskLevel,
    pub(super) metadata: ToolMetadata,
    pub(super) validator: jsonschema::Validator,
    /// The compiled `metadata.output_schema`, if the tool declares one.
    pub(super) output_validator: Option<jsonschema::Validator>,
    pub(super) stats: StatsCell,
}

impl std::fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEntry")
            .field("name", &self.name)
            .field("permissions", &self.permissions)
            .field("risk", &self.risk)
            .field("metadata", &self.metadata)
            .finish_non_exhaustive()
    }
}

impl ToolEntry {
    /// The tool.
    pub fn tool(&self) -> &Arc<dyn BaseTool> {
        &self.tool
    }
    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The description.
    pub fn description(&self) -> &str {
        &self.description
    }
    /// The parameter schema.
    pub fn parameters(&self) -> &Value {
        &self.parameters
    }
    /// The declared permissions.
    pub fn permissions(&self) -> &[Permission] {
        &self.permissions
    }
    /// The risk level derived from the permissions.
    pub fn risk(&self) -> RiskLevel {
        self.risk
    }
    /// The metadata (tags, category, source, version, timeout).
    pub fn metadata(&self) -> &ToolMetadata {
        &self.metadata
    }
    /// The tags.
    pub fn tags(&self) -> &[String] {
        &self.metadata.tags
    }
    /// The category (empty when uncategorised).
    pub fn category(&self) -> &str {
        &self.metadata.category
    }
    /// Where the tool comes from.
    pub fn source(&self) -> &ToolSource {
        &self.metadata.source
    }
    /// The version, if known.
    pub fn version(&self) -> Option<&str> {
        self.metadata.version.as_deref()
    }
    /// A snapshot of the call statistics.
    pub fn stats(&self) -> ToolStats {
        self.stats.snapshot()
    }
    /// The OpenAI tool definition.
    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            kind: "function".into(),
            function: FunctionDefinition {
                name: self.name.clone(),
                description: self.description.clone(),
                parameters: self.parameters.clone(),
            },
            input_examples: self.metadata.input_examples.clone(),
        }
    }
}

/// Checks a tool name against the OpenAI function-name rule `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Runs the registration checks on a definition and compiles its schema.
pub(super) fn check_definition(
    name: &str,
    description: &str,
    parameters: &Value,
) -> Result<jsonschema::Validator, ToolError> {
    let bad = |why: String| ToolError::InvalidDefinition(name.to_string(), why);
    if !is_valid_tool_name(name) {
        return Err(bad(
            "the name must match ^[a-zA-Z0-9_-]{1,64}$ (letters, digits, '_' and '-', at most 64)"
                .into(),
        ));
    }
    if description.trim().chars().count() < MIN_DESCRIPTION_CHARS {
        return Err(bad(format!(
            "the description must be at least {MIN_DESCRIPTION_CHARS} characters so the model \
             can tell what the tool does (got {:?})",
            description
        )));
    }
    let Some(obj) = parameters.as_object() else {
        return Err(bad(format!(
            "parameters must be a JSON Schema object, got {}",
            crate::tools::json_kind(parameters)
        )));
    };
    match obj.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(bad(format!(
                "parameters must describe an object (\"type\": \"object\"), got \"type\": {other}"
            )));
        }
    }
    jsonschema::validator_for(parameters)
        .map_err(|e| bad(format!("the parameter schema does not compile: {e}")))
}

/// Compiles a tool's output schema (`ToolMetadata::output_schema`), if any. MCP requires
/// an object schema (`structuredContent` is an object).
pub(super) fn check_output_schema(
    name: &str,
    schema: Option<&Value>,
) -> Result<Option<jsonschema::Validator>, ToolError> {
    let Some(schema) = schema else {
        return Ok(None);
    };
    let bad = |why: String| ToolError::InvalidDefinition(name.to_string(), why);
    if !schema.is_object() {
        return Err(bad(format!(
            "the output schema must be a JSON Schema object, got {}",
            crate::tools::json_kind(schema)
        )));
    }
    let bytes = serde_json::to_vec(schema).map_or(usize::MAX, |v| v.len());
    if bytes > MAX_OUTPUT_SCHEMA_BYTES {
        return Err(bad(format!(
            "the output schema is {bytes} bytes of JSON, more than the limit of \
             {MAX_OUTPUT_SCHEMA_BYTES}"
        )));
    }
    jsonschema::validator_for(schema)
        .map(Some)
        .map_err(|e| bad(format!("the output schema does not compile: {e}")))
}
