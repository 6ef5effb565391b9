//! The audit trail (`AuditLog` on a `RotatingFile`, `docs/permissions.md`, "Audit
//! trail"): one record per call with every decision and who made it, redacted
//! arguments, and a result digest the test recomputes; rotation that never loses or
//! splits a record; hostile input (control characters, a huge argument, a reused call
//! id, a flood of calls that never complete) that must leave one valid JSON line per
//! call and bounded memory, each followed by a good call that is still recorded.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolhost_core::tools::audit::{AuditLog, AuditRecord, MAX_ARGUMENT_BYTES, RotatingFile};
use toolhost_core::tools::*;

/// Denies any call whose `path` argument starts with `/secret`.
struct NoSecrets;

#[async_trait]
impl PermissionHook for NoSecrets {
    fn name(&self) -> &str {
        "no_secrets"
    }
    async fn check(&self, call: &HookCall<'_>) -> HookVerdict {
        match call.arguments["path"].as_str() {
            Some(p) if p.starts_with("/secret") => {
                HookVerdict::Deny(format!("{p} is under /secret"))
            }
            Some(_) => HookVerdict::Allow,
            None => HookVerdict::Abstain,
        }
    }
}

/// Denies every approval, with a reason.
struct Refuses;

#[async_trait]
impl Approver for Refuses {
    async fn approve(&self, _req: &ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::Deny
    }
    async fn answer(&self, _req: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer {
            decision: ApprovalDecision::Deny,
            reason: Some("not on a Friday".into()),
            pattern: ArgPattern::default(),
        }
    }
}

/// Reads a note: returns a structured value and a render text.
fn read_note() -> Arc<dyn BaseTool> {
    DynamicTool::builder("read_note")
        .description("Read a note at a path, with an API key")
        .parameters(json!({"type": "object", "properties": {
            "path": {"type": "string"}, "api_key": {"type": "string"}}, "required": ["path"]}))
        .permissions(vec![Permission::Read])
        .handler(|args, _| async move {
            let path = args["path"].as_str().unwrap_or_default().to_string();
            Ok(ToolOutput::new(
                json!({"path": path, "body": "buy milk", "lines": 1}),
                format!("{path}: buy milk"),
            ))
        })
        .build_dyn()
}

/// Creates a marker file at `path` (destructive: declares Delete).
fn wipe() -> Arc<dyn BaseTool> {
    DynamicTool::builder("wipe")
        .description("Wipe a path (test tool: creates a marker file)")
        .parameters(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))
        .permissions(vec![Permission::Delete])
        .handler(|args, _| async move {
            let path = args["path"].as_str().unwrap_or_default().to_string();
            std::fs::write(&path, b"ran").map_err(ToolError::from)?;
            Ok(ToolOutput::text("wiped"))
        })
        .build_dyn()
}

/// Echoes `text` back, and fails with it when `fail` is true.
fn echo() -> Arc<dyn BaseTool> {
    DynamicTool::builder("echo")
        .description("Echo the text back, or fail with it")
        .parameters(json!({"type": "object", "properties": {
            "text": {"type": "string"}, "fail": {"type": "boolean"}}, "required": ["text"]}))
        .handler(|args, _| async move {
            let text = args["text"].as_str().unwrap_or_default().to_string();
            if args["fail"] == json!(true) {
                return Err(ToolError::failed("echo", text));
            }
            Ok(ToolOutput::text(text))
        })
        .build_dyn()
}

fn audited(path: &Path, max_bytes: u64, keep: usize) -> (ToolRegistry, Arc<AuditLog>) {
    let log = Arc::new(AuditLog::new(
        RotatingFile::open(path, max_bytes, keep).unwrap(),
    ));
    let reg = ToolRegistry::new()
        .with_permission_checker(PermissionChecker::new(PermissionConfig::permissive()))
        .with_permission_hook(Arc::new(NoSecrets))
        .with_approver(Arc::new(Refuses));
    reg.add_listener(log.clone());
    for t in [read_note(), wipe(), echo()] {
        reg.register(t).unwrap();
    }
    (reg, log)
}

