//! [`ToolRegistry`]: registration, discovery and the invocation pipeline.
//!
//! `invoke` runs seed 002's four stages, every one a gate that ends the call early:
//!
//! 1. **lookup** the tool by name;
//! 2. **validate** the arguments against the tool's JSON Schema (compiled once, at
//!    registration);
//! 3. **permission gate**: the static [`PermissionChecker`] (if set), then, for
//!    destructive tools, the [`Approver`] (denied when none is set);
//! 4. **execute** under the global concurrency limit, the per-call timeout and the caller's
//!    cancellation, with panics caught; then **render** the output, truncating the text the
//!    model sees.
//!
//! Every path, including "not found" and "denied", ends in a [`ToolInvocation`], and a
//! [`ToolEvent::Completed`]. A call stopped at stage 1–3 never reaches the tool.
//!
//! The registry is a cheap-to-clone shared handle (`Arc` inside, like Rig's
//! `ToolServerHandle`): clones see the same tools, and tools can be added or removed while
//! calls are in flight. Each call holds its own `Arc` of the entry it started with.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use futures::FutureExt;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{Semaphore, broadcast, watch};

use crate::tools::base::{BaseTool, ToolContext, ToolMetadata, ToolOutput, ToolSource};
use crate::tools::error::ToolError;
use crate::tools::events::{ToolEvent, ToolEventListener};
use crate::tools::permission::{
    ApprovalDecision, ApprovalRequest, Approver, Permission, PermissionChecker, RiskLevel,
};
use crate::tools::render::{DEFAULT_MAX_TOOL_RESULT_BYTES, truncate_render};

/// Default per-call timeout.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// Default number of tool calls that may execute at once; extra calls wait their turn.
pub const DEFAULT_MAX_CONCURRENT: usize = 4;
/// Minimum length of a tool description, in characters.
pub const MIN_DESCRIPTION_CHARS: usize = 10;

/// An OpenAI-style tool definition (`{"type": "function", "function": {...}}`), as sent to
/// chat-completion APIs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function definition.
    pub function: FunctionDefinition,
}

/// The function part of a [`ToolDefinition`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDefinition {
    /// The tool name.
    pub name: String,
    /// The description.
    pub description: String,
    /// The JSON Schema of the arguments.
    pub parameters: Value,
}

/// One requested call: an id (the model's `tool_call_id`, or any unique string), a tool
/// name and JSON arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id. Empty means "let the registry generate one".
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments.
    pub arguments: Value,
}

impl ToolCall {
    /// A call with a generated id.
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: String::new(),
            name: name.into(),
            arguments,
        }
    }

    /// A call with this id.
    pub fn with_id(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// The record of one invocation. Every path through the pipeline produces one.
#[derive(Debug)]
pub struct ToolInvocation {
    /// The call id.
    pub call_id: String,
    /// The tool name as requested.
    pub tool_name: String,
    /// The arguments as received.
    pub input: Value,
    /// The rendered output (render text already truncated), or the error.
    pub output: Result<ToolOutput, ToolError>,
    /// Wall time of the whole pipeline.
    pub duration: Duration,
    /// Whether the render text was truncated.
    pub truncated: bool,
    /// Result values the tool stored in its context for the host (never shown to the model).
    pub extensions: http::Extensions,
}

impl ToolInvocation {
    /// The text to give the model: the render text, or the error message.
    pub fn model_text(&self) -> String {
        match &self.output {
            Ok(out) => out.render.clone(),
            Err(e) => format!("Error: {e}"),
        }
    }

    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        self.output.is_ok()
    }
}

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
struct StatsCell {
    calls: AtomicU64,
    failures: AtomicU64,
    total_nanos: AtomicU64,
}

