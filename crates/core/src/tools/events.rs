//! Pipeline events, so audit logs and UIs can listen without touching the pipeline.
//!
//! Two ways to listen, both fed by [`ToolRegistry`](crate::tools::ToolRegistry):
//! - a [`ToolEventListener`] is called synchronously, in order, for every event (reliable:
//!   use it for audit; keep it fast);
//! - `ToolRegistry::subscribe` returns a `tokio::sync::broadcast` receiver (async, may lag
//!   and drop under load: use it for UIs).
//!
//! [`AuditLog`](crate::tools::audit::AuditLog) gathers a call's events and writes one
//! record per call (the product's audit trail, `docs/permissions.md`, "Audit trail").
//! [`JsonlAuditSink`] writes one JSON line per event with secrets redacted by
//! [`crate::tools::redact`]: values under secret-looking keys, secret header pairs, and
//! credential-shaped strings (bearer tokens, JWTs, URL user-info, PEM keys) in the inputs,
//! the error messages and the denial reasons.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::tools::approvals::ApprovalDecision;
use crate::tools::base::{ToolOutput, ToolSource};
use crate::tools::permission::RiskLevel;

/// An event of the invocation pipeline.
// `Completed` is the large variant (what an audit record needs, in one place). Events are
// built once per call and handed to listeners by reference; boxing it would add an
// allocation to every call for no saving.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ToolEvent {
    /// Arguments validated and permission granted; the tool is about to run.
    Started {
        /// The call id.
        call_id: String,
        /// The registry's number of this invocation (see [`ToolEvent::invocation`]).
        invocation: u64,
        /// The tool name.
        tool: String,
        /// The arguments.
        input: Value,
    },
    /// The call ended (successfully or not). Emitted for every call, including one whose
    /// tool was not found, and one whose caller stopped waiting (its future was dropped:
    /// then `error_kind` is `cancelled`). It carries what an audit record needs in one
    /// place: the arguments, the session, the tool's source and a digest of the result.
    Completed {
        /// The call id.
        call_id: String,
        /// The registry's number of this invocation (see [`ToolEvent::invocation`]).
        invocation: u64,
        /// The tool name.
        tool: String,
        /// The session id of the caller's context (empty when the caller set none).
        session: String,
        /// The client the call was made for (its [`crate::tools::Caller`] identity: a
        /// configured client's name, `token:N`, `session:…`, `peer:ADDR`), when a served
        /// host set one. Never a secret.
        #[serde(skip_serializing_if = "Option::is_none")]
        client: Option<String>,
        /// Where the tool comes from; `None` when no tool of that name was found.
        #[serde(skip_serializing_if = "Option::is_none")]
        source: Option<ToolSource>,
        /// The arguments as received (listeners redact them, see [`redact_secrets`]).
        input: Value,
        /// Whether it succeeded.
        ok: bool,
        /// The error kind (`ToolError::kind`), on failure.
        error_kind: Option<String>,
        /// The error message, on failure.
        error: Option<String>,
        /// Wall time of the whole pipeline for this call.
        #[serde(serialize_with = "ser_ms")]
        duration: Duration,
        /// Whether the render text was truncated.
        truncated: bool,
        /// Size and sha256 of the result, on success (see [`ResultDigest`]).
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<ResultDigest>,
        /// The result's canonical value, on success, when a listener asked for it
        /// ([`ToolEventListener::wants_output`]); never serialised, so an audit trail
        /// written from events holds the digest only.
        #[serde(skip)]
        output: Option<std::sync::Arc<Value>>,
    },
    /// A destructive call is waiting for the approver.
    ApprovalRequested {
        /// The call id.
        call_id: String,
        /// The registry's number of this invocation (see [`ToolEvent::invocation`]).
        invocation: u64,
        /// The tool name.
        tool: String,
        /// The arguments.
        input: Value,
        /// The tool's risk level.
        risk: RiskLevel,
    },
    /// The approver (or the remembered "allow always", or the missing approver) decided.
    ApprovalDecided {
        /// The call id.
        call_id: String,
        /// The registry's number of this invocation (see [`ToolEvent::invocation`]).
        invocation: u64,
        /// The tool name.
        tool: String,
        /// The decision.
        decision: ApprovalDecision,
        /// Who decided: `approver`, `session` (allowed for this session earlier),
        /// `remembered` (an "always" of the approval store) or `no_approver`.
        by: String,
        /// The approver's reason (a deny's), or which remembered rule allowed the call.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A party of the permission gate let the call pass: `policy` (the static policy) or
    /// `hook:NAME` (a permission hook that answered allow).
    Allowed {
        /// The call id.
        call_id: String,
        /// The registry's number of this invocation (see [`ToolEvent::invocation`]).
        invocation: u64,
        /// The tool name.
        tool: String,
        /// Who allowed it.
        by: String,
    },
    /// The permission gate refused the call. The tool did not run.
    PermissionDenied {
        /// The call id.
        call_id: String,
        /// The registry's number of this invocation (see [`ToolEvent::invocation`]).
        invocation: u64,
        /// The tool name.
        tool: String,
        /// Why.
        reason: String,
        /// Who refused: `policy`, `hook:NAME`, `approver` or `no_approver`.
        by: String,
    },
}

