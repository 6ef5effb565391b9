//! Progressive discovery through the real binary: `serve --discovery search` over the calc
//! plugin, server-everything and a Python server whose `ask` needs an
//! approval.
//!
//! - `tools/list` holds `search_tools`, `call_tool` and the pinned tool alone;
//! - `search_tools` finds a wrapped server's tool and a plugin's by what they do and
//!   returns their full definitions;
//! - `call_tool` runs the whole pipeline: the approval is put to the client (a 2026-07-28
//!   round), a declined one denies the call, and the audit trail names the inner tool;
//! - a tenant finds and reaches only its own tools: another's is an unknown tool to it,
//!   in search and through `call_tool`;
//! - hostile queries (1 MB, empty, another script, a bad limit) are clear errors, and a
//!   good search still works after them;
//! - over stdio (the older revision), a plugin dropped into the watched folder is
//!   announced with `list_changed` and found by the next search.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_testkit::http::{mcp_2026_as, rpc_message};
use toolhost_testkit::jsonrpc::{StdioClient, tool_names};
use toolhost_testkit::{built_plugins, peers};

const ADMIN: &str = "admin-token-0123456789abcdef-0123456789abcd";
const ANALYST: &str = "analyst-token-0123456789abcdef-0123456789a";

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// `dir/plugins` with calc and files; `dir/toolhost.toml` wrapping server-everything
/// (rated read-only) and the asking server (destructive: `ask` needs an approval), with
/// `extra` appended to `[serve]`.
fn setup(dir: &Path, extra: &str) -> Option<PathBuf> {
    let everything = peers::everything()?;
    let python = peers::python()?;
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let built = built_plugins(&["calc.wasm"]).expect("the built plugins");
    for f in ["calc.wasm", "calc.toml"] {
        std::fs::copy(built.join(f), plugins.join(f)).unwrap();
    }
    std::fs::write(
        dir.join("toolhost.toml"),
        format!(
            "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
             default_risk = \"read-only\"\n\n[mcp.servers.ask]\ncommand = {:?}\nargs = [{:?}]\n\
             default_risk = \"destructive\"\n\n[serve]\n{extra}",
            everything.display().to_string(),
            python.display().to_string(),
            peers::mcp_fixture("asking_server.py").display().to_string(),
        ),
    )
    .unwrap();
    Some(plugins)
}

/// `serve --http` over [`setup`] with `serve_extra` in `[serve]`, an admin token and the
/// `analyst` client seeing `analyst_tools` (a TOML array), auditing to `dir/audit.jsonl`.
fn serve_search(
    dir: &Path,
    serve_extra: &str,
    analyst_tools: &str,
) -> Option<(toolhost_testkit::serve::ServeHttp, PathBuf)> {
    let analyst_tokens = dir.join("analyst.tokens");
    write_private(&analyst_tokens, &format!("{ANALYST}\n"));
    let extra = format!(
        "{serve_extra}[serve.clients.analyst]\ntoken_file = {:?}\ntools = {analyst_tools}\n",
        analyst_tokens.display().to_string()
    );
    let plugins = setup(dir, &extra)?;
    let admin_tokens = dir.join("admin.tokens");
    write_private(&admin_tokens, &format!("{ADMIN}\n"));
    let audit = dir.join("audit.jsonl");
    let cache = dir.join("cache").display().to_string();
    let serve = toolhost_testkit::serve::ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        dir,
        &[
            "--no-watch",
            "--plugins",
            plugins.to_str().unwrap(),
            "--auth-token-file",
            admin_tokens.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
        ],
        &[("XDG_CACHE_HOME", &cache)],
        "all tools loaded",
        Duration::from_secs(180),
    );
    Some((serve, audit))
}

/// One 2026-07-28 request as the holder of `token`: its JSON-RPC message.
fn rpc(addr: &str, token: &str, method: &str, name: Option<&str>, params: Value) -> Value {
    let caps = json!({"elicitation": {"form": {}}});
    let r = mcp_2026_as(addr, Some(token), method, name, params, caps).unwrap();
    rpc_message(&r).unwrap_or_else(|| panic!("no message: {} {}", r.head, r.body))
}

/// `call_tool {name, arguments}` as the holder of `token`: its JSON-RPC message.
fn through(addr: &str, token: &str, name: &str, arguments: Value) -> Value {
    rpc(
        addr,
        token,
        "tools/call",
        Some("call_tool"),
        json!({"name": "call_tool", "arguments": {"name": name, "arguments": arguments}}),
    )
}