/// Every line of `files` in order, each parsed as a record (panics on a line that is
/// not one whole record).
fn records(files: &[PathBuf]) -> Vec<AuditRecord> {
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{} ends mid-line",
            f.display()
        );
        for line in text.lines() {
            let r: AuditRecord = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not one record ({e}): {line:.300}"));
            out.push(r);
        }
    }
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn decisions(r: &AuditRecord) -> Vec<(String, String)> {
    r.decisions
        .iter()
        .map(|d| (d.by.clone(), d.decision.clone()))
        .collect()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[tokio::test]
async fn one_record_per_call_with_who_decided_redacted_arguments_and_a_result_digest() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit/audit.jsonl");
    let (reg, log) = audited(&file, 10 << 20, 5);
    let ctx = ToolContext::new("session-7", "trace-7");
    let secret = "sk-proj-4f9aXb2Kq8ZrT1mN0pQsVw";

    // 1. succeeds
    let ok = reg
        .invoke_call(
            ToolCall::with_id(
                "c1",
                "read_note",
                json!({"path": "/notes/a", "api_key": secret}),
            ),
            &ctx,
        )
        .await;
    let out = ok.output.as_ref().unwrap().clone();
    // 2. denied by the hook
    let hooked = reg
        .invoke_call(
            ToolCall::with_id("c2", "read_note", json!({"path": "/secret/keys"})),
            &ctx,
        )
        .await;
    assert!(matches!(
        hooked.output,
        Err(ToolError::PermissionDenied(..))
    ));
    // 3. denied by the approver; the tool would leave a mark
    let mark = dir.path().join("wiped");
    let refused = reg
        .invoke_call(
            ToolCall::with_id("c3", "wipe", json!({"path": mark.to_str().unwrap()})),
            &ctx,
        )
        .await;
    assert!(matches!(
        refused.output,
        Err(ToolError::PermissionDenied(..))
    ));
    assert!(!mark.exists(), "a refused tool ran");
    // 4. not found
    let missing = reg
        .invoke_call(ToolCall::with_id("c4", "nope", json!({})), &ctx)
        .await;
    assert!(matches!(missing.output, Err(ToolError::NotFound(_))));

    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(secret), "a secret reached the audit file");
    let recs = records(std::slice::from_ref(&file));
    assert_eq!(recs.len(), 4, "one record per call:\n{text}");
    assert_eq!(log.pending(), 0);
    let ids: Vec<&str> = recs.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
    for r in &recs {
        assert_eq!(r.session, "session-7");
        assert!(r.ts.ends_with('Z') && r.ts.contains('T'), "{}", r.ts);
        chrono::DateTime::parse_from_rfc3339(&r.ts).unwrap();
        assert!(r.duration_ms >= 0.0);
    }

    let r = &recs[0];
    assert!(r.ok && r.executed && r.error.is_none() && !r.truncated);
    assert_eq!(r.tool, "read_note");
    assert_eq!(r.source, Some(ToolSource::Native));
    assert_eq!(r.arguments["path"], "/notes/a");
    assert_eq!(r.arguments["api_key"], "[REDACTED]");
    assert_eq!(
        decisions(r),
        pairs(&[("policy", "allow"), ("hook:no_secrets", "allow")])
    );
    // The digest, recomputed: the canonical value as compact JSON, and the render text.
    let digest = r.result.as_ref().unwrap();
    let canonical = serde_json::to_vec(&out.canonical).unwrap();
    assert_eq!(digest.bytes, canonical.len() as u64);
    assert_eq!(digest.sha256, sha256_hex(&canonical));
    assert_eq!(digest.render_bytes, out.render.len() as u64);
    assert_eq!(digest.render_sha256, sha256_hex(out.render.as_bytes()));

    let r = &recs[1];
    assert!(!r.ok && !r.executed && r.result.is_none());
    assert_eq!(r.denied_by.as_deref(), Some("hook:no_secrets"));
    assert_eq!(r.error_kind.as_deref(), Some("permission_denied"));
    assert_eq!(
        decisions(r),
        pairs(&[("policy", "allow"), ("hook:no_secrets", "deny")])
    );
    assert!(
        r.decisions[1]
            .reason
            .as_deref()
            .unwrap()
            .contains("/secret/keys is under /secret")
    );
    assert_eq!(r.arguments, json!({"path": "/secret/keys"}));

    let r = &recs[2];
    assert!(!r.ok && !r.executed);
    assert_eq!(r.denied_by.as_deref(), Some("approver"));
    // No path argument for the hook on `wipe`'s marker path: it allows or abstains;
    // then the approver's deny, booked once, with its reason.
    let last = r.decisions.last().unwrap();
    assert_eq!(
        (last.by.as_str(), last.decision.as_str()),
        ("approver", "deny")
    );
    assert_eq!(last.reason.as_deref(), Some("not on a Friday"));
    assert_eq!(r.decisions.iter().filter(|d| d.by == "approver").count(), 1);
    assert!(r.error.as_deref().unwrap().contains("not on a Friday"));

    let r = &recs[3];
    assert_eq!(r.tool, "nope");
    assert_eq!(r.error_kind.as_deref(), Some("not_found"));
    assert!(r.source.is_none() && r.decisions.is_empty() && !r.executed);

    // The file is private.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[tokio::test]
