//! Plugins in JavaScript, Python and C (and `toolhost new` for all four languages), driven
//! through the `toolhost` binary exactly as a user would.
//!
//! For each language:
//! - its example plugin loads, is listed and answers calls (including one that uses a
//!   granted capability: a file in the granted folder, an allowlisted HTTP host);
//! - a capability its policy does not grant is denied (and leaves no mark);
//! - a spin loop written in that language is stopped by the epoch deadline;
//! - a freshly scaffolded `toolhost new` project builds and answers a call;
//! - (JavaScript) a plain WIT component of its own world (`tests/fixtures/langs/js_plain`)
//!   is a toolbox: its exported functions are listed and called with typed arguments.
//!
//! The guests come from `cargo xtask plugins` (`$TOOLHOST_TEST_PLUGINS`, set by
//! `cargo xtask test`, else `target/plugins`); when they are missing the test builds them.
//! If that fails (a toolchain is missing) the tests fail under `CI=true` and are skipped
//! with a message otherwise.
//!
//! Every test works in its own temporary plugins folder holding only the component under
//! test, so a call compiles (or loads from the compile cache) just that one.

// Helpers outside #[test] fns are not covered by clippy.toml's allow-unwrap-in-tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolhost_testkit::{peers, show, workspace_root};

/// `target/plugins` (or `$TOOLHOST_TEST_PLUGINS`) with the language plugins built, or
/// `None` (skip) when they cannot be built outside CI.
fn plugins() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = toolhost_testkit::plugins_dir();
        let wanted = ["js_http.wasm", "py_files.wasm", "c_checksum.wasm"];
        let fixtures = fixtures_dir(&dir);
        let spins = [
            "js_spin.wasm",
            "py_spin.wasm",
            "c_spin.wasm",
            "js_plain.wasm",
        ];
        let complete = |d: &Path| {
            wanted.iter().all(|w| d.join(w).is_file())
                && spins.iter().all(|w| fixtures.join(w).is_file())
        };
        if !complete(&dir) {
            eprintln!("building the guest plugins: cargo xtask plugins");
            let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .current_dir(workspace_root())
                .args(["run", "--quiet", "-p", "xtask", "--", "plugins"])
                .status();
            if !status.is_ok_and(|s| s.success()) || !complete(&dir) {
                assert!(
                    !peers::in_ci(),
                    "the JS/Python/C plugins could not be built (cargo xtask plugins failed)"
                );
                eprintln!("SKIPPED: the guest toolchains are missing (cargo xtask plugins)");
                return None;
            }
        }
        Some(dir)
    })
    .as_ref()
}

/// The hostile language fixtures that `cargo xtask plugins` builds.
fn fixtures_dir(plugins: &Path) -> PathBuf {
    plugins
        .parent()
        .map(|t| t.join("plugins-fixtures/langs"))
        .unwrap_or_default()
}

macro_rules! need_plugins {
    () => {
        match plugins() {
            Some(d) => d.clone(),
            None => return,
        }
    };
}

/// The first load of a 12–18 MB component compiles it (seconds); later loads hit the
/// compile cache. Tests of one component take turns for that first load, so they do not
/// all compile the same component at once on two cores.
fn warm(wasm: &Path) {
    static DONE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
    if done.iter().any(|d| d == wasm) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    link(wasm, &tmp.path().join(wasm.file_name().unwrap()));
    let out = toolhost(&["list", "--plugins"], tmp.path(), &[]);
    assert!(out.status.success(), "{}", show(&out));
    done.push(wasm.to_path_buf());
}

fn link(from: &Path, to: &Path) {
    if std::os::unix::fs::symlink(from, to).is_err() {
        std::fs::copy(from, to).unwrap();
    }
}

