//! The tasks extension through the real binary (`serve --http`, two bearer tokens, the
//! hostile fixture's `spin`, which loops until something stops it): a call that outlives
//! the task threshold becomes a task its client polls; another client cannot see, update
//! or cancel it (told the task is unknown, as for an id that never existed); its owner
//! cancels it and it settles `cancelled`; a quick call of a task-taking client is answered
//! at once; a client that does not take tasks never gets one. The operator's
//! `[serve] task_support`: a `required` tool is refused to a client without the extension
//! (`-32021`) and a task at once for one with it; a `forbidden` tool is never a task. A
//! required tool called by a 2026-07-28 client asks in rounds first, and the retry that
//! answers the last round gets the task.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_testkit::built_plugins;
use toolhost_testkit::http::{mcp_2026_as, rpc_message};
use toolhost_testkit::serve::ServeHttp;

const OWNER: &str = "owner-token-0123456789abcdef-0123456789";
const OTHER: &str = "other-token-0123456789abcdef-0123456789";

fn tasks_caps() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// One 2026-07-28 request as the holder of `token`: its JSON-RPC message.
fn rpc(
    addr: &str,
    token: &str,
    method: &str,
    name: Option<&str>,
    params: Value,
    caps: Value,
) -> Value {
    let r = mcp_2026_as(addr, Some(token), method, name, params, caps).unwrap();
    rpc_message(&r).unwrap_or_else(|| panic!("no message: {} {}", r.head, r.body))
}

/// Writes `text` to `path`, readable by its owner only (as toolhost wants a token file).
fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

/// `toolhost serve --http` in `dir` with `plugins`, the two tokens, its cache and data
/// under `dir`.
fn serve_with_tokens(dir: &Path, plugins: &str) -> ServeHttp {
    serve_with_tokens_and(dir, plugins, &["--no-audit"])
}

/// [`serve_with_tokens`] with `extra` arguments instead of `--no-audit`.
fn serve_with_tokens_and(dir: &Path, plugins: &str, extra: &[&str]) -> ServeHttp {
    let tokens = dir.join("tokens");
    write_private(&tokens, &format!("{OWNER}\n{OTHER}\n"));
    let cache = dir.join("cache").display().to_string();
    let data = dir.join("data").display().to_string();
    ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        dir,
        &[
            extra,
            &[
                "--no-watch",
                "--plugins",
                plugins,
                "--auth-token-file",
                tokens.to_str().unwrap(),
            ],
        ]
        .concat(),
        &[("XDG_CACHE_HOME", &cache), ("XDG_DATA_HOME", &data)],
        "all tools loaded",
        Duration::from_secs(120),
    )
}

/// `tools/call` of `tool` with `args` as the holder of `token`, declaring `caps`.
fn call_tool(addr: &str, token: &str, tool: &str, args: Value, caps: Value) -> Value {
    rpc(
        addr,
        token,
        "tools/call",
        Some(tool),
        json!({"name": tool, "arguments": args}),
        caps,
    )
}

/// `method` (`tasks/get`, `tasks/cancel`) on task `id` as the holder of `token`.
fn on_task(addr: &str, token: &str, method: &str, id: &str) -> Value {
    rpc(
        addr,
        token,
        method,
        Some(id),
        json!({"taskId": id}),
        tasks_caps(),
    )
}

/// `dir/plugins` with calc and the hostile fixture, `hostile_policy` its policy file.
fn calc_and_hostile(dir: &Path, hostile_policy: &str) -> std::path::PathBuf {
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let built = built_plugins(&["calc.wasm", "fixtures/hostile.wasm"])
        .expect("the built plugins (cargo xtask plugins)");
    std::fs::copy(built.join("calc.wasm"), plugins.join("calc.wasm")).unwrap();
    std::fs::copy(
        built.join("fixtures/hostile.wasm"),
        plugins.join("hostile.wasm"),
    )
    .unwrap();
    std::fs::write(plugins.join("hostile.toml"), hostile_policy).unwrap();
    plugins
}

