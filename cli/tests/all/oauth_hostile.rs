//! OAuth against a hostile server (`fixtures/oauth_hostile.cjs`, a real node process that
//! is its own authorization server), through the `toolhost` binary:
//!
//! - more scope during a session: a server that keeps asking for a scope the login has
//!   gets no second login (no loop); one that names 100 scopes or a malformed scope gets
//!   none either; each ends with a clear error. Then the good server, which wants
//!   `mcp:write` for its tool, gets exactly one more login and the call answers;
//! - machine clients: a token endpoint that answers without a token fails the connection
//!   with a clear error; the good one gives a token and the call answers.
//!
//! The good logins themselves are the conformance suite's (cli/tests/all/conformance.rs).

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;
use toolhost_testkit::{peers, show};

/// The fixture server, killed on drop.
struct Hostile {
    child: Child,
    url: String,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Hostile {
    fn start(node: &Path, mode: &str) -> Hostile {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oauth_hostile.cjs");
        let mut child = Command::new(node)
            .arg(script)
            .arg(mode)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("listening ").unwrap().to_string();
        Hostile {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// How often `/authorize` and `/token` were asked, and the scopes of each login.
    fn stats(&self) -> Value {
        use std::io::{Read, Write};
        let addr = self.url.trim_start_matches("http://");
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /stats HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let body = text.split_once("\r\n\r\n").unwrap().1;
        serde_json::from_str(body).unwrap()
    }
}

/// A folder with a config naming the server as `h` (plus `extra` in its oauth table)
/// and an empty plugins folder.
fn setup(tag: &str, url: &str, extra: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("th-oauth-hostile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    std::fs::write(
        dir.join("toolhost.toml"),
        format!("[mcp.servers.h]\nurl = \"{url}/mcp\"\ndefault_risk = \"read-only\"\n{extra}"),
    )
    .unwrap();
    dir
}

fn toolhost(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .current_dir(dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("RUST_LOG")
        .env_remove("TOOLHOST_PLUGINS")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn login(dir: &Path) {
    let out = toolhost(
        dir,
        &[
            "mcp",
            "login",
            "--plugins",
            "plugins",
            "--headless",
            "--timeout",
            "30",
            "h",
        ],
    );
    assert!(out.status.success(), "login: {}", show(&out));
}

fn call(dir: &Path) -> Output {
    toolhost(
        dir,
        &[
            "call",
            "--plugins",
            "plugins",
            "--login",
            "headless",
            "whoami",
            "{}",
        ],
    )
}

#[test]
fn a_server_that_asks_for_scope_it_cannot_be_given_gets_no_login_loop_then_step_up_works() {
    let Some(suite) = peers::suite() else { return };
    for (mode, says) in [
        ("loop", "already has"),
        ("many", "more than 32 scopes"),
        ("junk", "malformed scope"),
    ] {
        let server = Hostile::start(&suite.node(), mode);
        let dir = setup(mode, &server.url, "");
        login(&dir);
        let out = call(&dir);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{mode}: {}", show(&out));
        assert!(
            err.contains("HTTP 403") && err.contains(says),
            "{mode}: {err}"
        );
        assert!(
            !err.contains('\u{1b}'),
            "{mode}: an escape reached the terminal: {err:?}"
        );
        // Only the first login's authorization: the hostile answer started no other.
        assert_eq!(server.stats()["authorize"], 1, "{mode}: {}", server.stats());
        let _ = std::fs::remove_dir_all(&dir);
    }

    // The good server: one more login, for the union of the scopes, and the call answers.
    let server = Hostile::start(&suite.node(), "stepup");
    let dir = setup("stepup", &server.url, "");
    login(&dir);
    let out = call(&dir);
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("scopes: mcp:basic mcp:write"),
        "{}",
        show(&out)
    );
    let stats = server.stats();
    assert_eq!(stats["authorize"], 2, "{stats}");
    assert_eq!(stats["scopes"][1], "mcp:basic mcp:write", "{stats}");
    // Without a person to log in (`--login never`), the same 403 says what to do.
    let server = Hostile::start(&suite.node(), "stepup");
    let dir2 = setup("stepup-never", &server.url, "");
    login(&dir2);
    let out = toolhost(
        &dir2,
        &[
            "call",
            "--plugins",
            "plugins",
            "--login",
            "never",
            "whoami",
            "{}",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("toolhost mcp login h") && err.contains("--scope"),
        "{err}"
    );
    assert_eq!(server.stats()["authorize"], 1);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

/// A server that refuses every login when toolhost connects (HTTP 401): `call --login`
/// logs in again once, then gives up with the warning; no login loop. A good server's
/// call follows.
#[test]
fn a_server_that_refuses_every_login_gets_one_more_login_not_a_loop() {
    let Some(suite) = peers::suite() else { return };
    let server = Hostile::start(&suite.node(), "refuse");
    let dir = setup("refuse", &server.url, "");
    login(&dir);
    let out = call(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", show(&out));
    assert_eq!(
        err.matches("refused the stored login: logging in again")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("HTTP 401"), "{err}");
    assert_eq!(server.stats()["authorize"], 2, "{}", server.stats());

    let good = Hostile::start(&suite.node(), "stepup");
    let dir2 = setup("refuse-then-good", &good.url, "");
    login(&dir2);
    let out = call(&dir2);
    assert!(out.status.success(), "{}", show(&out));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

/// `toolhost call whoami` as a machine client, its secret in `H_SECRET`.
fn machine_call(dir: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.args(["call", "--plugins", "plugins", "whoami", "{}"])
        .current_dir(dir)
        .env("H_SECRET", "the-secret")
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    cmd.output().unwrap()
}

#[test]
fn a_machine_client_without_a_token_fails_clearly_then_a_good_one_calls() {
    let Some(suite) = peers::suite() else { return };
    let machine = "[mcp.servers.h.oauth]\ngrant = \"client_credentials\"\nclient_id = \"m\"\nclient_secret_env = \"H_SECRET\"\n";
    let server = Hostile::start(&suite.node(), "machine-junk");
    let dir = setup("machine-junk", &server.url, machine);
    let out = machine_call(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", show(&out));
    assert!(
        err.contains("MCP server 'h'") && err.contains("token request"),
        "{err}"
    );
    assert!(!err.contains("the-secret"), "{err}");
    assert!(
        err.len() < 4000,
        "the 100 KB answer must not be echoed: {}",
        err.len()
    );

    let server = Hostile::start(&suite.node(), "stepup");
    let dir2 = setup("machine-good", &server.url, machine);
    let out = machine_call(&dir2);
    assert!(out.status.success(), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("mcp:write"));
    let stats = server.stats();
    assert_eq!(
        (stats["authorize"].as_u64(), stats["token"].as_u64()),
        (Some(0), Some(1)),
        "{stats}"
    );
    assert!(
        !dir2.join("data/toolhost/oauth").exists(),
        "a machine client stores nothing"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}