/// A plugins folder with one component and the given request (`NAME.toml`), approved
/// by the operator (`toolhost approve NAME --yes`), so the request is granted.
fn plugin_dir(wasm: &Path, policy: &str) -> tempfile::TempDir {
    warm(wasm);
    let tmp = tempfile::tempdir().unwrap();
    let name = wasm.file_name().unwrap();
    link(wasm, &tmp.path().join(name));
    std::fs::write(tmp.path().join(name).with_extension("toml"), policy).unwrap();
    // Folders named in the request must exist before it is read.
    if policy.contains("./data") {
        std::fs::create_dir_all(tmp.path().join("data")).unwrap();
    }
    let stem = wasm.file_stem().unwrap().to_string_lossy().into_owned();
    let out = toolhost(&["approve", &stem, "--yes", "--plugins"], tmp.path(), &[]);
    assert!(out.status.success(), "{}", show(&out));
    tmp
}

fn toolhost(args: &[&str], plugins: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .arg(plugins)
        .args(extra)
        .env_remove("TOOLHOST_PLUGINS")
        .output()
        .unwrap()
}

/// `toolhost call --json-output`: the parsed invocation record.
fn call(plugins: &Path, tool: &str, args: &str) -> Value {
    let out = toolhost(
        &["call", "--json-output", "--plugins"],
        plugins,
        &[tool, args],
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&out)))
}

fn ok_render(v: &Value) -> String {
    assert_eq!(v["ok"], true, "the call failed: {v:#}");
    v["render"].as_str().unwrap_or_default().to_string()
}

/// The structured result (a JSON value, or a JSON string holding one).
fn canonical(v: &Value) -> Value {
    match &v["canonical"] {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
        other => other.clone(),
    }
}

fn listed(plugins: &Path) -> Vec<String> {
    let out = toolhost(&["list", "--json", "--plugins"], plugins, &[]);
    assert!(out.status.success(), "{}", show(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["problems"], Value::Array(vec![]), "load problems: {v:#}");
    v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect()
}

fn assert_denied(v: &Value, what: &str) {
    assert_eq!(v["ok"], false, "{what} was not refused: {v:#}");
    let err = v["error"].as_str().unwrap_or_default().to_lowercase();
    assert!(
        err.contains("denied") || err.contains("refused"),
        "{what}: not a denial: {v:#}"
    );
}

/// A data folder with one file, for the file tools.
fn data_dir(parent: &Path, file: &str, text: &str) -> PathBuf {
    let data = parent.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join(file), text).unwrap();
    data
}

// ---------------------------------------------------------------- a tiny HTTP server

/// Serves `body` on 127.0.0.1 for at most 60 s; counts the connections it accepts.
struct Server {
    port: u16,
    hits: Arc<AtomicUsize>,
}

