//! The audit trail: [`AuditLog`], a [`ToolEventListener`] that gathers the events of each
//! call and writes **one record per call** when it completes (`docs/permissions.md`,
//! "Audit trail").
//!
//! A record says who called what, with which arguments (secrets redacted), who let it
//! through or stopped it and why (every party of the permission gate, in order), how it
//! ended, how long it took, and the size and sha256 of its result (never the result
//! itself). See [`AuditRecord`] for the fields.
//!
//! Rules:
//! - **Correlation** is by the registry's invocation number ([`ToolEvent::invocation`]),
//!   not by the call id, which callers choose and may reuse concurrently.
//! - **Bounded**: the events of calls still running are kept in a table of at most
//!   [`DEFAULT_MAX_PENDING`] calls. When it is full, the oldest call is written out at
//!   once as an unfinished record (`error_kind` `unfinished`, its decisions kept) and
//!   forgotten, with a warning (logged on the 1st, 2nd, 4th, 8th, ... time). A record's
//!   arguments are kept whole up to [`MAX_ARGUMENT_BYTES`] of JSON; larger ones are
//!   replaced by their size and sha256. Call ids are cut to [`MAX_ID_BYTES`], tool names
//!   and texts to [`MAX_TEXT_BYTES`], so a pending call holds little memory whatever
//!   its caller sends.
//! - **One line per record**: a record is serialised by `serde_json`, which escapes every
//!   control character, so whatever a tool, a model or a server puts in a name, an
//!   argument or an error, a record is exactly one JSON line.
//! - **Never in the way**: writing happens on the calling task, after the call's result
//!   is known and before the registry returns it (so a result a client has seen is
//!   already in the file, in the kernel's page cache). A write error is logged with
//!   `tracing::warn!` and the call goes on.
//!
//! The file sink with rotation by size is [`RotatingFile`] (`audit/file.rs`).

mod file;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::tools::base::ToolSource;
use crate::tools::events::{ResultDigest, ToolEvent, ToolEventListener, redact_secrets};
use crate::tools::redact::scrub_text;
use crate::tools::render::truncate_render;

pub use file::{DEFAULT_KEEP, DEFAULT_MAX_BYTES, RotatingFile};

/// Most calls whose events are kept while they run (see the module docs).
pub const DEFAULT_MAX_PENDING: usize = 10_000;
/// Largest redacted arguments (as JSON) a record keeps whole; larger ones are recorded
/// as their size and sha256.
pub const MAX_ARGUMENT_BYTES: usize = 64 * 1024;
/// Largest tool name, error message or reason a record keeps; longer ones keep their
/// head and tail with a marker between.
pub const MAX_TEXT_BYTES: usize = 16 * 1024;
/// Longest call id a record keeps (callers choose ids: an MCP request id may be any
/// string); longer ones keep their head and tail with a marker between.
pub const MAX_ID_BYTES: usize = 1024;
/// Most decisions kept per call (the hooks are the operator's, so this is only a guard).
pub const MAX_DECISIONS: usize = 64;

/// One call's audit record: one JSON line of the audit file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// When the record was written (the call's end), RFC 3339 UTC with milliseconds.
    pub ts: String,
    /// The call id the caller gave (or the registry generated).
    pub call_id: String,
    /// The registry's invocation number (unique in the process, see
    /// [`ToolEvent::invocation`]).
    pub invocation: u64,
    /// The caller's session id (`mcp` for MCP clients, the chat's session, `cli`).
    pub session: String,
    /// The client the call was made for, when a served host names one (a configured
    /// client's name, `token:N`, `session:…`, `peer:ADDR`; never a token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The tool name as requested.
    pub tool: String,
    /// Where the tool comes from; absent when it was not found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ToolSource>,
    /// The arguments with secrets redacted, or `null` when they were too large (then
    /// `arguments_omitted` says how large).
    pub arguments: Value,
    /// Size and sha256 of the redacted arguments' JSON when it was over
    /// [`MAX_ARGUMENT_BYTES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_omitted: Option<Omitted>,
    /// Every decision of the permission gate, in order.
    pub decisions: Vec<AuditDecision>,
    /// Who refused the call, when the gate did (`policy`, `hook:NAME`, `approver`,
    /// `no_approver`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied_by: Option<String>,
    /// Whether the tool itself started running (false: stopped at lookup, validation,
    /// the gate, or while waiting for a free slot).
    pub executed: bool,
    /// Whether the call succeeded.
    pub ok: bool,
    /// The error kind (`ToolError::kind`: `not_found`, `permission_denied`, ...), or
    /// `unfinished` for a call written out of a full pending table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// The error message, secrets scrubbed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the whole pipeline for this call, in milliseconds.
    pub duration_ms: f64,
    /// Size and sha256 of the result (canonical JSON and render text), on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ResultDigest>,
    /// Whether the render text given to the caller was truncated.
    pub truncated: bool,
}

