//! `toolhost serve` driven by the Python `mcp` client, over stdio and Streamable HTTP.
//!
//! The registry holds a wrapped MCP server (the Python fixture server of toolhost-mcp) and,
//! when `cargo xtask plugins` has built them, the example WASM plugins (`add` from calc).
//! Over stdio the client only works if stdout carries nothing but protocol.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_testkit::built_plugins;

fn fixtures() -> PathBuf {
    toolhost_testkit::peers::mcp_fixture("")
}

fn python() -> Option<PathBuf> {
    toolhost_testkit::peers::python()
}

/// A temp dir with a toolhost.toml wrapping the Python fixture server as `py`.
fn setup(python: &Path) -> PathBuf {
    let dir = toolhost_testkit::temp_dir("serve");
    let config = format!(
        // The operator rates the server's tools (unrated MCP tools need an approval,
        // which `serve` cannot ask for).
        "[mcp.servers.py]\ncommand = {:?}\nargs = [{:?}]\ntimeout_secs = 30\npermissions = [\"read\"]\n",
        python.display().to_string(),
        fixtures().join("py_server.py").display().to_string()
    );
    std::fs::write(dir.join("toolhost.toml"), config).unwrap();
    std::fs::create_dir_all(dir.join("no-plugins")).unwrap();
    dir
}

fn serve_args(dir: &Path) -> Vec<String> {
    let plugins = built_plugins(&["calc.wasm"]).unwrap_or_else(|| dir.join("no-plugins"));
    vec![
        // The audit trail is tested in tests/audit.rs; keep the user's data folder clean.
        "--no-audit".into(),
        "--config".into(),
        dir.join("toolhost.toml").display().to_string(),
        "--plugins".into(),
        plugins.display().to_string(),
    ]
}

fn check(report: &Value) {
    let names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    // The wrapped MCP tools are there (qualified when a plugin describes the name too).
    assert!(names.contains(&"shout"), "{names:?}");
    assert!(
        names.contains(&"add") || names.contains(&"py__add"),
        "{names:?}"
    );
    if built_plugins(&["calc.wasm"]).is_some() {
        // The plugin and the server both describe `add`: the name belongs to neither,
        // whichever loaded first.
        assert!(
            names.contains(&"py__add") && names.contains(&"calc__add") && !names.contains(&"add"),
            "both `add`s should be qualified: {names:?}"
        );
    }
    let shout = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "shout")
        .unwrap();
    assert_eq!(shout["inputSchema"]["type"], "object");
    assert!(shout["annotations"]["readOnlyHint"].is_boolean(), "{shout}");
    assert_eq!(
        report["call"]["structuredContent"],
        json!({"result": 42}),
        "{report}"
    );
    let text = report["call"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("42"), "{report}");
    assert_eq!(report["unknown"]["isError"], true, "{report}");
    if built_plugins(&["calc.wasm"]).is_some() {
        // The WASM `add` of the calc example, through serve.
        assert_ne!(report["call2"]["isError"], true, "{report}");
        assert!(
            report["call2"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .contains("42"),
            "{report}"
        );
    }
}

