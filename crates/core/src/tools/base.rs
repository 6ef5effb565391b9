//! [`BaseTool`]: the interface every tool implements (native, WASM or MCP), with its
//! [`ToolContext`], [`ToolMetadata`] and [`ToolOutput`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use http::Extensions;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::tools::content::{ContentBlock, render_blocks};
use crate::tools::error::ToolError;
use crate::tools::permission::{Permission, RiskLevel};

/// The interface of every tool. Custom Rust tools, WASM components and MCP server tools all
/// end up as an `Arc<dyn BaseTool>` in the same [`ToolRegistry`](crate::tools::ToolRegistry).
///
/// ```
/// use toolhost_core::tools::{BaseTool, ToolContext, ToolError, ToolOutput};
/// use serde_json::{json, Value};
///
/// struct Weather;
///
/// #[async_trait::async_trait]
/// impl BaseTool for Weather {
///     fn name(&self) -> &str { "get_weather" }
///     fn description(&self) -> &str { "Get the current weather of a city" }
///     fn parameters(&self) -> Value {
///         json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
///     }
///     async fn execute(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
///         let city = args["city"].as_str().unwrap_or_default();
///         Ok(ToolOutput::json(json!({"city": city, "temperature": 22, "unit": "°C"})))
///     }
/// }
/// ```
#[async_trait]
pub trait BaseTool: Send + Sync {
    /// The unique name the model calls the tool by (`^[a-zA-Z0-9_-]{1,64}$`).
    fn name(&self) -> &str;

    /// What the tool does, for the model. At least 10 characters.
    fn description(&self) -> &str;

    /// The JSON Schema of the arguments (an object schema).
    fn parameters(&self) -> Value;

    /// The permissions the tool needs. Default: none.
    fn required_permissions(&self) -> Vec<Permission> {
        Vec::new()
    }

    /// Registry metadata: tags, category, source, version and a timeout override.
    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::default()
    }

    /// Runs the tool. `args` have already been validated against [`BaseTool::parameters`].
    ///
    /// Implementations should watch `ctx.cancellation_token()` in long work; the registry
    /// cancels it on timeout and when the caller gives up.
    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// Where a tool comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolSource {
    /// A Rust tool compiled into the host.
    #[default]
    Native,
    /// A WebAssembly component loaded from a file.
    Wasm {
        /// The component file.
        path: String,
    },
    /// A tool of an external MCP server.
    Mcp {
        /// The server's configured name.
        server: String,
    },
}

impl ToolSource {
    /// `native`, `wasm` or `mcp`.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolSource::Native => "native",
            ToolSource::Wasm { .. } => "wasm",
            ToolSource::Mcp { .. } => "mcp",
        }
    }
}

