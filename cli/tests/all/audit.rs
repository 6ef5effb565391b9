//! The audit trail of the real `toolhost serve --stdio` (`docs/permissions.md`, "Audit
//! trail"): on by default in `$XDG_DATA_HOME/toolhost/audit.jsonl`, moved by `--audit
//! FILE`, off with `--no-audit`. A temp plugins folder holds the built `calc.wasm`; the
//! server is driven over raw JSON-RPC lines (which also checks that stdout carries
//! protocol only). A hostile call (a control-character tool name with a secret
//! argument) must stay one record without the secret, and the good calls around it are
//! recorded with a result digest recomputed from what the client received. `chat` (driven
//! by the `fakellm` peer) writes the trail by default too; `call` only with `--audit FILE`.
//! Credentials in URL query strings are hidden in the trail and wherever the CLI prints or
//! logs a URL it did not write (an MCP server's URL in `list` warnings, `-v` logs and
//! errors).

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolhost::tools::AuditRecord;
use toolhost_testkit::jsonrpc::StdioClient;

const SECRET: &str = "ghp_0123456789abcdefABCDEF0123456789abcd";

/// A work folder: `plugins/calc.wasm`, an empty `toolhost.toml`, and `data/` for
/// `XDG_DATA_HOME`. `None` (skip) when the plugins are not built, outside CI.
fn work() -> Option<tempfile::TempDir> {
    let built = toolhost_testkit::built_plugins(&["calc.wasm"])?;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::copy(
        built.join("calc.wasm"),
        dir.path().join("plugins/calc.wasm"),
    )
    .unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), "").unwrap();
    Some(dir)
}

fn serve(dir: &Path, extra: &[&str]) -> StdioClient {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.current_dir(dir)
        .args(["serve", "--stdio", "--config"])
        .arg(dir.join("toolhost.toml"))
        .arg("--plugins")
        .arg(dir.join("plugins"))
        .args(extra)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("RUST_LOG")
        .stderr(Stdio::inherit());
    let mut client = StdioClient::spawn(&mut cmd);
    client.initialize("audit-test");
    client
}

fn default_file(dir: &Path) -> PathBuf {
    dir.join("data/toolhost/audit.jsonl")
}

fn records(file: &Path) -> Vec<AuditRecord> {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("no audit file {}: {e}", file.display()));
    assert!(text.ends_with('\n'), "{text}");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a record ({e}): {l}")))
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `add` of calc through the server; returns the response's `result`.
fn add(client: &mut StdioClient, id: u64) -> Value {
    let r = client.call(id, "add", json!({"x": 40, "y": 2}));
    let result = r["result"].clone();
    assert_ne!(result["isError"], true, "{r}");
    result
}

/// The record of a successful `add` matches what the client received.
fn check_add(r: &AuditRecord, result: &Value) {
    assert_eq!(r.tool, "add");
    assert!(r.ok && r.executed, "{r:?}");
    // Each MCP session has its own id (`mcp-N`).
    assert!(r.session.starts_with("mcp-"), "{}", r.session);
    assert!(r.call_id.starts_with("mcp-"), "{}", r.call_id);
    assert_eq!(r.arguments, json!({"x": 40, "y": 2}));
    let source = serde_json::to_value(r.source.as_ref().unwrap()).unwrap();
    assert_eq!(source["kind"], "wasm");
    assert!(
        source["path"].as_str().unwrap().ends_with("calc.wasm"),
        "{source}"
    );
    let digest = r.result.as_ref().unwrap();
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(digest.render_sha256, sha256_hex(text.as_bytes()));
    assert_eq!(digest.render_bytes, text.len() as u64);
    // structuredContent is the canonical object, or a scalar wrapped as {"result": ..}.
    let structured = &result["structuredContent"];
    let whole = serde_json::to_vec(structured).unwrap();
    let inner = serde_json::to_vec(&structured["result"]).unwrap();
    assert!(
        digest.sha256 == sha256_hex(&whole) || digest.sha256 == sha256_hex(&inner),
        "{digest:?} vs {structured}"
    );
}