impl StatsCell {
    fn record(&self, ok: bool, d: Duration) {
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
    id: u64,
    tool: Arc<dyn BaseTool>,
    name: String,
    description: String,
    parameters: Value,
    permissions: Vec<Permission>,
    risk: RiskLevel,
    metadata: ToolMetadata,
    validator: jsonschema::Validator,
    stats: StatsCell,
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
fn check_definition(
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
            json_type(parameters)
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

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn validation_error(entry: &ToolEntry, args: &Value) -> Option<String> {
    const MAX_REPORTED: usize = 5;
    let mut msgs = Vec::new();
    let mut more = 0usize;
    // The secret values of the arguments as JSON text, to catch an error that quotes one
    // even when its instance path does not lead to it (jsonschema reports some
    // `additionalProperties: false` errors at the parent).
    let secrets = crate::tools::redact::secret_values(args);
    for err in entry.validator.iter_errors(args) {
        if msgs.len() < MAX_REPORTED {
            let path = err.instance_path().to_string();
            let at = if path.is_empty() {
                "at the top level".to_string()
            } else {
                format!("at '{path}'")
            };
            // A secret value is never echoed: mask the offending value when it sits
            // under a secret key or contains a credential, and scrub what remains.
            let plain = err.to_string();
            let mut text = if crate::tools::redact::pointer_has_secret_key(&path)
                || crate::tools::redact::value_has_secrets(err.instance())
                || secrets.iter().any(|s| plain.contains(s.as_str()))
            {
                err.masked_with(crate::tools::redact::REDACTED).to_string()
            } else {
                plain
            };
            for s in &secrets {
                if text.contains(s.as_str()) {
                    text = text.replace(s.as_str(), crate::tools::redact::REDACTED);
                }
            }
            let line = format!("{at}: {text}");
            msgs.push(crate::tools::redact::scrub_text(&line).into_owned());
        } else {
            more += 1;
        }
    }
    if msgs.is_empty() {
        return None;
    }
    let mut s = msgs.join("; ");
    if more > 0 {
        s.push_str(&format!("; and {more} more problem(s)"));
    }
    Some(s)
}

struct Settings {
    checker: Option<Arc<PermissionChecker>>,
    approver: Option<Arc<dyn Approver>>,
    default_timeout: Duration,
    max_result_bytes: usize,
    max_concurrent: usize,
    semaphore: Arc<Semaphore>,
}

struct Inner {
    tools: RwLock<IndexMap<String, Arc<ToolEntry>>>,
    settings: RwLock<Settings>,
    always_allowed: Mutex<HashSet<String>>,
    listeners: RwLock<Vec<Arc<dyn ToolEventListener>>>,
    events: broadcast::Sender<ToolEvent>,
    changes: watch::Sender<u64>,
    next_id: AtomicU64,
}

/// The tool registry: an ordered, shared, concurrently changeable set of tools and the
/// invocation pipeline (see the module docs).
#[derive(Clone)]
pub struct ToolRegistry {
    inner: Arc<Inner>,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.list_tools())
            .finish_non_exhaustive()
    }
}

// Lock helpers: a poisoned lock means a panic while holding it; every critical section
// here only reads or swaps whole values, so the data is consistent and we carry on.
fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}
fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

