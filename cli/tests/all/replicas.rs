//! Two `serve --http` replicas behind a real HAProxy (Debian `haproxy`, started here on
//! free loopback ports), health-checked on the replicas' `/readyz`, with session affinity
//! on `Mcp-Session-Id` (docs/deploy.md): clients' sessions are spread over both replicas
//! and every call of a session reaches the replica that holds it. One replica is killed
//! mid-run: the clients whose sessions it held get `404` for the lost session from the
//! other one, open a new session there (an MCP client's normal retry) and go on; no call
//! is lost.
//!
//! Clients of the 2026-07-28 revision hold no session: their requests go to any replica
//! (no affinity), and an approval round begun on one replica is finished on another when
//! the replicas share `[serve] request_state_key_file`; a replica with a key of its own
//! refuses the state.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use toolhost_testkit::http::{mcp_call, mcp_session, request};
use toolhost_testkit::serve::ServeHttp;
use toolhost_testkit::{built_plugins, free_port, peers, port_listening};

struct Haproxy(Child);

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The HAProxy set-up of docs/deploy.md, for `replicas` as (MCP address, admin address).
fn haproxy_config(port: u16, replicas: &[(String, String)]) -> String {
    haproxy_config_with(port, replicas, true)
}

/// The same, with session affinity (`sticky`) or plain round robin.
fn haproxy_config_with(port: u16, replicas: &[(String, String)], sticky: bool) -> String {
    let stick = if sticky {
        "  stick-table type string len 64 size 100k expire 30m\n  \
         stick on req.hdr(mcp-session-id)\n  \
         stick store-response res.hdr(mcp-session-id)\n"
    } else {
        ""
    };
    let mut cfg = format!(
        "global\n  maxconn 256\n\
         defaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n  timeout server 60s\n  \
         retries 2\n  option redispatch\n\
         frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend toolhost\n\
         backend toolhost\n  balance roundrobin\n  option httpchk GET /readyz\n  \
         http-check expect status 200\n{stick}"
    );
    for (i, (mcp, admin)) in replicas.iter().enumerate() {
        let admin_port = admin.rsplit(':').next().unwrap();
        cfg.push_str(&format!(
            "  server r{i} {mcp} check port {admin_port} inter 200ms fall 2 rise 1\n"
        ));
    }
    cfg
}

fn replica(dir: &Path, plugins: &Path, name: &str) -> ServeHttp {
    replica_in(dir, dir, plugins, name)
}

/// A replica started in `cwd` (its `toolhost.toml`), its data under `dir/name`.
fn replica_in(cwd: &Path, dir: &Path, plugins: &Path, name: &str) -> ServeHttp {
    let data = dir.join(name);
    std::fs::create_dir_all(&data).unwrap();
    let (cache, data) = (
        data.join("cache").display().to_string(),
        data.join("data").display().to_string(),
    );
    ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        cwd,
        &[
            "--no-audit",
            "--no-watch",
            "--admin",
            "127.0.0.1:0",
            "--plugins",
            plugins.to_str().unwrap(),
        ],
        &[("XDG_CACHE_HOME", &cache), ("XDG_DATA_HOME", &data)],
        "all tools loaded",
        Duration::from_secs(120),
    )
}

