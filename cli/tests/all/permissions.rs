//! The permission gate as the product runs it, through the real `toolhost` binary: the
//! default policy, the `[permissions]` hooks (a hostile path argument, toolhost's own
//! files), the operator's rating of MCP tools (an unannotated tool of a real MCP server
//! needs an approval), and approvals that outlive the process (`toolhost approvals`).
//! See `docs/permissions.md`, "Who decides what".
//!
//! Each test works in its own folder with its own data folder (`XDG_DATA_HOME`), so the
//! remembered approvals are its own.

// Helpers outside #[test] fns are not covered by clippy.toml's allow-unwrap-in-tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use toolhost_testkit::{built_plugins, peers, show};

/// A plugins folder (which also holds the config) and a private data folder.
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new() -> Work {
        let w = Work {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(w.data()).unwrap();
        w.config("");
        w
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn data(&self) -> PathBuf {
        self.path().join("xdg-data")
    }

    fn config(&self, text: &str) {
        std::fs::write(self.path().join("toolhost.toml"), text).unwrap();
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(args)
            .arg("--plugins")
            .arg(self.path())
            .arg("--config")
            .arg(self.path().join("toolhost.toml"))
            .env("XDG_DATA_HOME", self.data())
            .env_remove("TOOLHOST_PLUGINS")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// `toolhost call --json-output TOOL ARGS` (plus `extra` flags): the parsed record.
    fn call(&self, tool: &str, args: &str, extra: &[&str]) -> Value {
        let mut a = vec!["call", "--json-output"];
        a.extend_from_slice(extra);
        a.extend_from_slice(&[tool, args]);
        let out = self.run(&a);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&out)))
    }
}

fn error_of(v: &Value) -> String {
    assert_eq!(v["ok"], false, "the call should have failed: {v:#}");
    v["error"].as_str().unwrap_or_default().to_string()
}

fn render_of(v: &Value) -> String {
    assert_eq!(v["ok"], true, "the call failed: {v:#}");
    v["render"].as_str().unwrap_or_default().to_string()
}

