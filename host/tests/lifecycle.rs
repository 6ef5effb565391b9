//! The start of `toolhost serve` on a cold compile cache (a fresh `XDG_CACHE_HOME`), with
//! the real binary and the built example plugins (`cargo xtask plugins`):
//!
//! - over stdio, `initialize` and a first `tools/list` are answered while the large
//!   components still compile: the first list lacks tools that a later one has, and
//!   `notifications/tools/list_changed` announces them; once loading is done an unknown
//!   tool fails with the usual "not registered" error, and the final list is the one
//!   `toolhost list` gives (same names, same collision outcome);
//! - a `tools/call` sent right after `initialize` waits for its tool instead of failing
//!   as unknown (the tool's plugin is registered last, after the large JS component);
//! - over Streamable HTTP, a client that cached the first list sees the late tools, which
//!   it only fetches again on `list_changed`.
//!
//! Behaviour is asserted, never time: how fast the answers come is measured separately
//! (docs/benchmarks.md).

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// The built example plugins. Missing: a failure in CI, a skip locally.
fn plugins() -> Option<PathBuf> {
    let p = std::env::var_os("TOOLHOST_TEST_PLUGINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| toolhost_testkit::workspace_root().join("target/plugins"));
    let needed = [p.join("calc.wasm"), p.join("js_http.wasm")];
    if needed.iter().all(|f| f.exists()) {
        return Some(p);
    }
    let msg = format!(
        "built plugins missing under {} (calc.wasm, js_http.wasm); run `cargo xtask plugins`",
        p.display()
    );
    if toolhost_testkit::peers::in_ci() {
        panic!("{msg}");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

/// A work folder: `plugins/` (copies of the chosen components and their request files)
/// and `cache/` (the empty, private `XDG_CACHE_HOME`: every component compiles).
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    /// Copies `files` (`(source stem, name in the folder)`) from the built plugins.
    fn new(from: &Path, files: &[(&str, &str)]) -> Work {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        std::fs::create_dir(dir.path().join("cache")).unwrap();
        for (stem, name) in files {
            for ext in ["wasm", "toml"] {
                let src = from.join(format!("{stem}.{ext}"));
                if src.exists() {
                    std::fs::copy(&src, dir.path().join(format!("plugins/{name}.{ext}"))).unwrap();
                }
            }
        }
        Work { dir }
    }

    /// Every top-level component of the built plugins, under its own name.
    fn examples(from: &Path) -> Work {
        let stems: Vec<String> = std::fs::read_dir(from)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
            .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
            .collect();
        let pairs: Vec<(&str, &str)> = stems.iter().map(|s| (s.as_str(), s.as_str())).collect();
        Work::new(from, &pairs)
    }

    fn plugins(&self) -> PathBuf {
        self.dir.path().join("plugins")
    }

    /// `toolhost ARGS` in the work folder, with its cache and plugins.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        cmd.current_dir(self.dir.path())
            .args(args)
            .arg("--plugins")
            .arg(self.plugins())
            .env("XDG_CACHE_HOME", self.dir.path().join("cache"))
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("RUST_LOG");
        cmd
    }
}

/// `toolhost serve --stdio` driven over raw JSON-RPC lines.
struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    /// Notifications seen so far, by method, in order of arrival.
    notifications: Vec<String>,
}

