//! A replica as an orchestrator sees it: the real binary's `serve --http --admin`.
//!
//! - `/healthz` answers at once; `/readyz` is 503 with the reason while a plugin is still
//!   loading (a component whose `describe()` sleeps into its 2 s deadline) or still
//!   compiling its optimized code, 200 after;
//! - `/metrics` counts the calls by tool, source and outcome, has the latency histogram and
//!   the plugin load times; a call of a tool that does not exist is counted under
//!   `(unknown)`, never under the name the caller made up;
//! - SIGTERM while a call runs: `/readyz` turns 503 "shutting down", the MCP listener
//!   stops accepting, the call in flight finishes with its result, the process exits 0.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use toolhost_testkit::http::{mcp_call, mcp_session, request};
use toolhost_testkit::serve::ServeHttp;
use toolhost_testkit::{built_plugins, show};

/// A work folder: `plugins/` with `plugins` copied in (`(built file stem, name)`), its own
/// compile cache (cold: the loads take their real time) and data folder.
fn work(plugins: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let stems: Vec<String> = plugins.iter().map(|(s, _)| format!("{s}.wasm")).collect();
    let stems: Vec<&str> = stems.iter().map(String::as_str).collect();
    let built = built_plugins(&stems).expect("the built plugins (cargo xtask plugins)");
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("plugins");
    std::fs::create_dir_all(&dest).unwrap();
    for (stem, name) in plugins {
        std::fs::copy(
            built.join(format!("{stem}.wasm")),
            dest.join(format!("{name}.wasm")),
        )
        .unwrap();
        let toml = built.join(format!("{stem}.toml"));
        if toml.is_file() {
            std::fs::copy(&toml, dest.join(format!("{name}.toml"))).unwrap();
        }
    }
    (dir, dest)
}

fn env(dir: &Path) -> Vec<(String, String)> {
    vec![
        (
            "XDG_CACHE_HOME".into(),
            dir.join("cache").display().to_string(),
        ),
        (
            "XDG_DATA_HOME".into(),
            dir.join("data").display().to_string(),
        ),
    ]
}

fn serve(dir: &Path, plugins: &Path, extra: &[&str]) -> ServeHttp {
    let env = env(dir);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut args = vec![
        "--no-audit",
        "--no-watch",
        "--admin",
        "127.0.0.1:0",
        "--plugins",
        plugins.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        dir,
        &args,
        &env,
        "admin endpoints at",
        Duration::from_secs(60),
    )
}