#[test]
fn serve_writes_one_record_per_call_to_the_default_file() {
    let Some(dir) = work() else { return };
    let mut client = serve(dir.path(), &[]);
    let first = add(&mut client, 1);
    // Hostile: a tool name that tries to forge a line and drive a terminal, with a token.
    let hostile = client.call(
        2,
        "evil\n{\"tool\":\"add\",\"ok\":true}\r\u{1b}[2J",
        json!({"token": SECRET, "note": "x"}),
    );
    assert!(hostile["result"]["isError"] == true || hostile["error"].is_object());
    let second = add(&mut client, 3);
    // Records are written before the answer is sent: no wait needed.
    let file = default_file(dir.path());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(SECRET), "a secret reached the audit file");
    assert!(!text.contains('\r') && !text.contains('\u{1b}'));
    let recs = records(&file);
    assert_eq!(recs.len(), 3, "one record per call:\n{text}");
    check_add(&recs[0], &first);
    check_add(&recs[2], &second);
    assert_ne!(recs[0].invocation, recs[2].invocation);
    let evil = &recs[1];
    assert!(evil.tool.starts_with("evil\n"));
    assert_eq!(evil.error_kind.as_deref(), Some("not_found"));
    assert!(!evil.ok && !evil.executed);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[test]
fn no_audit_writes_no_file() {
    let Some(dir) = work() else { return };
    let mut client = serve(dir.path(), &["--no-audit"]);
    add(&mut client, 1);
    drop(client);
    assert!(!default_file(dir.path()).exists());
}

#[test]
fn audit_flag_moves_the_file() {
    let Some(dir) = work() else { return };
    let file = dir.path().join("elsewhere/trail.jsonl");
    let mut client = serve(dir.path(), &["--audit", file.to_str().unwrap()]);
    let result = add(&mut client, 1);
    let recs = records(&file);
    assert_eq!(recs.len(), 1);
    check_add(&recs[0], &result);
    drop(client);
    assert!(!default_file(dir.path()).exists());
}