/// Registry metadata of a tool. The tool supplies defaults through [`BaseTool::metadata`];
/// `ToolRegistry::register_with` can override them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolMetadata {
    /// Free-form tags, used by `find_by_tag` and the LLM loop's tag filter.
    pub tags: Vec<String>,
    /// A category such as `"files"`, `"memory"` or `"network"`. Empty means uncategorised.
    pub category: String,
    /// Where the tool comes from.
    pub source: ToolSource,
    /// The tool's version, if known.
    pub version: Option<String>,
    /// A per-tool timeout that overrides the registry's default.
    #[serde(with = "opt_duration_ms", default)]
    pub timeout: Option<Duration>,
    /// A floor on the risk level: the tool is rated at least this, whatever its
    /// permissions say. Set by the operator's configuration for tools whose own word
    /// cannot be trusted (an MCP tool without annotations is `destructive` by default,
    /// so it needs an approval). `None`: the permissions alone decide.
    #[serde(default)]
    pub risk: Option<RiskLevel>,
    /// A display title (MCP `title`), when the source gives one. Served in `tools/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Display icons (MCP `icons`), when the source gives them. Served in `tools/list`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// The JSON Schema of the canonical value (MCP `outputSchema`). When set, the registry
    /// checks every successful result's canonical value against it (compiled at
    /// registration) and turns a mismatch into `ExecutionFailed`; the MCP server then
    /// serves the canonical value as `structuredContent` as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The tool runs other tools through the registry (code mode's `run_code`) and
    /// takes no execution slot itself: its inner calls take theirs. Holding one while
    /// waiting for inner calls would deadlock a full pool of such tools.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub orchestrates: bool,
    /// The tool stops itself at the call's deadline, which the registry computes (the
    /// tool's timeout cut to the caller's deadline) and hands it as
    /// [`ToolContext::deadline`]: a WASM tool through its sandbox's epoch deadline, an
    /// MCP tool through its request's timeout. The registry then starts no timer of its
    /// own, so one call has one timer (docs/design.md, "The pipeline"); a tool without
    /// this flag is stopped by the registry's timer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keeps_deadline: bool,
    /// Example arguments, shown to models whose provider takes them (Anthropic's
    /// `input_examples`; folded into the description for OpenAI). Each must meet the
    /// parameter schema (checked at registration); at most
    /// [`MAX_INPUT_EXAMPLES`](crate::tools::MAX_INPUT_EXAMPLES).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_examples: Vec<Value>,
    /// The `_meta` of the source's definition, passed on to MCP clients in `tools/list`
    /// as it is (a wrapped server's tool: `ui.resourceUri` ties it to its MCP App). The
    /// source bounds it: the MCP client drops toolhost's reserved keys and refuses one
    /// too large or carrying script URIs (docs/mcp.md, "What passes through").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, Value>>,
    /// The MCP App view the tool ships (a WASM plugin's `NAME.ui/TOOL.html`), served by
    /// `serve` as a `ui://` resource; `meta` then carries its `ui.resourceUri`. Not
    /// serialized: the page is served, never copied into a definition.
    #[serde(skip)]
    pub view: Option<std::sync::Arc<crate::tools::view::AppView>>,
}

/// A display icon of a tool (MCP `Icon`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// Where the icon is: an `https:` URL or a `data:image/...` URI.
    pub src: String,
    /// Its MIME type, if the source says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes it fits (`48x48`, `any`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// `light` or `dark`, if it is meant for one theme.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

mod opt_duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

/// A tool's result: a canonical JSON value for programs (UI, audit, `structuredContent`)
/// and render text for the model: two layers, so the model's view can be cut without
/// losing the data. A tool may also return content blocks (text, images, audio,
/// resources; see [`crate::tools::content`]), which the MCP server serves as they are;
/// `render` is then what the model of toolhost's own loop reads (non-text blocks
/// summarised).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The structured result.
    pub canonical: Value,
    /// The text the model sees. The registry truncates it to `max_tool_result_bytes`.
    pub render: String,
    /// Content blocks, when the tool returns more than text (empty: the render text is
    /// the whole content). The registry bounds and checks them (pipeline stage 5).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ContentBlock>,
    /// The result's `_meta`, passed on to MCP clients as it is (a wrapped server's result:
    /// data for an MCP App's view, a server's extension fields). Its source bounds it (the
    /// MCP client: docs/mcp.md, "What passes through").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, Value>>,
}

impl ToolOutput {
    /// An output with explicit canonical value and render text.
    pub fn new(canonical: Value, render: impl Into<String>) -> Self {
        Self {
            canonical,
            render: render.into(),
            content: Vec::new(),
            meta: None,
        }
    }

    /// An output made of content blocks: the render text is their summary
    /// ([`render_blocks`]), the canonical value the same text.
    pub fn blocks(content: Vec<ContentBlock>) -> Self {
        let render = render_blocks(&content);
        Self {
            canonical: Value::String(render.clone()),
            render,
            content,
            meta: None,
        }
    }

    /// Builder: attaches content blocks, keeping the canonical value and render text.
    pub fn with_content(mut self, content: Vec<ContentBlock>) -> Self {
        self.content = content;
        self
    }

