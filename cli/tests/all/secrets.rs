//! Plugin configuration and secrets, driven through the `toolhost` binary as an operator
//! would (docs/secrets.md):
//!
//! - a component written for any host with `wasi:config/store@0.2.0-draft`, in Rust
//!   (`tests/fixtures/config_keyed`) and in JavaScript (`tests/fixtures/langs/js_config`,
//!   componentize-js), reads its API key and calls an HTTP server on 127.0.0.1 with it;
//!   each source works (a value, a variable, a private file);
//! - the same components, hostile: the key echoed into the result, the error and
//!   stdout/stderr comes out as `[redacted: API_KEY]`; a neighbour's key and any key not
//!   granted read as absent; 10,000 reads change nothing; a good call works after;
//! - bad sources and requests (a missing or shared file, 10,000 keys, a 1 MB key) are
//!   refused naming the plugin and the key, and the other plugins load;
//! - approval shows and pins the keys; an unapproved plugin gets none;
//! - `serve --http`: the audit trail, the log (at trace level) and the metrics hold the
//!   value nowhere;
//! - an MCP server (server-everything) gets its env from a file, and its `get-env`
//!   result has the value redacted;
//! - `toolhost config set|unset|list` writes the table, and refuses to write a secret
//!   into a file others may read.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolhost_testkit::http::{mcp_call, mcp_session, request};
use toolhost_testkit::serve::ServeHttp;
use toolhost_testkit::{built_plugins, peers, show};

/// The secret every test gives, and what must never be seen outside the sandbox.
const SECRET: &str = "sk-live-7f3a9c21e4b8d6055aa1";

/// The two components, `(file under the plugins dir, request file extras)`.
fn components() -> Option<Vec<(PathBuf, &'static str)>> {
    let dir = built_plugins(&[
        "fixtures/config_keyed.wasm",
        "../plugins-fixtures/langs/js_config.wasm",
    ])?;
    Some(vec![
        (dir.join("fixtures/config_keyed.wasm"), ""),
        (
            dir.join("../plugins-fixtures/langs/js_config.wasm"),
            "memory_mb = 128\n",
        ),
    ])
}

/// A work folder: `plugins/NAME.wasm` (a copy of `wasm`) with `request`, a private key
/// file, and `toolhost.toml` holding `config` (the `[plugins...]` tables).
struct Work {
    dir: tempfile::TempDir,
    name: String,
}

impl Work {
    fn new(wasm: &Path, name: &str, request: &str, config: &str) -> Work {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        std::fs::copy(wasm, plugins.join(format!("{name}.wasm"))).unwrap();
        std::fs::write(plugins.join(format!("{name}.toml")), request).unwrap();
        let key = dir.path().join("api.key");
        std::fs::write(&key, format!("{SECRET}\n")).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let cfg = dir.path().join("toolhost.toml");
        std::fs::write(&cfg, format!("[plugins]\nfolder = \"plugins\"\n{config}")).unwrap();
        std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o600)).unwrap();
        Work {
            dir,
            name: name.to_string(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[], None)
    }

    fn run_with(&self, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        cmd.current_dir(self.path())
            .args(args)
            .args(["--config", "toolhost.toml"])
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
        drop(input);
        child.wait_with_output().unwrap()
    }

    fn approve(&self) -> Output {
        let out = self.run(&["approve", &self.name, "--yes"]);
        assert!(out.status.success(), "{}", show(&out));
        out
    }

    /// `call --json-output`: the invocation record, and the process's stderr.
    fn call(&self, tool: &str, args: &str) -> (Value, String) {
        let out = self.run(&["-vvv", "call", "--json-output", tool, args]);
        let v =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&out)));
        (v, String::from_utf8_lossy(&out.stderr).into_owned())
    }

    fn list_json(&self) -> Value {
        let out = self.run(&["list", "--json"]);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&out)))
    }
}

fn render(v: &Value) -> String {
    assert_eq!(v["ok"], true, "the call failed: {v:#}");
    v["render"].as_str().unwrap_or_default().to_string()
}

/// An HTTP server on 127.0.0.1 standing for the API: `200 sunny` to a request whose
/// `x-api-key` is [`SECRET`], `401 bad key` otherwise. Records each request's key.
struct Api {
    port: u16,
    keys: Arc<Mutex<Vec<String>>>,
}