/// Polls `/readyz` until it answers 200 (at most two minutes: a cold compile).
fn wait_ready(admin: &str) {
    let t0 = Instant::now();
    loop {
        let r = request(admin, "GET", "/readyz", &[], "").unwrap();
        if r.status == 200 {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "never ready: {} {}",
            r.status,
            r.body
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The value of the sample of `metric` whose labels contain every one of `labels`.
fn sample(metrics: &str, metric: &str, labels: &[&str]) -> Option<f64> {
    metrics.lines().find_map(|l| {
        let rest = l.strip_prefix(metric)?;
        if !(rest.starts_with('{') || rest.starts_with(' ')) {
            return None;
        }
        labels
            .iter()
            .all(|want| rest.contains(want))
            .then(|| l.rsplit(' ').next()?.parse().ok())?
    })
}

#[test]
fn the_admin_endpoints_report_health_readiness_and_metrics() {
    let (dir, plugins) = work(&[("calc", "calc"), ("fixtures/desc_sleep", "sleepy")]);
    let server = serve(dir.path(), &plugins, &[]);
    let admin = server.admin_addr().expect("the admin address");

    let health = request(&admin, "GET", "/healthz", &[], "").unwrap();
    assert_eq!(health.status, 200, "{health:?}");
    // `sleepy`'s describe() sleeps into its 2 s deadline: the load is not done yet.
    let r = request(&admin, "GET", "/readyz", &[], "").unwrap();
    assert_eq!(r.status, 503, "{r:?}\n{}", server.stderr());
    assert!(r.body.contains("loading"), "{}", r.body);
    wait_ready(&admin);

    let mcp = server.addr();
    let session = mcp_session(&mcp).unwrap();
    for _ in 0..3 {
        let r = mcp_call(&mcp, &session, "add", r#"{"x": 40, "y": 2}"#).unwrap();
        assert!(r.body.contains("42"), "{r:?}");
    }
    // A name the caller made up, and arguments that do not fit.
    mcp_call(&mcp, &session, "made_up_by_a_model_1234", "{}").unwrap();
    mcp_call(&mcp, &session, "add", r#"{"x": "forty"}"#).unwrap();

    let m = request(&admin, "GET", "/metrics", &[], "").unwrap();
    assert_eq!(m.status, 200);
    assert!(
        m.header("content-type")
            .is_some_and(|c| c.starts_with("text/plain")),
        "{}",
        m.head
    );
    let text = m.body;
    let calls = "toolhost_tool_calls_total";
    assert_eq!(
        sample(
            &text,
            calls,
            &[r#"tool="add""#, r#"source="wasm""#, r#"outcome="ok""#]
        ),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            calls,
            &[r#"tool="add""#, r#"outcome="invalid_arguments""#]
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            calls,
            &[r#"tool="(unknown)""#, r#"outcome="not_found""#]
        ),
        Some(1.0),
        "{text}"
    );
    assert!(!text.contains("made_up_by_a_model"), "{text}");
    assert_eq!(
        sample(
            &text,
            "toolhost_tool_call_duration_seconds_count",
            &[r#"tool="add""#]
        ),
        Some(4.0),
        "{text}"
    );
    assert!(
        text.contains("toolhost_tool_call_duration_seconds_bucket"),
        "{text}"
    );
    assert!(
        sample(&text, "toolhost_plugin_load_seconds_count", &[]).is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert_eq!(sample(&text, "toolhost_ready", &[]), Some(1.0), "{text}");
    assert_eq!(
        sample(&text, "toolhost_http_sessions_open", &[]),
        Some(1.0),
        "{text}"
    );
    // A good call still works after all that.
    let r = mcp_call(&mcp, &session, "multiply", r#"{"x": 6, "y": 7}"#).unwrap();
    assert!(r.body.contains("42"), "{r:?}");
}

#[test]
fn sigterm_drains_the_call_in_flight_then_exits() {
    let (dir, plugins) = work(&[("calc", "calc"), ("fixtures/hostile", "slow")]);
    // A long `burn` needs more fuel and time than an unapproved plugin gets.
    std::fs::write(
        plugins.join("slow.toml"),
        "fuel = 10000000000000\ntimeout_ms = 600000\n",
    )
    .unwrap();
    let approved = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["approve", "slow", "--yes", "--plugins"])
        .arg(&plugins)
        .envs(env(dir.path()))
        .output()
        .unwrap();
    assert!(approved.status.success(), "{}", show(&approved));

    // The call must still run when SIGTERM comes; if it finished first (the admin
    // listener is gone with the process), try again with more work: the outcome, not
    // the time, decides.
    let mut depth: u64 = 4_000_000_000;
    for attempt in 0..4 {
        let mut server = serve(dir.path(), &plugins, &["--drain-timeout", "120s"]);
        let admin = server.admin_addr().unwrap();
        wait_ready(&admin);
        let mcp = server.addr();
        let session = mcp_session(&mcp).unwrap();
        let (m, s) = (mcp.clone(), session.clone());
        let call = std::thread::spawn(move || {
            mcp_call(&m, &s, "burn", &format!(r#"{{"depth": {depth}}}"#))
        });
        // Give the call time to reach the tool (a guess: a call that is not in flight yet
        // is refused or finished, and the attempt is repeated).
        std::thread::sleep(Duration::from_millis(300));
        let killed = Command::new("kill")
            .args(["-TERM", &server.pid().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        // Draining: not ready, and the listener no longer accepts.
        std::thread::sleep(Duration::from_millis(200));
        let ready = request(&admin, "GET", "/readyz", &[], "");
        let result = call.join().unwrap();
        let status = server.wait_exit(Duration::from_secs(180));
        match ready {
            Ok(r) if r.status == 503 && r.body.contains("shutting down") => {
                let result = result.expect("the call in flight got its answer");
                assert!(
                    result.body.contains("result") && !result.body.contains("isError\":true"),
                    "{result:?}"
                );
                assert!(
                    result.body.chars().any(|c| c.is_ascii_digit()),
                    "{result:?}"
                );
                assert!(
                    status.is_some_and(|s| s.success()),
                    "{status:?}\n{}",
                    server.stderr()
                );
                assert!(
                    request(&mcp, "GET", "/mcp", &[], "").is_err(),
                    "still accepting"
                );
                assert!(
                    server.stderr().contains("shutting down"),
                    "{}",
                    server.stderr()
                );
                return;
            }
            other => {
                eprintln!(
                    "attempt {attempt}: burn({depth}) was not in flight at SIGTERM ({other:?}, \
                     call: {result:?}, exit: {status:?}); more work\n{}",
                    server.stderr()
                );
                depth *= 4;
            }
        }
    }
    panic!("burn always finished before SIGTERM");
}

/// An OTLP/HTTP receiver on 127.0.0.1: answers every POST 200 and keeps its body.
fn otlp_receiver() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut len = 0usize;
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((k, v)) = line.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            len = v.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0u8; len];
                    reader.read_exact(&mut body).unwrap();
                    keep.lock().unwrap().push(body);
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n",
                    );
                }
            });
        }
    });
    (port, bodies)
}

/// Traces reach an OTLP endpoint: the span of a 2026-07-28 `tools/call` continues the
/// client's `_meta.traceparent`, the tool's `execute_tool` span is its child with the
/// outcome, the pipeline's stages under it and the fuel the sandbox used; a malformed `traceparent` starts a trace of its own and a made-up tool name
/// is `(unknown)`; every span is sent by the time the process exits after SIGTERM.
#[test]
fn traces_continue_the_clients_trace_and_reach_the_otlp_endpoint() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;
    use serde_json::json;
    use toolhost_testkit::http::{REVISION_2026, mcp_2026, rpc_message};

    let (port, bodies) = otlp_receiver();
    let (dir, plugins) = work(&[("calc", "calc")]);
    let env = env(dir.path());
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let endpoint = format!("http://127.0.0.1:{port}");
    env.extend([
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "toolhost-under-test"),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ]);
    let mut server = ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        dir.path(),
        &[
            "--no-audit",
            "--no-watch",
            "--plugins",
            plugins.to_str().unwrap(),
        ],
        &env,
        "all tools loaded",
        Duration::from_secs(120),
    );
    let addr = server.addr();
    let meta = |traceparent: &str| {
        json!({
            "io.modelcontextprotocol/protocolVersion": REVISION_2026,
            "io.modelcontextprotocol/clientInfo": {"name": "trace-test", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
            "traceparent": traceparent,
            "tracestate": "x".repeat(4000),
        })
    };
    let call = |tool: &str, traceparent: &str| {
        let params =
            json!({"name": tool, "arguments": {"x": 2, "y": 3}, "_meta": meta(traceparent)});
        let r = mcp_2026(&addr, "tools/call", Some(tool), params, json!({})).unwrap();
        rpc_message(&r).unwrap_or_else(|| panic!("{} {}", r.head, r.body))
    };
    let trace_id = "0af7651916cd43dd8448eb211c80319c";
    let parent = "b7ad6b7169203331";
    let ok = call("add", &format!("00-{trace_id}-{parent}-01"));
    assert!(ok.to_string().contains('5'), "{ok}");
    let hostile = call("add", "00-zzzz-not-a-trace-\u{1b}[2J-01");
    assert!(hostile.to_string().contains('5'), "{hostile}");
    let made_up = format!("no_such_tool_{}", "q".repeat(2000));
    let unknown = call(&made_up, &format!("00-{trace_id}-{parent}-01"));
    assert!(unknown.to_string().contains("isError"), "{unknown}");

    Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .unwrap();
    let status = server.wait_exit(Duration::from_secs(60));
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        server.stderr()
    );

    let mut spans = Vec::new();
    for body in bodies.lock().unwrap().iter() {
        let req = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        for rs in req.resource_spans {
            let service = rs
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|a| a.key == "service.name")
                .map(|a| format!("{:?}", a.value));
            assert!(service.unwrap_or_default().contains("toolhost-under-test"));
            for ss in rs.scope_spans {
                spans.extend(ss.spans);
            }
        }
    }
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let attr = |s: &opentelemetry_proto::tonic::trace::v1::Span, k: &str| {
        s.attributes
            .iter()
            .find(|a| a.key == k)
            .map(|a| format!("{:?}", a.value))
    };
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    let served: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "tools/call add")
        .collect();
    assert_eq!(served.len(), 2, "{names:?}");
    let continued = served
        .iter()
        .find(|s| hex(&s.trace_id) == trace_id)
        .unwrap_or_else(|| panic!("no span continues the client's trace: {names:?}"));
    assert_eq!(hex(&continued.parent_span_id), parent);
    assert_eq!(continued.kind, 2, "a server span");
    let fresh = served
        .iter()
        .find(|s| hex(&s.trace_id) != trace_id)
        .unwrap();
    assert!(fresh.parent_span_id.is_empty() && fresh.trace_id.iter().any(|b| *b != 0));
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool add" && s.parent_span_id == continued.span_id)
        .unwrap_or_else(|| panic!("no tool span under the request's: {names:?}"));
    assert!(attr(tool, "gen_ai.tool.name").unwrap().contains("add"));
    assert_eq!(tool.status.as_ref().map(|s| s.code), Some(1), "status OK");
    // The pipeline's stages, each a span under the call's; the sandbox's fuel on `execute`.
    let stages: Vec<&str> = spans
        .iter()
        .filter(|s| s.parent_span_id == tool.span_id)
        .map(|s| s.name.as_str())
        .collect();
    for stage in ["validate", "permission", "execute", "render"] {
        assert!(stages.contains(&stage), "{stage} missing: {stages:?}");
    }
    let execute = spans
        .iter()
        .find(|s| s.parent_span_id == tool.span_id && s.name == "execute")
        .unwrap();
    let fuel = attr(execute, "toolhost.wasm.fuel_used").unwrap_or_default();
    let used: u64 = fuel
        .split(|c: char| !c.is_ascii_digit())
        .find(|d| !d.is_empty())
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    assert!(used > 0, "fuel used: {fuel}");
    // The made-up name appears nowhere: its spans are `(unknown)`, with the error.
    assert!(names.contains(&"tools/call (unknown)"), "{names:?}");
    let failed = spans
        .iter()
        .find(|s| s.name == "execute_tool (unknown)")
        .unwrap();
    assert_eq!(
        failed.status.as_ref().map(|s| s.code),
        Some(2),
        "status ERROR"
    );
    assert!(attr(failed, "error.type").unwrap().contains("not_found"));
    assert!(spans.iter().all(|s| !format!("{s:?}").contains("qqqqqqqq")));
}

