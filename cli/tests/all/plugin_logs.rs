//! A WASM plugin's `host.log` reaches the MCP client of `toolhost serve` as
//! `notifications/message`: only once the client set a level, at that level or above,
//! under the logger `plugin/tool`, cleaned, bounded and rate-limited. The flood comes from
//! a real hostile component (`tests/fixtures/hostile_fs`, tool `log_flood`: forged,
//! oversized lines with terminal escapes, in a loop), followed by a good call.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};
use toolhost_testkit::jsonrpc::StdioClient;
use toolhost_testkit::{built_plugins, temp_dir};

/// Calls `tool` and returns its response and the `notifications/message` params that came
/// before it.
fn call_collecting_logs(
    c: &mut StdioClient,
    id: u64,
    tool: &str,
    args: Value,
) -> (Value, Vec<Value>) {
    c.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}}));
    let mut logs = Vec::new();
    loop {
        let m = c.next_message();
        if m["id"] == json!(id) {
            return (m, logs);
        }
        if m["method"] == "notifications/message" {
            logs.push(m["params"].clone());
        }
    }
}

#[test]
fn plugin_logs_reach_the_client_bounded_and_only_when_asked() {
    let Some(built) = built_plugins(&["calc.wasm", "fixtures/hostile_fs.wasm"]) else {
        return;
    };
    let dir = temp_dir("plugin-logs");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(built.join("calc.wasm"), plugins.join("calc.wasm")).unwrap();
    std::fs::copy(
        built.join("fixtures/hostile_fs.wasm"),
        plugins.join("hostile_fs.wasm"),
    )
    .unwrap();
    std::fs::write(dir.join("toolhost.toml"), "").unwrap();
    let mut c = StdioClient::spawn(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .current_dir(&dir)
            .args(["serve", "--stdio", "--no-audit", "--no-watch", "--plugins"])
            .arg(&plugins)
            .stderr(Stdio::null()),
    );
    c.initialize("plugin-logs-test");
    // Components compile in the background: list until both plugins are there.
    let t0 = Instant::now();
    let mut id = 100;
    let tools = loop {
        id += 1;
        let tools = c.list(id);
        if tools.iter().any(|t| t.ends_with("log_flood"))
            && tools.iter().any(|t| t.ends_with("add"))
        {
            break tools;
        }
        assert!(
            t0.elapsed().as_secs() < 120,
            "plugins not loaded: {tools:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let flood = tools
        .iter()
        .find(|t| t.ends_with("log_flood"))
        .cloned()
        .unwrap_or_else(|| panic!("no log_flood tool in {tools:?}"));

    // No level set: nothing is sent.
    let (r, logs) = call_collecting_logs(&mut c, 2, &flood, json!({"count": 50, "size": 10}));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    assert!(
        logs.is_empty(),
        "{} messages before any logging/setLevel",
        logs.len()
    );

    // Level set: a flood of 5000 forged 64 KiB lines arrives bounded.
    let set = c.request(3, "logging/setLevel", json!({"level": "error"}));
    assert!(set.get("error").is_none(), "{set}");
    let t0 = Instant::now();
    let (r, mut logs) =
        call_collecting_logs(&mut c, 4, &flood, json!({"count": 5000, "size": 65536}));
    // Log lines are passed on by the session's own task and may trail the result: a
    // `ping` answered after them collects the rest (the task keeps their order).
    std::thread::sleep(std::time::Duration::from_millis(300));
    c.send(json!({"jsonrpc": "2.0", "id": 6, "method": "ping"}));
    loop {
        let m = c.next_message();
        if m["id"] == json!(6) {
            break;
        }
        if m["method"] == "notifications/message" {
            logs.push(m["params"].clone());
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    eprintln!(
        "{} of 5000 flooded plugin log lines reached the client in {elapsed:.2} s",
        logs.len()
    );
    // The burst passes (1000 lines leave the sandbox, at most 256 wait), the rest is cut.
    assert!(logs.len() >= 50, "{} messages", logs.len());
    let cap =
        toolhost::mcp::server::LOG_BURST + toolhost::mcp::server::LOG_PER_SECOND * elapsed + 1.0;
    assert!(
        (logs.len() as f64) <= cap,
        "{} messages (cap {cap:.0})",
        logs.len()
    );
    for l in &logs {
        assert_eq!(l["level"], "error");
        assert!(
            l["logger"]
                .as_str()
                .is_some_and(|s| s.ends_with("/log_flood")),
            "{}",
            l["logger"]
        );
        let data = l["data"].as_str().unwrap_or_default();
        assert!(
            !data.contains('\u{1b}') && !data.contains('\r') && !data.contains('\n'),
            "{data:?}"
        );
        assert!(
            data.len() <= toolhost::mcp::server::MAX_LOG_DATA_BYTES + 100,
            "{} bytes",
            data.len()
        );
    }

    // A good call still works.
    let add = tools.iter().find(|t| t.ends_with("add")).cloned().unwrap();
    let r = c.call(5, &add, json!({"x": 2, "y": 40}));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    assert!(r.to_string().contains("42"), "{r}");
}
