//! `toolhost serve` driven by the Python `mcp` client, over stdio and Streamable HTTP.
//!
//! The registry holds a wrapped MCP server (the Python fixture server of toolhost-mcp) and,
//! when `cargo xtask plugins` has built them, the example WASM plugins (`add` from calc).
//! Over stdio the client only works if stdout carries nothing but protocol.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_testkit::built_plugins;

fn fixtures() -> PathBuf {
    toolhost_testkit::peers::mcp_fixture("")
}

fn python() -> Option<PathBuf> {
    toolhost_testkit::peers::python()
}

/// A temp dir with a toolhost.toml wrapping the Python fixture server as `py`.
fn setup(python: &Path) -> PathBuf {
    let dir = toolhost_testkit::temp_dir("serve");
    let config = format!(
        // The operator rates the server's tools (unrated MCP tools need an approval,
        // which `serve` cannot ask for).
        "[mcp.servers.py]\ncommand = {:?}\nargs = [{:?}]\ntimeout_secs = 30\npermissions = [\"read\"]\n",
        python.display().to_string(),
        fixtures().join("py_server.py").display().to_string()
    );
    std::fs::write(dir.join("toolhost.toml"), config).unwrap();
    std::fs::create_dir_all(dir.join("no-plugins")).unwrap();
    dir
}

fn serve_args(dir: &Path) -> Vec<String> {
    let plugins = built_plugins(&["calc.wasm"]).unwrap_or_else(|| dir.join("no-plugins"));
    vec![
        // The audit trail is tested in tests/audit.rs; keep the user's data folder clean.
        "--no-audit".into(),
        "--config".into(),
        dir.join("toolhost.toml").display().to_string(),
        "--plugins".into(),
        plugins.display().to_string(),
    ]
}

fn check(report: &Value) {
    let names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    // The wrapped MCP tools are there (namespaced if a plugin took the name).
    assert!(names.contains(&"shout"), "{names:?}");
    assert!(
        names.contains(&"add") || names.contains(&"py__add"),
        "{names:?}"
    );
    if built_plugins(&["calc.wasm"]).is_some() {
        assert!(
            names.contains(&"py__add"),
            "wasm add should own 'add': {names:?}"
        );
    }
    let shout = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "shout")
        .unwrap();
    assert_eq!(shout["inputSchema"]["type"], "object");
    assert!(shout["annotations"]["readOnlyHint"].is_boolean(), "{shout}");
    assert_eq!(
        report["call"]["structuredContent"],
        json!({"result": 42}),
        "{report}"
    );
    let text = report["call"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("42"), "{report}");
    assert_eq!(report["unknown"]["isError"], true, "{report}");
    if built_plugins(&["calc.wasm"]).is_some() {
        // The WASM `add` of the calc example, through serve.
        assert_ne!(report["call2"]["isError"], true, "{report}");
        assert!(
            report["call2"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .contains("42"),
            "{report}"
        );
    }
}

/// The calls the client makes: the wrapped Python `add`, and the WASM `add` when built.
fn call_env(cmd: &mut std::process::Command) {
    let py_add = if built_plugins(&["calc.wasm"]).is_some() {
        "py__add"
    } else {
        "add"
    };
    // serve loads its tools in the background: the client lists until they are there.
    let wait = if built_plugins(&["calc.wasm"]).is_some() {
        "shout,py__add,add"
    } else {
        "shout,add"
    };
    cmd.env("CALL_TOOL", py_add)
        .env("CALL_ARGS", r#"{"a": 40, "b": 2}"#)
        .env("WAIT_FOR_TOOLS", wait);
    if built_plugins(&["calc.wasm"]).is_some() {
        cmd.env("CALL_TOOL2", "add")
            .env("CALL_ARGS2", r#"{"x": 40, "y": 2}"#);
    }
}

#[test]
fn python_client_over_stdio_lists_and_calls() {
    let Some(python) = python() else { return };
    let dir = setup(&python);
    let mut cmd = std::process::Command::new(&python);
    cmd.arg(fixtures().join("py_client.py"))
        .arg("stdio")
        .arg(env!("CARGO_BIN_EXE_toolhost"))
        .arg("serve")
        .arg("--stdio")
        .args(serve_args(&dir))
        .env("RUST_LOG", "info");
    call_env(&mut cmd);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    check(&report);
}

#[test]
fn python_client_over_http_lists_and_calls() {
    let Some(python) = python() else { return };
    let dir = setup(&python);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("serve")
        .arg("--http")
        .arg(format!("127.0.0.1:{port}"))
        .args(serve_args(&dir))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let up = toolhost_testkit::port_listening(port, Duration::from_secs(30));
    let result = up.then(|| {
        let mut cmd = std::process::Command::new(&python);
        cmd.arg(fixtures().join("py_client.py"))
            .arg("http")
            .arg(format!("http://127.0.0.1:{port}/mcp"));
        call_env(&mut cmd);
        cmd.output()
    });
    let _ = server.kill();
    let _ = server.wait();
    assert!(up, "toolhost serve --http did not start listening");
    let out = result.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check(&serde_json::from_str(stdout.trim()).unwrap());
}