/// The size and sha256 of a successful call's result, computed by the registry when the
/// call completes (only when someone listens), so an audit trail can prove what a tool
/// returned without storing it.
///
/// - `bytes`/`sha256`: the canonical value as compact JSON, exactly as `serde_json`
///   writes it (object keys sorted, no spaces): `sha256(serde_json::to_vec(&canonical))`.
///   This is the whole result, before any truncation.
/// - `render_bytes`/`render_sha256`: the UTF-8 render text the caller got (the model's
///   view, after truncation; see `truncated`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultDigest {
    /// Length of the canonical JSON, in bytes.
    pub bytes: u64,
    /// sha256 of the canonical JSON, lower-case hex.
    pub sha256: String,
    /// Length of the render text, in bytes.
    pub render_bytes: u64,
    /// sha256 of the render text, lower-case hex.
    pub render_sha256: String,
}

impl ResultDigest {
    /// The digest of `output`. The canonical JSON is streamed into the hash, never
    /// buffered.
    pub fn of(output: &ToolOutput) -> Self {
        let mut hashed = HashingWriter::default();
        // Writing a `Value` to a writer that never fails cannot fail: every key is a string.
        if let Err(e) = serde_json::to_writer(&mut hashed, &output.canonical) {
            tracing::warn!(error = %e, "audit: cannot serialise a result for its digest");
        }
        let render = output.render.as_bytes();
        ResultDigest {
            bytes: hashed.len,
            sha256: hex::encode(hashed.hasher.finalize()),
            render_bytes: render.len() as u64,
            render_sha256: hex::encode(Sha256::digest(render)),
        }
    }
}

/// An `io::Write` that hashes and counts what it is given.
#[derive(Default)]
struct HashingWriter {
    hasher: Sha256,
    len: u64,
}

impl Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.hasher.update(buf);
        self.len += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

impl ToolEvent {
    /// The registry's number of the invocation the event belongs to: unique in the
    /// process, even when callers reuse a call id (two MCP sessions both sending request
    /// id 1, a model repeating a `tool_call_id`). Listeners that gather a call's events
    /// key them by this number, never by the call id alone.
    pub fn invocation(&self) -> u64 {
        match self {
            ToolEvent::Started { invocation, .. }
            | ToolEvent::Completed { invocation, .. }
            | ToolEvent::ApprovalRequested { invocation, .. }
            | ToolEvent::ApprovalDecided { invocation, .. }
            | ToolEvent::Allowed { invocation, .. }
            | ToolEvent::PermissionDenied { invocation, .. } => *invocation,
        }
    }

    /// The call id the event belongs to.
    pub fn call_id(&self) -> &str {
        match self {
            ToolEvent::Started { call_id, .. }
            | ToolEvent::Completed { call_id, .. }
            | ToolEvent::ApprovalRequested { call_id, .. }
            | ToolEvent::ApprovalDecided { call_id, .. }
            | ToolEvent::Allowed { call_id, .. }
            | ToolEvent::PermissionDenied { call_id, .. } => call_id,
        }
    }
}

/// A synchronous listener of pipeline events. Called in order on the calling task: keep it
/// fast and never block on the network.
pub trait ToolEventListener: Send + Sync {
    /// Receives one event.
    fn on_event(&self, event: &ToolEvent);

    /// Whether this listener wants each successful call's canonical value in
    /// [`ToolEvent::Completed`] (`output`). Off by default: results can be large and
    /// hold what an audit trail must not; the digest is always there.
    fn wants_output(&self) -> bool {
        false
    }
}

pub use crate::tools::redact::SECRET_KEY_MARKERS;

/// Returns `value` with every secret replaced by `"[REDACTED]"` (see
/// [`crate::tools::redact`]): secret keys at any depth, secret `[name, value]` pairs and
/// credential-shaped strings.
pub fn redact_secrets(value: &Value) -> Value {
    crate::tools::redact::redact_value(value)
}

/// An audit sink writing one JSON object per line: `{"ts_ms": ..., "event": ..., ...}`.
/// Inputs are redacted with [`redact_secrets`]; error messages and denial reasons with
/// [`scrub_text`](crate::tools::redact::scrub_text). Write errors are logged, never raised: the
/// audit trail must not break tool calls.
pub struct JsonlAuditSink {
    out: Mutex<Box<dyn Write + Send>>,
}

impl JsonlAuditSink {
    /// Appends to the file at `path`, creating it if needed.
    pub fn open(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Self::new(Box::new(file)))
    }

    /// Writes to any writer.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Self {
            out: Mutex::new(out),
        }
    }
}

impl ToolEventListener for JsonlAuditSink {
    fn on_event(&self, event: &ToolEvent) {
        let mut value = match serde_json::to_value(event) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, "audit: cannot serialise event");
                return;
            }
        };
        if let Some(obj) = value.as_object_mut() {
            if let Some(input) = obj.get("input") {
                let redacted = redact_secrets(input);
                obj.insert("input".into(), redacted);
            }
            for field in ["error", "reason"] {
                if let Some(Value::String(text)) = obj.get(field)
                    && let std::borrow::Cow::Owned(clean) = crate::tools::redact::scrub_text(text)
                {
                    obj.insert(field.into(), Value::String(clean));
                }
            }
            let ts = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0);
            obj.insert("ts_ms".into(), Value::from(ts));
        }
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = writeln!(out, "{value}").and_then(|_| out.flush()) {
            tracing::warn!(error = %e, "audit: write failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redaction_hides_secret_keys_at_any_depth() {
        let v = json!({"user": "bob", "Password": "hunter2", "nested": {"api_key": "k", "n": [ {"AuthToken": "t", "ok": 1} ]}});
        let r = redact_secrets(&v);
        assert_eq!(r["user"], "bob");
        assert_eq!(r["Password"], "[REDACTED]");
        assert_eq!(r["nested"]["api_key"], "[REDACTED]");
        assert_eq!(r["nested"]["n"][0]["AuthToken"], "[REDACTED]");
        assert_eq!(r["nested"]["n"][0]["ok"], 1);
    }
}
