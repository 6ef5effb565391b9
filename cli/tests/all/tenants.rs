//! Clients are tenants, through the real binary (`serve --http` with real HTTP clients on
//! 127.0.0.1, the calc plugin and a real Python MCP server whose `wait` sleeps):
//!
//! - one client holding every execution slot with long calls does not hold up another's
//!   call: it runs while the first client's calls are still running, and the first
//!   client's own next call waits its turn;
//! - a client's tasks are its own across sessions without tokens (its session is its
//!   identity): another session cannot read or cancel them;
//! - a configured client (`[serve.clients.NAME]`) sees only its `tools` (any other name is
//!   an unknown tool, exactly as a name that does not exist), its `allowed` levels narrow
//!   the policy, its `max_concurrent_calls` holds, and the audit trail names it, never
//!   its token.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_testkit::built_plugins;
use toolhost_testkit::http::{mcp_2026_as, mcp_post, rpc_message};
use toolhost_testkit::serve::ServeHttp;

const HOG: &str = "hog-token-0123456789abcdef-0123456789abcdef";
const VICTIM: &str = "victim-token-0123456789abcdef-0123456789ab";
const ANALYST: &str = "analyst-token-0123456789abcdef-0123456789a";

/// Writes `text` to `path`, readable by its owner only (as toolhost wants a token file).
fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// `dir/plugins` with calc; `dir/toolhost.toml` wrapping the slow Python server (its
/// tools declared `network`) with `extra` appended.
fn setup(dir: &Path, extra: &str) -> Option<PathBuf> {
    let python = toolhost_testkit::peers::python()?;
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let built = built_plugins(&["calc.wasm"]).expect("the built plugins (cargo xtask plugins)");
    std::fs::copy(built.join("calc.wasm"), plugins.join("calc.wasm")).unwrap();
    std::fs::write(
        dir.join("toolhost.toml"),
        format!(
            "[mcp.servers.slow]\ncommand = {:?}\nargs = [{:?}]\ndefault_risk = \"read-only\"\n\
             permissions = [\"network\"]\n\n[mcp.servers.asking]\ncommand = {:?}\nargs = [{:?}]\n\
             default_risk = \"read-only\"\n\n[serve]\nmax_concurrent_calls = 2\n{extra}",
            python.display().to_string(),
            toolhost_testkit::peers::mcp_fixture("slow_server.py")
                .display()
                .to_string(),
            python.display().to_string(),
            toolhost_testkit::peers::mcp_fixture("asking_server.py")
                .display()
                .to_string()
        ),
    )
    .unwrap();
    Some(plugins)
}

fn serve(dir: &Path, plugins: &Path, args: &[&str]) -> ServeHttp {
    let cache = dir.join("cache").display().to_string();
    let data = dir.join("data").display().to_string();
    ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        dir,
        &[
            args,
            &["--no-watch", "--plugins", plugins.to_str().unwrap()],
        ]
        .concat(),
        &[("XDG_CACHE_HOME", &cache), ("XDG_DATA_HOME", &data)],
        "all tools loaded",
        Duration::from_secs(120),
    )
}

/// `tools/call` of `tool` as the holder of `token` (2026-07-28, no tasks): its message.
fn call(addr: &str, token: &str, tool: &str, args: Value) -> Value {
    let r = mcp_2026_as(
        addr,
        Some(token),
        "tools/call",
        Some(tool),
        json!({"name": tool, "arguments": args}),
        json!({}),
    )
    .unwrap();
    rpc_message(&r).unwrap_or_else(|| panic!("no message: {} {}", r.head, r.body))
}

/// `call` on a thread of its own.
fn call_behind(addr: &str, token: &'static str, tool: &'static str, args: Value) -> Thread {
    let addr = addr.to_string();
    std::thread::spawn(move || call(&addr, token, tool, args))
}

type Thread = std::thread::JoinHandle<Value>;

