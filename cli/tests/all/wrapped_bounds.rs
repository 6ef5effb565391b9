//! What a wrapped (untrusted) MCP server can make toolhost hold, through the real
//! `toolhost` binary and a real hostile MCP server (`fixtures/flood_server.py`, PyPI
//! `mcp`): 100,000 tools listed through pagination, a cursor that never ends, tools whose
//! schemas nest 70 and 100 levels or weigh more than 64 KiB among good tools, definitions
//! past the byte budget, and more distinct tool names called than `/metrics` labels.
//! After each attack a call of one of the server's good tools still works. See
//! docs/mcp.md, "What a wrapped server can make toolhost hold".
//!
//! The Python peer comes from `cargo xtask peers` (`$TOOLHOST_MCP_PYTHON`); missing, the
//! tests are skipped with a message, and fail in CI (`CI=true`).

// Helpers outside #[test] fns are not covered by clippy.toml's allow-unwrap-in-tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolhost_testkit::http::{mcp_call, mcp_session, request};
use toolhost_testkit::peers::python;
use toolhost_testkit::serve::ServeHttp;
use toolhost_testkit::show;

/// A work folder with an empty plugins folder, a `toolhost.toml` naming the flood server
/// in one attack mode, and the file the server counts its pages in.
struct Work {
    tmp: tempfile::TempDir,
}