/// One party's decision about a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditDecision {
    /// Who decided: `policy`, `hook:NAME`, `session`, `remembered`, `approver`,
    /// `no_approver`.
    pub by: String,
    /// `allow`, `deny`, or an approval: `allow_once`, `allow_session`, `allow_always`.
    pub decision: String,
    /// Why (a deny's reason, or the remembered rule that allowed the call), scrubbed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What stands in for a value too large to keep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Omitted {
    /// Its size in bytes.
    pub bytes: u64,
    /// Its sha256, lower-case hex.
    pub sha256: String,
}

/// Where records go: one call per record.
pub trait AuditWrite: Send {
    /// Appends one record; `line` is one JSON object, without the newline.
    fn append(&mut self, line: &str) -> std::io::Result<()>;
}

impl AuditWrite for RotatingFile {
    fn append(&mut self, line: &str) -> std::io::Result<()> {
        RotatingFile::append(self, line)
    }
}

/// Any writer as an [`AuditWrite`]: each record is written with its newline, then
/// flushed.
pub struct LineWriter<W>(pub W);

impl<W: Write + Send> AuditWrite for LineWriter<W> {
    fn append(&mut self, line: &str) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        self.0.write_all(&buf)?;
        self.0.flush()
    }
}

/// The events of one call seen so far.
#[derive(Debug)]
struct Pending {
    call_id: String,
    tool: String,
    decisions: Vec<AuditDecision>,
    denied_by: Option<String>,
    executed: bool,
}

#[derive(Debug)]
struct PendingCalls {
    calls: BTreeMap<u64, Pending>,
    max: usize,
    evicted: u64,
}

/// The audit trail: one record per call (see the module docs). Attach it with
/// `ToolRegistry::add_listener(Arc::new(log))`.
///
/// ```
/// use std::sync::Arc;
/// use toolhost_core::tools::{ToolRegistry, audit::{AuditLog, RotatingFile}};
///
/// let dir = tempfile::tempdir().unwrap();
/// let file = RotatingFile::open(dir.path().join("audit.jsonl"), 10 << 20, 5).unwrap();
/// let registry = ToolRegistry::new();
/// registry.add_listener(Arc::new(AuditLog::new(file)));
/// ```
pub struct AuditLog {
    pending: Mutex<PendingCalls>,
    out: Mutex<Box<dyn AuditWrite>>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("pending", &self.pending())
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// An audit log writing to `out`, keeping at most [`DEFAULT_MAX_PENDING`] running
    /// calls.
    pub fn new(out: impl AuditWrite + 'static) -> Self {
        Self {
            pending: Mutex::new(PendingCalls {
                calls: BTreeMap::new(),
                max: DEFAULT_MAX_PENDING,
                evicted: 0,
            }),
            out: Mutex::new(Box::new(out)),
        }
    }

    /// Keeps at most `n` (at least 1) running calls; see the module docs.
    pub fn with_max_pending(self, n: usize) -> Self {
        self.lock_pending().max = n.max(1);
        self
    }

    /// How many calls have events but no completion yet.
    pub fn pending(&self) -> usize {
        self.lock_pending().calls.len()
    }

    /// How many calls were written out unfinished because the pending table was full.
    pub fn evicted(&self) -> u64 {
        self.lock_pending().evicted
    }

    // A poisoned lock means a panic while holding it; every critical section here leaves
    // the table consistent (whole inserts and removes), so carry on with it.
    fn lock_pending(&self) -> std::sync::MutexGuard<'_, PendingCalls> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `record` as it is: for a decision made outside a tool call (an operator's
    /// action in the console), in the same file and format as the calls' records.
    pub fn record(&self, record: &AuditRecord) {
        self.write(record);
    }

