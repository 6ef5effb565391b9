//! The `toolhost` binary against hostile input and hostile plumbing:
//!
//! - a real component (`tests/fixtures/hostile_term`) whose description, render text and
//!   error carry ANSI/OSC sequences, CR, C1 controls and bidi overrides, and a plugin
//!   request file with escapes that ends up in a load warning: `list`, `list --json`,
//!   `inspect`, `call` must print none of it raw; then a good call (`calc` `add`) works;
//! - `list --json` into a pipe whose reader is gone: a quiet exit, no panic message;
//! - `serve --stdio -vvv` with stderr on the same pipe as stdout: the shared descriptors
//!   stay blocking (so logging cannot hit `EAGAIN`), the protocol works, no abort;
//! - `serve --http` on a non-loopback address names the real flag, `--allow-remote`;
//! - a plain WIT component (`tests/fixtures/plain_wit`, never aware of toolhost) is
//!   listed, inspected (kind, imports, the functions that are not tools) and called: an
//!   ok result, an `err` result as a tool error, an out-of-range argument refused; and
//!   served over MCP (stdio): listed with its derived schema, called.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use toolhost_testkit::{built_plugins, show};

fn toolhost(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir)
        .args(args)
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

/// The characters that steer a terminal, in any output of the CLI.
fn raw_controls(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    text.chars()
        .filter(|&c| {
            matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
                | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .map(|c| format!("U+{:04X}", c as u32))
        .collect()
}

fn assert_clean(what: &str, out: &Output) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let bad = raw_controls(bytes);
        assert!(
            bad.is_empty(),
            "{what}: raw control characters on {stream}: {bad:?}\n{}",
            show(out)
        );
    }
}