#[test]
fn policy_and_path_hooks_stop_calls_before_the_sandbox_and_good_calls_still_run() {
    let Some(built) = built_plugins(&["files.wasm"]) else {
        return;
    };
    let w = Work::new();
    std::fs::copy(built.join("files.wasm"), w.path().join("files.wasm")).unwrap();
    std::fs::write(w.path().join("files.toml"), "read = [\"./shared\"]\n").unwrap();
    let shared = w.path().join("shared");
    std::fs::create_dir_all(shared.join("keys")).unwrap();
    std::fs::write(shared.join("note.txt"), "hello").unwrap();
    std::fs::write(shared.join("keys/id"), "SECRET KEY").unwrap();
    let out = w.run(&["approve", "files", "--yes"]);
    assert!(out.status.success(), "{}", show(&out));
    let keys = shared.join("keys").canonicalize().unwrap();
    w.config(&format!(
        "[permissions]\ndeny_paths = [{:?}]\n",
        keys.display().to_string()
    ));
    let shared = shared.canonicalize().unwrap();

    // Hostile: the model folds its way into the denied folder. The sandbox would allow
    // it (the folder is granted); the operator's hook stops it first.
    let sneaky = format!(r#"{{"path": "{}/./x/../keys//id"}}"#, shared.display());
    let err = error_of(&w.call("read_file", &sneaky, &[]));
    assert!(err.contains("deny_paths"), "{err}");
    assert!(!err.contains("SECRET"), "{err}");

    // toolhost's own files are denied whatever the table says.
    let own = format!(r#"{{"path": "{}/toolhost.lock"}}"#, w.path().display());
    let err = error_of(&w.call("read_file", &own, &[]));
    assert!(err.contains("deny_paths"), "{err}");

    // The default policy whitelists read and network: write_file is refused with the fix.
    let write = format!(
        r#"{{"path": "{}/out.txt", "content": "x"}}"#,
        shared.display()
    );
    let err = error_of(&w.call("write_file", &write, &[]));
    assert!(err.contains("add \"write\" to `allowed`"), "{err}");

    // Good call: the note is read.
    let note = format!(r#"{{"path": "{}/note.txt"}}"#, shared.display());
    assert_eq!(render_of(&w.call("read_file", &note, &[])), "hello");
}

/// The Python MCP fixture server (`add`, `shout`, `fail`, none annotated) as `py`, with
/// `extra` lines in its `[mcp.servers.py]` table.
fn py_server(w: &Work, python: &Path, extra: &str) {
    let script = peers::mcp_fixture("py_server.py");
    w.config(&format!(
        "[mcp.servers.py]\ncommand = {:?}\nargs = [{:?}]\ntimeout_secs = 30\n{extra}",
        python.display().to_string(),
        script.display().to_string()
    ));
}

#[test]
fn an_unrated_mcp_tool_needs_an_approval_that_the_operator_can_give_ahead() {
    let Some(python) = peers::python() else {
        return;
    };
    let w = Work::new();
    py_server(&w, &python, "");
    let shout = r#"{"text": "hi"}"#;

    // Unannotated: rated destructive by default. No terminal, no --yes: denied, and the
    // message says how to approve ahead.
    let err = error_of(&w.call("shout", shout, &[]));
    assert!(err.contains("toolhost approvals add shout"), "{err}");
    // --yes approves this one call.
    assert_eq!(render_of(&w.call("shout", shout, &["--yes"])), "HI");
    // Still not remembered.
    assert!(w.call("shout", shout, &[])["ok"] == false);

    // Approved ahead, for calls whose text matches a pattern only.
    let out = w.run(&["approvals", "add", "shout", "--arg", "text=h*"]);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(render_of(&w.call("shout", shout, &[])), "HI");
    let other = w.call("shout", r#"{"text": "no"}"#, &[]);
    assert!(error_of(&other).contains("approvals add"), "{other}");
    let file = w.data().join("toolhost/approvals.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let out = w.run(&["approvals", "list", "--json"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["tool"], "shout", "{list}");
    assert_eq!(list[0]["pattern"]["text"], "h*", "{list}");

    // Revoked: asked (and denied) again.
    let out = w.run(&["approvals", "revoke", "1"]);
    assert!(out.status.success(), "{}", show(&out));
    assert!(w.call("shout", shout, &[])["ok"] == false);
    let out = w.run(&["approvals", "revoke", "1"]);
    assert!(
        !out.status.success(),
        "revoking nothing should fail: {}",
        show(&out)
    );
}

#[test]
fn the_operator_rates_mcp_tools_over_what_the_server_says() {
    let Some(python) = peers::python() else {
        return;
    };
    let w = Work::new();
    // One tool rated read-only by the operator: no approval needed.
    py_server(
        &w,
        &python,
        "[mcp.servers.py.tools.shout]\npermissions = [\"read\"]\n",
    );
    assert_eq!(render_of(&w.call("shout", r#"{"text": "ok"}"#, &[])), "OK");
    // The rest of the server is still unrated.
    let err = error_of(&w.call("add", r#"{"a": 1, "b": 2}"#, &[]));
    assert!(err.contains("approvals add add"), "{err}");

    // The whole server rated `delete`: the default policy denies delete outright, even
    // with --yes (the policy comes before any approval).
    py_server(&w, &python, "permissions = [\"delete\"]\n");
    let err = error_of(&w.call("add", r#"{"a": 1, "b": 2}"#, &["--yes"]));
    assert!(err.contains("'delete'"), "{err}");

    // `[mcp] default_risk` rates unrated tools: read-only runs without approval.
    let script = peers::mcp_fixture("py_server.py");
    w.config(&format!(
        "[mcp]\ndefault_risk = \"read-only\"\n[mcp.servers.py]\ncommand = {:?}\nargs = [{:?}]\n",
        python.display().to_string(),
        script.display().to_string()
    ));
    assert_eq!(render_of(&w.call("add", r#"{"a": 40, "b": 2}"#, &[])), "42");
}