    fn write(&self, record: &AuditRecord) {
        let line = match serde_json::to_string(record) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, call_id = %record.call_id, "audit: cannot serialise a record");
                return;
            }
        };
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = out.append(&line) {
            tracing::warn!(error = %e, call_id = %record.call_id, "audit: cannot write a record; the call goes on");
        }
    }

    /// Books a non-final event; returns a call pushed out of a full table.
    fn book(&self, event: &ToolEvent) -> Option<(u64, Pending)> {
        let mut table = self.lock_pending();
        let inv = event.invocation();
        let mut evicted = None;
        if !table.calls.contains_key(&inv) && table.calls.len() >= table.max {
            evicted = table.calls.pop_first();
            table.evicted += 1;
            let n = table.evicted;
            if n.is_power_of_two() {
                tracing::warn!(
                    evicted = n,
                    max = table.max,
                    "audit: too many calls without a completion; the oldest is written out unfinished"
                );
            }
        }
        let p = table.calls.entry(inv).or_insert_with(|| Pending {
            call_id: cut_id(event.call_id()),
            tool: String::new(),
            decisions: Vec::new(),
            denied_by: None,
            executed: false,
        });
        let push = |decisions: &mut Vec<AuditDecision>, d: AuditDecision| {
            if decisions.len() < MAX_DECISIONS {
                decisions.push(d);
            }
        };
        match event {
            ToolEvent::Started { tool, .. } => {
                p.tool.clone_from(tool);
                p.executed = true;
            }
            ToolEvent::ApprovalRequested { tool, .. } => p.tool.clone_from(tool),
            ToolEvent::Allowed { tool, by, .. } => {
                p.tool.clone_from(tool);
                push(
                    &mut p.decisions,
                    AuditDecision {
                        by: by.clone(),
                        decision: "allow".into(),
                        reason: None,
                    },
                );
            }
            ToolEvent::ApprovalDecided {
                tool,
                decision,
                by,
                reason,
                ..
            } => {
                p.tool.clone_from(tool);
                push(
                    &mut p.decisions,
                    AuditDecision {
                        by: by.clone(),
                        decision: decision_name(*decision).into(),
                        reason: reason.as_deref().map(clean_text),
                    },
                );
            }
            ToolEvent::PermissionDenied {
                tool, reason, by, ..
            } => {
                p.tool.clone_from(tool);
                // The approver's (or the missing approver's) deny was booked already as
                // its approval decision: this event only says it ended the call.
                let booked = p
                    .decisions
                    .last()
                    .is_some_and(|d| d.by == *by && d.decision == "deny");
                if !booked {
                    push(
                        &mut p.decisions,
                        AuditDecision {
                            by: by.clone(),
                            decision: "deny".into(),
                            reason: Some(clean_text(reason)),
                        },
                    );
                }
                p.denied_by = Some(by.clone());
            }
            ToolEvent::Completed { .. } => {}
        }
        evicted
    }
}

impl ToolEventListener for AuditLog {
    fn on_event(&self, event: &ToolEvent) {
        let ToolEvent::Completed {
            call_id,
            invocation,
            tool,
            session,
            client,
            source,
            input,
            ok,
            error_kind,
            error,
            duration,
            truncated,
            result,
            ..
        } = event
        else {
            if let Some((inv, p)) = self.book(event) {
                self.write(&unfinished_record(inv, p));
            }
            return;
        };
        let pending = self.lock_pending().calls.remove(invocation);
        let (arguments, arguments_omitted) = bounded_arguments(input);
        let (decisions, denied_by, executed) = match pending {
            Some(p) => (p.decisions, p.denied_by, p.executed),
            None => (Vec::new(), None, false),
        };
        let record = AuditRecord {
            ts: now(),
            call_id: cut_id(call_id),
            invocation: *invocation,
            session: session.clone(),
            client: client.as_deref().map(cut),
            tool: cut(tool),
            source: source.clone(),
            arguments,
            arguments_omitted,
            decisions,
            denied_by,
            executed,
            ok: *ok,
            error_kind: error_kind.clone(),
            error: error.as_deref().map(clean_text),
            duration_ms: duration.as_secs_f64() * 1000.0,
            result: result.clone(),
            truncated: *truncated,
        };
        self.write(&record);
    }
}

/// The record of a call pushed out of a full pending table.
fn unfinished_record(invocation: u64, p: Pending) -> AuditRecord {
    AuditRecord {
        ts: now(),
        call_id: p.call_id,
        invocation,
        session: String::new(),
        client: None,
        tool: cut(&p.tool),
        source: None,
        arguments: Value::Null,
        arguments_omitted: None,
        decisions: p.decisions,
        denied_by: p.denied_by,
        executed: p.executed,
        ok: false,
        error_kind: Some("unfinished".into()),
        error: Some(
            "no completion seen while too many calls were pending; the call may still be running \
             (a later record with the same invocation number has its end)"
                .into(),
        ),
        duration_ms: 0.0,
        result: None,
        truncated: false,
    }
}

fn decision_name(d: crate::tools::approvals::ApprovalDecision) -> &'static str {
    use crate::tools::approvals::ApprovalDecision as D;
    match d {
        D::AllowOnce => "allow_once",
        D::AllowSession => "allow_session",
        D::AllowAlways => "allow_always",
        D::Deny => "deny",
    }
}

/// The redacted arguments, or `null` and their size and hash when they are too large.
fn bounded_arguments(input: &Value) -> (Value, Option<Omitted>) {
    let redacted = redact_secrets(input);
    let text = redacted.to_string();
    if text.len() <= MAX_ARGUMENT_BYTES {
        return (redacted, None);
    }
    let omitted = Omitted {
        bytes: text.len() as u64,
        sha256: hex::encode(Sha256::digest(text.as_bytes())),
    };
    (Value::Null, Some(omitted))
}

/// A text for the record: secrets scrubbed, cut to [`MAX_TEXT_BYTES`].
fn clean_text(text: &str) -> String {
    cut(&scrub_text(text))
}

fn cut(text: &str) -> String {
    truncate_render(text, MAX_TEXT_BYTES).0
}

fn cut_id(id: &str) -> String {
    truncate_render(id, MAX_ID_BYTES).0
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
