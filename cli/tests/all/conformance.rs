//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned in
//! `cargo xtask peers`) against the real binary:
//!
//! - **toolhost as a gateway**: `toolhost serve --http` wrapping the fixture server
//!   `fixtures/suite_server.cjs` (every feature the suite's server scenarios exercise), and
//!   the whole active server suite run against toolhost. A scenario passes only if toolhost
//!   passes the feature through faithfully.
//! - **toolhost as a server** of its own tools (the example plugins, no wrapped server):
//!   the scenarios of features toolhost offers itself.
//! - **toolhost as a client**: the client scenarios, with `toolhost list` / `call`
//!   pointed at the suite's server (`fixtures/conformance_client.sh`).
//!
//! Every scenario must pass except those listed, each with its reason, in
//! `EXPECTED_FAILURES` (and in docs/mcp.md); a listed one that starts to pass fails the test
//! too, so the list stays true.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use toolhost_testkit::peers::{self, Suite};
use toolhost_testkit::serve::ServeHttp;
use toolhost_testkit::{show, temp_dir};

/// Server scenarios that fail through the gateway today, with the reason (none: every
/// scenario of the pinned suite passes).
const EXPECTED_FAILURES: &[(&str, &str)] = &[];

/// Server scenarios the gateway run must at least include (the suite is pinned; a run
/// that silently ran nothing must not pass).
const MUST_RUN: &[&str] = &[
    "server-initialize",
    "ping",
    "logging-set-level",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-with-logging",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
    "json-schema-2020-12",
];

/// Required 2026-07-28 server scenarios that fail through the gateway, with the reason
/// (also in docs/mcp.md).
const EXPECTED_FAILURES_2026: &[(&str, &str)] = &[];

/// The tasks extension's scenarios (not required by the revision) that fail through the
/// gateway, with the reason (also in docs/mcp.md); every other one must pass.
const TASK_EXPECTED_FAILURES_2026: &[(&str, &str)] = &[];

/// Required 2026-07-28 client scenarios (`client --requirements 2026-07-28`) that fail,
/// with the reason (also in docs/mcp.md).
const CLIENT_EXPECTED_FAILURES_2026: &[(&str, &str)] = &[];

/// The client's OAuth scenarios (`auth/*`) that toolhost passes: `toolhost mcp login
/// --headless` then `toolhost list` (`fixtures/conformance_client.sh`).
const CLIENT_AUTH_PASSING: &[&str] = &[
    "metadata-default",
    "metadata-var1",
    "metadata-var2",
    "metadata-var3",
    "scope-from-www-authenticate",
    "scope-from-scopes-supported",
    "scope-omitted-when-undefined",
    "scope-retry-limit",
    "token-endpoint-auth-basic",
    "token-endpoint-auth-post",
    "token-endpoint-auth-none",
    "2025-03-26-oauth-endpoint-fallback",
    "resource-mismatch",
    "offline-access-scope",
    "offline-access-not-supported",
    "pre-registration",
    "basic-cimd",
    "2025-03-26-oauth-metadata-backcompat",
    "scope-step-up",
    "client-credentials-basic",
    "client-credentials-jwt",
];

/// The client's OAuth scenarios that fail today, with the reason (also in docs/mcp.md).
const CLIENT_AUTH_EXPECTED_FAILURES: &[(&str, &str)] = &[];

/// The suite's scenarios check behaviour with timing in it (notifications during a call,
/// the delay before an SSE reconnect): the tests of this file run one at a time, so their
/// node and toolhost processes don't compete for the cores.
pub(crate) fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// One scenario's outcome: its failed or warned checks (empty: passed).
type Outcomes = BTreeMap<String, Vec<String>>;

/// Reads the suite's `-o` folder: one `PREFIXSCENARIO-TIMESTAMP/checks.json` per scenario
/// (the prefix is `server-` for server scenarios, nothing for client ones).
fn outcomes(out: &Path, prefix: &str) -> Outcomes {
    let mut all = Outcomes::new();
    for entry in std::fs::read_dir(out).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        // The timestamp is `2026-12-02T03-52-28-303Z`: 24 characters and a dash.
        let Some(scenario) = name
            .strip_prefix(prefix)
            .and_then(|s| s.get(..s.len().checked_sub(25)?))
        else {
            continue;
        };
        let checks: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("checks.json")).unwrap())
                .unwrap();
        let bad = checks
            .iter()
            .filter(|c| matches!(c["status"].as_str(), Some("FAILURE" | "WARNING")))
            .map(|c| format!("{}: {}", c["id"], c["errorMessage"]))
            .collect();
        all.insert(scenario.to_string(), bad);
    }
    all
}