#[test]
fn silent_connections_cannot_starve_the_admin_endpoints() {
    use std::io::Read;
    let (dir, plugins) = work(&[("calc", "calc")]);
    let server = serve(dir.path(), &plugins, &[]);
    let admin = server.admin_addr().expect("the admin address");
    // More connections than the admin listener serves at once, none sending a byte.
    let n = toolhost::admin::ADMIN_MAX_CONNECTIONS + 4;
    let mut silent: Vec<std::net::TcpStream> = (0..n)
        .map(|_| std::net::TcpStream::connect(&admin).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // A probe still gets its answer: the silent ones are dropped at the header timeout.
    let t0 = Instant::now();
    let r = request(&admin, "GET", "/healthz", &[], "").unwrap();
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        t0.elapsed() < toolhost::admin::ADMIN_HEADER_TIMEOUT * 3,
        "answered after {:?}",
        t0.elapsed()
    );
    // The server closed the silent connections (EOF, or reset), it did not keep them.
    for s in silent
        .iter_mut()
        .take(toolhost::admin::ADMIN_MAX_CONNECTIONS)
    {
        s.set_read_timeout(Some(toolhost::admin::ADMIN_HEADER_TIMEOUT * 3))
            .unwrap();
        let mut got = Vec::new();
        match s.read_to_end(&mut got) {
            Ok(_) => {}
            Err(e) => assert!(
                !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "a silent connection was kept open: {e}"
            ),
        }
    }
    wait_ready(&admin);
}