impl ToolRegistry {
    /// An empty registry: no permission checker (static checks off), no approver
    /// (destructive tools denied), 60 s timeout, 4 concurrent calls, 20 000-byte results.
    pub fn new() -> Self {
        let (events, _) = broadcast::channel(1024);
        let (changes, _) = watch::channel(0);
        Self {
            inner: Arc::new(Inner {
                tools: RwLock::new(IndexMap::new()),
                settings: RwLock::new(Settings {
                    checker: None,
                    approver: None,
                    default_timeout: DEFAULT_TOOL_TIMEOUT,
                    max_result_bytes: DEFAULT_MAX_TOOL_RESULT_BYTES,
                    max_concurrent: DEFAULT_MAX_CONCURRENT,
                    semaphore: Arc::new(Semaphore::new(DEFAULT_MAX_CONCURRENT)),
                }),
                always_allowed: Mutex::new(HashSet::new()),
                listeners: RwLock::new(Vec::new()),
                events,
                changes,
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// Sets the static permission checker. Without one, no static check runs (seed 000);
    /// destructive tools still need an approver.
    pub fn with_permission_checker(self, checker: PermissionChecker) -> Self {
        self.set_permission_checker(Some(Arc::new(checker)));
        self
    }

    /// Sets (or clears) the permission checker on a live registry.
    pub fn set_permission_checker(&self, checker: Option<Arc<PermissionChecker>>) {
        write(&self.inner.settings).checker = checker;
    }

    /// Sets the approver asked about destructive calls.
    pub fn with_approver(self, approver: Arc<dyn Approver>) -> Self {
        self.set_approver(Some(approver));
        self
    }

    /// Sets (or clears) the approver on a live registry.
    pub fn set_approver(&self, approver: Option<Arc<dyn Approver>>) {
        write(&self.inner.settings).approver = approver;
    }

    /// Sets the default per-call timeout (a tool's own `metadata().timeout` wins).
    ///
    /// Like every setting, it is shared by all clones of this handle: configure the
    /// registry when you build it, not per caller.
    pub fn with_timeout(self, timeout: Duration) -> Self {
        write(&self.inner.settings).default_timeout = timeout;
        self
    }

    /// Sets how many calls may execute at once. Calls beyond the limit wait their turn.
    /// Calls already running keep the permits of the old limit.
    pub fn with_max_concurrent(self, n: usize) -> Self {
        {
            let mut s = write(&self.inner.settings);
            s.max_concurrent = n.max(1);
            s.semaphore = Arc::new(Semaphore::new(n.max(1)));
        }
        self
    }

    /// Sets the byte limit of the render text given to the model.
    pub fn with_max_result_bytes(self, n: usize) -> Self {
        write(&self.inner.settings).max_result_bytes = n.max(64);
        self
    }

    /// The byte limit of render text.
    pub fn max_result_bytes(&self) -> usize {
        read(&self.inner.settings).max_result_bytes
    }

    /// The default per-call timeout.
    pub fn default_timeout(&self) -> Duration {
        read(&self.inner.settings).default_timeout
    }

    /// Adds a synchronous event listener (for example a [`JsonlAuditSink`](crate::tools::JsonlAuditSink)).
    pub fn add_listener(&self, listener: Arc<dyn ToolEventListener>) {
        write(&self.inner.listeners).push(listener);
    }

    /// Subscribes to pipeline events (async; a slow receiver may lag and miss events).
    pub fn subscribe(&self) -> broadcast::Receiver<ToolEvent> {
        self.inner.events.subscribe()
    }

    /// A receiver that changes whenever a tool is added or removed (the value is a
    /// generation counter). Used to send MCP `list_changed` notifications.
    pub fn watch_changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    fn bump(&self) {
        self.inner.changes.send_modify(|g| *g += 1);
    }

    /// Registers a tool with the metadata it supplies. Fails on a duplicate name or a
    /// definition that fails the checks (name rule, description length, schema).
    ///
    /// Returns a [`Registration`] that can undo exactly this registration later.
    pub fn register(&self, tool: Arc<dyn BaseTool>) -> Result<Registration, ToolError> {
        let meta = tool.metadata();
        self.register_with(tool, meta)
    }

    /// Registers a tool with explicit metadata.
    pub fn register_with(
        &self,
        tool: Arc<dyn BaseTool>,
        metadata: ToolMetadata,
    ) -> Result<Registration, ToolError> {
        let entry = self.make_entry(tool, metadata)?;
        let name = entry.name.clone();
        let id = entry.id;
        {
            let mut tools = write(&self.inner.tools);
            if tools.contains_key(&name) {
                return Err(ToolError::DuplicateTool(name));
            }
            tools.insert(name.clone(), Arc::new(entry));
        }
        tracing::debug!(tool = %name, "registered tool");
        self.bump();
        Ok(Registration {
            registry: Arc::downgrade(&self.inner),
            name,
            id,
        })
    }

    /// Registers a tool, replacing any tool of the same name in place (keeping its
    /// position). Used when a tool source refreshes its list.
    pub fn register_or_replace(&self, tool: Arc<dyn BaseTool>) -> Result<Registration, ToolError> {
        let meta = tool.metadata();
        let entry = self.make_entry(tool, meta)?;
        let name = entry.name.clone();
        let id = entry.id;
        write(&self.inner.tools).insert(name.clone(), Arc::new(entry));
        self.bump();
        Ok(Registration {
            registry: Arc::downgrade(&self.inner),
            name,
            id,
        })
    }

    /// Registers several tools; stops at the first error (tools registered before it stay).
    pub fn register_all(
        &self,
        tools: Vec<Arc<dyn BaseTool>>,
    ) -> Result<Vec<Registration>, ToolError> {
        tools.into_iter().map(|t| self.register(t)).collect()
    }

    fn make_entry(
        &self,
        tool: Arc<dyn BaseTool>,
        metadata: ToolMetadata,
    ) -> Result<ToolEntry, ToolError> {
        let name = tool.name().to_string();
        let description = tool.description().to_string();
        let parameters = tool.parameters();
        let validator = check_definition(&name, &description, &parameters)?;
        let permissions = tool.required_permissions();
        Ok(ToolEntry {
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed),
            risk: RiskLevel::of(&permissions),
            tool,
            name,
            description,
            parameters,
            permissions,
            metadata,
            validator,
            stats: StatsCell::default(),
        })
    }

    /// Removes a tool by name. Calls already running finish normally.
    pub fn unregister(&self, name: &str) -> Option<Arc<dyn BaseTool>> {
        let removed = write(&self.inner.tools).shift_remove(name);
        if removed.is_some() {
            self.bump();
        }
        removed.map(|e| e.tool.clone())
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn BaseTool>> {
        read(&self.inner.tools).get(name).map(|e| e.tool.clone())
    }

    /// The entry (metadata, stats) of the tool with this name.
    pub fn entry(&self, name: &str) -> Option<Arc<ToolEntry>> {
        read(&self.inner.tools).get(name).cloned()
    }

    /// Whether a tool with this name is registered.
    pub fn contains(&self, name: &str) -> bool {
        read(&self.inner.tools).contains_key(name)
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        read(&self.inner.tools).len()
    }

    /// Whether the registry has no tools.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The tool names, in registration order.
    pub fn list_tools(&self) -> Vec<String> {
        read(&self.inner.tools).keys().cloned().collect()
    }

    /// All entries, in registration order.
    pub fn entries(&self) -> Vec<Arc<ToolEntry>> {
        read(&self.inner.tools).values().cloned().collect()
    }

    /// The OpenAI tool definitions of every tool, in registration order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        read(&self.inner.tools)
            .values()
            .map(|e| e.definition())
            .collect()
    }

    /// The definitions of the tools `keep` accepts (for example a tag filter).
    pub fn definitions_where(&self, keep: impl Fn(&ToolEntry) -> bool) -> Vec<ToolDefinition> {
        read(&self.inner.tools)
            .values()
            .filter(|e| keep(e))
            .map(|e| e.definition())
            .collect()
    }

    /// The tools carrying this tag.
    pub fn find_by_tag(&self, tag: &str) -> Vec<Arc<ToolEntry>> {
        read(&self.inner.tools)
            .values()
            .filter(|e| e.metadata.tags.iter().any(|t| t == tag))
            .cloned()
            .collect()
    }

    /// The tools of this category.
    pub fn find_by_category(&self, category: &str) -> Vec<Arc<ToolEntry>> {
        read(&self.inner.tools)
            .values()
            .filter(|e| e.metadata.category == category)
            .cloned()
            .collect()
    }

    /// The tools grouped by category, categories in order of first appearance.
    pub fn groups(&self) -> IndexMap<String, Vec<Arc<ToolEntry>>> {
        let mut out: IndexMap<String, Vec<Arc<ToolEntry>>> = IndexMap::new();
        for e in read(&self.inner.tools).values() {
            out.entry(e.metadata.category.clone())
                .or_default()
                .push(e.clone());
        }
        out
    }

    fn emit(&self, make: impl FnOnce() -> ToolEvent) {
        let listeners = read(&self.inner.listeners);
        if listeners.is_empty() && self.inner.events.receiver_count() == 0 {
            return;
        }
        let ev = make();
        for l in listeners.iter() {
            l.on_event(&ev);
        }
        // No receiver is fine.
        let _ = self.inner.events.send(ev);
    }

    /// Invokes a tool by name with a default context and a generated call id.
    pub async fn invoke(&self, name: &str, args: Value) -> ToolInvocation {
        self.invoke_call(ToolCall::new(name, args), &ToolContext::default())
            .await
    }

    /// Runs one call through the whole pipeline. `ctx` is the caller's context; the call
    /// runs in `ctx.child(call_id)`.
    pub async fn invoke_call(&self, call: ToolCall, ctx: &ToolContext) -> ToolInvocation {
        let start = Instant::now();
        let ToolCall {
            id,
            name,
            arguments,
        } = call;
        let call_id = if id.is_empty() {
            format!(
                "call_{}",
                self.inner.next_id.fetch_add(1, Ordering::Relaxed)
            )
        } else {
            id
        };
        let entry = self.entry(&name);
        let call_ctx = ctx.child(&call_id);
        let (output, truncated) = match &entry {
            None => (Err(ToolError::NotFound(name.clone())), false),
            Some(entry) => {
                self.run_pipeline(entry, &call_id, &arguments, &call_ctx)
                    .await
            }
        };
        let duration = start.elapsed();
        if let Some(entry) = &entry {
            entry.stats.record(output.is_ok(), duration);
        }
        self.emit(|| ToolEvent::Completed {
            call_id: call_id.clone(),
            tool: name.clone(),
            ok: output.is_ok(),
            error_kind: output.as_ref().err().map(|e| e.kind().to_string()),
            error: output.as_ref().err().map(|e| e.to_string()),
            duration,
            truncated,
        });
        ToolInvocation {
            call_id,
            tool_name: name,
            input: arguments,
            output,
            duration,
            truncated,
            extensions: call_ctx.take_results(),
        }
    }

    async fn run_pipeline(
        &self,
        entry: &Arc<ToolEntry>,
        call_id: &str,
        arguments: &Value,
        ctx: &ToolContext,
    ) -> (Result<ToolOutput, ToolError>, bool) {
        // Stage 1: validation. Models often send `null` or nothing for argument-less
        // tools; treat that as `{}` and let the schema decide.
        let empty = Value::Object(Default::default());
        let args = if arguments.is_null() {
            &empty
        } else {
            arguments
        };
        if let Some(why) = validation_error(entry, args) {
            return (
                Err(ToolError::InvalidArguments(entry.name.clone(), why)),
                false,
            );
        }

        // Stage 2: permission gate.
        let (checker, approver, default_timeout, max_bytes, semaphore) = {
            let s = read(&self.inner.settings);
            (
                s.checker.clone(),
                s.approver.clone(),
                s.default_timeout,
                s.max_result_bytes,
                s.semaphore.clone(),
            )
        };
        if let Some(checker) = &checker
            && let Err(e) = checker.check(&entry.name, &entry.permissions)
        {
            self.emit(|| ToolEvent::PermissionDenied {
                call_id: call_id.to_string(),
                tool: entry.name.clone(),
                reason: e.to_string(),
            });
            return (Err(e), false);
        }
        if entry.risk == RiskLevel::Destructive
            && let Err(e) = self.approve(entry, call_id, args, approver).await
        {
            self.emit(|| ToolEvent::PermissionDenied {
                call_id: call_id.to_string(),
                tool: entry.name.clone(),
                reason: e.to_string(),
            });
            return (Err(e), false);
        }

        // Stage 3: execution under the concurrency limit, timeout and cancellation.
        let permit = tokio::select! {
            p = semaphore.acquire_owned() => p,
            _ = ctx.cancellation_token().cancelled() => {
                return (Err(ToolError::Cancelled(entry.name.clone())), false);
            }
        };
        let Ok(_permit) = permit else {
            // The semaphore is never closed; treat it as an internal error all the same.
            return (
                Err(ToolError::Other("the concurrency limiter is closed".into())),
                false,
            );
        };
        if ctx.is_cancelled() {
            return (Err(ToolError::Cancelled(entry.name.clone())), false);
        }
        self.emit(|| ToolEvent::Started {
            call_id: call_id.to_string(),
            tool: entry.name.clone(),
            input: args.clone(),
        });
        let timeout = entry.metadata.timeout.unwrap_or(default_timeout);
        let exec = AssertUnwindSafe(entry.tool.execute(args.clone(), ctx)).catch_unwind();
        let result = tokio::select! {
            r = tokio::time::timeout(timeout, exec) => match r {
                Ok(Ok(res)) => res,
                Ok(Err(panic)) => {
                    let msg = panic_message(&panic);
                    tracing::error!(tool = %entry.name, panic = %msg, "tool panicked");
                    Err(ToolError::ExecutionFailed(entry.name.clone(), format!("the tool crashed (panic: {msg})")))
                }
                Err(_) => {
                    // Tell the tool to stop whatever it still runs in the background.
                    ctx.cancellation_token().cancel();
                    Err(ToolError::Timeout(entry.name.clone(), timeout))
                }
            },
            _ = ctx.cancellation_token().cancelled() => Err(ToolError::Cancelled(entry.name.clone())),
        };

        // Stage 4: render.
        match result {
            Ok(mut out) => {
                let (render, truncated) = truncate_render(&out.render, max_bytes);
                out.render = render;
                (Ok(out), truncated)
            }
            Err(e) => (Err(e), false),
        }
    }

    async fn approve(
        &self,
        entry: &ToolEntry,
        call_id: &str,
        args: &Value,
        approver: Option<Arc<dyn Approver>>,
    ) -> Result<(), ToolError> {
        let remembered = self
            .inner
            .always_allowed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&entry.name);
        if remembered {
            self.emit(|| ToolEvent::ApprovalDecided {
                call_id: call_id.to_string(),
                tool: entry.name.clone(),
                decision: ApprovalDecision::AllowAlways,
                by: "remembered".into(),
            });
            return Ok(());
        }
        let Some(approver) = approver else {
            self.emit(|| ToolEvent::ApprovalDecided {
                call_id: call_id.to_string(),
                tool: entry.name.clone(),
                decision: ApprovalDecision::Deny,
                by: "no_approver".into(),
            });
            return Err(ToolError::PermissionDenied(
                entry.name.clone(),
                "is destructive and needs an approval, but no approver is configured \
                 (set one with ToolRegistry::with_approver)"
                    .into(),
            ));
        };
        let request = ApprovalRequest {
            call_id: call_id.to_string(),
            tool: entry.name.clone(),
            arguments: args.clone(),
            risk: entry.risk,
            reason: format!(
                "'{}' is destructive (declares {})",
                entry.name,
                entry
                    .permissions
                    .iter()
                    .filter(|p| p.risk() == RiskLevel::Destructive)
                    .map(Permission::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        self.emit(|| ToolEvent::ApprovalRequested {
            call_id: call_id.to_string(),
            tool: entry.name.clone(),
            input: args.clone(),
            risk: entry.risk,
        });
        // An approver is outside code (a UI, a webhook): if it panics, the answer is "no".
        let decision = match AssertUnwindSafe(approver.approve(&request))
            .catch_unwind()
            .await
        {
            Ok(d) => d,
            Err(panic) => {
                tracing::error!(tool = %entry.name, panic = %panic_message(&panic), "approver panicked; denying");
                ApprovalDecision::Deny
            }
        };
        self.emit(|| ToolEvent::ApprovalDecided {
            call_id: call_id.to_string(),
            tool: entry.name.clone(),
            decision,
            by: "approver".into(),
        });
        match decision {
            ApprovalDecision::AllowOnce => Ok(()),
            ApprovalDecision::AllowAlways => {
                self.inner
                    .always_allowed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(entry.name.clone());
                Ok(())
            }
            ApprovalDecision::Deny => Err(ToolError::PermissionDenied(
                entry.name.clone(),
                "is destructive and the approver denied this call".into(),
            )),
        }
    }

    /// Forgets every "allow always" decision.
    pub fn reset_approvals(&self) {
        self.inner
            .always_allowed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Runs independent calls in parallel (one task each) with a default context. Results
    /// come back in input order; each call has its own timeout.
    pub async fn invoke_all(&self, calls: Vec<(String, Value)>) -> Vec<ToolInvocation> {
        let calls = calls
            .into_iter()
            .map(|(name, args)| ToolCall::new(name, args))
            .collect();
        self.invoke_calls(calls, &ToolContext::default()).await
    }

    /// Runs independent calls in parallel, each on its own task, in `ctx`. Results come
    /// back in input order. Dropping the returned future aborts the calls still running.
    pub async fn invoke_calls(
        &self,
        calls: Vec<ToolCall>,
        ctx: &ToolContext,
    ) -> Vec<ToolInvocation> {
        let mut calls = calls;
        if calls.len() == 1
            && let Some(c) = calls.pop()
        {
            return vec![self.invoke_call(c, ctx).await];
        }
        let n = calls.len();
        let mut fallback: Vec<(String, String, Value)> = Vec::with_capacity(n);
        let mut set = tokio::task::JoinSet::new();
        for (i, mut call) in calls.into_iter().enumerate() {
            if call.id.is_empty() {
                call.id = format!(
                    "call_{}",
                    self.inner.next_id.fetch_add(1, Ordering::Relaxed)
                );
            }
            fallback.push((call.id.clone(), call.name.clone(), call.arguments.clone()));
            let this = self.clone();
            let ctx = ctx.clone();
            set.spawn(async move { (i, this.invoke_call(call, &ctx).await) });
        }
        let mut slots: Vec<Option<ToolInvocation>> = (0..n).map(|_| None).collect();
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok((i, inv)) => {
                    if let Some(slot) = slots.get_mut(i) {
                        *slot = Some(inv);
                    }
                }
                // invoke_call catches tool panics; a join error means the task itself was
                // aborted or panicked outside the tool. The slot is filled below.
                Err(e) => tracing::error!(error = %e, "tool task failed"),
            }
        }
        slots
            .into_iter()
            .zip(fallback)
            .map(|(slot, (id, name, input))| {
                slot.unwrap_or_else(|| ToolInvocation {
                    call_id: id,
                    tool_name: name.clone(),
                    input,
                    output: Err(ToolError::ExecutionFailed(
                        name,
                        "the call's task ended unexpectedly".into(),
                    )),
                    duration: Duration::ZERO,
                    truncated: false,
                    extensions: http::Extensions::new(),
                })
            })
            .collect()
    }
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".into()
    }
}

/// The handle of one registration (seed 002's disposer). [`Registration::dispose`] removes
/// exactly the tool it registered: if the name was since re-registered by someone else,
/// that other tool stays. Dropping a `Registration` does nothing; use
/// [`Registration::into_guard`] for drop-to-unregister.
#[derive(Debug, Clone)]
pub struct Registration {
    registry: Weak<Inner>,
    name: String,
    id: u64,
}

impl Registration {
    /// The registered tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Unregisters the tool. Returns whether it was still registered.
    pub fn dispose(self) -> bool {
        self.dispose_ref()
    }

    fn dispose_ref(&self) -> bool {
        let Some(inner) = self.registry.upgrade() else {
            return false;
        };
        let removed = {
            let mut tools = write(&inner.tools);
            match tools.get(&self.name) {
                Some(e) if e.id == self.id => tools.shift_remove(&self.name).is_some(),
                _ => false,
            }
        };
        if removed {
            inner.changes.send_modify(|g| *g += 1);
        }
        removed
    }

    /// Turns the handle into a guard that unregisters the tool when dropped.
    pub fn into_guard(self) -> RegistrationGuard {
        RegistrationGuard(self)
    }
}

/// Unregisters its tool when dropped. See [`Registration::into_guard`].
#[derive(Debug)]
pub struct RegistrationGuard(Registration);

impl Drop for RegistrationGuard {
    fn drop(&mut self) {
        self.0.dispose_ref();
    }
}