fn server(body: &'static str) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(60);
        while Instant::now() < end {
            match listener.accept() {
                Ok((mut s, _)) => {
                    counter.fetch_add(1, Ordering::SeqCst);
                    let _ = s.set_nonblocking(false);
                    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf);
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                         Connection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    Server { port, hits }
}

// ---------------------------------------------------------------- JavaScript

#[test]
fn js_plugin_loads_lists_and_calls() {
    let dir = need_plugins!();
    let srv = server("hello from the test server");
    let origin = format!("http://127.0.0.1:{}", srv.port);
    let tmp = plugin_dir(
        &dir.join("js_http.wasm"),
        &format!("network = [\"{origin}\"]\nmemory_mb = 128\n"),
    );
    let tools = listed(tmp.path());
    assert!(tools.contains(&"js_http_get".to_string()), "{tools:?}");
    assert!(tools.contains(&"js_add".to_string()), "{tools:?}");
    assert_eq!(
        ok_render(&call(tmp.path(), "js_add", r#"{"x":2,"y":40}"#)),
        "42"
    );

    let v = call(
        tmp.path(),
        "js_http_get",
        &format!(r#"{{"url":"{origin}/x"}}"#),
    );
    let render = ok_render(&v);
    assert!(render.contains("HTTP 200"), "{render}");
    assert!(render.contains("hello from the test server"), "{render}");
    let canonical = canonical(&v);
    assert_eq!(canonical["status"], 200);
    assert_eq!(srv.hits.load(Ordering::SeqCst), 1);
}

#[test]
fn js_plain_wit_component_is_a_toolbox() {
    let dir = need_plugins!();
    let tmp = plugin_dir(&fixtures_dir(&dir).join("js_plain.wasm"), "");
    let mut tools = listed(tmp.path());
    tools.sort();
    assert_eq!(
        tools,
        [
            "add",
            "text_area",
            "text_convert",
            "text_mix",
            "text_stats",
            "text_words"
        ]
    );
    let v = call(tmp.path(), "add", r#"{"a": 2, "b": 40}"#);
    assert_eq!(ok_render(&v), "42");
    // An s64 boundary: the sum overflows, the guest's error is the tool error.
    let v = call(tmp.path(), "add", r#"{"a": 9223372036854775807, "b": 1}"#);
    assert_eq!(v["ok"], false, "{v:#}");
    assert!(
        v["error"].as_str().unwrap_or_default().contains("overflow"),
        "{v:#}"
    );
    let v = call(tmp.path(), "text_stats", r#"{"text": "ab 12 c"}"#);
    ok_render(&v);
    assert_eq!(
        canonical(&v),
        serde_json::json!({"letters": 3, "digits": 2, "spaces": 2})
    );
    let mix = r#"{"letter": "é", "bytes": [0, 255], "style": ["italic"], "pair": [1, "x"]}"#;
    let v = call(tmp.path(), "text_mix", mix);
    ok_render(&v);
    assert_eq!(
        canonical(&v),
        serde_json::json!(["é", [0, 255], ["italic"], [1, "x"], null])
    );
    let v = call(
        tmp.path(),
        "text_area",
        r#"{"s": {"tag": "square", "value": 3}}"#,
    );
    ok_render(&v);
    assert_eq!(canonical(&v), serde_json::json!(9.0));
    // A case that is not in the enum: an argument error, the guest never runs.
    let v = call(
        tmp.path(),
        "text_convert",
        r#"{"celsius": 1, "to": "kelvin"}"#,
    );
    assert_eq!(v["ok"], false, "{v:#}");
    let v = call(
        tmp.path(),
        "text_convert",
        r#"{"celsius": 100, "to": "fahrenheit"}"#,
    );
    ok_render(&v);
    assert_eq!(canonical(&v), serde_json::json!(212.0));
}

#[test]
fn js_ungranted_network_is_denied() {
    let dir = need_plugins!();
    let srv = server("must not be reached");
    // The policy offers another port only: the request must never reach this server.
    let tmp = plugin_dir(
        &dir.join("js_http.wasm"),
        &format!(
            "network = [\"http://127.0.0.1:{}\"]\nmemory_mb = 128\n",
            srv.port.wrapping_add(1)
        ),
    );
    let v = call(
        tmp.path(),
        "js_http_get",
        &format!(r#"{{"url":"http://127.0.0.1:{}/"}}"#, srv.port),
    );
    assert_denied(&v, "a request to a host outside the allowlist");
    assert!(
        v["error"].as_str().unwrap_or_default().contains("network"),
        "the denial should say how to allow it: {v:#}"
    );
    // And with no network grant at all.
    let none = plugin_dir(&dir.join("js_http.wasm"), "memory_mb = 128\n");
    let v = call(
        none.path(),
        "js_http_get",
        &format!(r#"{{"url":"http://127.0.0.1:{}/"}}"#, srv.port),
    );
    assert_eq!(v["ok"], false, "{v:#}");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(srv.hits.load(Ordering::SeqCst), 0, "the server was reached");
}

// ---------------------------------------------------------------- Python

#[test]
fn python_plugin_loads_lists_and_calls() {
    let dir = need_plugins!();
    let tmp = plugin_dir(
        &dir.join("py_files.wasm"),
        "read = [\"./data\"]\nmemory_mb = 128\n",
    );
    let data = data_dir(tmp.path(), "notes.txt", "first line\nsecond line\n");
    let tools = listed(tmp.path());
    for t in ["py_read_file", "py_word_count", "py_add"] {
        assert!(tools.contains(&t.to_string()), "{t} missing from {tools:?}");
    }
    assert_eq!(
        ok_render(&call(tmp.path(), "py_add", r#"{"x":2,"y":40}"#)),
        "42"
    );
    let v = call(tmp.path(), "py_word_count", r#"{"text":"a b c\nd"}"#);
    assert_eq!(ok_render(&v), "2 lines, 4 words, 7 chars");

    let path = data.join("notes.txt").canonicalize().unwrap();
    let v = call(
        tmp.path(),
        "py_read_file",
        &serde_json::json!({ "path": path }).to_string(),
    );
    assert_eq!(ok_render(&v), "first line\nsecond line\n");
}

#[test]
fn python_ungranted_read_is_denied() {
    let dir = need_plugins!();
    // No `read` grant: the data folder exists on the host but not for the plugin.
    let tmp = plugin_dir(&dir.join("py_files.wasm"), "memory_mb = 128\n");
    let data = data_dir(tmp.path(), "secret.txt", "top secret");
    let path = data.join("secret.txt").canonicalize().unwrap();
    let v = call(
        tmp.path(),
        "py_read_file",
        &serde_json::json!({ "path": path }).to_string(),
    );
    assert_denied(&v, "reading a folder that was not granted");
    assert!(!v.to_string().contains("top secret"), "{v:#}");
    // With a grant, a file outside the granted folder stays unreachable.
    let granted = plugin_dir(&dir.join("py_files.wasm"), "read = [\"./data\"]\n");
    data_dir(granted.path(), "ok.txt", "fine");
    let v = call(granted.path(), "py_read_file", r#"{"path":"/etc/passwd"}"#);
    assert_denied(&v, "reading /etc/passwd");
}

// ---------------------------------------------------------------- C

#[test]
fn c_plugin_loads_lists_and_calls() {
    let dir = need_plugins!();
    let tmp = plugin_dir(&dir.join("c_checksum.wasm"), "read = [\"./data\"]\n");
    let data = data_dir(
        tmp.path(),
        "fox.txt",
        "The quick brown fox jumps over the lazy dog\n",
    );
    let tools = listed(tmp.path());
    assert!(tools.contains(&"c_checksum".to_string()), "{tools:?}");
    assert!(tools.contains(&"c_add".to_string()), "{tools:?}");
    assert_eq!(
        ok_render(&call(tmp.path(), "c_add", r#"{"x":2,"y":40}"#)),
        "42"
    );

    let path = data.join("fox.txt").canonicalize().unwrap();
    let v = call(
        tmp.path(),
        "c_checksum",
        &serde_json::json!({ "path": path }).to_string(),
    );
    ok_render(&v);
    let canonical = canonical(&v);
    assert_eq!(canonical["crc32"], "6d93c138", "{canonical:#}");
    assert_eq!(canonical["bytes"], 44);
    assert_eq!(canonical["lines"], 1);
    // Bad arguments are the model's to fix.
    let v = call(tmp.path(), "c_add", r#"{"x":"two","y":1}"#);
    assert_eq!(v["ok"], false, "{v:#}");
}

#[test]
fn c_ungranted_read_is_denied() {
    let dir = need_plugins!();
    let tmp = plugin_dir(&dir.join("c_checksum.wasm"), "timeout_ms = 2000\n");
    let data = data_dir(tmp.path(), "secret.txt", "top secret");
    let path = data.join("secret.txt").canonicalize().unwrap();
    let v = call(
        tmp.path(),
        "c_checksum",
        &serde_json::json!({ "path": path }).to_string(),
    );
    assert_denied(&v, "reading a folder that was not granted");
}

// ---------------------------------------------------------------- spin loops

fn spin_is_stopped(wasm: &str, tool: &str) {
    let dir = need_plugins!();
    let fixture = fixtures_dir(&dir).join(wasm);
    // Fuel at its maximum (10^13, minutes of work on any machine): only the deadline can
    // stop the loop, however fast the machine burns the default budget.
    let tmp = plugin_dir(
        &fixture,
        "timeout_ms = 300\nmemory_mb = 128\nfuel = 10000000000000\n",
    );
    let start = Instant::now();
    let v = call(tmp.path(), tool, "{}");
    assert_eq!(v["ok"], false, "the spin loop returned: {v:#}");
    let err = v["error"].as_str().unwrap_or_default().to_lowercase();
    assert!(
        err.contains("time") || err.contains("deadline") || err.contains("interrupt"),
        "not stopped by the deadline: {v:#}"
    );
    let ms = v["duration_ms"].as_f64().unwrap_or(f64::MAX);
    assert!(ms < 5_000.0, "stopped only after {ms} ms");
    assert!(start.elapsed() < Duration::from_secs(60));
}

#[test]
fn js_spin_loop_is_stopped_by_the_epoch_deadline() {
    spin_is_stopped("js_spin.wasm", "js_spin");
}

#[test]
fn python_spin_loop_is_stopped_by_the_epoch_deadline() {
    spin_is_stopped("py_spin.wasm", "py_spin");
}

#[test]
fn c_spin_loop_is_stopped_by_the_epoch_deadline() {
    spin_is_stopped("c_spin.wasm", "c_spin");
}

// ---------------------------------------------------------------- toolhost new

/// Scaffolds `demo-LANG` with `toolhost new`, builds it with its documented one-liner
/// (using the toolchains `cargo xtask plugins` installed), then calls its tool.
fn scaffold_builds_and_answers(lang: &str) {
    // The toolchains come with the plugins.
    let _ = need_plugins!();
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("proj");
    let name = format!("demo-{lang}");
    // Run from outside the checkout, as an author who installed the binary would.
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(tmp.path())
        .args(["new", &name, "--lang", lang, "--dir"])
        .arg(&proj)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert!(proj.join(format!("{name}.toml")).is_file());

    let toolchains = workspace_root().join("target/toolchains");
    let mut build = Command::new("sh");
    build.current_dir(&proj);
    match lang {
        "js" => {
            // `npm install && npm run build`, with the install already done by xtask.
            link(
                &toolchains.join("js/node_modules"),
                &proj.join("node_modules"),
            );
            build.args(["-c", "npm run build"]);
        }
        "rust" => {
            build.arg("build.sh").env(
                "CARGO_TARGET_DIR",
                workspace_root().join("target/langs-template"),
            );
        }
        _ => {
            build.arg("build.sh");
        }
    }
    let out = build.output().unwrap();
    assert!(
        out.status.success(),
        "the {lang} build failed:\n{}",
        show(&out)
    );
    let wasm = proj.join(format!("{name}.wasm"));
    assert!(wasm.is_file(), "no {}", wasm.display());

    let tool = name.replace('-', "_");
    let v = call(&proj, &tool, r#"{"name":"World"}"#);
    assert_eq!(ok_render(&v), "Hello, World!", "{v:#}");

    if lang != "c" {
        // The tool's own refusal goes through the language's helper (Rust `#[tool]`, JS
        // `tool()`, Python `@tool`) as an invalid-arguments error; a good call after works.
        let v = call(&proj, &tool, r#"{"name":""}"#);
        assert_eq!(v["ok"], false, "{v:#}");
        assert_eq!(v["kind"], "invalid_arguments", "{v:#}");
        assert!(v["error"].as_str().unwrap().contains("`name`"), "{v:#}");
        let v = call(&proj, &tool, r#"{"name":"again"}"#);
        assert_eq!(ok_render(&v), "Hello, again!", "{v:#}");
    }

    if lang == "rust" {
        // The project depends on the SDK written into it, not on this checkout.
        let root = workspace_root().display().to_string();
        for f in ["Cargo.toml", "Cargo.lock"] {
            let text = std::fs::read_to_string(proj.join(f)).unwrap();
            assert!(
                !text.contains(&root),
                "{f} points into the checkout:\n{text}"
            );
        }
        let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .current_dir(tmp.path())
            .args(["inspect", "--plugins"])
            .arg(&proj)
            .arg(&wasm)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", show(&out));
        assert!(text.contains("world: toolhost:tool@0.1.0"), "{text}");
    }
}

#[test]
fn new_rust_project_builds_and_answers() {
    scaffold_builds_and_answers("rust");
}

#[test]
fn new_js_project_builds_and_answers() {
    scaffold_builds_and_answers("js");
}

#[test]
fn new_python_project_builds_and_answers() {
    scaffold_builds_and_answers("python");
}

#[test]
fn new_c_project_builds_and_answers() {
    scaffold_builds_and_answers("c");
}