/// The calls the client makes: the wrapped Python `add`, and the WASM `add` when built.
fn call_env(cmd: &mut std::process::Command) {
    let py_add = if built_plugins(&["calc.wasm"]).is_some() {
        "py__add"
    } else {
        "add"
    };
    // serve loads its tools in the background: the client lists until they are there.
    let wait = if built_plugins(&["calc.wasm"]).is_some() {
        "shout,py__add,calc__add"
    } else {
        "shout,add"
    };
    cmd.env("CALL_TOOL", py_add)
        .env("CALL_ARGS", r#"{"a": 40, "b": 2}"#)
        .env("WAIT_FOR_TOOLS", wait);
    if built_plugins(&["calc.wasm"]).is_some() {
        cmd.env("CALL_TOOL2", "calc__add")
            .env("CALL_ARGS2", r#"{"x": 40, "y": 2}"#);
    }
}

#[test]
fn python_client_over_stdio_lists_and_calls() {
    let Some(python) = python() else { return };
    let dir = setup(&python);
    let mut cmd = std::process::Command::new(&python);
    cmd.arg(fixtures().join("py_client.py"))
        .arg("stdio")
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .arg("serve")
        .arg("--stdio")
        .args(serve_args(&dir))
        .env("RUST_LOG", "info");
    call_env(&mut cmd);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    check(&report);
}

#[test]
fn python_client_over_http_lists_and_calls() {
    let Some(python) = python() else { return };
    let dir = setup(&python);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("serve")
        .arg("--http")
        .arg(format!("127.0.0.1:{port}"))
        .args(serve_args(&dir))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let up = toolhost_testkit::port_listening(port, Duration::from_secs(30));
    let result = up.then(|| {
        let mut cmd = std::process::Command::new(&python);
        cmd.arg(fixtures().join("py_client.py"))
            .arg("http")
            .arg(format!("http://127.0.0.1:{port}/mcp"));
        call_env(&mut cmd);
        cmd.output()
    });
    let _ = server.kill();
    let _ = server.wait();
    assert!(up, "toolhost serve --http did not start listening");
    let out = result.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check(&serde_json::from_str(stdout.trim()).unwrap());
}

/// A 2026-07-28 client of `serve --http`, asked through `input_required` rounds: toolhost's
/// own approval (a restartable round), then the wrapped server's question (a parked
/// round), attacked as a hostile client would: a tampered, a replayed and a transplanted
/// `requestState`, an answer of the wrong shape, a server that asks forever, a header
/// that contradicts the body, a malformed `_meta`; each followed by a call that works.
#[test]
fn a_2026_client_answers_in_rounds_and_cannot_forge_or_replay_them() {
    use toolhost_testkit::http::{mcp_2026, rpc_message};
    let Some(python) = python() else { return };
    let dir = toolhost_testkit::temp_dir("serve-rounds");
    std::fs::write(
        dir.join("toolhost.toml"),
        format!(
            "[mcp.servers.ask]\ncommand = {:?}\nargs = [{:?}]\ndefault_risk = \"destructive\"\n",
            python.display().to_string(),
            fixtures().join("asking_server.py").display().to_string()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    // The calc plugin beside the wrapped server: tools of two sources, for the list order.
    let calc = built_plugins(&["calc.wasm"]).expect("the built plugins (cargo xtask plugins)");
    for f in ["calc.wasm", "calc.toml"] {
        std::fs::copy(calc.join(f), dir.join("plugins").join(f)).unwrap();
    }
    let serve = toolhost_testkit::serve::ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        &dir,
        &["--plugins", "plugins", "--no-audit", "--no-watch"],
        &[],
        "all tools loaded",
        Duration::from_secs(120),
    );
    let addr = serve.addr();
    let caps = json!({"elicitation": {"form": {}}});
    let schema = json!({"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]});
    let args = json!({"message": "Favourite colour?", "schema": schema.to_string()});
    let call = |params: Value| {
        let name = params["name"].as_str().unwrap().to_string();
        let r = mcp_2026(&addr, "tools/call", Some(&name), params, caps.clone()).unwrap();
        let msg = rpc_message(&r)
            .unwrap_or_else(|| panic!("no message: {} {}\n{}", r.head, r.body, serve.stderr()));
        (r.status, msg)
    };
    let ask = |extra: Value| {
        let mut p = json!({"name": "ask", "arguments": args});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        call(p)
    };
    let refused = |(status, msg): (u16, Value), why: &str| {
        assert_eq!(msg["error"]["code"], -32602, "{status} {msg}");
        let m = msg["error"]["message"].as_str().unwrap();
        assert!(m.contains(why), "{m}");
    };

    // Round 1: toolhost's approval, before anything runs.
    let (_, r1) = ask(json!({}));
    let r1 = &r1["result"];
    assert_eq!(r1["resultType"], "input_required", "{r1}");
    let q = &r1["inputRequests"]["toolhost_approval"];
    assert_eq!(q["method"], "elicitation/create", "{r1}");
    assert!(
        q["params"]["message"]
            .as_str()
            .unwrap()
            .starts_with("toolhost approval:"),
        "{q}"
    );
    let s1 = r1["requestState"].as_str().unwrap().to_string();
    let approve =
        json!({"toolhost_approval": {"action": "accept", "content": {"decision": "once"}}});

    // A tampered state, the state with other arguments, an answer that is not an object:
    // refused, nothing runs.
    let mut tampered = s1.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    refused(
        ask(json!({"requestState": tampered, "inputResponses": approve})),
        "requestState refused",
    );
    let mut other = json!({"name": "ask", "arguments": {"message": "Your password?", "schema": schema.to_string()}});
    other["requestState"] = json!(s1);
    other["inputResponses"] = approve.clone();
    refused(call(other), "requestState refused");

    // The approval given: the call runs, and the wrapped server's question comes as
    // round 2, tagged with the server's name.
    let (_, r2) = ask(json!({"requestState": s1, "inputResponses": approve}));
    let r2 = &r2["result"];
    assert_eq!(r2["resultType"], "input_required", "{r2}");
    let (key, q) = r2["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert!(
        q["params"]["message"]
            .as_str()
            .unwrap()
            .starts_with("[ask]"),
        "{q}"
    );
    let s2 = r2["requestState"].as_str().unwrap().to_string();
    // The approval's state again: used already (a replay must not run the call twice).
    refused(
        ask(json!({"requestState": s1, "inputResponses": approve})),
        "used already",
    );
    // An answer of the wrong shape.
    refused(
        ask(json!({"requestState": s2, "inputResponses": {key.clone(): 12345}})),
        "must be an object",
    );
    // That attempt spent the state; the parked call is still there for a fresh state?
    // No: each state continues once. The client starts over, and this time answers well.
    let (_, a) = ask(json!({}));
    let s1 = a["result"]["requestState"].as_str().unwrap().to_string();
    let (_, b) = ask(json!({"requestState": s1, "inputResponses": approve}));
    let b = &b["result"];
    let (key, _) = b["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    let s2 = b["requestState"].as_str().unwrap().to_string();
    let answer = json!({key.clone(): {"action": "accept", "content": {"colour": "green"}}});
    let (_, done) = ask(json!({"requestState": s2, "inputResponses": answer}));
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("green") && text.contains("accept"), "{text}");
    refused(
        ask(json!({"requestState": s2, "inputResponses": answer})),
        "used already",
    );

    // A server that asks forever: bounded rounds, then the request is refused.
    let forever = |extra: Value| {
        let mut p = json!({"name": "ask_forever", "arguments": {}});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        call(p)
    };
    let (_, mut msg) = forever(json!({}));
    let mut rounds = 0;
    while msg["result"]["resultType"] == "input_required" {
        rounds += 1;
        assert!(rounds <= 11, "more rounds than the bound: {msg}");
        let r = &msg["result"];
        let answers: serde_json::Map<String, Value> = r["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| {
                let a = if k == "toolhost_approval" {
                    json!({"action": "accept", "content": {"decision": "once"}})
                } else {
                    json!({"action": "accept", "content": {"more": true}})
                };
                (k.clone(), a)
            })
            .collect();
        msg = forever(json!({"requestState": r["requestState"], "inputResponses": answers})).1;
    }
    assert_eq!(rounds, 10, "{msg}");
    assert!(
        msg["error"]["message"]
            .as_str()
            .unwrap()
            .contains("more than 10 rounds"),
        "{msg}"
    );

    // A header that contradicts the body, a malformed `_meta`: HTTP 400, nothing runs.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask", "arguments": args, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let r = toolhost_testkit::http::request(
        &addr,
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ],
        &body.to_string(),
    )
    .unwrap();
    assert_eq!(r.status, 400, "{} {}", r.head, r.body);
    let r = mcp_2026(
        &addr,
        "tools/list",
        None,
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 2026}}),
        json!({}),
    )
    .unwrap();
    assert_eq!(r.status, 400, "{} {}", r.head, r.body);

    // And a good request still works.
    let r = mcp_2026(&addr, "tools/list", None, json!({}), json!({})).unwrap();
    let tools = rpc_message(&r).unwrap();
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"ask"), "{tools}");
    // A wrapped server's tools may change at any moment: revalidate every time.
    assert_eq!(tools["result"]["ttlMs"], 0, "{tools}");
    assert_eq!(tools["result"]["cacheScope"], "public", "{tools}");
    // A deterministic order: by name.
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
}

/// `[serve] request_state_key_file` is a secret: a file others may read, or a key too short
/// to seal with, is refused before `serve` listens, naming what to fix. (A good key file is
/// used by `cli/tests/all/replicas.rs`.)
#[cfg(unix)]
#[test]
fn a_request_state_key_that_others_can_read_or_that_is_short_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = toolhost_testkit::temp_dir("serve-state-key");
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    let key = dir.join("state.key");
    std::fs::write(
        dir.join("toolhost.toml"),
        format!(
            "[serve]\nrequest_state_key_file = {:?}\n",
            key.display().to_string()
        ),
    )
    .unwrap();
    let serve = || {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .current_dir(&dir)
            .args([
                "serve",
                "--http",
                "127.0.0.1:0",
                "--plugins",
                "plugins",
                "--no-audit",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Refused before listening: it exits on its own (killed after 60 s otherwise).
        let t0 = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("serve started with a bad key file");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        child.wait_with_output().unwrap()
    };
    std::fs::write(&key, "k".repeat(48)).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = serve();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success() && err.contains("chmod 600"), "{err}");
    std::fs::write(&key, "short").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = serve();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success() && err.contains("at least 32 bytes"),
        "{err}"
    );
}