fn api() -> Api {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let keys = Arc::new(Mutex::new(Vec::new()));
    let seen = keys.clone();
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(300);
        while Instant::now() < end {
            let Ok((mut s, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            let _ = s.set_nonblocking(false);
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let key = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("x-api-key")
                        .then(|| v.trim().to_string())
                })
                .unwrap_or_default();
            let (status, body) = if key == SECRET {
                ("200 OK", "sunny")
            } else {
                ("401 Unauthorized", "bad key")
            };
            seen.lock().unwrap().push(key);
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Api { port, keys }
}

/// The request file of the keyed components: the key, and the API host.
fn request_file(api: &Api, extra: &str) -> String {
    format!(
        "config = [\"API_KEY\"]\nnetwork = [\"http://127.0.0.1:{}\"]\n{extra}",
        api.port
    )
}

#[test]
fn a_component_in_rust_and_in_js_reads_its_key_calls_the_api_and_cannot_leak_it() {
    let Some(components) = components() else {
        return;
    };
    let srv = api();
    for (wasm, extra) in components {
        // A neighbour is given a key of its own; this plugin must never see it.
        let work = Work::new(
            &wasm,
            "keyed",
            &request_file(&srv, extra),
            "[plugins.keyed.config]\nAPI_KEY = { file = \"api.key\" }\n\
             [plugins.neighbour.config]\nNEIGHBOUR_KEY = \"neighbour-secret-value\"\n",
        );
        let approved = work.approve();
        // Approval shows the key asked for, never a value.
        let shown = format!("{}{}", show(&approved), "");
        assert!(shown.contains("config API_KEY"), "{shown}");
        assert!(!shown.contains(SECRET), "{shown}");

        let authority = format!("{{\"authority\":\"127.0.0.1:{}\"}}", srv.port);
        let (v, log) = work.call("call-api", &authority);
        assert_eq!(render(&v), "200 sunny", "{}", wasm.display());
        assert_eq!(srv.keys.lock().unwrap().last().unwrap(), SECRET);
        assert!(!log.contains(SECRET), "the log holds the key:\n{log}");

        // The key echoed into the result, the error and stdout/stderr.
        let (v, log) = work.call("echo-key", "{}");
        assert_eq!(render(&v), "the key is [redacted: API_KEY]");
        assert!(!log.contains(SECRET), "{log}");
        let (v, log) = work.call("fail-with-key", "{}");
        assert_eq!(v["ok"], false, "{v:#}");
        let err = v["error"].as_str().unwrap();
        assert!(err.contains("refused key [redacted: API_KEY]"), "{err}");
        assert!(
            !v.to_string().contains(SECRET) && !log.contains(SECRET),
            "{v:#}\n{log}"
        );
        let (v, log) = work.call("print-key", "{}");
        assert_eq!(render(&v), "printed");
        assert!(log.contains("stdout: [redacted: API_KEY]"), "{log}");
        assert!(!log.contains(SECRET), "{log}");

        // A neighbour's key and keys never granted read as absent; get-all lists only
        // the granted pair.
        let (v, _) = work.call("neighbour-key", "{}");
        assert_eq!(render(&v), "none");
        let (v, _) = work.call("all-keys", "{}");
        assert_eq!(render(&v), "API_KEY");
        let (v, _) = work.call("many-keys", "{\"count\":10000}");
        assert_eq!(render(&v), "0");
        // And a good call still works after.
        let (v, _) = work.call("call-api", &authority);
        assert_eq!(render(&v), "200 sunny");

        // `inspect` shows the key, whether it is given and from where; never a value.
        let out = work.run(&["inspect", &format!("plugins/{}.wasm", work.name)]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("API_KEY: requested, given from file ") && text.contains("api.key"),
            "{}",
            show(&out)
        );
        assert!(!text.contains(SECRET));
    }
}

#[test]
fn each_source_gives_the_value_and_approval_pins_the_keys() {
    let Some(components) = components() else {
        return;
    };
    let (wasm, _) = &components[0];
    let srv = api();
    let authority = format!("{{\"authority\":\"127.0.0.1:{}\"}}", srv.port);
    for (given, env) in [
        (format!("API_KEY = \"{SECRET}\""), None),
        (
            "API_KEY = { env = \"TEST_KEYED_API_KEY\" }".to_string(),
            Some(("TEST_KEYED_API_KEY", SECRET)),
        ),
    ] {
        let work = Work::new(
            wasm,
            "keyed",
            &request_file(&srv, ""),
            &format!("[plugins.keyed.config]\n{given}\n"),
        );
        work.approve();
        let env: Vec<(&str, &str)> = env.into_iter().collect();
        let out = work.run_with(
            &["call", "--json-output", "call-api", &authority],
            &env,
            None,
        );
        let v: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&out)));
        assert_eq!(render(&v), "200 sunny", "{given}");
    }

    // Unapproved, the plugin gets no config at all: its tools wait for approval.
    let work = Work::new(
        wasm,
        "keyed",
        &request_file(&srv, ""),
        "[plugins.keyed.config]\nAPI_KEY = { file = \"api.key\" }\nREGION = \"eu-west-1\"\n",
    );
    let (v, _) = work.call("echo-key", "{}");
    assert_eq!(v["ok"], false, "{v:#}");
    assert!(
        v["error"].as_str().unwrap().contains("toolhost approve"),
        "{v:#}"
    );
    // Approved, then asking for one more key the operator gives: the approval pins the
    // keys, so the new one stays unseen until approved; approving shows it.
    work.approve();
    std::fs::write(
        work.path().join("plugins/keyed.toml"),
        request_file(&srv, "").replace("[\"API_KEY\"]", "[\"API_KEY\", \"REGION\"]"),
    )
    .unwrap();
    let (v, _) = work.call("all-keys", "{}");
    assert_eq!(render(&v), "API_KEY");
    let out = work.approve();
    assert!(show(&out).contains("config REGION"), "{}", show(&out));
    let (v, _) = work.call("all-keys", "{}");
    assert_eq!(render(&v), "API_KEY,REGION");
}