fn run_suite(suite: &Suite, args: &[&str], out: &Path) -> std::process::Output {
    Command::new(suite.node())
        .arg(suite.conformance())
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

fn write_gateway_config(dir: &Path, suite: &Suite, leave_out: &str) {
    let config = format!(
        "[mcp.servers.suite]\ncommand = {node:?}\nargs = [{fixture:?}]\n\
         env = {{ NODE_PATH = {modules:?}, SUITE_LEAVE_OUT = {leave_out:?} }}\n\
         # Its tools are test fixtures: read-only, so `serve` offers them without approvals.\n\
         default_risk = \"read-only\"\n",
        node = suite.node().display().to_string(),
        fixture = fixtures().join("suite_server.cjs").display().to_string(),
        modules = suite.modules().display().to_string(),
    );
    std::fs::write(dir.join("toolhost.toml"), config).unwrap();
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
}

/// A fresh folder `tag` wrapping the suite's fixture server (config plus `extra`), and
/// `toolhost serve --http` in it once every tool is loaded.
pub(crate) fn gateway(tag: &str, suite: &Suite, extra: &str) -> (PathBuf, ServeHttp) {
    gateway_leaving_out(tag, suite, extra, "")
}

/// As [`gateway`], with the fixture's tools named in `leave_out` (commas) left out, for
/// another wrapped server in `extra` to provide.
fn gateway_leaving_out(
    tag: &str,
    suite: &Suite,
    extra: &str,
    leave_out: &str,
) -> (PathBuf, ServeHttp) {
    let dir = temp_dir(tag);
    write_gateway_config(&dir, suite, leave_out);
    if !extra.is_empty() {
        let mut config = std::fs::read_to_string(dir.join("toolhost.toml")).unwrap();
        config.push_str(extra);
        std::fs::write(dir.join("toolhost.toml"), config).unwrap();
    }
    let serve = serve_gateway(&dir);
    (dir, serve)
}

/// `toolhost serve --http` in `dir` (its `toolhost.toml`), once every tool is loaded.
pub(crate) fn serve_gateway(dir: &Path) -> ServeHttp {
    ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        dir,
        &["--plugins", "plugins", "--no-audit", "--no-watch"],
        &[],
        "all tools loaded",
        Duration::from_secs(120),
    )
}

#[test]
fn the_server_suite_passes_through_the_gateway() {
    let _serial = one_at_a_time();
    let Some(suite) = peers::suite() else { return };
    let (dir, serve) = gateway("conformance-gateway", &suite, "");
    let out = dir.join("results");
    let mut run = run_suite(&suite, &["server", "--url", &serve.url], &out);
    // Pending in this suite version (not in the active run), and passing: run it too.
    let extra = run_suite(
        &suite,
        &[
            "server",
            "--url",
            &serve.url,
            "--scenario",
            "json-schema-2020-12",
        ],
        &out,
    );
    run.stderr.extend_from_slice(&extra.stderr);
    let got = outcomes(&out, "server-");
    let report = format!("{}\n--- serve stderr:\n{}", show(&run), serve.stderr());
    for s in MUST_RUN {
        assert!(got.contains_key(*s), "scenario {s} did not run:\n{report}");
    }
    let failed: Vec<&String> = got
        .iter()
        .filter(|(_, b)| !b.is_empty())
        .map(|(s, _)| s)
        .collect();
    let expected: Vec<&str> = EXPECTED_FAILURES.iter().map(|(s, _)| *s).collect();
    for s in &failed {
        assert!(
            expected.contains(&s.as_str()),
            "scenario {s} failed: {:?}\n{report}",
            got[*s]
        );
    }
    for s in &expected {
        assert!(
            got.get(*s).is_some_and(|b| !b.is_empty()),
            "scenario {s} is listed as an expected failure but passed (or did not run): \
             take it off EXPECTED_FAILURES and docs/mcp.md\n{report}"
        );
    }
}

/// What the 2026-07-28 revision requires, as the suite's frozen requirement set lists it
/// (`list --requirements 2026-07-28`): the server and client scenarios, and the server
/// scenarios of the tasks extension (not required by the revision; the test still holds
/// toolhost to them).
struct Required2026 {
    server: Vec<String>,
    client: Vec<String>,
    tasks: Vec<String>,
}