impl StdioServer {
    fn start(work: &Work) -> StdioServer {
        let mut child = work
            .command(&["serve", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // Stdout carries protocol only: every line is a JSON-RPC message.
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON-RPC on stdout ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        StdioServer {
            child,
            stdin,
            lines: rx,
            notifications: Vec::new(),
        }
    }

    fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Reads until the response with `id`, booking notifications on the way. Bounded
    /// only so that a hung server fails the test instead of hanging it.
    fn response(&mut self, id: u64) -> Value {
        loop {
            let v = self
                .lines
                .recv_timeout(Duration::from_secs(600))
                .expect("the server answered nothing for 10 minutes, or exited");
            if v["id"] == json!(id) {
                return v;
            }
            if let Some(m) = v["method"].as_str() {
                self.notifications.push(m.to_string());
            }
        }
    }

    fn initialize(&mut self) -> Value {
        self.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "lifecycle-test", "version": "0"}}}),
        );
        let init = self.response(1);
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        init
    }

    fn list(&mut self, id: u64) -> BTreeSet<String> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        let r = self.response(id);
        names(&r["result"]["tools"])
    }

    fn call(&mut self, id: u64, tool: &str, args: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}));
        self.response(id)
    }

    fn list_changed_count(&self) -> usize {
        self.notifications
            .iter()
            .filter(|m| *m == "notifications/tools/list_changed")
            .count()
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn names(tools: &Value) -> BTreeSet<String> {
    tools
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The tool names `toolhost list --json` gives for the work folder (a synchronous load).
fn listed(work: &Work) -> BTreeSet<String> {
    let out = work.command(&["list", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    names(&v["tools"])
}

#[test]
fn stdio_answers_while_plugins_compile_and_announces_the_rest() {
    let Some(from) = plugins() else { return };
    let work = Work::examples(&from);
    let mut s = StdioServer::start(&work);
    let init = s.initialize();
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"], true,
        "{init}"
    );
    let first = s.list(2);
    let changed_before = s.list_changed_count();

    // An unknown tool waits for the loading to finish, then fails as usual.
    let unknown = s.call(3, "no_such_tool_xyz", json!({}));
    assert_eq!(unknown["result"]["isError"], true, "{unknown}");
    assert_eq!(
        unknown["result"]["structuredContent"]["error"], "not_found",
        "{unknown}"
    );
    let text = unknown["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("is not registered"), "{unknown}");

    // Loading is done: the full list.
    let last = s.list(4);
    assert!(
        last.is_superset(&first) && last.len() > first.len(),
        "the first tools/list should lack tools still compiling:\nfirst {first:?}\nlast {last:?}"
    );
    assert!(
        s.list_changed_count() > changed_before,
        "no notifications/tools/list_changed after the first tools/list: {:?}",
        s.notifications
    );
    // A second unknown call fails at once the same way (nothing is loading any more).
    let again = s.call(5, "no_such_tool_xyz", json!({}));
    assert_eq!(again["result"]["structuredContent"]["error"], "not_found");
    drop(s);

    // The same tools (and names after collisions) as a synchronous load.
    assert_eq!(last, listed(&work));
}

#[test]
fn a_call_sent_right_after_initialize_waits_for_its_tool() {
    let Some(from) = plugins() else { return };
    // `add` comes from the last file by name, registered only after the component
    // before it has compiled. (Not the large JS one: the wait is bounded by the default
    // call timeout, 60 s, which a debug-build JS compile on a loaded machine can exceed.)
    let work = Work::new(&from, &[("fetch", "fetch"), ("calc", "zz_calc")]);
    let mut s = StdioServer::start(&work);
    s.initialize();
    let call = s.call(2, "add", json!({"x": 40, "y": 2}));
    assert_ne!(call["result"]["isError"], true, "{call}");
    let text = call["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("42"), "{call}");
}

#[test]
fn http_clients_learn_of_late_tools_through_list_changed() {
    let Some(from) = plugins() else { return };
    let work = Work::new(&from, &[("calc", "calc"), ("js_http", "js_http")]);
    let port = toolhost_testkit::free_port();
    struct Kill(Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut server = Kill(
        work.command(&["serve", "--http", &format!("127.0.0.1:{port}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    // It binds before loading anything.
    let mut up = false;
    for _ in 0..600 {
        assert!(
            server.0.try_wait().unwrap().is_none(),
            "toolhost serve --http exited"
        );
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(up, "toolhost serve --http did not listen on {port}");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use toolhost::tools::{McpClient, McpTransport};
        let client = McpClient::new(
            "served",
            McpTransport::http(format!("http://127.0.0.1:{port}/mcp")),
        )
        .with_timeout(600);
        client.connect().await.unwrap();
        // The client caches this list and fetches it again only on list_changed.
        let first: BTreeSet<String> = client
            .tools()
            .await
            .unwrap()
            .iter()
            .map(|t| t.name.clone())
            .collect();
        // Waits for the loading to finish, then fails as unknown.
        let err = client.call_tool("no_such_tool_xyz", json!({})).await;
        assert!(format!("{err:?}").contains("is not registered"), "{err:?}");
        // Bounded only so that a missing notification fails the test.
        let mut last = first.clone();
        for _ in 0..600 {
            last = client
                .tools()
                .await
                .unwrap()
                .iter()
                .map(|t| t.name.clone())
                .collect();
            if last.len() > first.len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            last.is_superset(&first) && last.len() > first.len(),
            "the cached list never grew (no list_changed?):\nfirst {first:?}\nlast {last:?}"
        );
        let _ = client.close().await;
    });
}