#[test]
fn ready_waits_for_the_optimized_code_of_a_cold_start() {
    // A cold cache: `calc` loads on baseline code within moments, its optimized build
    // follows in the background. Ready means that build is in.
    let (dir, plugins) = work(&[("calc", "calc")]);
    // Spare sandboxes on, for the metrics at the end.
    std::fs::write(
        dir.path().join("toolhost.toml"),
        "[serve]\nspare_sandboxes = 4\n",
    )
    .unwrap();
    let server = serve(dir.path(), &plugins, &[]);
    let admin = server.admin_addr().expect("the admin address");
    let mut reasons = Vec::new();
    let t0 = Instant::now();
    loop {
        let r = request(&admin, "GET", "/readyz", &[], "").unwrap();
        if r.status == 200 {
            break;
        }
        if !reasons.contains(&r.body) {
            reasons.push(r.body.clone());
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "never ready: {reasons:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        toolhost_testkit::compiled_artifacts(&dir.path().join("cache/toolhost/wasm")),
        1,
        "ready before the optimized build was in (503 reasons seen: {reasons:?})"
    );
    let session = mcp_session(&server.addr()).unwrap();
    let r = mcp_call(&server.addr(), &session, "add", r#"{"x": 40, "y": 2}"#).unwrap();
    assert!(r.body.contains("42"), "{r:?}");
    // Nothing can change this list while the process runs (no watched folder, no wrapped
    // server), and no token guards it: a 2026-07-28 client may keep it, and share it.
    let r = toolhost_testkit::http::mcp_2026(
        &server.addr(),
        "tools/list",
        None,
        serde_json::json!({}),
        serde_json::json!({}),
    )
    .unwrap();
    let list = toolhost_testkit::http::rpc_message(&r).unwrap();
    assert_eq!(list["result"]["ttlMs"], 300_000, "{list}");
    assert_eq!(list["result"]["cacheScope"], "public", "{list}");
    // The first call ordered a spare sandbox; after a pause the next call runs in it.
    std::thread::sleep(Duration::from_millis(300));
    let r = mcp_call(&server.addr(), &session, "add", r#"{"x": 1, "y": 2}"#).unwrap();
    assert!(r.body.contains('3'), "{r:?}");
    let m = request(&admin, "GET", "/metrics", &[], "").unwrap().body;
    assert_eq!(
        sample(&m, "toolhost_spare_sandbox_calls_total", &[]),
        Some(1.0),
        "{m}"
    );
    assert!(
        sample(&m, "toolhost_spare_sandboxes", &[]).is_some_and(|n| n <= 1.0),
        "{m}"
    );
}