fn required_2026(suite: &Suite) -> Required2026 {
    let listed = Command::new(suite.node())
        .arg(suite.conformance_2026())
        .args(["list", "--requirements", "2026-07-28"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    let section = |from: &str, to: &str| -> Vec<String> {
        listed
            .split(from)
            .nth(1)
            .and_then(|rest| rest.split(to).next())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().strip_prefix("- "))
            .map(str::to_string)
            .collect()
    };
    let tasks = section("Run and reported", "\n\n")
        .into_iter()
        .filter_map(|l| l.strip_suffix(" [server]").map(str::to_string))
        .filter(|s| s.starts_with("tasks-"))
        .collect();
    let r = Required2026 {
        server: section("Server scenarios", "Client scenarios"),
        client: section("Client scenarios", "Run and reported"),
        tasks,
    };
    // The set is frozen: a different count means the listing was misread.
    assert_eq!(
        (r.server.len(), r.client.len(), r.tasks.len()),
        (37, 32, 10),
        "{listed}"
    );
    r
}

/// Every `required` scenario ran and passed, except those `expected` to fail (listed
/// with their reason in `list`), which must still fail.
fn check_required(
    required: &[String],
    got: &Outcomes,
    expected: &[(&str, &str)],
    list: &str,
    report: &str,
) {
    for s in required {
        let bad = got
            .get(s)
            .unwrap_or_else(|| panic!("scenario {s} did not run:\n{report}"));
        if expected.iter().any(|(e, _)| e == s) {
            assert!(
                !bad.is_empty(),
                "scenario {s} is listed as failing but passed: take it off {list} and \
                 docs/mcp.md\n{report}"
            );
        } else {
            assert!(bad.is_empty(), "scenario {s} failed: {bad:?}\n{report}");
        }
    }
}

#[test]
fn the_2026_07_28_server_suite_passes_through_the_gateway() {
    let _serial = one_at_a_time();
    let Some(suite) = peers::suite() else { return };
    // The suite leaves rounds unanswered on purpose (a retry with the wrong keys, with
    // none at all): each such call waits for its answer, in its execution slot, until
    // the wrapped server's question times out. More slots than the default 4 keep the
    // later scenarios from queueing behind them.
    //
    // Two wrapped servers, one of each revision: the older revisions' fixture for every
    // feature, and the 2026-07-28 fixture for the one tool whose question the suite wants
    // under the server's own key (`user_name`), which a server of the older revisions,
    // asking mid-call, cannot name.
    let native = Native2026::start(&suite);
    let (dir, serve) = gateway_leaving_out(
        "conformance-gateway-2026",
        &suite,
        // `failing_job` runs only as a task (`tasks-required-task-error`), and so does
        // `test_tool_with_task`, asked in a round first (`tasks-mrtr-composition`).
        &format!(
            "{}[serve]\nmax_concurrent_calls = 32\ntask_support = {{ failing_job = \"required\", \
             test_tool_with_task = \"required\" }}\n",
            native.config()
        ),
        "test_input_required_result_elicitation",
    );
    let out = dir.join("results");
    let run = Command::new(suite.node())
        .arg(suite.conformance_2026())
        .args([
            "server",
            "--url",
            &serve.url,
            "--requirements",
            "2026-07-28",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let got = outcomes(&out, "server-");
    let report = format!("{}\n--- serve stderr:\n{}", show(&run), serve.stderr());
    let required = required_2026(&suite);
    check_required(
        &required.server,
        &got,
        EXPECTED_FAILURES_2026,
        "EXPECTED_FAILURES_2026",
        &report,
    );
    // The tasks extension: all but the listed failures pass (docs/mcp.md has the table).
    for s in &required.tasks {
        if got.get(s).is_some_and(|bad| !bad.is_empty()) {
            eprintln!("tasks scenario {s} fails: {:?}", got[s]);
        }
    }
    check_required(
        &required.tasks,
        &got,
        TASK_EXPECTED_FAILURES_2026,
        "TASK_EXPECTED_FAILURES_2026",
        &report,
    );
}

/// `fixtures/native_2026_server.cjs` (a server of the 2026-07-28 revision, the TypeScript
/// SDK 2.x over HTTP) running on a free port; stopped when dropped.
pub(crate) struct Native2026 {
    child: std::process::Child,
    port: u16,
}

impl Native2026 {
    pub(crate) fn start(suite: &Suite) -> Self {
        let port = toolhost_testkit::free_port();
        let child = Command::new(suite.node())
            .arg(fixtures().join("native_2026_server.cjs"))
            .arg(port.to_string())
            .env("NODE_PATH", suite.modules())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        assert!(
            toolhost_testkit::port_listening(port, Duration::from_secs(30)),
            "the 2026-07-28 fixture did not listen"
        );
        Self { child, port }
    }

    /// Its `[mcp.servers.native]` entry, reached as a 2026-07-28 server.
    pub(crate) fn config(&self) -> String {
        format!(
            "[mcp.servers.native]\nurl = \"http://127.0.0.1:{}/mcp\"\n\
             default_risk = \"read-only\"\nprotocol = \"2026-07-28\"\n",
            self.port
        )
    }
}

impl Drop for Native2026 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A wrapped server of the 2026-07-28 revision (`fixtures/native_2026_server.cjs`, the
/// TypeScript SDK 2.x over HTTP), reached by toolhost as a 2026-07-28 client and served
/// to a 2026-07-28 client: its question keeps its own key (`user_name`) through the
/// gateway, so the suite's `input-required-result-basic-elicitation` passes; a client that
/// did not declare elicitation gets -32021 naming it instead of the round; a tool of it
/// that asks forever is given up after toolhost's round bound, and a good call follows.
#[test]
fn a_wrapped_2026_07_28_servers_rounds_pass_through_under_its_own_keys() {
    let _serial = one_at_a_time();
    let Some(suite) = peers::suite() else { return };
    let native = Native2026::start(&suite);
    let dir = temp_dir("conformance-native-2026");
    std::fs::write(dir.join("toolhost.toml"), native.config()).unwrap();
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    let serve = serve_gateway(&dir);
    let out = dir.join("results");
    let scenario = "input-required-result-basic-elicitation";
    let run = Command::new(suite.node())
        .arg(suite.conformance_2026())
        .args([
            "server",
            "--url",
            &serve.url,
            "--spec-version",
            "2026-07-28",
        ])
        .args(["--scenario", scenario, "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let got = outcomes(&out, "server-");
    assert!(
        got.get(scenario).is_some_and(Vec::is_empty),
        "{scenario}: {:?}\n{}\n--- serve stderr:\n{}",
        got.get(scenario),
        show(&run),
        serve.stderr()
    );

    // The 2026-07-28 capability rules across the gateway: a client that did not declare
    // elicitation gets -32021 naming it for the wrapped tool that asks, and nothing is
    // asked; one that did gets the round, under the server's own key.
    let addr = serve.addr();
    let ask = |capabilities: serde_json::Value| {
        let r = toolhost_testkit::http::mcp_2026(
            &addr,
            "tools/call",
            Some("test_input_required_result_elicitation"),
            serde_json::json!({"name": "test_input_required_result_elicitation", "arguments": {}}),
            capabilities,
        )
        .unwrap();
        toolhost_testkit::http::rpc_message(&r).unwrap()
    };
    let refused = ask(serde_json::json!({}));
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{refused}"
    );
    let round = ask(serde_json::json!({"elicitation": {}}));
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    assert!(
        round["result"]["inputRequests"]["user_name"].is_object(),
        "{round}"
    );

    // Hostile: a server whose tool asks again after every answer. toolhost as its client
    // (`toolhost call`, nobody at a terminal: each question declined) gives up after its
    // round bound; then a good call of the same server works.
    let call = |tool: &str| {
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .current_dir(&dir)
            .args(["call", "--plugins", "plugins", tool, "{}"])
            .output()
            .unwrap()
    };
    let forever = call("ask_forever");
    let text = String::from_utf8_lossy(&forever.stderr).to_string();
    assert!(!forever.status.success(), "{}", show(&forever));
    assert!(
        text.contains("asked for input more than 10 times"),
        "{text}"
    );
    let good = call("hello");
    assert!(
        good.status.success() && String::from_utf8_lossy(&good.stdout).contains("hello from 2026"),
        "{}",
        show(&good)
    );
    drop(native);
}

#[test]
fn toolhost_own_features_pass_without_a_wrapped_server() {
    let _serial = one_at_a_time();
    let Some(suite) = peers::suite() else { return };
    let Some(plugins) = toolhost_testkit::built_plugins(&["calc.wasm"]) else {
        return;
    };
    let dir = temp_dir("conformance-plain");
    std::fs::write(dir.join("toolhost.toml"), "").unwrap();
    let serve = ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        &dir,
        &[
            "--plugins",
            &plugins.display().to_string(),
            "--no-audit",
            "--no-watch",
        ],
        &[],
        "all tools loaded",
        Duration::from_secs(120),
    );
    let out = dir.join("results");
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "logging-set-level",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        let run = run_suite(
            &suite,
            &["server", "--url", &serve.url, "--scenario", scenario],
            &out,
        );
        let got = outcomes(&out, "server-");
        assert!(
            got.get(scenario).is_some_and(Vec::is_empty),
            "scenario {scenario}: {:?}\n{}\n--- serve stderr:\n{}",
            got.get(scenario),
            show(&run),
            serve.stderr()
        );
    }
}

#[test]
fn toolhost_as_a_client_passes_the_client_scenarios() {
    let _serial = one_at_a_time();
    let Some(suite) = peers::suite() else { return };
    let dir = temp_dir("conformance-client");
    let out = dir.join("results");
    let command = fixtures().join("conformance_client.sh");
    for scenario in [
        "initialize",
        "tools_call",
        "sse-retry",
        "elicitation-sep1034-client-defaults",
    ] {
        let run = Command::new(suite.node())
            .arg(suite.conformance())
            .args(["client", "--command"])
            .arg(&command)
            .args(["--scenario", scenario, "-o"])
            .arg(&out)
            .env("TOOLHOST_BIN", env!("CARGO_BIN_EXE_toolhost"))
            .output()
            .unwrap();
        let got = outcomes(&out, "");
        assert!(
            run.status.success() && got.get(scenario).is_some_and(Vec::is_empty),
            "client scenario {scenario}: {:?}\n{}",
            got.get(scenario),
            show(&run)
        );
    }
}

#[test]
fn toolhost_as_a_2026_07_28_client_passes_the_required_client_scenarios() {
    let _serial = one_at_a_time();
    let Some(suite) = peers::suite() else { return };
    let dir = temp_dir("conformance-client-2026");
    let out = dir.join("results");
    let run = Command::new(suite.node())
        .arg(suite.conformance_2026())
        .args(["client", "--command"])
        .arg(fixtures().join("conformance_client.sh"))
        .args(["--requirements", "2026-07-28", "-o"])
        .arg(&out)
        .env("TOOLHOST_BIN", env!("CARGO_BIN_EXE_toolhost"))
        .output()
        .unwrap();
    let mut got = outcomes(&out, "");
    got.extend(
        outcomes(&out.join("auth"), "")
            .into_iter()
            .map(|(k, v)| (format!("auth/{k}"), v)),
    );
    let report = show(&run);
    check_required(
        &required_2026(&suite).client,
        &got,
        CLIENT_EXPECTED_FAILURES_2026,
        "CLIENT_EXPECTED_FAILURES_2026",
        &report,
    );
}

#[test]
fn toolhost_as_a_client_logs_in_with_oauth() {
    let _serial = one_at_a_time();
    let Some(suite) = peers::suite() else { return };
    let dir = temp_dir("conformance-client-auth");
    let command = fixtures().join("conformance_client.sh");
    let run = |scenario: &str| {
        // One folder per scenario: the suite writes `auth/NAME-TIMESTAMP` into it.
        let out = dir.join(scenario);
        let run = Command::new(suite.node())
            .arg(suite.conformance())
            .args(["client", "--command"])
            .arg(&command)
            .arg("--scenario")
            .arg(format!("auth/{scenario}"))
            .arg("-o")
            .arg(&out)
            .env("TOOLHOST_BIN", env!("CARGO_BIN_EXE_toolhost"))
            .output()
            .unwrap();
        let got = outcomes(&out.join("auth"), "");
        (run, got.get(scenario).cloned())
    };
    for scenario in CLIENT_AUTH_PASSING {
        let (run, got) = run(scenario);
        assert!(
            run.status.success() && got.as_ref().is_some_and(Vec::is_empty),
            "client scenario auth/{scenario}: {got:?}\n{}",
            show(&run)
        );
    }
    for (scenario, why) in CLIENT_AUTH_EXPECTED_FAILURES {
        let (run, got) = run(scenario);
        assert!(
            got.as_ref().is_some_and(|bad| !bad.is_empty()),
            "client scenario auth/{scenario} is listed as failing ({why}) but passed or did \
             not run: {got:?}\n{}",
            show(&run)
        );
    }
}