/// The problems of `list --json`, as text.
fn problems(work: &Work) -> String {
    work.list_json()["problems"].to_string()
}

#[test]
fn bad_sources_and_requests_are_refused_naming_the_plugin_and_key() {
    let Some(components) = components() else {
        return;
    };
    let (wasm, _) = &components[0];
    let srv = api();
    let calc = built_plugins(&["calc.wasm"]).unwrap().join("calc.wasm");
    let with_calc = |work: &Work| {
        std::fs::copy(&calc, work.path().join("plugins/calc.wasm")).unwrap();
    };
    let calc_loaded = |work: &Work| {
        let doc = work.list_json();
        assert!(
            doc["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "add"),
            "calc did not load: {doc:#}"
        );
    };

    // A missing file, a file others may read, an unset variable: the plugin is refused,
    // the problem names it and the key; calc loads regardless.
    let shared = |work: &Work| {
        let p = work.path().join("api.key");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    };
    type Setup = Box<dyn Fn(&Work)>;
    let cases: Vec<(&str, Setup, &str)> = vec![
        (
            "{ file = \"missing.key\" }",
            Box::new(|_: &Work| {}),
            "missing.key",
        ),
        ("{ file = \"api.key\" }", Box::new(shared), "chmod 600"),
        (
            "{ env = \"TOOLHOST_TEST_UNSET_VARIABLE\" }",
            Box::new(|_: &Work| {}),
            "TOOLHOST_TEST_UNSET_VARIABLE is not set",
        ),
    ];
    for (source, setup, why) in cases {
        let work = Work::new(
            wasm,
            "keyed",
            &request_file(&srv, ""),
            &format!("[plugins.keyed.config]\nAPI_KEY = {source}\n"),
        );
        with_calc(&work);
        work.approve();
        setup(&work);
        let p = problems(&work);
        assert!(
            p.contains("plugin 'keyed'") && p.contains("API_KEY") && p.contains(why),
            "{source}: {p}"
        );
        assert!(!p.contains(SECRET));
        calc_loaded(&work);
    }

    // A keyring entry: this machine's keyring has no such entry (or no keyring service
    // at all): a clear, typed error, never a hang.
    let work = Work::new(
        wasm,
        "keyed",
        &request_file(&srv, ""),
        "[plugins.keyed.config]\nAPI_KEY = { keyring = \"toolhost-test/nobody\" }\n",
    );
    with_calc(&work);
    work.approve();
    let t0 = Instant::now();
    let p = problems(&work);
    assert!(p.contains("keyring toolhost-test/nobody"), "{p}");
    assert!(t0.elapsed() < Duration::from_secs(60));
    calc_loaded(&work);

    // Requests: 10,000 keys (past the request file's size bound, or the key count), a
    // 1 MB key, 65 keys, a key of 200 bytes.
    let many: Vec<String> = (0..10_000).map(|i| format!("\"K{i}\"")).collect();
    let big = "K".repeat(1 << 20);
    let sixty_five: Vec<String> = (0..65).map(|i| format!("\"K{i}\"")).collect();
    for (keys, why) in [
        (many.join(","), "keyed.toml"),
        (format!("\"{big}\""), "keyed.toml"),
        (sixty_five.join(","), "at most 64"),
        (format!("\"{}\"", "A".repeat(200)), "at most 128"),
    ] {
        let work = Work::new(wasm, "keyed", &format!("config = [{keys}]\n"), "");
        with_calc(&work);
        let p = problems(&work);
        assert!(
            p.contains(why) && p.len() < 4096,
            "{}",
            &p[..p.len().min(4096)]
        );
        calc_loaded(&work);
    }
}

#[test]
fn serve_writes_the_secret_nowhere() {
    let Some(components) = components() else {
        return;
    };
    let (wasm, _) = &components[0];
    let srv = api();
    let work = Work::new(
        wasm,
        "keyed",
        &request_file(&srv, ""),
        "[plugins.keyed.config]\nAPI_KEY = { file = \"api.key\" }\n",
    );
    work.approve();
    let audit = work.path().join("audit.jsonl");
    let mut server = ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        work.path(),
        &[
            "-vvv",
            "--config",
            "toolhost.toml",
            "--no-watch",
            "--admin",
            "127.0.0.1:0",
            "--audit",
            audit.to_str().unwrap(),
        ],
        &[],
        "admin endpoints at",
        Duration::from_secs(120),
    );
    let addr = server.addr();
    let session = mcp_session(&addr).unwrap();
    let authority = format!("{{\"authority\":\"127.0.0.1:{}\"}}", srv.port);
    for (tool, args) in [
        ("call-api", authority.as_str()),
        ("echo-key", "{}"),
        ("fail-with-key", "{}"),
        ("print-key", "{}"),
    ] {
        let r = mcp_call(&addr, &session, tool, args).unwrap();
        assert_eq!(r.status, 200, "{tool}: {}", r.body);
        assert!(!r.body.contains(SECRET), "{tool}: {}", r.body);
        match tool {
            "call-api" => assert!(r.body.contains("200 sunny"), "{}", r.body),
            "print-key" => assert!(r.body.contains("printed"), "{}", r.body),
            _ => assert!(r.body.contains("[redacted: API_KEY]"), "{tool}: {}", r.body),
        }
    }
    let admin = server.admin_addr().unwrap();
    let metrics = request(&admin, "GET", "/metrics", &[], "").unwrap().body;
    assert!(metrics.contains("toolhost_tool_calls_total"), "{metrics}");
    assert!(!metrics.contains(SECRET));
    let trail = std::fs::read_to_string(&audit).unwrap();
    assert_eq!(trail.lines().count(), 4, "{trail}");
    assert!(!trail.contains(SECRET), "{trail}");
    let _ = server.wait_exit(Duration::from_millis(10));
    let log = server.stderr();
    assert!(log.contains("stdout: [redacted: API_KEY]"), "{log}");
    assert!(!log.contains(SECRET), "the log holds the key");
}