/// The number of successful calls of `tool` a replica counted.
fn ok_calls(admin: &str, tool: &str) -> f64 {
    let m = request(admin, "GET", "/metrics", &[], "").unwrap().body;
    let label = format!(r#"tool="{tool}""#);
    m.lines()
        .filter(|l| {
            l.starts_with("toolhost_tool_calls_total{")
                && l.contains(&label)
                && l.contains(r#"outcome="ok""#)
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The number of successful `add` calls a replica counted.
fn adds(admin: &str) -> f64 {
    ok_calls(admin, "add")
}

/// One client: a session through the balancer, `calls` calls of `add`; a session lost
/// with its replica (404) is opened again and the call retried. Returns the retries.
fn client(lb: &str, calls: usize, between: impl Fn(usize)) -> usize {
    let mut session = mcp_session(lb).unwrap();
    let mut retries = 0;
    for i in 0..calls {
        between(i);
        let mut tries = 0;
        loop {
            let r = mcp_call(lb, &session, "add", &format!(r#"{{"x": {i}, "y": 1}}"#)).unwrap();
            if r.status == 200 && r.body.contains(&format!("\"{}", i + 1)) {
                break;
            }
            tries += 1;
            assert!(
                tries <= 5 && matches!(r.status, 404 | 502 | 503),
                "call {i}: {r:?}"
            );
            retries += 1;
            // A lost session: a new one (it lands on a replica that is up).
            if let Ok(s) = mcp_session(lb) {
                session = s;
            }
        }
    }
    retries
}

#[test]
fn sessions_spread_over_two_replicas_and_survive_the_loss_of_one() {
    let (Some(haproxy), Some(built)) = (peers::haproxy(), built_plugins(&["calc.wasm"])) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for f in ["calc.wasm", "calc.toml"] {
        std::fs::copy(built.join(f), plugins.join(f)).unwrap();
    }
    let r0 = replica(dir.path(), &plugins, "r0");
    let mut r1 = Some(replica(dir.path(), &plugins, "r1"));
    let admins = [
        r0.admin_addr().unwrap(),
        r1.as_ref().unwrap().admin_addr().unwrap(),
    ];
    let port = free_port();
    let _lb = start_haproxy(
        &haproxy,
        dir.path(),
        port,
        haproxy_config(
            port,
            &[
                (r0.addr(), admins[0].clone()),
                (r1.as_ref().unwrap().addr(), admins[1].clone()),
            ],
        ),
    );
    let lb = format!("127.0.0.1:{port}");
    // Both replicas pass their health check before the clients start.
    let t0 = Instant::now();
    while mcp_session(&lb).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no replica is up behind haproxy"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(600));

    // 8 clients, 5 calls each: the sessions spread over both replicas.
    let retries: usize = std::thread::scope(|s| {
        let lb = &lb;
        (0..8)
            .map(|_| s.spawn(move || client(lb, 5, |_| {})))
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .sum()
    });
    assert_eq!(retries, 0, "a session was lost while both replicas ran");
    let before = [adds(&admins[0]), adds(&admins[1])];
    assert_eq!(before[0] + before[1], 40.0, "{before:?}");
    assert!(before[0] > 0.0 && before[1] > 0.0, "not spread: {before:?}");

    // 8 more clients, 6 calls each; replica r1 is killed when every client has made 2
    // calls, and the clients go on only once it is dead.
    let (killing, killed) = (std::sync::Barrier::new(9), std::sync::Barrier::new(9));
    let retries: usize = std::thread::scope(|s| {
        let (lb, killing, killed) = (&lb, &killing, &killed);
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(move || {
                    client(lb, 6, |i| {
                        if i == 2 {
                            killing.wait();
                            killed.wait();
                        }
                    })
                })
            })
            .collect();
        killing.wait();
        drop(r1.take()); // SIGKILL: no drain, its sessions are gone.
        killed.wait();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    // Every call succeeded (`client` asserts it). r0 answered the first 2 calls of each
    // of its own k clients and, after the kill, all 4 remaining calls of all 8: 2k + 32;
    // each of the other 8 - k clients reopened its session exactly once.
    let gained = adds(&admins[0]) - before[0];
    assert!((32.0..=46.0).contains(&gained), "{gained}");
    let k = (gained - 32.0) / 2.0;
    assert_eq!(k.fract(), 0.0, "{gained}");
    assert!(k < 8.0, "no client was on the killed replica");
    assert_eq!(retries as f64, 8.0 - k, "{gained} {retries}");
    // After the kill, r0 answers everything.
    let s = mcp_session(&lb).unwrap();
    let r = mcp_call(&lb, &s, "multiply", r#"{"x": 6, "y": 7}"#).unwrap();
    assert!(r.body.contains("42"), "{r:?}");
}

/// Starts HAProxy on `port` with `cfg`; returns it once it listens.
fn start_haproxy(haproxy: &Path, dir: &Path, port: u16, cfg: String) -> Haproxy {
    let file = dir.join(format!("haproxy-{port}.cfg"));
    std::fs::write(&file, cfg).unwrap();
    let lb = Haproxy(
        Command::new(haproxy)
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(
        port_listening(port, Duration::from_secs(30)),
        "haproxy did not listen"
    );
    lb
}

#[test]
fn stateless_requests_need_no_affinity_and_approval_rounds_cross_replicas() {
    use serde_json::{Value, json};
    use toolhost_testkit::http::{mcp_2026, rpc_message};
    let (Some(haproxy), Some(python)) = (peers::haproxy(), peers::python()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    // Two replicas sharing the key, one with a key of its own; each wraps the Python
    // fixture server, rated destructive, so `shout` needs an approval.
    let wrapped = format!(
        "[mcp.servers.py]\ncommand = {:?}\nargs = [{:?}]\ndefault_risk = \"destructive\"\n",
        python.display().to_string(),
        peers::mcp_fixture("py_server.py").display().to_string()
    );
    let shared = dir.path().join("shared");
    let own = dir.path().join("own");
    for (d, key) in [(&shared, "k".repeat(40)), (&own, "o".repeat(40))] {
        std::fs::create_dir_all(d).unwrap();
        let key_file = d.join("state.key");
        std::fs::write(&key_file, key).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        std::fs::write(
            d.join("toolhost.toml"),
            format!(
                "{wrapped}[serve]\nrequest_state_key_file = {:?}\n",
                key_file.display().to_string()
            ),
        )
        .unwrap();
    }
    let r0 = replica_in(&shared, dir.path(), &plugins, "r0");
    let r1 = replica_in(&shared, dir.path(), &plugins, "r1");
    let r2 = replica_in(&own, dir.path(), &plugins, "r2");
    let caps = json!({"elicitation": {"form": {}}});
    let shout = |addr: &str, extra: Value| {
        let mut p = json!({"name": "shout", "arguments": {"text": "hello"}});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let r = mcp_2026(addr, "tools/call", Some("shout"), p, caps.clone()).unwrap();
        rpc_message(&r).unwrap_or_else(|| panic!("{} {}", r.head, r.body))
    };
    let approve =
        json!({"toolhost_approval": {"action": "accept", "content": {"decision": "once"}}});

    // Asked on r0, answered on r1: the same key, so r1 runs the call; on r2 (its own
    // key) the state is refused.
    let first = shout(&r0.addr(), json!({}));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].clone();
    let other = shout(
        &r2.addr(),
        json!({"requestState": state, "inputResponses": approve}),
    );
    assert_eq!(other["error"]["code"], -32602, "{other}");
    let done = shout(
        &r1.addr(),
        json!({"requestState": state, "inputResponses": approve}),
    );
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert!(done.to_string().contains("HELLO"), "{done}");

    // Behind a plain round-robin balancer (no affinity), each call's two requests land
    // on different replicas; every call completes.
    let admins = [r0.admin_addr().unwrap(), r1.admin_addr().unwrap()];
    let port = free_port();
    let _lb = start_haproxy(
        &haproxy,
        dir.path(),
        port,
        haproxy_config_with(
            port,
            &[
                (r0.addr(), admins[0].clone()),
                (r1.addr(), admins[1].clone()),
            ],
            false,
        ),
    );
    let lb = format!("127.0.0.1:{port}");
    // Both replicas healthy before the calls start.
    std::thread::sleep(Duration::from_millis(800));
    for i in 0..6 {
        let first = shout(&lb, json!({}));
        assert_eq!(
            first["result"]["resultType"], "input_required",
            "call {i}: {first}"
        );
        let state = first["result"]["requestState"].clone();
        let done = shout(
            &lb,
            json!({"requestState": state, "inputResponses": approve}),
        );
        assert!(done.to_string().contains("HELLO"), "call {i}: {done}");
    }
    assert_eq!(
        ok_calls(&admins[0], "shout") + ok_calls(&admins[1], "shout"),
        7.0
    );
}