    /// Builder: attaches the result's `_meta` (`None`: none).
    pub fn with_meta(mut self, meta: Option<serde_json::Map<String, Value>>) -> Self {
        self.meta = meta;
        self
    }

    /// An output whose render text is derived from the value: a JSON string renders as
    /// its contents, anything else as compact JSON.
    pub fn json(canonical: Value) -> Self {
        let render = match &canonical {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Self {
            canonical,
            render,
            content: Vec::new(),
            meta: None,
        }
    }

    /// A text-only output (the canonical value is the same string).
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        Self {
            canonical: Value::String(text.clone()),
            render: text,
            content: Vec::new(),
            meta: None,
        }
    }
}

/// A JSON value as a tool's output ([`ToolOutput::json`]), so a tool may end with
/// `Ok(json!({...}).into())`.
impl From<Value> for ToolOutput {
    fn from(canonical: Value) -> Self {
        ToolOutput::json(canonical)
    }
}

/// A progress report sent by a running tool (forwarded, for example, as MCP progress).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgressEvent {
    /// The call the report belongs to.
    pub call_id: String,
    /// Progress so far.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A short human-readable message.
    pub message: Option<String>,
}

/// The context of one tool call: the extension point every tool receives.
///
/// - `session_id` / `trace_id` correlate calls across a conversation and a trace.
/// - A cancellation token: the registry cancels it on timeout; callers cancel it to give up.
/// - Typed **inbound** extensions the caller fills (an auth token, a DB handle), and typed
///   **result** extensions the tool fills for the host (execution metadata). The model sees
///   neither.
/// - An optional progress channel.
/// - An optional **deadline** and **result limit** set by the caller (the LLM loop's
///   per-turn budget, an MCP request's timeout): the registry, which owns timeouts and
///   truncation, applies the tighter of its own and these (`docs/design.md`, "The pipeline").
///
/// Cloning is cheap; clones share the cancellation token and the result map. The registry
/// gives every call its own child context (see [`ToolContext::child`]).
#[derive(Debug, Clone)]
pub struct ToolContext {
    session_id: Arc<str>,
    trace_id: Arc<str>,
    call_id: Arc<str>,
    cancel: CancellationToken,
    inbound: Arc<Extensions>,
    result: Arc<Mutex<Extensions>>,
    progress: Option<mpsc::UnboundedSender<ProgressEvent>>,
    deadline: Option<tokio::time::Instant>,
    max_result_bytes: Option<usize>,
}

impl Default for ToolContext {
    fn default() -> Self {
        Self::new("", "")
    }
}

impl ToolContext {
    /// A context for this session and trace, with a fresh cancellation token.
    pub fn new(session_id: impl Into<String>, trace_id: impl Into<String>) -> Self {
        Self {
            session_id: Arc::from(session_id.into()),
            trace_id: Arc::from(trace_id.into()),
            call_id: Arc::from(""),
            cancel: CancellationToken::new(),
            inbound: Arc::new(Extensions::new()),
            result: Arc::new(Mutex::new(Extensions::new())),
            progress: None,
            deadline: None,
            max_result_bytes: None,
        }
    }