async fn rotation_loses_and_splits_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.jsonl");
    let max = 2_000;
    let (reg, _log) = audited(&file, max, 100);
    let n = 60;
    for i in 0..n {
        let text = format!("record {i:03} {}", "x".repeat(i * 7));
        let inv = reg.invoke_recorded("echo", json!({"text": text})).await;
        assert!(inv.is_ok());
    }
    let log = RotatingFile::open(&file, max, 100).unwrap();
    let mut files: Vec<PathBuf> = (1..=100)
        .rev()
        .map(|k| log.rotated_path(k))
        .filter(|p| p.exists())
        .collect();
    assert!(files.len() >= 5, "expected several rotations: {files:?}");
    for f in &files {
        let len = std::fs::metadata(f).unwrap().len();
        let lines = std::fs::read_to_string(f).unwrap().lines().count();
        assert!(
            len <= max || lines == 1,
            "{} is {len} bytes with {lines} records",
            f.display()
        );
    }
    files.push(file.clone());
    let recs = records(&files);
    // Every call exactly once, oldest file first, in call order.
    let texts: Vec<String> = recs
        .iter()
        .map(|r| r.arguments["text"].as_str().unwrap()[..10].to_string())
        .collect();
    let want: Vec<String> = (0..n).map(|i| format!("record {i:03}")).collect();
    assert_eq!(texts, want);
}

#[tokio::test]
async fn hostile_text_and_a_huge_argument_stay_one_json_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.jsonl");
    let (reg, _log) = audited(&file, 10 << 20, 1);
    // A result and an error that try to forge a record and drive a terminal.
    let forged = "ok\n{\"call_id\":\"forged\",\"ok\":true}\r\u{1b}]0;pwned\u{7}\u{0}\u{2028}end";
    assert!(
        reg.invoke_recorded("echo", json!({"text": forged}))
            .await
            .is_ok()
    );
    let failed = reg
        .invoke_recorded("echo", json!({"text": forged, "fail": true}))
        .await;
    assert!(!failed.is_ok());
    // A tool name made of control characters, and a 2 MB argument.
    let _ = reg.invoke_recorded("bad\nname\u{1b}[2J", json!({})).await;
    let huge = "A".repeat(2 << 20);
    assert!(
        reg.invoke_recorded("echo", json!({"text": huge}))
            .await
            .is_ok()
    );
    // A call id of 100 000 bytes (an MCP request id may be any string).
    let long_id = ToolCall::with_id("i".repeat(100_000), "echo", json!({"text": "id"}));
    let inv = reg.invoke_call(long_id, &ToolContext::default()).await;
    assert!(inv.is_ok());
    // A good call afterwards.
    assert!(
        reg.invoke_recorded("echo", json!({"text": "fine"}))
            .await
            .is_ok()
    );

    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), 6, "one line per call");
    assert!(!text.contains('\r') && !text.contains('\u{1b}') && !text.contains('\0'));
    let recs = records(std::slice::from_ref(&file));
    assert!(recs.iter().all(|r| r.call_id != "forged"));
    assert_eq!(recs[0].arguments["text"], forged);
    assert_eq!(recs[1].error_kind.as_deref(), Some("execution_failed"));
    assert!(recs[1].error.as_deref().unwrap().contains("forged"));
    assert_eq!(recs[2].tool, "bad\nname\u{1b}[2J");
    let big = &recs[3];
    assert!(big.ok && big.arguments.is_null());
    let omitted = big.arguments_omitted.as_ref().unwrap();
    let redacted = serde_json::to_string(&json!({"text": huge})).unwrap();
    assert!(omitted.bytes as usize > MAX_ARGUMENT_BYTES);
    assert_eq!(omitted.bytes, redacted.len() as u64);
    assert_eq!(omitted.sha256, sha256_hex(redacted.as_bytes()));
    assert!(
        text.len() < 100_000,
        "the huge argument or the long id was written out"
    );
    assert!(recs[4].call_id.starts_with("iii") && recs[4].call_id.len() < 2 * 1024);
    assert!(recs[4].ok);
    assert_eq!(recs[5].arguments, json!({"text": "fine"}));
}