#[test]
fn a_long_call_becomes_a_task_only_its_owner_sees_and_cancels() {
    let dir = tempfile::tempdir().unwrap();
    // Room for `spin` to run until cancelled: a minute, unlimited fuel.
    let plugins = calc_and_hostile(dir.path(), "timeout_ms = 60000\nfuel = 10000000000000\n");
    let serve = serve_with_tokens(dir.path(), plugins.to_str().unwrap());
    let addr = serve.addr();

    // The long call: a task, flat (taskId, status, ttlMs at the top), no result yet.
    let created = call_tool(&addr, OWNER, "spin", json!({}), tasks_caps());
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}\n{}", serve.stderr());
    let id = task["taskId"].as_str().unwrap().to_string();
    assert_eq!(task["status"], "working", "{created}");
    assert!(task.get("result").is_none(), "{created}");

    // Another client: the task does not exist for it, whatever it tries.
    for method in ["tasks/get", "tasks/cancel"] {
        let m = on_task(&addr, OTHER, method, &id);
        assert_eq!(
            m["error"]["code"], -32602,
            "{method} by another client: {m}"
        );
        assert!(
            m["error"]["message"]
                .as_str()
                .unwrap()
                .contains("unknown task"),
            "{m}"
        );
    }
    let m = rpc(
        &addr,
        OTHER,
        "tasks/update",
        Some(&id),
        json!({"taskId": id, "inputResponses": {}}),
        tasks_caps(),
    );
    assert_eq!(
        m["error"]["code"], -32602,
        "tasks/update by another client: {m}"
    );
    // An id nobody made answers the same.
    let m = on_task(&addr, OWNER, "tasks/get", "made-up");
    assert_eq!(m["error"]["code"], -32602, "{m}");

    // Its owner still sees it working, cancels it, and it settles `cancelled`.
    let m = on_task(&addr, OWNER, "tasks/get", &id);
    assert_eq!(m["result"]["status"], "working", "{m}");
    let m = on_task(&addr, OWNER, "tasks/cancel", &id);
    assert_eq!(m["result"]["resultType"], "complete", "{m}");
    let t0 = Instant::now();
    let status = loop {
        let m = on_task(&addr, OWNER, "tasks/get", &id);
        let s = m["result"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if s != "working" || t0.elapsed() > Duration::from_secs(20) {
            break s;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status, "cancelled", "{}", serve.stderr());

    // A quick call of a task-taking client is answered at once, not as a task.
    let m = call_tool(&addr, OWNER, "add", json!({"x": 40, "y": 2}), tasks_caps());
    assert_eq!(m["result"]["resultType"], "complete", "{m}");
    assert!(m["result"].to_string().contains("42"), "{m}");
    // A client that does not take tasks gets no task, and no task methods.
    let m = rpc(
        &addr,
        OTHER,
        "tasks/get",
        Some(&id),
        json!({"taskId": id}),
        json!({}),
    );
    assert_eq!(m["error"]["code"], -32021, "{m}");
}

/// Polls `tasks/get` of `id` as `token` until its status is not `working` and, when
/// `want_key_prefix` is given, one of its questions' messages starts with it.
fn poll(addr: &str, token: &str, id: &str, want: &str) -> Value {
    let t0 = Instant::now();
    loop {
        let m = rpc(
            addr,
            token,
            "tasks/get",
            Some(id),
            json!({"taskId": id}),
            ask_caps(),
        );
        let r = m["result"].clone();
        let asks = r["inputRequests"]
            .as_object()
            .map(|q| {
                q.values().any(|v| {
                    v["params"]["message"]
                        .as_str()
                        .is_some_and(|s| s.starts_with(want))
                })
            })
            .unwrap_or(false);
        if (want.is_empty() && r["status"] != "working" && r["status"] != "input_required")
            || (!want.is_empty() && asks)
        {
            return r;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "stuck: {m}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn ask_caps() -> Value {
    json!({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// The key of the pending question whose message starts with `prefix`.
fn key_of(task: &Value, prefix: &str) -> String {
    task["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, v)| {
            v["params"]["message"]
                .as_str()
                .is_some_and(|s| s.starts_with(prefix))
        })
        .map(|(k, _)| k.clone())
        .unwrap_or_else(|| panic!("no question starting {prefix:?}: {task}"))
}

#[test]
fn a_call_that_asks_becomes_a_task_answered_only_by_its_owner() {
    let Some(python) = toolhost_testkit::peers::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("plugins")).unwrap();
    // The wrapped server rated destructive: its `ask` needs toolhost's approval first.
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "[mcp.servers.ask]\ncommand = {:?}\nargs = [{:?}]\ndefault_risk = \"destructive\"\n",
            python.display().to_string(),
            toolhost_testkit::peers::mcp_fixture("asking_server.py")
                .display()
                .to_string()
        ),
    )
    .unwrap();
    let serve = serve_with_tokens(dir.path(), "plugins");
    let addr = serve.addr();
    let schema = json!({"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]});
    let ask = |token: &str| {
        call_tool(
            &addr,
            token,
            "ask",
            json!({"message": "Favourite colour?", "schema": schema.to_string()}),
            ask_caps(),
        )
    };

    // The approval is asked at once: the call is a task, its question pending.
    let created = ask(OWNER);
    assert_eq!(
        created["result"]["resultType"],
        "task",
        "{created}\n{}",
        serve.stderr()
    );
    let id = created["result"]["taskId"].as_str().unwrap().to_string();
    let task = poll(&addr, OWNER, &id, "toolhost approval:");
    assert_eq!(task["status"], "input_required", "{task}");
    let approval = key_of(&task, "toolhost approval:");
    let approve = json!({approval.clone(): {"action": "accept", "content": {"decision": "once"}}});

    // Another client cannot answer it.
    let m = rpc(
        &addr,
        OTHER,
        "tasks/update",
        Some(&id),
        json!({"taskId": id, "inputResponses": approve}),
        ask_caps(),
    );
    assert_eq!(m["error"]["code"], -32602, "{m}");
    let still = poll(&addr, OWNER, &id, "toolhost approval:");
    assert_eq!(still["status"], "input_required", "{still}");

    // Its owner approves; the wrapped server's own question follows, tagged with its name.
    let m = rpc(
        &addr,
        OWNER,
        "tasks/update",
        Some(&id),
        json!({"taskId": id, "inputResponses": approve}),
        ask_caps(),
    );
    assert_eq!(m["result"]["resultType"], "complete", "{m}");
    let task = poll(&addr, OWNER, &id, "[ask]");
    let question = key_of(&task, "[ask]");
    let m = rpc(
        &addr,
        OWNER,
        "tasks/update",
        Some(&id),
        json!({"taskId": id, "inputResponses": {question: {"action": "accept", "content": {"colour": "green"}}}}),
        ask_caps(),
    );
    assert_eq!(m["result"]["resultType"], "complete", "{m}");
    let done = poll(&addr, OWNER, &id, "");
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["result"].to_string().contains("green"), "{done}");

    // An approval answered with something that is not a form result: refused, nothing
    // runs (the wrapped server never asks), the task ends with the error.
    let created = ask(OWNER);
    let id = created["result"]["taskId"].as_str().unwrap().to_string();
    let task = poll(&addr, OWNER, &id, "toolhost approval:");
    let approval = key_of(&task, "toolhost approval:");
    rpc(
        &addr,
        OWNER,
        "tasks/update",
        Some(&id),
        json!({"taskId": id, "inputResponses": {approval: 12345}}),
        ask_caps(),
    );
    let done = poll(&addr, OWNER, &id, "");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert!(!done.to_string().contains("[ask]"), "{done}");
}

#[test]
fn the_operator_sets_which_tools_run_only_or_never_as_tasks() {
    let dir = tempfile::tempdir().unwrap();
    // `spin` ends at its deadline, well past the task threshold (0.5 s).
    let plugins = calc_and_hostile(dir.path(), "timeout_ms = 1500\n");
    std::fs::write(
        dir.path().join("toolhost.toml"),
        "[serve]\ntask_support = { add = \"required\", spin = \"forbidden\", \
         no_such_tool = \"required\" }\n",
    )
    .unwrap();
    let serve = serve_with_tokens(dir.path(), plugins.to_str().unwrap());
    let addr = serve.addr();
    let add = |caps: Value| call_tool(&addr, OWNER, "add", json!({"x": 40, "y": 2}), caps);

    // A client that does not take tasks: refused before anything runs, told which
    // extension to declare.
    let m = add(json!({}));
    assert_eq!(m["error"]["code"], -32021, "{m}\n{}", serve.stderr());
    assert!(
        m["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"]
            .is_object(),
        "{m}"
    );
    assert!(
        m["error"]["message"].as_str().unwrap().contains("`add`"),
        "{m}"
    );
    // Another tool of the same client is called as usual.
    let m = call_tool(&addr, OWNER, "multiply", json!({"x": 6, "y": 7}), json!({}));
    assert_eq!(m["result"]["resultType"], "complete", "{m}");
    assert!(m["result"].to_string().contains("42"), "{m}");

    // A client that takes tasks: a task at once, however quick the call.
    let created = add(tasks_caps());
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_string();
    let done = poll(&addr, OWNER, &id, "");
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["result"].to_string().contains("42"), "{done}");

    // A forbidden tool is answered when it ends, never as a task, even past the
    // threshold.
    let m = call_tool(&addr, OWNER, "spin", json!({}), tasks_caps());
    assert_eq!(m["result"]["resultType"], "complete", "{m}");
    assert_eq!(m["result"]["isError"], true, "{m}");
    assert!(m["result"].get("taskId").is_none(), "{m}");

    // A name no tool has is reported to the operator.
    assert!(
        serve
            .stderr()
            .contains("[serve] task_support names `no_such_tool`"),
        "{}",
        serve.stderr()
    );
}

/// A folder whose toolhost.toml wraps the toolhost serving at `addr` as a 2026-07-28
/// server (with the first bearer token), `timeout_secs` a call.
fn outer_client(addr: &str, timeout_secs: u64) -> tempfile::TempDir {
    let outer = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outer.path().join("plugins")).unwrap();
    let token = outer.path().join("token");
    write_private(&token, &format!("{OWNER}\n"));
    std::fs::write(
        outer.path().join("toolhost.toml"),
        format!(
            "[mcp.servers.inner]\nurl = \"http://{addr}/mcp\"\nprotocol = \"2026-07-28\"\n\
             bearer_token_file = {:?}\ntimeout_secs = {timeout_secs}\n\
             default_risk = \"read-only\"\n",
            token.display().to_string()
        ),
    )
    .unwrap();
    outer
}

/// `toolhost call TOOL ARGS` in `dir`, whose toolhost.toml wraps another toolhost.
fn call_through(dir: &Path, tool: &str, args: &str) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir)
        .args(["call", tool, args, "--config"])
        .arg(dir.join("toolhost.toml"))
        .arg("--plugins")
        .arg(dir.join("plugins"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env_remove("TOOLHOST_PLUGINS")
        .output()
        .unwrap()
}

#[test]
fn toolhost_follows_a_wrapped_servers_task_and_cancels_one_it_gives_up() {
    let Some(python) = toolhost_testkit::peers::python() else {
        return;
    };
    // The wrapped server: a toolhost whose `add` (calc) and `wait` (a Python server's
    // tool that sleeps as long as asked) run only as tasks, so a client that did not
    // follow tasks could not call them at all (-32021).
    let inner = tempfile::tempdir().unwrap();
    let plugins = calc_and_hostile(inner.path(), "");
    std::fs::write(
        inner.path().join("toolhost.toml"),
        format!(
            "[mcp.servers.slow]\ncommand = {:?}\nargs = [{:?}]\ndefault_risk = \"read-only\"\n\
             [serve]\ntask_support = {{ add = \"required\", wait = \"required\" }}\n",
            python.display().to_string(),
            toolhost_testkit::peers::mcp_fixture("slow_server.py")
                .display()
                .to_string()
        ),
    )
    .unwrap();
    let audit = inner.path().join("audit.jsonl");
    let serve = serve_with_tokens_and(
        inner.path(),
        plugins.to_str().unwrap(),
        &["--audit", audit.to_str().unwrap()],
    );

    // toolhost as its 2026-07-28 client: a budget of 20 s a call, and of 1 s.
    let outer = outer_client(&serve.addr(), 20);
    let hasty = outer_client(&serve.addr(), 1);

    // A task followed to its end: the result as if answered at once.
    let out = call_through(outer.path(), "add", r#"{"x": 40, "y": 2}"#);
    let said = format!(
        "{}{}\n--- inner:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        serve.stderr()
    );
    assert!(out.status.success(), "{said}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("42"),
        "{said}"
    );

    // A task that outlives the budget: given up with a timeout, and cancelled on the
    // wrapped server before the call returns (`wait` would otherwise run a minute).
    let out = call_through(hasty.path(), "wait", r#"{"seconds": 60}"#);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("did not answer"), "{said}");
    let t0 = Instant::now();
    let gave_up = loop {
        let records = std::fs::read_to_string(&audit).unwrap_or_default();
        let waited = records
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|r| r["tool"] == "wait");
        if let Some(r) = waited {
            break r;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the wrapped wait is still running:\n{records}\n{}",
            serve.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(gave_up["error_kind"], "cancelled", "{gave_up}");

    // And a good call after it.
    let out = call_through(outer.path(), "add", r#"{"x": 1, "y": 2}"#);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains('3'));
}

/// A tool that runs only as a task, called by a 2026-07-28 client: asked in rounds first
/// (toolhost's approval, then the wrapped server's question), and the retry that answers
/// the last round gets the task, whose result carries the answer. Attacked: the last
/// round's state replayed (refused: nothing runs twice, no second task), another client
/// reading the task (unknown to it); the owner still reads its result after both.
#[test]
fn a_tool_that_runs_only_as_a_task_asks_in_rounds_then_makes_the_task() {
    let Some(python) = toolhost_testkit::peers::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("plugins")).unwrap();
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "[mcp.servers.ask]\ncommand = {:?}\nargs = [{:?}]\ndefault_risk = \"destructive\"\n\
             [serve]\ntask_support = {{ ask = \"required\" }}\n",
            python.display().to_string(),
            toolhost_testkit::peers::mcp_fixture("asking_server.py")
                .display()
                .to_string()
        ),
    )
    .unwrap();
    let serve = serve_with_tokens(dir.path(), "plugins");
    let addr = serve.addr();
    let schema = json!({"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]});
    let ask = |extra: Value| {
        let mut p = json!({"name": "ask", "arguments": {"message": "Favourite colour?", "schema": schema.to_string()}});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        rpc(&addr, OWNER, "tools/call", Some("ask"), p, ask_caps())
    };

    // Round 1: toolhost's approval, a round and not a task.
    let r1 = ask(json!({}))["result"].clone();
    assert_eq!(
        r1["resultType"],
        "input_required",
        "{r1}\n{}",
        serve.stderr()
    );
    assert!(r1.get("taskId").is_none(), "{r1}");
    let approve =
        json!({"toolhost_approval": {"action": "accept", "content": {"decision": "once"}}});
    // Round 2: the wrapped server's own question, still a round.
    let r2 = ask(json!({"requestState": r1["requestState"], "inputResponses": approve}))["result"]
        .clone();
    assert_eq!(r2["resultType"], "input_required", "{r2}");
    assert!(r2.get("taskId").is_none(), "{r2}");
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
    let answer = json!({key.clone(): {"action": "accept", "content": {"colour": "green"}}});
    let last = json!({"requestState": r2["requestState"], "inputResponses": answer});

    // The answer to the last round: the task, with nothing of the rounds on it.
    let created = ask(last.clone())["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("requestState").is_none(), "{created}");
    assert!(created.get("inputRequests").is_none(), "{created}");
    let id = created["taskId"].as_str().unwrap().to_string();

    // Replayed, the last round's state is refused: the call does not run twice.
    let replay = ask(last);
    assert_eq!(replay["error"]["code"], -32602, "{replay}");
    assert!(
        replay["error"]["message"]
            .as_str()
            .unwrap()
            .contains("used already"),
        "{replay}"
    );
    // Another client: the task does not exist for it.
    let m = on_task(&addr, OTHER, "tasks/get", &id);
    assert_eq!(m["error"]["code"], -32602, "{m}");

    // The owner reads the result, which carries the answer given in the rounds.
    let done = poll(&addr, OWNER, &id, "");
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["result"].to_string().contains("green"), "{done}");
}
