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
//!   it only fetches again on `list_changed`;
//! - a tool answers on baseline code first, and the same server keeps answering once the
//!   optimized builds are compiled in the background, cached and swapped in.
//!
//! Behaviour is asserted, never time: how fast the answers come is measured separately
//! (docs/benchmarks.md).

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_testkit::built_plugins;
use toolhost_testkit::jsonrpc::{StdioClient, tool_names};

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
            // The audit trail of `serve` goes to the work folder, not the user's.
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("RUST_LOG");
        cmd
    }
}

/// `toolhost serve --stdio` in the work folder, driven over raw JSON-RPC lines, with
/// `--list-wait 0s`: a `tools/list` during the load answers at once with what is ready,
/// so these tests see the load from outside while it happens (the default wait, which
/// lists a quick load whole, is tested in tests/cli.rs).
fn serve_stdio(work: &Work) -> StdioClient {
    StdioClient::spawn(
        work.command(&["serve", "--stdio", "--list-wait", "0s"])
            .stderr(Stdio::inherit()),
    )
}

const LIST_CHANGED: &str = "notifications/tools/list_changed";

/// The tool names `toolhost list --json` gives for the work folder (a synchronous load).
fn listed(work: &Work) -> BTreeSet<String> {
    let out = work.command(&["list", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    tool_names(&v["tools"])
}

#[test]
fn stdio_answers_while_plugins_compile_and_announces_the_rest() {
    let Some(from) = built_plugins(&["calc.wasm", "js_http.wasm"]) else {
        return;
    };
    let work = Work::examples(&from);
    let mut s = serve_stdio(&work);
    let init = s.initialize("lifecycle-test");
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"], true,
        "{init}"
    );
    let first = s.list(2);
    let changed_before = s.count(LIST_CHANGED);

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
        s.count(LIST_CHANGED) > changed_before,
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
    let Some(from) = built_plugins(&["calc.wasm", "js_http.wasm"]) else {
        return;
    };
    // `add` comes from the last file by name, registered only after the component
    // before it has compiled. (Not the large JS one: the wait is bounded by the default
    // call timeout, 60 s, which a debug-build JS compile on a loaded machine can exceed.)
    let work = Work::new(&from, &[("fetch", "fetch"), ("calc", "zz_calc")]);
    let mut s = serve_stdio(&work);
    s.initialize("lifecycle-test");
    let call = s.call(2, "add", json!({"x": 40, "y": 2}));
    assert_ne!(call["result"]["isError"], true, "{call}");
    let text = call["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("42"), "{call}");
}

#[test]
fn http_clients_learn_of_late_tools_through_list_changed() {
    let Some(from) = built_plugins(&["calc.wasm", "js_http.wasm"]) else {
        return;
    };
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
        // `--list-wait 0s`: see `serve_stdio`.
        work.command(&[
            "serve",
            "--http",
            &format!("127.0.0.1:{port}"),
            "--list-wait",
            "0s",
        ])
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

/// The compiled artifacts in the work folder's compile cache.
fn cached_artifacts(work: &Work) -> usize {
    toolhost_testkit::compiled_artifacts(&work.dir.path().join("cache/toolhost/wasm"))
}

#[test]
fn serve_answers_on_baseline_code_then_caches_and_swaps_in_the_optimized_builds() {
    let Some(from) = built_plugins(&["calc.wasm", "js_http.wasm"]) else {
        return;
    };
    let work = Work::new(&from, &[("calc", "calc"), ("js_http", "js_http")]);
    let log_path = work.dir.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut s = StdioClient::spawn(
        work.command(&["serve", "--stdio"])
            .env("RUST_LOG", "toolhost_wasm=info")
            .stderr(log),
    );
    s.initialize("lifecycle-test");
    // Answered as soon as the component is described (baseline code on a cold cache).
    let first = s.call(2, "js_add", json!({"x": 40, "y": 2}));
    assert_ne!(first["result"]["isError"], true, "{first}");
    assert!(first.to_string().contains("42"), "{first}");
    // The background compiles write the optimized builds to the cache (one per
    // component); the bound only keeps a broken tier-up from hanging the test.
    let start = std::time::Instant::now();
    while cached_artifacts(&work) < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "the optimized builds never reached the cache"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The same server keeps answering, now on the optimized code.
    for id in 3..6 {
        let again = s.call(id, "js_add", json!({"x": id, "y": 1}));
        assert!(again.to_string().contains(&(id + 1).to_string()), "{again}");
        let add = s.call(id + 100, "add", json!({"x": id, "y": 2}));
        assert!(add.to_string().contains(&(id + 2).to_string()), "{add}");
    }
    drop(s);
    // Both components started on baseline code and were swapped.
    let log = std::fs::read_to_string(&log_path).unwrap();
    for plugin in ["calc.wasm", "js_http.wasm"] {
        for event in ["compiled with the baseline compiler", "swapped in"] {
            assert!(
                log.lines().any(|l| l.contains(plugin) && l.contains(event)),
                "no `{event}` for {plugin} in the log of serve:\n{log}"
            );
        }
    }
    // The next start loads the cached builds: the same tools, no new artifact.
    let names = listed(&work);
    assert!(
        names.contains("add") && names.contains("js_add"),
        "{names:?}"
    );
    assert_eq!(cached_artifacts(&work), 2);
}
