//! Bearer authentication between two `toolhost` binaries: `serve --http` guarded by a
//! token file, and `list` / `call` connecting to it as `[mcp.servers.guarded]`.
//!
//! - refusals at start: `--allow-remote` without any token source (names the flags), a
//!   token file group or others can read (names `chmod 600`), a short token;
//! - a raw request without the token gets 401 with `WWW-Authenticate: Bearer
//!   realm="toolhost"`;
//! - the client without a token: `list` exits non-zero with a clear error naming the
//!   server, the status and `bearer_token_env` (no Rust type names); a missing variable is
//!   a config error naming the key; with `bearer_token_env` the tools are listed and a
//!   call works;
//! - one client (one token) opening sessions as fast as it can, never ending them, while a
//!   second client (another token) keeps initializing, listing and calling: the second
//!   never gets a 503, the first keeps at most its share of sessions open (its oldest get
//!   404), and the log counts the evictions.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use toolhost_testkit::{built_plugins, show};

const TOKEN: &str = "0123456789abcdef0123456789abcdef-serve-auth";

fn toolhost(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.args(args)
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_SERVE_TOKEN")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    cmd
}

fn token_file(dir: &Path, mode: u32, text: &str) -> PathBuf {
    let path = dir.join(format!("tokens-{mode:o}"));
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

fn serve_refused(extra: &[&str], env: Option<&str>) -> Output {
    let dir = toolhost_testkit::temp_dir("serve-auth-refused");
    let mut args = vec![
        "serve",
        "--no-audit",
        "--no-watch",
        "--plugins",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut cmd = toolhost(&args);
    cmd.current_dir(&dir);
    if let Some(token) = env {
        cmd.env("TOOLHOST_SERVE_TOKEN", token);
    }
    cmd.output().unwrap()
}

#[test]
fn allow_remote_without_a_token_source_refuses_to_start() {
    let out = serve_refused(&["--http", "0.0.0.0:0", "--allow-remote"], None);
    assert!(!out.status.success(), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--allow-remote"), "{stderr}");
    assert!(stderr.contains("--auth-token-file"), "{stderr}");
    assert!(stderr.contains("TOOLHOST_SERVE_TOKEN"), "{stderr}");
    // On loopback too: the flag asks for remote clients, which need a token.
    let out = serve_refused(&["--http", "127.0.0.1:0", "--allow-remote"], None);
    assert!(!out.status.success(), "{}", show(&out));
}

#[test]
fn a_token_file_others_can_read_or_a_short_token_is_refused() {
    let dir = toolhost_testkit::temp_dir("serve-auth-mode");
    let open = token_file(&dir, 0o644, &format!("# tokens\n{TOKEN}\n"));
    let out = serve_refused(
        &[
            "--http",
            "127.0.0.1:0",
            "--auth-token-file",
            open.to_str().unwrap(),
        ],
        None,
    );
    assert!(!out.status.success(), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("chmod 600"), "{stderr}");
    assert!(stderr.contains("0644"), "{stderr}");
    assert!(!stderr.contains(TOKEN), "the token leaked: {stderr}");
    let out = serve_refused(&["--http", "127.0.0.1:0"], Some("too-short-a-secret"));
    assert!(!out.status.success(), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("at least 32"), "{stderr}");
    assert!(stderr.contains("TOOLHOST_SERVE_TOKEN"), "{stderr}");
    assert!(!stderr.contains("too-short-a-secret"), "{stderr}");
}

/// A raw HTTP/1.1 POST of `initialize` to `/mcp` without credentials; the response head.
fn raw_post_without_token(port: u16) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    // One write: the server answers 401 without reading the body, and a body still
    // arriving after it closed would make the kernel reset the connection (losing the
    // answer).
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    resp
}

/// Kills the server when the test ends, however it ends.
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_protected_serve_is_usable_only_with_its_token() {
    let Some(built) = built_plugins(&["calc.wasm"]) else {
        return;
    };
    let dir = toolhost_testkit::temp_dir("serve-auth");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for f in ["calc.wasm", "calc.toml"] {
        std::fs::copy(built.join(f), plugins.join(f)).unwrap();
    }
    let tokens = token_file(&dir, 0o600, &format!("# serve tokens\n\n{TOKEN}\n"));
    let port = toolhost_testkit::free_port();
    // 0.0.0.0 with --allow-remote: the remote path, reached through 127.0.0.1.
    let _served = Served(
        toolhost(&[
            "serve",
            "--no-audit",
            "--no-watch",
            "--http",
            &format!("0.0.0.0:{port}"),
            "--allow-remote",
            "--auth-token-file",
            tokens.to_str().unwrap(),
            "--plugins",
            plugins.to_str().unwrap(),
        ])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    let up = toolhost_testkit::port_listening(port, Duration::from_secs(30));
    assert!(up, "toolhost serve --http did not start listening");

    // Hostile: no token.
    let head = raw_post_without_token(port);
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("www-authenticate: bearer realm=\"toolhost\""),
        "{head}"
    );

    // The client side: one config without credentials, one with a missing variable, one
    // with the token in an environment variable.
    let client = dir.join("client");
    std::fs::create_dir_all(client.join("plugins")).unwrap();
    let entry = format!(
        "[mcp.servers.guarded]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\
         permissions = [\"read\"]\ntimeout_secs = 30\n"
    );
    let write_config = |name: &str, extra: &str| {
        let path = client.join(name);
        std::fs::write(&path, format!("{entry}{extra}")).unwrap();
        path
    };
    let bare = write_config("bare.toml", "");
    let missing = write_config("missing.toml", "bearer_token_env = \"NO_SUCH_TOKEN_VAR\"\n");
    let good = write_config("good.toml", "bearer_token_env = \"GUARDED_TOKEN\"\n");
    let run = |config: &Path, args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--config", config.to_str().unwrap(), "--plugins", "plugins"]);
        toolhost(&all)
            .current_dir(&client)
            .env_remove("NO_SUCH_TOKEN_VAR")
            .env("GUARDED_TOKEN", TOKEN)
            .output()
            .unwrap()
    };

    let out = run(&bare, &["list"]);
    assert!(!out.status.success(), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("'guarded'"), "{stderr}");
    assert!(stderr.contains("HTTP 401"), "{stderr}");
    assert!(stderr.contains("bearer_token_env"), "{stderr}");
    assert!(!stderr.contains("WorkerTransport"), "{stderr}");
    assert!(stderr.contains("did not connect: guarded"), "{stderr}");

    let out = run(&missing, &["list"]);
    assert!(!out.status.success(), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("'guarded'"), "{stderr}");
    assert!(stderr.contains("bearer_token_env"), "{stderr}");
    assert!(stderr.contains("NO_SUCH_TOKEN_VAR"), "{stderr}");

    // The good client. serve loads its plugins in the background: list until `add` is
    // offered (bounded).
    let mut listed = None;
    for _ in 0..120 {
        let out = run(&good, &["list", "--json"]);
        assert!(out.status.success(), "{}", show(&out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let names: Vec<String> = report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect();
        if names.iter().any(|n| n == "add") {
            listed = Some(names);
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(listed.is_some(), "the guarded server never offered `add`");
    let out = run(&good, &["call", "add", r#"{"x": 40, "y": 2}"#]);
    assert!(out.status.success(), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("42"), "{stdout}");
}

/// One raw HTTP/1.1 request to `/mcp` on 127.0.0.1 with `Connection: close`, as bearer
/// `token`, in session `session` if given: (status, response head, body).
fn mcp_request(
    port: u16,
    token: &str,
    method: &str,
    session: Option<&str>,
    body: &str,
) -> (u16, String, String) {
    let auth = format!("Bearer {token}");
    let mut headers = vec![
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(id) = session {
        headers.push(("Mcp-Session-Id", id));
    }
    let r = toolhost_testkit::http::request(
        &format!("127.0.0.1:{port}"),
        method,
        "/mcp",
        &headers,
        body,
    )
    .unwrap();
    (r.status, r.head, r.body)
}

/// The `Mcp-Session-Id` of a response head.
fn session_id(head: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("mcp-session-id")
            .then(|| v.trim().to_string())
    })
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
const CALL: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"x":40,"y":2}}}"#;

/// Resident memory of process `pid` in kB (Linux), for the test's output.
fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_client_opening_sessions_without_end_cannot_lock_another_client_out() {
    let Some(built) = built_plugins(&["calc.wasm"]) else {
        return;
    };
    const FLOODER: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-flooding-client";
    const WORKER: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb-working-client";
    let dir = toolhost_testkit::temp_dir("serve-session-flood");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for f in ["calc.wasm", "calc.toml"] {
        std::fs::copy(built.join(f), plugins.join(f)).unwrap();
    }
    let tokens = token_file(&dir, 0o600, &format!("{FLOODER}\n{WORKER}\n"));
    let log = dir.join("serve.log");
    let port = toolhost_testkit::free_port();
    // 8 sessions, so a share of 4 per client (bearer token).
    let served = Served(
        toolhost(&[
            "serve",
            "--no-audit",
            "--no-watch",
            "--http",
            &format!("127.0.0.1:{port}"),
            "--max-sessions",
            "8",
            "--auth-token-file",
            tokens.to_str().unwrap(),
            "--plugins",
            plugins.to_str().unwrap(),
        ])
        .current_dir(&dir)
        .env("RUST_LOG", "toolhost_mcp=info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap(),
    );
    let pid = served.0.id();
    let up = toolhost_testkit::port_listening(port, Duration::from_secs(30));
    assert!(up, "toolhost serve --http did not start listening");

    // The working client's round: initialize, list, call, end the session.
    let round = move || -> Result<(), String> {
        let (status, head, body) = mcp_request(port, WORKER, "POST", None, INITIALIZE);
        if status != 200 {
            return Err(format!("initialize: {status} {body}"));
        }
        let id = session_id(&head).ok_or("no session id")?;
        let (status, _, body) = mcp_request(port, WORKER, "POST", Some(&id), INITIALIZED);
        if status != 202 {
            return Err(format!("initialized: {status} {body}"));
        }
        let (status, _, body) = mcp_request(port, WORKER, "POST", Some(&id), LIST);
        if status != 200 || !body.contains("\"add\"") {
            return Err(format!("tools/list: {status} {body}"));
        }
        let (status, _, body) = mcp_request(port, WORKER, "POST", Some(&id), CALL);
        if status != 200 || !body.contains("42") || body.contains("\"isError\":true") {
            return Err(format!("tools/call: {status} {body}"));
        }
        mcp_request(port, WORKER, "DELETE", Some(&id), "");
        Ok(())
    };
    // serve loads its plugins in the background: until `add` is there (bounded).
    let ready = (0..120).any(|_| {
        round().is_ok() || {
            std::thread::sleep(Duration::from_millis(250));
            false
        }
    });
    assert!(ready, "serve never offered `add`: {:?}", round());
    let rss_before = rss_kb(pid);

    // The flooder: two threads opening sessions as fast as they can, never ending one.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flooders: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                (0..200)
                    .map(|_| {
                        let (status, head, _) =
                            mcp_request(port, FLOODER, "POST", None, INITIALIZE);
                        (status, session_id(&head))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    // The worker keeps working the whole time.
    let worker = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut rounds = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) || rounds.len() < 3 {
                rounds.push(round());
            }
            rounds
        })
    };
    let flooded: Vec<(u16, Option<String>)> = flooders
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let rounds = worker.join().unwrap();
    let rss_after = rss_kb(pid);

    // The working client never got a 503 (nor anything else but success).
    let failed: Vec<&String> = rounds.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} of {} rounds failed: {failed:?}",
        failed.len(),
        rounds.len()
    );
    // The flooder was not refused either: its own oldest idle sessions made room.
    let refused = flooded.iter().filter(|(s, _)| *s != 200).count();
    assert_eq!(refused, 0, "the flooder was refused {refused} times");
    let ids: Vec<&String> = flooded.iter().filter_map(|(_, id)| id.as_ref()).collect();
    assert_eq!(ids.len(), 400);
    // Memory stays bounded: of its 400 sessions, at most its share (4) are still open;
    // the others answer 404, so that client must initialize again.
    let alive: Vec<u16> = ids
        .iter()
        .map(|id| mcp_request(port, FLOODER, "POST", Some(id), LIST).0)
        .collect();
    let open = alive.iter().filter(|s| **s == 200).count();
    assert!(
        (1..=4).contains(&open),
        "{open} of the flooder's sessions are open"
    );
    assert!(alive.iter().all(|s| *s == 200 || *s == 404), "{alive:?}");
    assert_eq!(alive[0], 404);
    eprintln!(
        "flood: 400 sessions opened, {open} left open; worker: {} rounds; serve RSS {rss_before:?} -> {rss_after:?} kB",
        rounds.len()
    );

    // And a good round after the flood.
    round().unwrap();
    drop(served);
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("closed the least recently used idle MCP session"),
        "{log}"
    );
    assert!(log.contains("evicted_total"), "{log}");
    assert!(!log.contains("refused a new MCP session"), "{log}");
    assert!(
        !log.contains(FLOODER) && !log.contains(WORKER),
        "a token leaked: {log}"
    );
}