#[tokio::test]
async fn a_reused_call_id_keeps_each_calls_decisions_apart() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.jsonl");
    let (reg, _log) = audited(&file, 10 << 20, 1);
    // A model (or two MCP sessions) sending the same id for concurrent calls.
    let calls = vec![
        ToolCall::with_id("dup", "read_note", json!({"path": "/secret/a"})),
        ToolCall::with_id("dup", "read_note", json!({"path": "/notes/b"})),
    ];
    let invs = reg.invoke_calls(calls, &ToolContext::default()).await;
    assert!(!invs[0].is_ok() && invs[1].is_ok());
    let recs = records(std::slice::from_ref(&file));
    assert_eq!(recs.len(), 2);
    assert_ne!(recs[0].invocation, recs[1].invocation);
    for r in &recs {
        let denied = r.arguments["path"] == "/secret/a";
        assert_eq!(r.ok, !denied, "{r:?}");
        let want = if denied {
            pairs(&[("policy", "allow"), ("hook:no_secrets", "deny")])
        } else {
            pairs(&[("policy", "allow"), ("hook:no_secrets", "allow")])
        };
        assert_eq!(decisions(r), want, "{r:?}");
    }
}

#[tokio::test]
async fn a_flood_of_calls_that_never_complete_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.jsonl");
    let log = Arc::new(
        AuditLog::new(RotatingFile::open(&file, 10 << 20, 1).unwrap()).with_max_pending(100),
    );
    // Events of 5000 calls that start and never end (a listener attached to a hostile
    // or broken event source).
    for i in 0..5_000u64 {
        log.on_event(&ToolEvent::Allowed {
            call_id: format!("c{i}"),
            invocation: u64::MAX - 10_000 + i,
            tool: "echo".into(),
            by: "policy".into(),
        });
        log.on_event(&ToolEvent::Started {
            call_id: format!("c{i}"),
            invocation: u64::MAX - 10_000 + i,
            tool: "echo".into(),
            input: json!({"text": "x".repeat(100)}),
        });
    }
    assert_eq!(log.pending(), 100);
    assert_eq!(log.evicted(), 4_900);
    // The calls pushed out are written, unfinished, with their decisions.
    let recs = records(std::slice::from_ref(&file));
    assert_eq!(recs.len(), 4_900);
    assert_eq!(recs[0].call_id, "c0");
    assert_eq!(recs[0].error_kind.as_deref(), Some("unfinished"));
    assert!(recs[0].executed);
    assert_eq!(decisions(&recs[0]), pairs(&[("policy", "allow")]));

    // A good call through a registry is still recorded whole.
    let reg = ToolRegistry::new();
    reg.add_listener(log.clone());
    reg.register(echo()).unwrap();
    assert!(
        reg.invoke_recorded("echo", json!({"text": "after"}))
            .await
            .is_ok()
    );
    let recs = records(std::slice::from_ref(&file));
    let last = recs.last().unwrap();
    assert!(last.ok && last.executed);
    assert_eq!(last.arguments, json!({"text": "after"}));
    assert!(log.pending() <= 100);
}

#[tokio::test]
async fn a_call_whose_caller_gives_up_still_gets_a_record_and_leaves_nothing_pending() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.jsonl");
    let log = Arc::new(AuditLog::new(
        RotatingFile::open(&file, 10 << 20, 1).unwrap(),
    ));
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = std::sync::Mutex::new(Some(started_tx));
    let hang = DynamicTool::builder("hang")
        .description("Signal that it runs, then never finish")
        .parameters(json!({"type": "object"}))
        .handler(move |_, _| {
            if let Some(tx) = started_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
            std::future::pending::<Result<ToolOutput, ToolError>>()
        })
        .build_dyn();
    let reg = ToolRegistry::new().with_timeout(Duration::from_secs(3600));
    reg.add_listener(log.clone());
    reg.register(hang).unwrap();
    reg.register(echo()).unwrap();
    // The caller stops waiting once the tool runs: the call's future is dropped.
    tokio::select! {
        _ = reg.invoke_recorded("hang", json!({"token": "ghp_0123456789abcdefABCDEF0123456789abcd"})) => panic!("hang finished"),
        _ = started_rx => {}
    }
    assert_eq!(log.pending(), 0, "an abandoned call stayed pending");
    assert!(
        reg.invoke_recorded("echo", json!({"text": "next"}))
            .await
            .is_ok()
    );
    let recs = records(std::slice::from_ref(&file));
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].tool, "hang");
    assert_eq!(recs[0].error_kind.as_deref(), Some("cancelled"));
    assert!(recs[0].executed && !recs[0].ok);
    assert_eq!(recs[0].arguments["token"], "[REDACTED]");
    assert!(recs[1].ok);
}

#[test]
fn the_record_format_is_the_documented_one() {
    // The example lines of docs/permissions.md parse as records, field for field.
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/permissions.md"),
    )
    .unwrap();
    let examples: Vec<&str> = docs.lines().filter(|l| l.starts_with("{\"ts\":")).collect();
    assert!(
        !examples.is_empty(),
        "no example record in docs/permissions.md"
    );
    for line in examples {
        let r: AuditRecord = serde_json::from_str(line).unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::from_str::<Value>(line).unwrap()
        );
    }
}