fn search(addr: &str, token: &str, args: Value) -> Value {
    let m = rpc(
        addr,
        token,
        "tools/call",
        Some("search_tools"),
        json!({"name": "search_tools", "arguments": args}),
    );
    m["result"].clone()
}

fn found(result: &Value) -> Vec<String> {
    result["structuredContent"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {result}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_search_mode_client_finds_and_calls_through_the_whole_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let Some((serve, audit)) = serve_search(
        dir.path(),
        "discovery = \"search\"\npinned = [\"add\"]\n\n",
        r#"["add", "mean", "get-sum"]"#,
    ) else {
        return;
    };
    let addr = serve.addr();

    // The list: the two tools of search mode and the pinned one, nothing else.
    let list = rpc(&addr, ADMIN, "tools/list", None, json!({}));
    let names = tool_names(&list["result"]["tools"]);
    assert_eq!(
        names.iter().map(String::as_str).collect::<Vec<_>>(),
        ["add", "call_tool", "search_tools"],
        "{list}"
    );

    // A wrapped server's tool and a plugin's, found by what they do, with their full
    // definitions.
    let r = search(
        &addr,
        ADMIN,
        json!({"query": "echo back a message", "limit": 3}),
    );
    assert_eq!(found(&r).first().map(String::as_str), Some("echo"), "{r}");
    let echo = &r["structuredContent"]["tools"][0];
    assert!(
        echo["inputSchema"]["properties"]["message"].is_object(),
        "{echo}"
    );
    assert!(echo["description"].as_str().unwrap().len() > 5, "{echo}");
    let r = search(
        &addr,
        ADMIN,
        json!({"query": "divide one number by another"}),
    );
    assert_eq!(found(&r).first().map(String::as_str), Some("divide"), "{r}");
    // An exact name.
    let r = search(&addr, ADMIN, json!({"query": "get-sum", "limit": 1}));
    assert_eq!(found(&r), ["get-sum"], "{r}");

    // call_tool runs the tool as a direct call would.
    let m = through(&addr, ADMIN, "echo", json!({"message": "through"}));
    assert!(text(&m["result"]).contains("through"), "{m}");
    let m = through(&addr, ADMIN, "divide", json!({"x": 1, "y": 0}));
    assert_eq!(m["result"]["isError"], true, "{m}");
    // Invalid inner arguments are the inner tool's validation error.
    let m = through(&addr, ADMIN, "add", json!({"x": "one"}));
    assert_eq!(
        m["result"]["structuredContent"]["error"], "invalid_arguments",
        "{m}"
    );
    assert!(text(&m["result"]).contains("'add'"), "{m}");

    // An approval is put to the client, for the inner tool; declined, the call is denied
    // and never reaches the server.
    let ask = json!({"name": "call_tool", "arguments": {"name": "ask", "arguments": {"message": "Colour?", "schema": "{}"}}});
    let m = rpc(&addr, ADMIN, "tools/call", Some("call_tool"), ask.clone());
    let r1 = &m["result"];
    assert_eq!(r1["resultType"], "input_required", "{m}");
    let q = &r1["inputRequests"]["toolhost_approval"];
    let message = q["params"]["message"].as_str().unwrap();
    assert!(message.contains("ask"), "{message}");
    let mut declined = ask.clone();
    declined["requestState"] = r1["requestState"].clone();
    declined["inputResponses"] = json!({"toolhost_approval": {"action": "decline"}});
    let m = rpc(&addr, ADMIN, "tools/call", Some("call_tool"), declined);
    assert_eq!(m["result"]["isError"], true, "{m}");
    assert_eq!(
        m["result"]["structuredContent"]["error"], "permission_denied",
        "{m}"
    );

    // A tenant: its own tools are found and called; another's is unknown to it, by
    // search and by call alike (the same answer as a name nobody has).
    let r = search(&addr, ANALYST, json!({"query": "echo back a message"}));
    assert!(!found(&r).contains(&"echo".to_string()), "{r}");
    let r = search(&addr, ANALYST, json!({"query": "sum of two numbers"}));
    let sums = found(&r);
    assert!(
        sums.contains(&"get-sum".to_string()) && sums.contains(&"add".to_string()),
        "{r}"
    );
    assert!(
        sums.iter()
            .all(|n| ["add", "mean", "get-sum"].contains(&n.as_str())),
        "{r}"
    );
    let call = |token: &str, name: &str| through(&addr, token, name, json!({"message": "x"}));
    let hidden = call(ANALYST, "echo");
    let missing = call(ANALYST, "no-such-tool");
    assert_eq!(
        hidden["result"]["structuredContent"]["error"], "not_found",
        "{hidden}"
    );
    assert_eq!(
        text(&hidden["result"]).replace("echo", "X"),
        text(&missing["result"]).replace("no-such-tool", "X")
    );
    let m = through(&addr, ANALYST, "get-sum", json!({"a": 40, "b": 2}));
    assert!(text(&m["result"]).contains("42"), "{m}");

    // Hostile queries: clear errors, nothing else disturbed.
    let big = "read ".repeat(200_000);
    for (args, why) in [
        (json!({"query": big}), "bytes"),
        (json!({"query": "   "}), "empty"),
        (json!({}), "required"),
        (json!({"query": 7}), "must be a string"),
        (json!({"query": "echo", "limit": 0}), "from 1 to"),
        (json!({"query": "echo", "limit": 1e9}), "from 1 to"),
    ] {
        let r = search(&addr, ADMIN, args.clone());
        assert_eq!(r["isError"], true, "{args}: {r}");
        assert!(text(&r).contains(why), "{why}: {r}");
    }
    let r = search(&addr, ADMIN, json!({"query": "メッセージを返す 🔁"}));
    assert_ne!(r["isError"], true, "{r}");
    let r = search(&addr, ADMIN, json!({"query": "echo"}));
    assert_eq!(found(&r).first().map(String::as_str), Some("echo"), "{r}");

    // The audit trail names the inner tools and their clients.
    drop(serve);
    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let of = |tool: &str| records.iter().filter(|r| r["tool"] == tool).count();
    assert!(
        of("echo") >= 1 && of("get-sum") >= 1 && of("ask") >= 1,
        "{records:?}"
    );
    assert_eq!(of("call_tool") + of("search_tools"), 0, "{records:?}");
    assert!(
        records
            .iter()
            .any(|r| r["tool"] == "get-sum" && r["client"] == "analyst"),
        "{records:?}"
    );
}

/// Over stdio (the 2025 revision) with the folder watched: a plugin dropped in while
/// serving is announced with `list_changed`, and the next search finds it.
#[test]
fn the_index_follows_the_plugins_folder_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let built = built_plugins(&["calc.wasm", "fetch.wasm"]).expect("the built plugins");
    for f in ["calc.wasm", "calc.toml"] {
        std::fs::copy(built.join(f), plugins.join(f)).unwrap();
    }
    let mut client = StdioClient::spawn(
        std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .current_dir(dir.path())
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .args(["serve", "--discovery", "search", "--no-audit", "--plugins"])
            .arg(&plugins)
            .stderr(std::process::Stdio::null()),
    );
    client.initialize("discovery-test");
    assert_eq!(
        client.list(1).into_iter().collect::<Vec<_>>(),
        ["call_tool", "search_tools"]
    );
    let search = |client: &mut StdioClient, id: u64, q: &str| {
        let r = client.call(id, "search_tools", json!({"query": q}));
        found(&r["result"])
    };
    assert_eq!(
        search(&mut client, 2, "multiply")
            .first()
            .map(String::as_str),
        Some("multiply")
    );
    assert!(!search(&mut client, 3, "fetch a web page url").contains(&"http_get".to_string()));
    let before = client.count("notifications/tools/list_changed");
    for f in ["fetch.wasm", "fetch.toml"] {
        std::fs::copy(built.join(f), plugins.join(f)).unwrap();
    }
    // Wait for the announcement (bounded, so a server that never sends it fails).
    let mut id = 10;
    let t0 = std::time::Instant::now();
    while client.count("notifications/tools/list_changed") == before {
        assert!(t0.elapsed() < Duration::from_secs(120), "no list_changed");
        std::thread::sleep(Duration::from_millis(200));
        id += 1;
        client.list(id);
    }
    let hits = search(&mut client, 99, "fetch a web page url");
    assert_eq!(
        hits.first().map(String::as_str),
        Some("http_get"),
        "{hits:?}"
    );
}