#[test]
fn hostile_plugin_text_is_escaped_on_every_print_path() {
    let Some(plugins) = built_plugins(&["calc.wasm", "fixtures/hostile_term.wasm"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plugins");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::copy(plugins.join("calc.wasm"), p.join("calc.wasm")).unwrap();
    if plugins.join("calc.toml").exists() {
        std::fs::copy(plugins.join("calc.toml"), p.join("calc.toml")).unwrap();
    }
    let hostile = plugins.join("fixtures/hostile_term.wasm");
    std::fs::copy(&hostile, p.join("hostile_term.wasm")).unwrap();
    // A second copy whose request file is broken and full of escapes: its load error
    // quotes the file, and reaches the terminal as a warning.
    std::fs::copy(&hostile, p.join("evil_policy.wasm")).unwrap();
    std::fs::write(
        p.join("evil_policy.toml"),
        "read = 5 # \u{1b}[2J\u{1b}]0;pwned\u{7}\r\u{202e}\n",
    )
    .unwrap();
    let pdir = p.to_str().unwrap();

    // The table: no raw escapes, and no forged rows (one header plus one line per tool).
    let out = toolhost(dir.path(), &["list", "--plugins", pdir]);
    assert!(out.status.success(), "{}", show(&out));
    assert_clean("list", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The tool table, then (after a blank line) the trust table: one row per plugin.
    let mut tables = stdout.split("\n\n");
    let tools = tables.next().unwrap_or_default();
    let trust = tables.next().unwrap_or_default();
    assert_eq!(tools.lines().count(), 1 + 4 + 3, "{}", show(&out));
    assert_eq!(trust.trim_end().lines().count(), 1 + 2, "{}", show(&out));
    assert!(tables.next().is_none(), "{}", show(&out));
    assert!(stdout.contains("\\x1b[2J"), "{stdout}");
    assert!(stdout.contains("\\u{202e}"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("evil_policy"),
        "the warning is missing: {stderr}"
    );

    // JSON output: still valid JSON with the exact description inside.
    let out = toolhost(dir.path(), &["list", "--json", "--plugins", pdir]);
    assert!(out.status.success(), "{}", show(&out));
    assert_clean("list --json", &out);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let desc = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "term_desc")
        .unwrap()["description"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(desc.contains("\u{1b}]0;pwned\u{7}") && desc.contains('\u{202e}'));

    for args in [
        vec!["inspect", "--plugins", pdir, "plugins/hostile_term.wasm"],
        vec![
            "inspect",
            "--json",
            "--plugins",
            pdir,
            "plugins/hostile_term.wasm",
        ],
    ] {
        let out = toolhost(dir.path(), &args);
        assert!(out.status.success(), "{}", show(&out));
        assert_clean(&args.join(" "), &out);
    }

    // A result and an error full of escapes.
    let out = toolhost(dir.path(), &["call", "--plugins", pdir, "term_result"]);
    assert!(out.status.success(), "{}", show(&out));
    assert_clean("call term_result", &out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("result \\x1b[2J"));
    let out = toolhost(
        dir.path(),
        &[
            "call",
            "--plugins",
            pdir,
            "term_result",
            "{}",
            "--json-output",
        ],
    );
    assert_clean("call --json-output", &out);
    let out = toolhost(dir.path(), &["call", "--plugins", pdir, "term_error"]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_clean("call term_error", &out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("boom \\x1b[2J"));

    // And a good call still works.
    let out = toolhost(
        dir.path(),
        &["call", "--plugins", pdir, "add", r#"{"x": 1, "y": 2}"#],
    );
    assert!(out.status.success(), "{}", show(&out));
    let sum: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(sum, 3.0);
}

#[test]
fn list_into_a_closed_pipe_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args(["list", "--json", "--plugins"])
        .arg(dir.path())
        .env_remove("TOOLHOST_PLUGINS")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before anything is printed (the pipe's other end was made
    // close-on-exec, so the child does not hold it): every print hits EPIPE.
    drop(reader);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    let code = out.status.code();
    assert!(
        code == Some(0) || code == Some(141),
        "exit status {:?}: {stderr}",
        out.status
    );
}

/// `O_NONBLOCK` (octal 04000 on Linux) in `/proc/PID/fdinfo/FD`.
fn nonblocking(pid: u32, fd: u32) -> bool {
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap();
    let flags = info
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .map(|f| u32::from_str_radix(f.trim(), 8).unwrap())
        .unwrap();
    flags & 0o4000 != 0
}

#[test]
fn serve_stdio_with_stderr_on_the_stdout_pipe_keeps_working() {
    let dir = tempfile::tempdir().unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args(["serve", "--stdio", "-vvv", "--no-audit", "--plugins"])
        .arg(dir.path())
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(reader);
    let send = |stdin: &mut std::process::ChildStdin, v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    // Reads the shared pipe (protocol and logs mixed) until the response with `id`.
    let response = |lines: &mut BufReader<std::io::PipeReader>, id: u64| -> Value {
        let mut line = String::new();
        loop {
            line.clear();
            let n = lines.read_line(&mut line).unwrap();
            assert!(n > 0, "the server closed its output before answering {id}");
            if let Ok(v) = serde_json::from_str::<Value>(line.trim())
                && v["id"] == json!(id)
            {
                return v;
            }
        }
    };
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
    );
    let init = response(&mut lines, 1);
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    // The server is up and talking through its private non-blocking pipe: the stdio
    // descriptors it shares with stderr (and with us) must still be blocking.
    assert!(!nonblocking(pid, 1), "stdout was made non-blocking");
    assert!(!nonblocking(pid, 2), "stderr was made non-blocking");
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let list = response(&mut lines, 2);
    assert!(list["result"]["tools"].is_array(), "{list}");
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "no_such_tool", "arguments": {}}}),
    );
    let call = response(&mut lines, 3);
    assert_eq!(call["result"]["isError"], true, "{call}");
    drop(stdin);
    // Drain the rest of the logs so the server never blocks on a full pipe.
    let mut rest = String::new();
    while lines.read_line(&mut rest).map(|n| n > 0).unwrap_or(false) {
        rest.clear();
    }
    let status = child.wait().unwrap();
    assert_ne!(status.code(), Some(134), "aborted: {status}");
    assert!(status.success(), "{status}");
}

#[test]
fn serve_http_on_a_public_address_names_the_allow_remote_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolhost(
        dir.path(),
        &[
            "serve",
            "--no-audit",
            "--http",
            "0.0.0.0:0",
            "--plugins",
            dir.path().to_str().unwrap(),
        ],
    );
    assert!(!out.status.success(), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--allow-remote"), "{stderr}");
    assert!(!stderr.contains("allow_remote"), "{stderr}");
}

// ---------------------------------------------------------------- version, completions

#[test]
fn inspect_names_the_world_a_plugin_was_built_against() {
    let Some(plugins) = built_plugins(&["calc.wasm", "fixtures/content_v2.wasm"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plugins");
    std::fs::create_dir_all(&p).unwrap();
    let pdir = p.to_str().unwrap();
    for (file, world) in [
        ("calc.wasm", "toolhost:tool@0.1.0"),
        ("fixtures/content_v2.wasm", "toolhost:tool@0.2.0"),
    ] {
        let copy = p.join(Path::new(file).file_name().unwrap());
        std::fs::copy(plugins.join(file), &copy).unwrap();
        let copy = copy.to_str().unwrap();
        let out = toolhost(dir.path(), &["inspect", "--plugins", pdir, copy]);
        assert!(out.status.success(), "{}", show(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("\nworld: {world}\n")), "{text}");
        let out = toolhost(dir.path(), &["inspect", "--json", "--plugins", pdir, copy]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["world"], world, "{v:#}");
    }
}

#[test]
fn version_names_the_host_the_wit_worlds_and_wasmtime() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["--version", "-V"] {
        let out = toolhost(dir.path(), &[flag]);
        assert!(out.status.success(), "{}", show(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.starts_with(&format!("toolhost {}\n", env!("CARGO_PKG_VERSION"))),
            "{text}"
        );
        assert!(
            text.contains("WIT worlds: toolhost:tool@0.1.0, toolhost:tool@0.2.0"),
            "{text}"
        );
        assert!(
            text.contains(&format!("wasmtime {}", toolhost_wasm::WASMTIME_VERSION)),
            "{text}"
        );
    }
}

#[test]
fn bash_completion_loads_in_bash_and_completes_subcommands_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolhost(dir.path(), &["completions", "bash"]);
    assert!(out.status.success(), "{}", show(&out));
    let script = dir.path().join("toolhost.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    // Source the script in a real bash and ask its completion function what it offers
    // after `toolhost ` and after `toolhost serve --`.
    let probe = format!(
        "source {s}\n\
         complete -p toolhost\n\
         COMP_WORDS=(toolhost ''); COMP_CWORD=1; COMP_LINE='toolhost '; COMP_POINT=9\n\
         _toolhost toolhost '' toolhost; echo \"SUB: ${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(toolhost serve --); COMP_CWORD=2; COMP_LINE='toolhost serve --'; COMP_POINT=17\n\
         _toolhost toolhost -- serve; echo \"SERVE: ${{COMPREPLY[*]}}\"\n",
        s = script.display()
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &probe])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", show(&out));
    let sub = text.lines().find(|l| l.starts_with("SUB: ")).unwrap_or("");
    for word in ["serve", "call", "list", "approve", "completions"] {
        assert!(sub.split_whitespace().any(|w| w == word), "{word}: {text}");
    }
    let serve = text
        .lines()
        .find(|l| l.starts_with("SERVE: "))
        .unwrap_or("");
    for flag in ["--stdio", "--http", "--plugins"] {
        assert!(
            serve.split_whitespace().any(|w| w == flag),
            "{flag}: {text}"
        );
    }
    // zsh and fish: the scripts their completion systems load by name.
    let zsh = toolhost(dir.path(), &["completions", "zsh"]);
    assert!(String::from_utf8_lossy(&zsh.stdout).starts_with("#compdef toolhost"));
    let fish = toolhost(dir.path(), &["completions", "fish"]);
    assert!(String::from_utf8_lossy(&fish.stdout).contains("complete -c toolhost"));
    // An unknown shell is a usage error that lists the known ones.
    let bad = toolhost(dir.path(), &["completions", "tcsh"]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("bash"),
        "{}",
        show(&bad)
    );
}

// ---------------------------------------------------------------- first tools/list

/// With every component in the compile cache, the `tools/list` a client sends right
/// after `initialize` lists every tool: a client that lists once (many do, whatever
/// `list_changed` says) must not lose the tools that were still being registered.
#[test]
fn the_first_tools_list_on_a_warm_cache_is_complete() {
    let examples = ["calc", "files", "fetch"];
    let wasm: Vec<String> = examples.iter().map(|n| format!("{n}.wasm")).collect();
    let wasm: Vec<&str> = wasm.iter().map(String::as_str).collect();
    let Some(built) = built_plugins(&wasm) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for name in examples {
        for ext in ["wasm", "toml"] {
            let from = built.join(format!("{name}.{ext}"));
            if from.is_file() {
                std::fs::copy(&from, plugins.join(format!("{name}.{ext}"))).unwrap();
            }
        }
    }
    let env = |cmd: &mut Command| {
        cmd.current_dir(dir.path())
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("RUST_LOG");
    };
    // Warm the compile cache.
    let mut list = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    env(&mut list);
    let out = list
        .args(["list", "--json", "--plugins"])
        .arg(&plugins)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));

    for attempt in 0..3 {
        let mut serve = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        env(&mut serve);
        let mut child = serve
            .args(["serve", "--stdio", "--no-audit", "--plugins"])
            .arg(&plugins)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        // Everything at once, as a client that lists right after the handshake does.
        for msg in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        ] {
            writeln!(stdin, "{msg}").unwrap();
        }
        let mut answer = |id: u64| -> Vec<String> {
            let mut line = String::new();
            loop {
                line.clear();
                assert!(lines.read_line(&mut line).unwrap() > 0, "no answer to {id}");
                if let Ok(v) = serde_json::from_str::<Value>(line.trim())
                    && v["id"] == json!(id)
                {
                    return v["result"]["tools"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|t| t["name"].as_str().map(str::to_string))
                        .collect();
                }
            }
        };
        let mut first = answer(2);
        first.sort();
        // The same session's list once everything has long been loaded.
        std::thread::sleep(std::time::Duration::from_secs(2));
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        )
        .unwrap();
        let mut settled = answer(3);
        settled.sort();
        drop(stdin);
        let _ = child.kill();
        let _ = child.wait();
        assert!(settled.len() >= 5, "{settled:?}");
        assert_eq!(
            first, settled,
            "attempt {attempt}: the first tools/list was partial"
        );
    }
}

