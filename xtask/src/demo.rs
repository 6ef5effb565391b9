//! `cargo xtask demo`: builds the host and the three Rust example plugins (nothing else:
//! no other language's toolchain, no test fixture) and shows toolhost at work on them:
//! lists the tools, shows an unapproved plugin refused until the operator approves it,
//! calls the tools, shows escape attempts denied with their errors, then does the main job:
//! `toolhost serve --stdio` answering a scripted MCP client (initialize, tools/list, one
//! call), and prints the client configuration a user pastes into Claude Desktop, Cursor or
//! VS Code. Ends with the wall time of each step.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The `toolhost` binary the demo built.
/// The host the demo built: the `demo` profile (Cargo.toml: most dependencies
/// unoptimised, the component compiler optimised), for a first build that is short.
fn binary() -> PathBuf {
    crate::root().join("target").join("demo").join("toolhost")
}

fn toolhost(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(binary());
    cmd.current_dir(crate::root())
        .args(args)
        .arg("--plugins")
        .arg(dir)
        // The demo's own state (remembered approvals, logins) stays under target/, not in
        // the user's data dir.
        .env(
            "XDG_DATA_HOME",
            crate::root().join("target").join("demo-state"),
        );
    cmd
}

/// Runs a command that is expected to fail (a denied call); fails if it succeeds.
fn expect_denied(cmd: &mut Command) -> crate::Result {
    let desc = format!("{cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {desc}: {e}"))?;
    if status.success() {
        Err(format!(
            "{desc} succeeded, but the sandbox should have denied it"
        ))
    } else {
        eprintln!(
            "    (exit code {}: denied as expected)",
            status.code().unwrap_or(-1)
        );
        Ok(())
    }
}

/// A fresh demo plugins folder (no lock yet) with the example plugins and their requests
/// copied from the build, and a file to read in `data/files/` (the folder files.toml requests).
fn demo_folder(built: &Path) -> Result<PathBuf, String> {
    let dir = crate::root().join("target").join("demo-plugins");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("data/files"))
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for name in crate::plugins::RUST_EXAMPLES {
        for ext in ["wasm", "toml"] {
            let from = built.join(format!("{name}.{ext}"));
            if from.is_file() {
                std::fs::copy(&from, dir.join(format!("{name}.{ext}")))
                    .map_err(|e| format!("cannot copy {}: {e}", from.display()))?;
            }
        }
    }
    std::fs::write(
        dir.join("data/files/hello.txt"),
        "hello from the granted folder\n",
    )
    .map_err(|e| format!("cannot write the demo file: {e}"))?;
    Ok(dir)
}

/// Runs the demo and prints the table of step times, whether it passed or not.
pub fn run() -> crate::Result {
    let result = steps();
    eprint!("{}", crate::timing::table("cargo xtask demo"));
    result
}

