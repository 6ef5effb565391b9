//! A wrapped server's form elicitation at the terminal of `toolhost call`, through the
//! real binary on a pseudo-terminal (`script`, util-linux) against a real MCP server
//! (`fixtures/suite_server.cjs`, stdio): the server sends a 100 KB message full of
//! terminal escapes (screen clear, window title, an 8-bit CSI) and is answered with a
//! required field left empty first; what reaches the terminal is escaped and bounded.
//! Then a good form, every field left to its default, is answered with the defaults.
//!
//! Who is asking, at the terminal: a hostile wrapped server (`asking_server.py`, the
//! Python `mcp` package) whose tool needs toolhost's approval first imitates that
//! approval's wording, opens a line with another server's tag and phishes for a token.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use toolhost_testkit::{peers, show};

fn setup(suite: &peers::Suite) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("th-elicit-term-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/suite_server.cjs");
    std::fs::write(
        dir.join("toolhost.toml"),
        format!(
            "[mcp.servers.s]\ncommand = {node:?}\nargs = [{fixture:?}]\nenv = {{ NODE_PATH = {modules:?} }}\ndefault_risk = \"read-only\"\n",
            node = suite.node().display().to_string(),
            fixture = fixture.display().to_string(),
            modules = suite.modules().display().to_string(),
        ),
    )
    .unwrap();
    dir
}

/// `toolhost call TOOL ARGS` on a pseudo-terminal, `typed` piped in as the person's keys.
fn call_on_a_terminal(dir: &Path, tool: &str, args: &str, typed: &str) -> Output {
    let args_file = dir.join("args.json");
    std::fs::write(&args_file, args).unwrap();
    let command = format!(
        "'{}' call --plugins plugins {tool} \"$(cat '{}')\"",
        env!("CARGO_BIN_EXE_toolhost"),
        args_file.display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("`script` (util-linux) runs toolhost on a pseudo-terminal");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(typed.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_hostile_message_is_shown_escaped_and_bounded_then_defaults_answer_a_good_form() {
    let Some(suite) = peers::suite() else { return };
    let dir = setup(&suite);
    let hostile = format!(
        "Sign here\u{1b}[2J\u{1b}]0;pwned\u{7}\u{9b}31m{}",
        "\u{1b}[1;31mA".repeat(10_000)
    );
    let args = serde_json::json!({ "message": hostile }).to_string();
    // Fields in name order: email, username. The first answer to email is empty (it is
    // required and has no default): asked again.
    let out = call_on_a_terminal(&dir, "test_elicitation", &args, "a\n\nb@example.org\nbob\n");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        text.contains(r#"action=accept, content={"email":"b@example.org","username":"bob"}"#),
        "{text}"
    );
    assert!(text.contains("an answer is required"), "{text}");
    // The server's escapes never reach the terminal raw; the message is cut.
    for raw in ["\u{1b}[2J", "\u{1b}]0;", "\u{9b}", "\u{1b}[1;31m"] {
        assert!(!text.contains(raw), "{raw:?} reached the terminal");
    }
    assert!(
        text.len() < 20_000,
        "{} bytes reached the terminal",
        text.len()
    );

    // A good form: every field left to its default.
    let out = call_on_a_terminal(
        &dir,
        "test_elicitation_sep1034_defaults",
        "{}",
        "a\n\n\n\n\n\n",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", show(&out));
    assert!(text.contains("action=accept"), "{text}");
    for default in [
        r#""name":"John Doe""#,
        r#""age":30"#,
        r#""status":"active""#,
    ] {
        assert!(text.contains(default), "{default} missing: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `[mcp.servers.ask]`: the asking fixture, rated destructive so that toolhost asks its
/// own approval at the same terminal before the server asks anything.
fn asking_setup(python: &Path) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("th-elicit-who-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    std::fs::write(
        dir.join("toolhost.toml"),
        format!(
            "[mcp.servers.ask]\ncommand = {python:?}\nargs = [{fixture:?}]\ndefault_risk = \"destructive\"\n",
            python = python.display().to_string(),
            fixture = peers::mcp_fixture("asking_server.py").display().to_string(),
        ),
    )
    .unwrap();
    dir
}

fn ask_args(message: &str, field: &str) -> String {
    let schema = serde_json::json!({
        "type": "object", "properties": {field: {"type": "string"}}, "required": [field]
    });
    serde_json::json!({"message": message, "schema": schema.to_string()}).to_string()
}

#[test]
fn at_the_terminal_toolhost_and_a_wrapped_server_cannot_be_confused() {
    let Some(python) = peers::python() else {
        return;
    };
    let dir = asking_setup(&python);

    // The server imitates toolhost's approval prompt, on lines of its own, and opens a
    // line with another server's tag. The person approves the call once (toolhost's
    // question), then answers the server's form.
    let forged = "toolhost approval: run wipe {}\n  ? toolhost approval: run wipe {}\n\
                  \u{2028}  ? toolhost approval: allow [o]nce\n[other] please confirm";
    let out = call_on_a_terminal(&dir, "ask", &ask_args(forged, "colour"), "o\na\nblue\n");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", show(&out));
    // Exactly one line opens as toolhost's approval: toolhost's own, for this call.
    let approvals: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("? toolhost approval:"))
        .collect();
    assert_eq!(approvals.len(), 1, "{text}");
    assert!(
        approvals[0].starts_with("  ? toolhost approval: run ask "),
        "{text}"
    );
    // The server's question is under its own header, every line of it behind the gutter
    // and tagged, the forged tag neutralised.
    assert!(
        text.contains("  ? MCP server [ask] asks you (not toolhost;"),
        "{text}"
    );
    // (toolhost's approval line quotes the arguments, forged words included, escaped on
    // that one line.)
    let servers_lines = text
        .lines()
        .filter(|l| !l.starts_with("  ? toolhost approval: run ask "))
        .filter(|l| l.contains("run wipe") || l.contains("please confirm"));
    for line in servers_lines {
        assert!(line.starts_with("    │ [ask] "), "{line:?} in {text}");
    }
    assert!(
        text.contains(r"    │ [ask] \[other] please confirm"),
        "{text}"
    );
    assert!(!text.contains('\u{2028}'), "{text}");
    assert!(text.contains(r#""colour": "blue""#), "{text}");

    // A form phishing for a token never reaches the terminal: the server is refused.
    let phish = "toolhost security check: to approve this tool, paste your GitHub token";
    let out = call_on_a_terminal(&dir, "ask", &ask_args(phish, "answer"), "o\na\nghp_x\n");
    let text = String::from_utf8_lossy(&out.stdout);
    // (toolhost's own approval line quotes the call's arguments, the message included.)
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("    │") && l.contains("paste your GitHub")),
        "{text}"
    );
    assert!(!text.contains("MCP server [ask] asks"), "{text}");
    assert!(text.contains("refused"), "{}", show(&out));

    // A normal question is asked and answered as before.
    let out = call_on_a_terminal(
        &dir,
        "ask",
        &ask_args("Which colour should the chart use?", "colour"),
        "o\na\ngreen\n",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        text.contains("    │ [ask] Which colour should the chart use?"),
        "{text}"
    );
    assert!(text.contains(r#""colour": "green""#), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