#[test]
fn an_mcp_servers_env_comes_from_a_file_and_is_redacted() {
    let Some(everything) = peers::everything() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("token");
    std::fs::write(&key, SECRET).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let cfg = format!(
        "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\ntimeout_secs = 30\n\
         env = {{ UPSTREAM_TOKEN = {{ file = \"token\" }}, MODE = \"plain-mode-value\" }}\n\
         [mcp.servers.everything.tools.get-env]\npermissions = [\"read\"]\n",
        everything.display().to_string()
    );
    std::fs::write(dir.path().join("toolhost.toml"), cfg).unwrap();
    std::fs::create_dir_all(dir.path().join("plugins")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args([
            "call",
            "--json-output",
            "--plugins",
            "plugins",
            "get-env",
            "{}",
        ])
        .env_remove("TOOLHOST_PLUGINS")
        .output()
        .unwrap();
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&out)));
    let text = render(&v);
    // The server got the exact value from the file (the redaction matches exact values
    // only), and the client sees its name instead.
    assert!(text.contains("[redacted: UPSTREAM_TOKEN]"), "{text}");
    // A value written in the file is configuration, shown as it is.
    assert!(text.contains("plain-mode-value"), "{text}");
    assert!(
        !out.stdout
            .windows(SECRET.len())
            .any(|w| w == SECRET.as_bytes())
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains(SECRET));

    // A shared file is refused for that server, naming the variable.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args(["list", "--json", "--plugins", "plugins"])
        .env_remove("TOOLHOST_PLUGINS")
        .output()
        .unwrap();
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&out)));
    let p = doc["problems"].to_string();
    assert!(
        p.contains("env.UPSTREAM_TOKEN") && p.contains("chmod 600"),
        "{p}"
    );
}