#[test]
fn a_plain_wit_component_is_listed_inspected_and_called() {
    let Some(plugins) = built_plugins(&["fixtures/plain_wit.wasm"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plugins");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::copy(
        plugins.join("fixtures/plain_wit.wasm"),
        p.join("plain_wit.wasm"),
    )
    .unwrap();
    let pdir = p.to_str().unwrap();

    let out = toolhost(dir.path(), &["list", "--json", "--plugins", pdir]);
    assert!(out.status.success(), "{}", show(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = doc["tools"].as_array().unwrap();
    let reverse = tools.iter().find(|t| t["name"] == "reverse").unwrap();
    assert_eq!(reverse["description"], "Reverses a piece of text.");
    assert!(tools.iter().any(|t| t["name"] == "kinds_echo"));
    assert!(!tools.iter().any(|t| t["name"] == "kinds_make-counter"));

    let out = toolhost(
        dir.path(),
        &["inspect", "--plugins", pdir, "plugins/plain_wit.wasm"],
    );
    assert!(out.status.success(), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("kind: plain WIT component"), "{text}");
    assert!(text.contains("not tools:"), "{text}");
    assert!(
        text.contains("`make-counter` of `demo:plain/kinds@0.1.0`"),
        "{text}"
    );
    assert!(text.contains("tool kinds_ints"), "{text}");
    let out = toolhost(
        dir.path(),
        &[
            "inspect",
            "--json",
            "--plugins",
            pdir,
            "plugins/plain_wit.wasm",
        ],
    );
    assert!(out.status.success(), "{}", show(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kind"], "plain-wit");
    assert!(doc["imports"].as_array().is_some_and(|i| !i.is_empty()));
    assert_eq!(doc["not_tools"].as_array().map(Vec::len), Some(3));

    let call = |args: &[&str]| {
        let mut all = vec!["call", "--plugins", pdir];
        all.extend_from_slice(args);
        toolhost(dir.path(), &all)
    };
    let out = call(&["reverse", r#"{"text": "abc"}"#]);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "cba");
    let out = call(&["divide", r#"{"a": 7, "b": 0}"#]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot divide 7 by zero"),
        "{}",
        show(&out)
    );
    let args = r#"{"a": 256, "b": 0, "c": 0, "d": 0, "e": 0, "f": 0, "g": 0, "h": 0}"#;
    let out = call(&["kinds_ints", args]);
    assert!(!out.status.success(), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("256"),
        "{}",
        show(&out)
    );
    let out = call(&["divide", r#"{"a": 9, "b": 3}"#]);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3");

    // Served over MCP (stdio): listed with its derived schema, called, its err result an
    // error result.
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir.path())
        .args(["serve", "--stdio", "--no-audit", "--plugins", pdir])
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap());
    let mut rpc = |msg: Value| -> Option<Value> {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        let id = msg.get("id")?.clone();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(lines.read_line(&mut line).unwrap() > 0, "serve closed");
            if let Ok(v) = serde_json::from_str::<Value>(line.trim())
                && v["id"] == id
            {
                return Some(v);
            }
        }
    };
    rpc(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}),
    );
    rpc(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let list = rpc(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).unwrap();
    let tools = list["result"]["tools"].as_array().unwrap();
    let area = tools.iter().find(|t| t["name"] == "kinds_area").unwrap();
    assert_eq!(area["description"], "The area of a shape.");
    assert_eq!(
        area["inputSchema"]["properties"]["s"]["oneOf"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    let res = rpc(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "kinds_area", "arguments": {"s": {"tag": "rect", "value": {"x": 2.0, "y": 3.0}}}}}),
    )
    .unwrap();
    assert_ne!(res["result"]["isError"], true, "{res}");
    assert!(res["result"]["content"][0]["text"] == "6.0", "{res}");
    let res = rpc(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "divide", "arguments": {"a": 1, "b": 0}}}),
    )
    .unwrap();
    assert_eq!(res["result"]["isError"], true, "{res}");
    assert!(res.to_string().contains("cannot divide 1 by zero"), "{res}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