/// Waits until `audit` has a record of `tool` by `client` that `done` accepts.
fn audited(audit: &Path, client: &str, tool: &str) -> Vec<Value> {
    std::fs::read_to_string(audit)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["tool"] == tool && r["client"] == client)
        .collect()
}

#[test]
fn one_client_holding_every_slot_does_not_hold_up_another() {
    let dir = tempfile::tempdir().unwrap();
    let Some(plugins) = setup(dir.path(), "") else {
        return;
    };
    let tokens = dir.path().join("tokens");
    write_private(&tokens, &format!("{HOG}\n{VICTIM}\n"));
    let audit = dir.path().join("audit.jsonl");
    let serve = serve(
        dir.path(),
        &plugins,
        &[
            "--auth-token-file",
            tokens.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
        ],
    );
    let addr = serve.addr();

    // The hog takes both slots with calls that last 30 s…
    let hogs: Vec<Thread> = (0..2)
        .map(|_| call_behind(&addr, HOG, "wait", json!({"seconds": 30})))
        .collect();
    // …(they are running once the wrapped server has them: the audit trail records a
    // call at its end, so watch the slots through the hog's own next call instead)…
    std::thread::sleep(Duration::from_millis(1500));
    let hog_third = call_behind(&addr, HOG, "add", json!({"x": 1, "y": 1}));
    std::thread::sleep(Duration::from_millis(500));
    // …and the other client's call is answered while they still run.
    let m = call(&addr, VICTIM, "add", json!({"x": 40, "y": 2}));
    assert!(
        m["result"].to_string().contains("42"),
        "{m}\n{}",
        serve.stderr()
    );
    assert!(
        hogs.iter().all(|h| !h.is_finished()),
        "the other client's call waited for the hog's calls to end\n{}",
        serve.stderr()
    );
    // The hog's own third call waits its turn behind its own calls.
    assert!(!hog_third.is_finished(), "{}", serve.stderr());
    // The audit trail names each client by its token's position, never the token.
    let t0 = Instant::now();
    while audited(&audit, "token:1", "add").is_empty() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(audited(&audit, "token:1", "add").len(), 1);
    let trail = std::fs::read_to_string(&audit).unwrap();
    assert!(!trail.contains(VICTIM) && !trail.contains(HOG), "{trail}");
}

#[test]
fn one_client_parking_calls_on_questions_does_not_hold_up_another() {
    let dir = tempfile::tempdir().unwrap();
    let Some(plugins) = setup(dir.path(), "") else {
        return;
    };
    let tokens = dir.path().join("tokens");
    write_private(&tokens, &format!("{HOG}\n{VICTIM}\n"));
    let serve = serve(
        dir.path(),
        &plugins,
        &["--auth-token-file", tokens.to_str().unwrap(), "--no-audit"],
    );
    let addr = serve.addr();
    // The hog parks calls on a wrapped server's question and never answers: each keeps
    // its execution slot, and both slots are its.
    let schema = r#"{"type": "object", "properties": {"ok": {"type": "boolean"}}}"#;
    for _ in 0..2 {
        let r = mcp_2026_as(
            &addr,
            Some(HOG),
            "tools/call",
            Some("ask"),
            json!({"name": "ask", "arguments": {"message": "ok?", "schema": schema}}),
            json!({"elicitation": {"form": {}}}),
        )
        .unwrap();
        let m = rpc_message(&r).unwrap();
        assert_eq!(
            m["result"]["resultType"],
            "input_required",
            "{m}\n{}",
            serve.stderr()
        );
    }
    // The other client's call runs at once.
    let m = call(&addr, VICTIM, "add", json!({"x": 40, "y": 2}));
    assert!(
        m["result"].to_string().contains("42"),
        "{m}\n{}",
        serve.stderr()
    );
    // The hog's own next call waits behind its parked ones.
    let hog_next = call_behind(&addr, HOG, "add", json!({"x": 1, "y": 1}));
    std::thread::sleep(Duration::from_millis(500));
    assert!(!hog_next.is_finished(), "{}", serve.stderr());
}