#[test]
fn the_config_command_writes_the_table_and_refuses_shared_files() {
    let Some(components) = components() else {
        return;
    };
    let (wasm, _) = &components[0];
    let srv = api();
    let work = Work::new(wasm, "keyed", &request_file(&srv, ""), "");
    // The folder form is kept when the first plugin table is added.
    std::fs::write(
        work.path().join("toolhost.toml"),
        "# my settings\nplugins = \"plugins\"\n",
    )
    .unwrap();
    let cfg = work.path().join("toolhost.toml");
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = work.run_with(
        &["config", "set", "keyed", "API_KEY"],
        &[],
        Some(&format!("{SECRET}\n")),
    );
    assert!(out.status.success(), "{}", show(&out));
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(
        text.starts_with("# my settings") && text.contains("folder = \"plugins\""),
        "{text}"
    );
    let mode = std::fs::metadata(&cfg).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let out = work.run(&["config", "list"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("keyed\tAPI_KEY\tvalue in the config file"),
        "{}",
        show(&out)
    );
    assert!(!listed.contains(SECRET));
    // The value written works.
    work.approve();
    let authority = format!("{{\"authority\":\"127.0.0.1:{}\"}}", srv.port);
    let (v, _) = work.call("call-api", &authority);
    assert_eq!(render(&v), "200 sunny");

    // A file others may read: no secret is written into it; a source is.
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::read_to_string(&cfg).unwrap();
    let out = work.run_with(
        &["config", "set", "keyed", "OTHER"],
        &[],
        Some("another-secret\n"),
    );
    assert!(!out.status.success());
    assert!(show(&out).contains("chmod 600"), "{}", show(&out));
    assert_eq!(std::fs::read_to_string(&cfg).unwrap(), before);
    let out = work.run(&["config", "set", "keyed", "API_KEY", "--file", "api.key"]);
    assert!(out.status.success(), "{}", show(&out));
    assert!(!std::fs::read_to_string(&cfg).unwrap().contains(SECRET));
    // A secret file others may read is refused as a source.
    let shared = work.path().join("shared.key");
    std::fs::write(&shared, "x".repeat(20)).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = work.run(&["config", "set", "keyed", "API_KEY", "--file", "shared.key"]);
    assert!(
        !out.status.success() && show(&out).contains("chmod 600"),
        "{}",
        show(&out)
    );
    let (v, _) = work.call("call-api", &authority);
    assert_eq!(render(&v), "200 sunny");

    let out = work.run(&["config", "unset", "keyed", "API_KEY"]);
    assert!(out.status.success(), "{}", show(&out));
    let (v, _) = work.call("echo-key", "{}");
    assert_eq!(render(&v), "the key is ");
    let out = work.run(&["config", "unset", "keyed", "API_KEY"]);
    assert!(!out.status.success());
}