fn steps() -> crate::Result {
    let built = crate::plugins::build_examples()?;
    crate::step("cargo build -p toolhost-cli --profile demo");
    crate::run(
        Command::new(crate::cargo())
            .current_dir(crate::root())
            .args([
                "build",
                "--locked",
                "-p",
                "toolhost-cli",
                "--profile",
                "demo",
            ]),
    )?;
    let dir = demo_folder(&built)?;
    let d = dir.as_path();

    crate::step("toolhost --version");
    crate::run(Command::new(binary()).arg("--version"))?;

    crate::step("toolhost list  (nothing approved yet: every plugin is `unapproved`)");
    crate::run(&mut toolhost(d, &["list"]))?;

    crate::step("toolhost inspect files.wasm (declared permissions ∩ files.toml)");
    let files = dir.join("files.wasm");
    crate::run(&mut toolhost(d, &["inspect", &files.to_string_lossy()]))?;

    crate::step("toolhost call add '{\"x\": 1, \"y\": 2}'  (pure compute works unapproved)");
    crate::run(&mut toolhost(d, &["call", "add", r#"{"x": 1, "y": 2}"#]))?;

    let inside = dir.join("data/files/hello.txt");
    let args = format!(r#"{{"path": {:?}}}"#, inside.to_string_lossy());
    crate::step(&format!(
        "toolhost call read_file '{args}'  (files is unapproved: refused, with the approve command)"
    ));
    expect_denied(&mut toolhost(d, &["call", "read_file", &args]))?;

    crate::step("toolhost approve files --yes  (the operator grants what files.toml requests)");
    crate::run(&mut toolhost(d, &["approve", "files", "--yes"]))?;

    crate::step("toolhost call mean '{\"values\": [1, 2, 3, 4]}'");
    crate::run(&mut toolhost(
        d,
        &["call", "mean", r#"{"values": [1, 2, 3, 4]}"#],
    ))?;

    crate::step(&format!(
        "toolhost call read_file '{args}'  (inside the approved folder)"
    ));
    crate::run(&mut toolhost(d, &["call", "read_file", &args]))?;

    crate::step("toolhost list  (files is `approved`)");
    crate::run(&mut toolhost(d, &["list"]))?;

    crate::step("toolhost call read_file '{\"path\": \"/etc/passwd\"}'  (escape attempt)");
    expect_denied(&mut toolhost(
        d,
        &["call", "read_file", r#"{"path": "/etc/passwd"}"#],
    ))?;

    let dotdot = format!(
        r#"{{"path": "{}/../../Cargo.toml"}}"#,
        dir.join("data/files").to_string_lossy()
    );
    crate::step(&format!(
        "toolhost call read_file '{dotdot}'  (.. traversal)"
    ));
    expect_denied(&mut toolhost(d, &["call", "read_file", &dotdot]))?;

    let plugin_file = dir.join("calc.toml");
    let args = format!(r#"{{"path": {:?}}}"#, plugin_file.to_string_lossy());
    crate::step(&format!(
        "toolhost call read_file '{args}'  (the plugins folder is never grantable)"
    ));
    expect_denied(&mut toolhost(d, &["call", "read_file", &args]))?;

    let write = format!(
        r#"{{"path": "{}/data/files/hello.txt", "content": "pwned"}}"#,
        dir.to_string_lossy()
    );
    crate::step(
        "toolhost call write_file ...  (the default [permissions] policy allows read and network only; nor does the grant have a write folder)",
    );
    expect_denied(&mut toolhost(d, &["call", "write_file", &write]))?;

    crate::step("toolhost approve fetch --yes");
    crate::run(&mut toolhost(d, &["approve", "fetch", "--yes"]))?;
    crate::step(
        "toolhost call http_get '{\"url\": \"http://169.254.169.254/latest/meta-data\"}'  (a cloud metadata address: the default deny_hosts hook stops it, and it is not on the allowlist either)",
    );
    expect_denied(&mut toolhost(
        d,
        &[
            "call",
            "http_get",
            r#"{"url": "http://169.254.169.254/latest/meta-data"}"#,
        ],
    ))?;
    crate::step(
        "toolhost call http_get '{\"url\": \"http://127.0.0.1:9/\"}'  (not on the plugin's network allowlist: the sandbox refuses)",
    );
    expect_denied(&mut toolhost(
        d,
        &["call", "http_get", r#"{"url": "http://127.0.0.1:9/"}"#],
    ))?;

    crate::step(
        "toolhost approve calc --yes  (pure compute, approved so the lock covers the folder)",
    );
    crate::run(&mut toolhost(d, &["approve", "calc", "--yes"]))?;

    crate::step("toolhost lock --check  (the folder and its lock agree)");
    crate::run(&mut toolhost(d, &["lock", "--check"]))?;

    crate::step(
        "toolhost serve --stdio  (the main job: an MCP client sends initialize, tools/list, tools/call)",
    );
    serve_session(d)?;

    crate::step("the client configuration");
    print_client_config(d);
    Ok(())
}

/// How long the scripted client waits for one answer: the first start compiles the
/// three components (a few seconds), an answer after that takes milliseconds.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

/// The scripted MCP client: one JSON-RPC message a line on the server's stdin, answers
/// read from its stdout (which carries nothing but protocol; logs go to stderr).
fn serve_session(dir: &Path) -> crate::Result {
    let mut child = toolhost(dir, &["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start toolhost serve --stdio: {e}"))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        return Err("toolhost serve --stdio: no pipes".into());
    };
    // Answers arrive on a thread, so that a silent server is a timeout, not a hang.
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let result = (|| -> crate::Result {
        let mut send = |msg: &str| -> crate::Result {
            eprintln!("    client → {msg}");
            writeln!(stdin, "{msg}").map_err(|e| format!("cannot write to the server: {e}"))
        };
        let answer = |id: u32| -> crate::Result<String> {
            let want = format!("\"id\":{id}");
            loop {
                let line = rx
                    .recv_timeout(ANSWER_TIMEOUT)
                    .map_err(|_| format!("no answer to request {id} from serve --stdio"))?;
                // Notifications (tools/list_changed, logs) may come in between.
                if line.contains(&want) {
                    return Ok(line);
                }
            }
        };
        send(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"xtask-demo","version":"1"}}}"#,
        )?;
        let init = answer(1)?;
        eprintln!(
            "    server → initialize: {} (protocol {})",
            field(&init, "name").unwrap_or("?"),
            field(&init, "protocolVersion").unwrap_or("?")
        );
        send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
        send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#)?;
        let list = answer(2)?;
        let names = tool_names(&list);
        eprintln!(
            "    server → tools/list: {} tools: {}",
            names.len(),
            names.join(", ")
        );
        if !names.iter().any(|n| n == "add") {
            return Err(format!("tools/list has no `add`: {list}"));
        }
        send(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"x":20,"y":22}}}"#,
        )?;
        let call = answer(3)?;
        let text = field(&call, "text").unwrap_or("?");
        eprintln!("    server → tools/call add: {text}");
        if !text.starts_with("42") {
            return Err(format!("add(20, 22) did not answer 42: {call}"));
        }
        Ok(())
    })();
    // Closing stdin ends the session; the server exits.
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// The string value of the first `"key":"…"` in a JSON line (enough for the demo's
/// printout; the tests check the protocol with real MCP clients).
fn field<'a>(json: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("\"{key}\":\"");
    let start = json.find(&pat)? + pat.len();
    let rest = &json[start..];
    let mut end = 0;
    let bytes = rest.as_bytes();
    while end < bytes.len() {
        match bytes[end] {
            b'\\' => end += 2,
            b'"' => return rest.get(..end),
            _ => end += 1,
        }
    }
    None
}

/// The names of the tools of a `tools/list` answer: each tool object's `"name":"…"`,
/// which in toolhost's output directly follows the object's opening `{`.
fn tool_names(list: &str) -> Vec<String> {
    list.match_indices("{\"name\":\"")
        .filter_map(|(i, _)| field(&list[i..], "name"))
        .map(str::to_string)
        .collect()
}

/// The lines a user pastes into an MCP client to use this toolhost.
fn print_client_config(dir: &Path) {
    let bin = binary();
    let args = format!(
        r#"["serve","--stdio","--plugins",{:?}]"#,
        dir.to_string_lossy()
    );
    let cmd = format!("{:?}", bin.to_string_lossy());
    println!(
        "Claude Desktop (claude_desktop_config.json) or Cursor (~/.cursor/mcp.json):\n  \
         {{\"mcpServers\":{{\"toolhost\":{{\"command\":{cmd},\"args\":{args}}}}}}}\n\
         VS Code (.vscode/mcp.json):\n  \
         {{\"servers\":{{\"toolhost\":{{\"type\":\"stdio\",\"command\":{cmd},\"args\":{args}}}}}}}\n\
         (for a path that outlives this checkout: cargo install --locked --path cli, then \
         \"command\":\"toolhost\")"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_tool_names_are_read_from_a_line() {
        let list = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"add","description":"a \"quoted\" word","inputSchema":{"properties":{"name":{"type":"string"}}}},{"name":"mean"}]}}"#;
        assert_eq!(tool_names(list), ["add", "mean"]);
        assert_eq!(field(list, "description"), Some(r#"a \"quoted\" word"#));
        assert_eq!(field(list, "missing"), None);
    }
}