/// `initialize` of a stateful session that takes tasks: its session id.
fn session_with_tasks(addr: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "clientInfo": {"name": "tenant-test", "version": "0"}}});
    let r = mcp_post(addr, "/mcp", None, &init.to_string()).unwrap();
    let id = r.header("mcp-session-id").expect("a session id");
    mcp_post(
        addr,
        "/mcp",
        Some(&id),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .unwrap();
    id
}

fn in_session(addr: &str, session: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
    let r = mcp_post(addr, "/mcp", Some(session), &body.to_string()).unwrap();
    rpc_message(&r).unwrap_or_else(|| panic!("no message: {} {}", r.head, r.body))
}

#[test]
fn without_tokens_a_sessions_tasks_are_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let Some(plugins) = setup(dir.path(), "") else {
        return;
    };
    let serve = serve(dir.path(), &plugins, &["--no-audit"]);
    let addr = serve.addr();
    let owner = session_with_tasks(&addr);
    let other = session_with_tasks(&addr);

    let m = in_session(
        &addr,
        &owner,
        "tools/call",
        json!({"name": "wait", "arguments": {"seconds": 30}}),
    );
    let id = m["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {m}\n{}", serve.stderr()))
        .to_string();
    // Another session (no token either) is told the task is unknown, whatever it tries.
    for method in ["tasks/get", "tasks/cancel"] {
        let m = in_session(&addr, &other, method, json!({"taskId": id}));
        assert_eq!(m["error"]["code"], -32602, "{method}: {m}");
        assert!(m.to_string().contains("unknown task"), "{m}");
    }
    // Its owner still sees it working, and cancels it.
    let m = in_session(&addr, &owner, "tasks/get", json!({"taskId": id}));
    assert_eq!(m["result"]["status"], "working", "{m}");
    let m = in_session(&addr, &owner, "tasks/cancel", json!({"taskId": id}));
    assert!(m.get("error").is_none(), "{m}");
    // The other session's own call works.
    let m = in_session(
        &addr,
        &other,
        "tools/call",
        json!({"name": "add", "arguments": {"x": 40, "y": 2}}),
    );
    assert!(m["result"].to_string().contains("42"), "{m}");
}