impl Work {
    /// `[mcp.servers.flood]` in `mode`, with `extra` TOML lines added to its entry.
    fn new(python: &Path, mode: &str, extra: &str) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("plugins")).unwrap();
        let script = toolhost_testkit::workspace_root().join("cli/tests/fixtures/flood_server.py");
        let pages = tmp.path().join("pages.txt");
        std::fs::write(
            tmp.path().join("toolhost.toml"),
            format!(
                // The operator rates the server's tools (unrated MCP tools need an approval).
                "[mcp.servers.flood]\ncommand = {:?}\nargs = [{:?}]\nenv = {{ TOOLHOST_TEST_FLOOD = {mode:?}, TOOLHOST_TEST_PAGES_FILE = {:?} }}\ntimeout_secs = 30\npermissions = [\"read\"]\n{extra}",
                python.display().to_string(),
                script.display().to_string(),
                pages.display().to_string(),
            ),
        )
        .unwrap();
        Work { tmp }
    }

    fn path(&self) -> &Path {
        self.tmp.path()
    }

    fn env(&self) -> Vec<(String, String)> {
        let p = |d: &str| self.path().join(d).display().to_string();
        vec![
            ("XDG_DATA_HOME".into(), p("data")),
            ("XDG_CACHE_HOME".into(), p("cache")),
        ]
    }

    /// `toolhost ARGS --plugins ... --config ...`.
    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(args)
            .arg("--plugins")
            .arg(self.path().join("plugins"))
            .arg("--config")
            .arg(self.path().join("toolhost.toml"))
            .envs(self.env())
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("RUST_LOG")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    }

    /// `toolhost list --json`: the tool names, stderr and how long it took.
    fn list(&self) -> (BTreeSet<String>, String, Duration) {
        let t0 = Instant::now();
        let out = self.run(&["list", "--json"]);
        let took = t0.elapsed();
        assert!(out.status.success(), "{}", show(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let names = v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str().map(String::from))
            .collect();
        (
            names,
            String::from_utf8_lossy(&out.stderr).into_owned(),
            took,
        )
    }

    /// `toolhost call --json-output TOOL ARGS`: the render text of a successful call.
    fn call(&self, tool: &str, args: Value) -> String {
        let out = self.run(&["call", "--json-output", tool, &args.to_string()]);
        let v: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&out)));
        assert_eq!(v["ok"], true, "{tool} failed: {v:#}\n{}", show(&out));
        v["render"].as_str().unwrap_or_default().to_string()
    }

    /// How many tools/list pages the server served.
    fn pages(&self) -> usize {
        std::fs::read_to_string(self.path().join("pages.txt"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// A good call still works after the attack.
    fn good_call_works(&self) {
        assert_eq!(
            self.call("echo", serde_json::json!({"text": "still here"})),
            "still here"
        );
        assert_eq!(self.call("sum", serde_json::json!({"a": 40, "b": 2})), "42");
    }
}

#[test]
fn a_server_listing_100000_tools_is_cut_at_max_tools_and_no_further_page_is_fetched() {
    let Some(python) = python() else { return };
    let w = Work::new(&python, "many", "");
    let (names, stderr, took) = w.list();
    eprintln!(
        "100,000 tools listed: {} kept in {took:?}, {} pages fetched",
        names.len(),
        w.pages()
    );
    assert_eq!(names.len(), 1000, "{stderr}");
    assert!(names.contains("echo") && names.contains("t997") && !names.contains("t998"));
    assert!(
        stderr.contains(
            "MCP server `flood` lists more than 1000 tools; only the first 1000 are used (max_tools)"
        ),
        "{stderr}"
    );
    // Page 1 holds `echo`, `sum` and 100 tools, every later page 100: the 1,001st tool is
    // on page 10, and no page after it is asked for.
    assert_eq!(w.pages(), 10);
    assert!(took < Duration::from_secs(20), "{took:?}");
    w.good_call_works();

    // `max_tools` of the server's entry.
    let w = Work::new(&python, "many", "max_tools = 150\n");
    let (names, stderr, _) = w.list();
    assert_eq!(names.len(), 150, "{stderr}");
    assert!(stderr.contains("lists more than 150 tools; only the first 150 are used (max_tools)"));
    assert_eq!(w.pages(), 2);
    w.good_call_works();
}

#[test]
fn a_cursor_that_never_ends_stops_at_the_page_limit() {
    let Some(python) = python() else { return };
    let w = Work::new(&python, "empty", "");
    let (names, stderr, took) = w.list();
    eprintln!(
        "endless cursor: {} tools in {took:?}, {} pages",
        names.len(),
        w.pages()
    );
    assert_eq!(
        names,
        BTreeSet::from(["echo".to_string(), "sum".to_string()])
    );
    assert!(
        stderr.contains("MCP server `flood` lists tools on more than 1000 pages")
            && stderr.contains("(MAX_TOOL_PAGES)"),
        "{stderr}"
    );
    assert_eq!(w.pages(), 1000);
    w.good_call_works();
}

#[test]
fn tools_nested_too_deep_or_too_large_are_refused_by_name_and_the_rest_are_listed() {
    let Some(python) = python() else { return };
    let w = Work::new(&python, "deep", "");
    let (names, stderr, took) = w.list();
    eprintln!("deep schemas: tools/list in {took:?}, kept {names:?}");
    // The server's answer once waited for the 30 s timeout and lost every tool.
    assert!(took < Duration::from_secs(10), "{took:?}\n{stderr}");
    let want: BTreeSet<String> = ["echo", "sum", "t1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(names, want, "{stderr}");
    for tool in ["deep70", "deep100", "items70", "deep_output"] {
        assert!(
            stderr.contains(&format!(
                "MCP server `flood`: tool `{tool}` refused: its definition nests deeper than 32 levels (MAX_TOOL_DEPTH)"
            )),
            "{tool}: {stderr}"
        );
    }
    assert!(
        stderr.contains("MCP server `flood`: tool `huge` refused: its definition is ")
            && stderr.contains("more than 65536 (MAX_TOOL_BYTES)"),
        "{stderr}"
    );
    w.good_call_works();
}

#[test]
fn definitions_past_the_byte_budget_are_dropped() {
    let Some(python) = python() else { return };
    let w = Work::new(&python, "fat", "max_tools_bytes = 200000\n");
    let (names, stderr, _) = w.list();
    // About 4 KiB a tool: some 48 of the 402 fit in 200,000 bytes.
    assert!(
        (30..80).contains(&names.len()),
        "{} tools\n{stderr}",
        names.len()
    );
    assert!(names.contains("echo") && names.contains("t0"));
    assert!(
        stderr.contains(
            "MCP server `flood`: its tool definitions pass 200000 bytes (max_tools_bytes)"
        ),
        "{stderr}"
    );
    w.good_call_works();
}

/// `/metrics` gives at most 500 tools a label of their own: 650 tools of the server
/// called through `serve --http`, the calls past the 500th name count under
/// `tool="(other)"`. (20,000 names through the listener: `host/src/admin.rs`'s tests.)
#[test]
fn calls_of_more_tools_than_the_label_cap_count_under_other() {
    let Some(python) = python() else { return };
    let w = Work::new(&python, "many", "max_tools = 700\n");
    let env = w.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let plugins = w.path().join("plugins");
    let config = w.path().join("toolhost.toml");
    let server = ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        w.path(),
        &[
            "--no-audit",
            "--no-watch",
            "--admin",
            "127.0.0.1:0",
            "--plugins",
            plugins.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        &env,
        "admin endpoints at",
        Duration::from_secs(60),
    );
    let admin = server.admin_addr().unwrap();
    let t0 = Instant::now();
    while request(&admin, "GET", "/readyz", &[], "").unwrap().status != 200 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{}",
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mcp = server.addr();
    let session = mcp_session(&mcp).unwrap();
    let t0 = Instant::now();
    for i in 0..650 {
        let r = mcp_call(&mcp, &session, &format!("t{i}"), "{}").unwrap();
        assert!(r.body.contains(&format!("\"t{i}\"")), "t{i}: {r:?}");
    }
    let calls = t0.elapsed();
    let metrics = request(&admin, "GET", "/metrics", &[], "").unwrap().body;
    let labels: BTreeSet<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("toolhost_tool_calls_total{"))
        .filter_map(|l| l.split("tool=\"").nth(1)?.split('"').next())
        .collect();
    eprintln!(
        "650 names called in {calls:?}: /metrics {} bytes, {} tool labels",
        metrics.len(),
        labels.len()
    );
    assert_eq!(labels.len(), 501, "{metrics}");
    let other: f64 = metrics
        .lines()
        .find(|l| l.starts_with("toolhost_tool_calls_total{") && l.contains("tool=\"(other)\""))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap();
    assert_eq!(other, 150.0, "{metrics}");
    assert!(
        server.stderr().contains("(MAX_TOOL_LABELS)"),
        "{}",
        server.stderr()
    );
    let r = mcp_call(&mcp, &session, "echo", r#"{"text": "still here"}"#).unwrap();
    assert!(r.body.contains("still here"), "{r:?}");
}