    /// Builder: adds a typed inbound value the tools can read with [`ToolContext::get`].
    pub fn with<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        Arc::make_mut(&mut self.inbound).insert(value);
        self
    }

    /// Builder: uses this cancellation token.
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Builder: sends the tools' progress reports to this channel.
    pub fn with_progress(mut self, tx: mpsc::UnboundedSender<ProgressEvent>) -> Self {
        self.progress = Some(tx);
        self
    }

    /// Builder: calls in this context must finish by `deadline` (an earlier deadline
    /// already set stays). The registry stops a call at the earlier of this and its own
    /// timeout, with [`ToolError::Timeout`].
    pub fn with_deadline(mut self, deadline: tokio::time::Instant) -> Self {
        self.deadline = Some(match self.deadline {
            Some(d) => d.min(deadline),
            None => deadline,
        });
        self
    }

    /// Builder: the text a call in this context gives the model is at most `bytes` long
    /// (the registry applies the smaller of this and its own limit).
    pub fn with_max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = Some(match self.max_result_bytes {
            Some(b) => b.min(bytes),
            None => bytes,
        });
        self
    }

    /// The caller's deadline, if any.
    pub fn deadline(&self) -> Option<tokio::time::Instant> {
        self.deadline
    }

    /// The caller's result limit, if any.
    pub fn max_result_bytes(&self) -> Option<usize> {
        self.max_result_bytes
    }

    /// The context of one call derived from this one: same session, trace, inbound values,
    /// progress channel, deadline and result limit; a child cancellation token (cancelled
    /// with the parent, and on its own by a timeout); its own empty result map.
    pub fn child(&self, call_id: &str) -> Self {
        Self {
            session_id: self.session_id.clone(),
            trace_id: self.trace_id.clone(),
            call_id: Arc::from(call_id),
            cancel: self.cancel.child_token(),
            inbound: self.inbound.clone(),
            result: Arc::new(Mutex::new(Extensions::new())),
            progress: self.progress.clone(),
            deadline: self.deadline,
            max_result_bytes: self.max_result_bytes,
        }
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The trace id.
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }

    /// The id of the current call (empty outside a registry call).
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The cancellation token of this call.
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Reads a typed inbound value.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.inbound.get::<T>()
    }

    /// Reads a typed inbound value a tool cannot work without.
    pub fn require<T: Send + Sync + 'static>(&self) -> Result<&T, ToolError> {
        self.get::<T>().ok_or_else(|| {
            ToolError::Other(format!(
                "the host did not provide the context value {} this tool needs",
                std::any::type_name::<T>()
            ))
        })
    }

    /// Stores a typed result value for the host (never shown to the model).
    pub fn insert_result<T: Clone + Send + Sync + 'static>(&self, value: T) {
        // A poisoned lock only means another holder panicked mid-insert; the map is still
        // usable, so recover it rather than losing the value.
        let mut map = self.result.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(value);
    }

    /// Takes every result value stored so far, leaving the map empty.
    pub fn take_results(&self) -> Extensions {
        let mut map = self.result.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *map)
    }

    /// Reports progress, if the caller listens for it. Cheap no-op otherwise.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(tx) = &self.progress {
            // The receiver may be gone (caller stopped listening): progress is best-effort.
            let _ = tx.send(ProgressEvent {
                call_id: self.call_id.to_string(),
                progress,
                total,
                message,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Token(String);

    #[test]
    fn inbound_values_are_typed_and_result_values_are_separate() {
        let ctx = ToolContext::new("s1", "t1").with(Token("secret".into()));
        let call = ctx.child("c1");
        assert_eq!(call.get::<Token>(), Some(&Token("secret".into())));
        assert!(call.require::<u64>().is_err());
        call.insert_result(42u64);
        // The parent's result map is untouched; the call's holds the value once.
        assert!(ctx.take_results().get::<u64>().is_none());
        assert_eq!(call.take_results().get::<u64>(), Some(&42));
        assert!(call.take_results().get::<u64>().is_none());
        assert_eq!(
            (call.session_id(), call.trace_id(), call.call_id()),
            ("s1", "t1", "c1")
        );
    }

    #[test]
    fn cancelling_the_parent_cancels_calls_but_not_the_reverse() {
        let ctx = ToolContext::default();
        let a = ctx.child("a");
        let b = ctx.child("b");
        a.cancellation_token().cancel();
        assert!(a.is_cancelled() && !b.is_cancelled() && !ctx.is_cancelled());
        ctx.cancellation_token().cancel();
        assert!(b.is_cancelled());
    }

    #[test]
    fn output_constructors_render_sensibly() {
        assert_eq!(
            ToolOutput::json(serde_json::json!({"a": 1})).render,
            r#"{"a":1}"#
        );
        assert_eq!(ToolOutput::json(Value::String("hi".into())).render, "hi");
        assert_eq!(ToolOutput::text("x").canonical, Value::String("x".into()));
    }
}