#[test]
fn a_configured_client_sees_and_calls_only_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let analyst_tokens = dir.path().join("analyst.token");
    write_private(&analyst_tokens, &format!("{ANALYST}\n"));
    let Some(plugins) = setup(
        dir.path(),
        &format!(
            "\n[serve.clients.analyst]\ntoken_file = {:?}\ntools = [\"add\", \"mean\", \"wait\"]\n\
             allowed = [\"read\"]\nmax_concurrent_calls = 1\n",
            analyst_tokens.display().to_string()
        ),
    ) else {
        return;
    };
    // `multiply` ships an MCP App view: only a client that sees the tool sees its view.
    std::fs::create_dir_all(plugins.join("calc.ui")).unwrap();
    std::fs::write(plugins.join("calc.ui/multiply.html"), "<p>times</p>").unwrap();
    // A view is served once its plugin is approved.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["approve", "calc", "--yes", "--plugins"])
        .arg(&plugins)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", toolhost_testkit::show(&out));
    let tokens = dir.path().join("tokens");
    write_private(&tokens, &format!("{VICTIM}\n"));
    let audit = dir.path().join("audit.jsonl");
    let serve = serve(
        dir.path(),
        &plugins,
        &[
            "--auth-token-file",
            tokens.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
            "--admin",
            "127.0.0.1:0",
        ],
    );
    let addr = serve.addr();

    let view = "ui://calc/multiply.html";
    let read = |token: &str| {
        let r = mcp_2026_as(
            &addr,
            Some(token),
            "resources/read",
            Some(view),
            json!({"uri": view}),
            json!({}),
        )
        .unwrap();
        rpc_message(&r).unwrap()
    };
    let listed = |token: &str| {
        let r = mcp_2026_as(
            &addr,
            Some(token),
            "resources/list",
            None,
            json!({}),
            json!({}),
        )
        .unwrap();
        rpc_message(&r).unwrap().to_string().contains(view)
    };
    let seen = read(VICTIM);
    assert_eq!(
        seen["result"]["contents"][0]["text"], "<p>times</p>",
        "{seen}"
    );
    assert!(listed(VICTIM));
    // To a client that does not see the tool, its view is not there, as a made-up URI is
    // not: the same error (the gateway's, which here wraps one server), never the page.
    let hidden = read(ANALYST);
    let made_up = {
        let uri = "ui://calc/nothing.html";
        let r = mcp_2026_as(
            &addr,
            Some(ANALYST),
            "resources/read",
            Some(uri),
            json!({"uri": uri}),
            json!({}),
        )
        .unwrap();
        rpc_message(&r).unwrap()
    };
    assert!(hidden["error"].is_object(), "{hidden}");
    let said = |m: &Value| {
        m["error"]
            .to_string()
            .replace("multiply.html", "X")
            .replace("nothing.html", "X")
    };
    assert_eq!(said(&hidden), said(&made_up), "{hidden}\n{made_up}");
    assert!(!listed(ANALYST));

    let names = |token: &str| -> Vec<String> {
        let r = mcp_2026_as(&addr, Some(token), "tools/list", None, json!({}), json!({})).unwrap();
        let m = rpc_message(&r).unwrap();
        let mut n: Vec<String> = m["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{m}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(ANALYST), ["add", "mean", "wait"]);
    let all = names(VICTIM);
    assert!(
        all.contains(&"multiply".to_string()) && all.len() > 3,
        "{all:?}"
    );

    // A tool outside its globs is unknown to it, word for word as a made-up name.
    let hidden = call(&addr, ANALYST, "multiply", json!({"x": 2, "y": 3}));
    let made_up = call(&addr, ANALYST, "no_such_tool", json!({}));
    let said = |m: &Value| {
        m["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .replace("multiply", "NAME")
            .replace("no_such_tool", "NAME")
    };
    assert_eq!(hidden["result"]["isError"], true, "{hidden}");
    assert_eq!(said(&hidden), said(&made_up), "{hidden}\n{made_up}");
    assert!(said(&hidden).contains("NAME"), "{hidden}");
    // The other client calls it.
    let m = call(&addr, VICTIM, "multiply", json!({"x": 2, "y": 3}));
    assert!(m["result"].to_string().contains('6'), "{m}");

    // `allowed = ["read"]` narrows the policy: `wait` declares `network`.
    let m = call(&addr, ANALYST, "wait", json!({"seconds": 0}));
    assert_eq!(m["result"]["isError"], true, "{m}");
    let text = m["result"].to_string();
    assert!(
        text.contains("network") && text.contains("analyst"),
        "{text}"
    );
    let m = call(&addr, VICTIM, "wait", json!({"seconds": 0}));
    assert!(m["result"].to_string().contains("waited"), "{m}");

    // Its own calls: answered, and the trail names the client, never its token.
    let m = call(&addr, ANALYST, "add", json!({"x": 40, "y": 2}));
    assert!(m["result"].to_string().contains("42"), "{m}");
    let t0 = Instant::now();
    while audited(&audit, "analyst", "add").is_empty() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(audited(&audit, "analyst", "add").len(), 1);
    assert!(!audited(&audit, "analyst", "wait").is_empty());
    let trail = std::fs::read_to_string(&audit).unwrap();
    assert!(!trail.contains(ANALYST), "{trail}");
    // So does /metrics.
    let admin = serve.admin_addr().expect("the admin endpoints");
    let metrics = toolhost_testkit::http::request(&admin, "GET", "/metrics", &[], "")
        .unwrap()
        .body;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("toolhost_tool_calls_total{")
                && l.contains(r#"client="analyst""#)
                && l.contains(r#"tool="add""#)),
        "{metrics}"
    );
    assert!(metrics.contains(r#"client="token:0""#), "{metrics}");
    assert!(!metrics.contains(ANALYST) && !metrics.contains(VICTIM));
}