/// `serve --discovery search --code-mode`: `run_code` is listed beside the two search
/// tools, a chain of a plugin's and a wrapped server's tools runs in one call with every
/// inner call audited under the run's id, and a tenant's script reaches only its own
/// tools.
#[test]
fn a_chain_runs_in_one_run_code_call_and_a_tenant_script_sees_only_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let Some((serve, audit)) = serve_search(
        dir.path(),
        "discovery = \"search\"\ncode_mode = true\n\n",
        r#"["add", "multiply", "run_code"]"#,
    ) else {
        return;
    };
    let addr = serve.addr();
    let list = rpc(&addr, ADMIN, "tools/list", None, json!({}));
    let names = tool_names(&list["result"]["tools"]);
    assert_eq!(
        names.iter().map(String::as_str).collect::<Vec<_>>(),
        ["call_tool", "run_code", "search_tools"],
        "{list}"
    );
    let run = |token: &str, code: &str| {
        rpc(
            &addr,
            token,
            "tools/call",
            Some("run_code"),
            json!({"name": "run_code", "arguments": {"code": code}}),
        )["result"]
            .clone()
    };

    // A plugin's tools and a wrapped server's, chained and in parallel, in one call.
    let r = run(
        ADMIN,
        r#"const s = await tools.add({x: 2, y: 3});
           const [p, e] = await Promise.all([tools.multiply({x: s, y: 10}), tools.echo({message: "hi"})]);
           console.log("sum", s);
           return {s, p, e};"#,
    );
    assert_ne!(r["isError"], true, "{r}\n{}", serve.stderr());
    let out = &r["structuredContent"];
    assert_eq!(out["result"]["s"], 5.0, "{r}");
    assert_eq!(out["result"]["p"], 50.0, "{r}");
    assert!(out["result"]["e"].to_string().contains("hi"), "{r}");
    assert_eq!(out["console"], json!(["sum 5"]), "{r}");

    // A tenant's script: its own tools work, another's are not there.
    let r = run(ANALYST, "return await tools.multiply({x: 6, y: 7});");
    assert_eq!(r["structuredContent"]["result"], 42.0, "{r}");
    let r = run(
        ANALYST,
        r#"const seen = Object.keys(tools).sort();
           let echo = "";
           try { await tools.echo({message: "x"}); } catch (e) { echo = String(e); }
           return {seen, echo};"#,
    );
    assert_eq!(
        r["structuredContent"]["result"]["seen"],
        json!(["add", "multiply"]),
        "{r}"
    );
    assert!(
        r["structuredContent"]["result"]["echo"]
            .as_str()
            .unwrap()
            .contains("not a callable"),
        "{r}"
    );

    // A hostile script ends in a clear error; the next run works.
    let r = run(ADMIN, "while (true) {}");
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        text(&r).contains("fuel") || text(&r).contains("longer than"),
        "{r}"
    );
    let r = run(ADMIN, "return await tools.add({x: 1, y: 1});");
    assert_eq!(r["structuredContent"]["result"], 2.0, "{r}");
    // A failed run: the reason, then what the script printed before it failed.
    let r = run(
        ADMIN,
        "console.log('step one done'); throw new Error('step two failed');",
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        text(&r).contains("step two failed") && text(&r).contains("console:\nstep one done"),
        "{r}"
    );

    // With run_code at hand, search_tools answers in TypeScript too, for this client's
    // tools alone.
    let found = rpc(
        &addr,
        ANALYST,
        "tools/call",
        Some("search_tools"),
        json!({"name": "search_tools", "arguments": {"query": "multiply two numbers"}}),
    )["result"]["structuredContent"]
        .clone();
    let ts = found["typescript"].as_str().unwrap_or_default();
    assert!(ts.starts_with("declare const tools: {"), "{found}");
    assert!(ts.contains("  multiply(args: {"), "{found}");
    assert!(!ts.contains("echo"), "{found}");

    // The audit trail: each inner call is a record of its own, its id under the run's.
    drop(serve);
    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let runs: Vec<&Value> = records.iter().filter(|r| r["tool"] == "run_code").collect();
    assert_eq!(runs.len(), 6, "{records:?}");
    // The run's session and call id name its inner calls: `CALL_ID/N` in that session.
    let first = runs[0]["call_id"].as_str().unwrap();
    let session = &runs[0]["session"];
    let inner: Vec<&str> = records
        .iter()
        .filter(|r| &r["session"] == session)
        .filter(|r| {
            r["call_id"]
                .as_str()
                .is_some_and(|c| c.starts_with(&format!("{first}/")))
        })
        .map(|r| r["tool"].as_str().unwrap())
        .collect();
    assert_eq!(inner.len(), 3, "{records:?}");
    for t in ["add", "multiply", "echo"] {
        assert!(inner.contains(&t), "{inner:?}");
    }
    assert!(
        records
            .iter()
            .any(|r| r["tool"] == "multiply" && r["client"] == "analyst"),
        "{records:?}"
    );
}