#[test]
fn call_writes_a_record_only_when_asked() {
    let Some(dir) = work() else { return };
    let call = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .current_dir(dir.path())
            .args(["call", "add", r#"{"x": 40, "y": 2}"#, "--config"])
            .arg(dir.path().join("toolhost.toml"))
            .arg("--plugins")
            .arg(dir.path().join("plugins"))
            .args(extra)
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env_remove("TOOLHOST_PLUGINS")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", toolhost_testkit::show(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    // One-shot calls write no trail by default.
    call(&[]);
    assert!(!default_file(dir.path()).exists());
    let file = dir.path().join("call.jsonl");
    let printed = call(&["--audit", file.to_str().unwrap()]);
    let recs = records(&file);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert!(r.ok && r.tool == "add" && r.session == "cli");
    assert_eq!(
        r.result.as_ref().unwrap().render_sha256,
        sha256_hex(printed.trim_end_matches('\n').as_bytes())
    );
}

const FAKELLM_RULES: &str = r#"version: 1
defaults:
  fallback: deterministic_echo
rules:
  - name: answer
    when:
      tool_result_contains: "42"
    respond:
      content: "The sum is 42."
  - name: call_add
    when:
      messages_contain: "40 + 2"
    respond:
      tool_calls:
        - name: add
          arguments: { x: 40, y: 2 }
"#;

/// A fakellm server (PyPI `fakellm`, an OpenAI-compatible fake) that asks for `add` with
/// x = 40, y = 2 after a user message and answers after the tool result; killed on drop.
struct FakeLlm {
    child: std::process::Child,
    base_url: String,
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fakellm(dir: &Path) -> Option<FakeLlm> {
    let exe = toolhost_testkit::peers::peer(
        "TOOLHOST_FAKELLM",
        toolhost_testkit::workspace_root().join("target/peers/llm/venv/bin/fakellm"),
    )?;
    let rules = dir.join("fakellm.yaml");
    std::fs::write(&rules, FAKELLM_RULES).unwrap();
    let port = toolhost_testkit::free_port();
    // Run the entry script with its venv's Python: a venv copied to another place keeps
    // a shebang that names the old one.
    let python = exe.with_file_name("python");
    let mut cmd = if python.exists() {
        let mut c = Command::new(python);
        c.arg(&exe);
        c
    } else {
        Command::new(&exe)
    };
    let child = cmd
        .args([
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--config",
        ])
        .arg(&rules)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = FakeLlm {
        child,
        base_url: format!("http://127.0.0.1:{port}/v1"),
    };
    // Readiness, bounded.
    assert!(
        toolhost_testkit::port_listening(port, std::time::Duration::from_secs(30)),
        "fakellm did not listen on port {port}"
    );
    Some(server)
}

#[test]
fn chat_writes_a_record_per_tool_call_unless_told_not_to() {
    let Some(dir) = work() else { return };
    let Some(llm) = fakellm(dir.path()) else {
        return;
    };
    let chat = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .current_dir(dir.path())
            .args(["chat", "--model", "fake", "--prompt", "What is 40 + 2?"])
            .args(["--base-url", &llm.base_url, "--config"])
            .arg(dir.path().join("toolhost.toml"))
            .arg("--plugins")
            .arg(dir.path().join("plugins"))
            .args(extra)
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", toolhost_testkit::show(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let answer = chat(&[]);
    assert!(answer.contains("The sum is 42."), "{answer}");
    let recs = records(&default_file(dir.path()));
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert!(r.ok && r.executed && r.tool == "add", "{r:?}");
    assert_eq!(r.arguments, json!({"x": 40, "y": 2}));
    assert!(!r.session.is_empty() && r.session != "mcp" && r.session != "cli");
    assert!(r.result.is_some());
    // --no-audit: the same conversation adds nothing.
    assert!(chat(&["--no-audit"]).contains("The sum is 42."));
    assert_eq!(records(&default_file(dir.path())).len(), 1);
}

/// Every value of the hostile call below that must not reach the audit file.
const QUERY_SECRETS: &[&str] = &[
    "pw-hunter2",
    "userinfo-pw1",
    "qwerty123",
    "Zm9vYmFyc2ln",
    "dsn-pw2",
    "hdr-tok3n",
    "AKIAIOSFODNN7EXAMPLE",
    "amz-cred-4",
    "amz-sig-5",
    "note-key-6",
    "oauth-code-7",
    "frag-tok-8",
    "enc-sig-9",
    "enc-cs-10",
    "rep-11",
    "rep-12",
    "qs-sig-13",
];

#[test]
fn serve_audit_hides_credentials_in_url_query_strings() {
    let Some(dir) = work() else { return };
    let file = dir.path().join("trail.jsonl");
    let mut client = serve(dir.path(), &["--audit", file.to_str().unwrap()]);
    // Hostile: a client sends one call whose arguments hold a dozen kinds of secret; calc's
    // `add` ignores the extra fields, so the call succeeds and is audited in full.
    let hostile = client.call(
        1,
        "add",
        json!({
            "x": 40, "y": 2,
            "password": "pw-hunter2",
            "url": "https://bob:userinfo-pw1@example.com/x?access_token=qwerty123&sig=Zm9vYmFyc2ln&user=ann",
            "dsn": "postgres://app:dsn-pw2@db.example:5432/app",
            "headers": [["Authorization", "Bearer hdr-tok3n"]],
            "aws": "AKIAIOSFODNN7EXAMPLE",
            "signed": "https://b.s3.example/o?X-Amz-Date=20261203T000000Z&X-Amz-Credential=amz-cred-4&X-Amz-Signature=amz-sig-5&X-Amz-Expires=300",
            "note": "try https://api.example/v1?api_key=note-key-6 or https://h.example/cb?code=oauth-code-7&state=s1#access_token=frag-tok-8&expires_in=60",
            "encoded": "https://h.example/p?X%2DAmz%2DSignature=enc-sig-9&Client%5FSecret=enc-cs-10",
            "repeated": "https://h.example/p?token=rep-11&page=2&Token=rep-12",
            "link": "<a href='https://h.example/d?a=1&amp;signature=qs-sig-13'>",
        }),
    );
    assert_eq!(
        hostile["result"]["structuredContent"]["result"], 42.0,
        "{hostile}"
    );
    // A good call after it: a URL without credentials is recorded as it is.
    let plain = "https://example.com/search?q=token&page=2&country_code=US#key-points";
    let good = client.call(2, "add", json!({"x": 1, "y": 2, "url": plain}));
    assert_ne!(good["result"]["isError"], true, "{good}");
    let text = std::fs::read_to_string(&file).unwrap();
    for s in QUERY_SECRETS {
        assert!(!text.contains(s), "the audit file leaks {s:?}:\n{text}");
    }
    let recs = records(&file);
    assert_eq!(recs.len(), 2, "{text}");
    let args = &recs[0].arguments;
    assert!(recs[0].ok, "{:?}", recs[0]);
    assert_eq!(
        args["url"],
        "https://[REDACTED]@example.com/x?access_token=[REDACTED]&sig=[REDACTED]&user=ann"
    );
    assert_eq!(args["dsn"], "postgres://[REDACTED]@db.example:5432/app");
    assert_eq!(
        args["signed"],
        "https://b.s3.example/o?X-Amz-Date=20261203T000000Z&X-Amz-Credential=[REDACTED]\
         &X-Amz-Signature=[REDACTED]&X-Amz-Expires=300"
    );
    assert_eq!(
        args["note"],
        "try https://api.example/v1?api_key=[REDACTED] or \
         https://h.example/cb?code=[REDACTED]&state=s1#access_token=[REDACTED]&expires_in=60"
    );
    assert_eq!(
        args["encoded"],
        "https://h.example/p?X%2DAmz%2DSignature=[REDACTED]&Client%5FSecret=[REDACTED]"
    );
    assert_eq!(
        args["repeated"],
        "https://h.example/p?token=[REDACTED]&page=2&Token=[REDACTED]"
    );
    assert_eq!(
        args["link"],
        "<a href='https://h.example/d?a=1&amp;signature=[REDACTED]'>"
    );
    assert!(recs[1].ok, "{:?}", recs[1]);
    assert_eq!(recs[1].arguments, json!({"x": 1, "y": 2, "url": plain}));
}

/// An MCP server whose configured URL carries credentials (user-info, `?api_key=`,
/// `&sig=`) and does not answer: `list`, `list --json` and `list -vv` report the failure
/// with the URL, never its credentials. The same run lists the plugins that did load.
#[test]
fn mcp_server_url_credentials_stay_out_of_warnings_logs_and_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    // Nothing listens on this port: connecting fails at once, quoting the URL.
    let port = toolhost_testkit::free_port();
    let url = format!(
        "http://ops:url-pw-1@127.0.0.1:{port}/mcp?api_key=url-key-2&sig=url-sig-3&tenant=acme"
    );
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!("[mcp.servers.leaky]\nurl = \"{url}\"\ntimeout_secs = 10\n"),
    )
    .unwrap();
    let list = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .current_dir(dir.path())
            .arg("list")
            .args(extra)
            .arg("--config")
            .arg(dir.path().join("toolhost.toml"))
            .arg("--plugins")
            .arg(dir.path().join("plugins"))
            .env("XDG_DATA_HOME", dir.path())
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("RUST_LOG")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    for extra in [&[][..], &["--json"], &["-vv"]] {
        let out = list(extra);
        let shown = toolhost_testkit::show(&out);
        assert!(!out.status.success(), "{shown}");
        for s in ["url-pw-1", "url-key-2", "url-sig-3"] {
            assert!(!shown.contains(s), "{extra:?} leaks {s}:\n{shown}");
        }
        assert!(shown.contains("leaky"), "{shown}");
        // The URL itself is still shown, readable, with its credentials replaced.
        assert!(
            shown.contains(&format!(
                "[REDACTED]@127.0.0.1:{port}/mcp?api_key=[REDACTED]&sig=[REDACTED]&tenant=acme"
            )),
            "{extra:?}:\n{shown}"
        );
    }
}
