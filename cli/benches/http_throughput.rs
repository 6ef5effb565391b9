//! Benchmark `http_throughput`: `tools/call` throughput of `toolhost serve --http` with 1, 8
//! and 64 concurrent keep-alive clients, each client its own MCP session on its own
//! HTTP/1.1 connection, against server-everything (`node … streamableHttp`, its `get-sum`)
//! on the same machine in the same run. Also a native baseline: the same HTTP server
//! (`McpServer::serve_http_with`) in this process, on a runtime of its own, serving a
//! native `add` (no WASM, no plugin loading).
//!
//! The load generator is hyper's HTTP/1 client, one connection per client, on a
//! single-threaded tokio runtime (the machine this was written for has two cores: one for
//! the load generator, the rest for the server). Each setting runs a warm-up, then a
//! measured window; it prints calls/s, p50 and p99 of the per-call latency, and the ratio
//! of calls/s to server-everything's.
//!
//! With HAProxy (`cargo xtask peers`, Debian `haproxy`) it also measures replicas: the
//! same `serve --http` behind HAProxy with one replica, then with two (session affinity
//! on `Mcp-Session-Id`, docs/deploy.md), so the cost of the balancer and the gain of a
//! second replica are both in the table.
//!
//! Needs `cargo xtask plugins` (target/plugins/calc.wasm) and `cargo xtask peers`
//! (server-everything); a missing one is reported and its rows are skipped.
//! Run: `cargo bench -p toolhost-cli --bench http_throughput` (optionally `-- SECONDS` for the
//! measured window of each setting, default 5). `HTTP_THROUGHPUT_TOOLHOST=PATH` runs another
//! `toolhost` binary for the serve rows (to compare the builds of two commits).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use toolhost::mcp::McpServer;
use toolhost::mcp::server::HttpLimits;
use toolhost::tools::{DynamicTool, ToolOutput, ToolRegistry};

/// Concurrent clients of each setting.
const CLIENTS: [usize; 3] = [1, 8, 64];
/// Warm-up before each measured window.
const WARM_UP: Duration = Duration::from_secs(1);

/// server-everything's entry script (`cargo xtask peers`).
fn everything() -> Option<PathBuf> {
    toolhost_testkit::peers::everything()
}

/// The built `calc` component (`cargo xtask plugins`).
fn calc_wasm() -> Option<PathBuf> {
    toolhost_testkit::built_plugins(&["calc.wasm"]).map(|d| d.join("calc.wasm"))
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// A child process killed on drop.
struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `addr` accepts connections (at most 30 s).
async fn wait_for(addr: SocketAddr) -> Result<()> {
    for _ in 0..600 {
        if TcpStream::connect(addr).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bail!("nothing listens on {addr} after 30 s")
}

/// Waits until `target` listens and answers one call (`serve` may still be loading its
/// plugins in the background).
async fn ready(target: &Target) -> Result<()> {
    wait_for(target.addr).await?;
    let mut c = Client::connect(target.addr).await?;
    let r = tokio::time::timeout(Duration::from_secs(60), c.call(1, &target.tool))
        .await
        .map_err(|_| anyhow!("the first call took over 60 s"))?;
    c.close().await;
    r
}

/// One MCP session over one kept-alive HTTP/1.1 connection.
struct Client {
    send: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    session: Option<String>,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (send, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut c = Self {
            send,
            addr,
            session: None,
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "http_throughput", "version": "0"}}});
        let (session, reply) = c.post(&init).await?;
        if reply["result"]["serverInfo"].is_null() {
            bail!("initialize failed: {reply}");
        }
        c.session = Some(session.ok_or_else(|| anyhow!("no mcp-session-id from {addr}"))?);
        c.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(c)
    }

    /// POSTs one message; returns the session header and the JSON-RPC reply (Null for a
    /// notification), whether the body is JSON or an SSE stream.
    async fn post(&mut self, msg: &Value) -> Result<(Option<String>, Value)> {
        let mut req = hyper::Request::post("/mcp")
            .header("host", format!("127.0.0.1:{}", self.addr.port()))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(id) = &self.session {
            req = req
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        let req = req.body(Full::new(Bytes::from(msg.to_string())))?;
        self.send.ready().await?;
        let resp = self.send.send_request(req).await?;
        let status = resp.status();
        let session = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = resp.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            bail!("HTTP {status}: {}", String::from_utf8_lossy(&body));
        }
        Ok((session, parse_reply(&body)))
    }

    async fn call(&mut self, id: u64, tool: &Tool) -> Result<()> {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool.name, "arguments": (tool.args)(id)}});
        let (_, reply) = self.post(&msg).await?;
        let result = &reply["result"];
        if result.is_null() || result["isError"] == true {
            bail!("tools/call {} failed: {reply}", tool.name);
        }
        Ok(())
    }

    async fn close(mut self) {
        if let Some(id) = self.session.take() {
            let req = hyper::Request::delete("/mcp")
                .header("host", format!("127.0.0.1:{}", self.addr.port()))
                .header("mcp-session-id", id)
                .body(Full::new(Bytes::new()));
            if let Ok(req) = req
                && self.send.ready().await.is_ok()
                && let Ok(resp) = self.send.send_request(req).await
            {
                let _ = resp.into_body().collect().await;
            }
        }
    }
}

/// The JSON-RPC message in a body: plain JSON, or the last `data:` line of an SSE stream
/// that parses as a message with an `id`.
fn parse_reply(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return v;
    }
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .rfind(|v| v.get("id").is_some())
        .unwrap_or(Value::Null)
}

/// The tool to call and its arguments for call number `n`.
struct Tool {
    name: &'static str,
    args: fn(u64) -> Value,
}

/// One server under test.
struct Target {
    label: &'static str,
    addr: SocketAddr,
    tool: Tool,
}

/// Figures of one setting.
struct Figures {
    calls_per_s: f64,
    p50: Duration,
    p99: Duration,
    calls: usize,
}

/// `clients` sessions calling as fast as they can: a warm-up, then `window` measured.
async fn measure(target: &Target, clients: usize, window: Duration) -> Result<Figures> {
    let mut sessions = Vec::with_capacity(clients);
    for _ in 0..clients {
        sessions.push(Client::connect(target.addr).await?);
    }
    let start = Instant::now() + WARM_UP;
    let end = start + window;
    let mut tasks = tokio::task::JoinSet::new();
    for (i, mut c) in sessions.into_iter().enumerate() {
        let tool = Tool {
            name: target.tool.name,
            args: target.tool.args,
        };
        tasks.spawn(async move {
            let mut lat = Vec::new();
            let mut id = (i as u64) << 32;
            loop {
                let t = Instant::now();
                if t >= end {
                    break;
                }
                id += 1;
                c.call(id, &tool).await?;
                if t >= start {
                    lat.push(t.elapsed());
                }
            }
            c.close().await;
            Ok::<_, anyhow::Error>(lat)
        });
    }
    let mut all = Vec::new();
    while let Some(r) = tasks.join_next().await {
        all.extend(r??);
    }
    if all.is_empty() {
        bail!("no call finished in the measured window");
    }
    all.sort();
    let pick = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)];
    Ok(Figures {
        calls_per_s: all.len() as f64 / window.as_secs_f64(),
        p50: pick(0.50),
        p99: pick(0.99),
        calls: all.len(),
    })
}

/// Starts `toolhost serve --http` (release binary) with a plugins folder holding only
/// `calc`, and `config` as its config file (none of the user's).
fn spawn_toolhost(calc: &Path, dir: &Path, port: u16, config: &str) -> Result<Peer> {
    spawn_toolhost_with(calc, dir, port, config, &[])
}

/// [`spawn_toolhost`] with `extra` flags.
fn spawn_toolhost_with(
    calc: &Path,
    dir: &Path,
    port: u16,
    config: &str,
    extra: &[&str],
) -> Result<Peer> {
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins)?;
    std::fs::copy(calc, plugins.join("calc.wasm"))?;
    std::fs::write(dir.join("toolhost.toml"), config)?;
    // `HTTP_THROUGHPUT_TOOLHOST=PATH`: another build (of another commit), to compare two
    // builds in one session.
    let bin = std::env::var_os("HTTP_THROUGHPUT_TOOLHOST")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_toolhost")));
    let child = Command::new(bin)
        .args(["serve", "--http", &format!("127.0.0.1:{port}")])
        .arg("--config")
        .arg(dir.join("toolhost.toml"))
        .arg("--plugins")
        .arg(&plugins)
        .args(extra)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .context("spawning toolhost serve --http")?;
    Ok(Peer(child))
}

/// HAProxy on `port` in front of `replicas` (ports), sticky on `Mcp-Session-Id`.
fn spawn_haproxy(haproxy: &Path, dir: &Path, port: u16, replicas: &[u16]) -> Result<Peer> {
    let mut cfg = format!(
        "global\n  maxconn 1024\n\
         defaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n  timeout server 60s\n\
         frontend mcp\n  bind 127.0.0.1:{port}\n  default_backend toolhost\n\
         backend toolhost\n  balance roundrobin\n  \
         stick-table type string len 64 size 100k expire 30m\n  \
         stick on req.hdr(mcp-session-id)\n  \
         stick store-response res.hdr(mcp-session-id)\n"
    );
    for (i, r) in replicas.iter().enumerate() {
        cfg.push_str(&format!("  server r{i} 127.0.0.1:{r}\n"));
    }
    let file = dir.join(format!("haproxy-{port}.cfg"));
    std::fs::write(&file, cfg)?;
    let child = Command::new(haproxy)
        .arg("-db")
        .arg("-f")
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("spawning haproxy")?;
    Ok(Peer(child))
}

fn spawn_everything(script: &Path, port: u16) -> Result<Peer> {
    let child = Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("spawning node (server-everything)")?;
    Ok(Peer(child))
}

/// The native baseline: `McpServer::serve_http_with` on a thread of its own, with as many
/// workers as `serve --http` uses (one per CPU), serving a native `add`.
fn spawn_native() -> Result<SocketAddr> {
    let registry = ToolRegistry::new();
    registry.register(
        DynamicTool::builder("add")
            .description("Add two integers a and b")
            .parameters(json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}))
            .handler(|args, _ctx| async move {
                Ok(ToolOutput::json(json!(
                    args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)
                )))
            })
            .build_dyn(),
    )?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        rt.block_on(async move {
            // Never cancelled: the baseline lives as long as the bench.
            let stop = tokio_util::sync::CancellationToken::new();
            let r = McpServer::new(registry)
                .serve_http_with(
                    SocketAddr::from(([127, 0, 0, 1], 0)),
                    false,
                    HttpLimits::default(),
                    stop,
                    |a| {
                        let _ = tx.send(a);
                    },
                )
                .await;
            if let Err(e) = r {
                eprintln!("native baseline server: {e}");
            }
        })
    });
    rx.recv_timeout(Duration::from_secs(30))
        .context("the native baseline server did not bind")
}

fn main() {
    let window = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(5));
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        eprintln!("cannot start a tokio runtime");
        return;
    };
    let tmp = match tempfile::tempdir() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot make a temporary folder: {e}");
            return;
        }
    };

    let mut targets = Vec::new();
    let mut peers = Vec::new();
    // `HTTP_THROUGHPUT_ONLY=console`: only the console's rows (below).
    let only_console = std::env::var("HTTP_THROUGHPUT_ONLY").as_deref() == Ok("console");
    if let Some(calc) = calc_wasm() {
        match console_rows(&calc, tmp.path(), &mut peers) {
            Ok(rows) => targets.extend(rows),
            Err(e) => println!("console rows: skipped: {e:#}"),
        }
    }
    if only_console {
        run(&rt, &targets, window);
        drop(peers);
        return;
    }
    match spawn_native() {
        Ok(addr) => targets.push(Target {
            label: "native add (serve_http_with in-process)",
            addr,
            tool: Tool {
                name: "add",
                args: |n| json!({"a": n & 0xffff, "b": 1}),
            },
        }),
        Err(e) => println!("native baseline: skipped: {e:#}"),
    }
    match calc_wasm() {
        Some(calc) => match free_port().and_then(|port| {
            let p = spawn_toolhost(&calc, tmp.path(), port, "")?;
            Ok((p, port))
        }) {
            Ok((p, port)) => {
                peers.push(p);
                targets.push(Target {
                    label: "toolhost serve --http (wasm calc add)",
                    addr: SocketAddr::from(([127, 0, 0, 1], port)),
                    tool: Tool {
                        name: "add",
                        args: |n| json!({"x": n & 0xffff, "y": 1}),
                    },
                });
            }
            Err(e) => println!("toolhost serve --http: skipped: {e:#}"),
        },
        None => println!(
            "toolhost serve --http: skipped: no calc.wasm in $TOOLHOST_TEST_PLUGINS or \
             target/plugins (run `cargo xtask plugins`)"
        ),
    }
    // The same with spare sandboxes (`[serve] spare_sandboxes = 8`, off by default,
    // docs/design.md "Spare sandboxes"), so the cost of their bookkeeping shows.
    if let Some(calc) = calc_wasm() {
        let spares = "[serve]\nspare_sandboxes = 8\n";
        match free_port().and_then(|port| {
            let p = spawn_toolhost(&calc, &tmp.path().join("spares"), port, spares)?;
            Ok((p, port))
        }) {
            Ok((p, port)) => {
                peers.push(p);
                targets.push(Target {
                    label: "toolhost serve --http, spare sandboxes on",
                    addr: SocketAddr::from(([127, 0, 0, 1], port)),
                    tool: Tool {
                        name: "add",
                        args: |n| json!({"x": n & 0xffff, "y": 1}),
                    },
                });
            }
            Err(e) => println!("toolhost serve --http with spares: skipped: {e:#}"),
        }
    }
    // Replicas behind HAProxy: one, then two (the first is shared by both balancers,
    // which are measured one after the other).
    if let (Some(haproxy), Some(calc)) = (toolhost_testkit::peers::haproxy(), calc_wasm()) {
        let started = (|| -> Result<()> {
            let r0 = free_port()?;
            peers.push(spawn_toolhost(&calc, &tmp.path().join("r0"), r0, "")?);
            let r1 = free_port()?;
            peers.push(spawn_toolhost(&calc, &tmp.path().join("r1"), r1, "")?);
            for (label, replicas) in [
                ("HAProxy + 1 toolhost replica", vec![r0]),
                ("HAProxy + 2 toolhost replicas", vec![r0, r1]),
            ] {
                let port = free_port()?;
                peers.push(spawn_haproxy(&haproxy, tmp.path(), port, &replicas)?);
                targets.push(Target {
                    label,
                    addr: SocketAddr::from(([127, 0, 0, 1], port)),
                    tool: Tool {
                        name: "add",
                        args: |n| json!({"x": n & 0xffff, "y": 1}),
                    },
                });
            }
            Ok(())
        })();
        if let Err(e) = started {
            println!("replicas behind haproxy: skipped: {e:#}");
        }
    } else {
        println!(
            "replicas behind haproxy: skipped: no haproxy (cargo xtask peers) or no calc.wasm"
        );
    }
    match everything() {
        Some(script) => match free_port().and_then(|port| {
            let p = spawn_everything(&script, port)?;
            Ok((p, port))
        }) {
            Ok((p, port)) => {
                peers.push(p);
                targets.push(Target {
                    label: "server-everything streamableHttp (get-sum)",
                    addr: SocketAddr::from(([127, 0, 0, 1], port)),
                    tool: Tool {
                        name: "get-sum",
                        args: |n| json!({"a": n & 0xffff, "b": 1}),
                    },
                });
            }
            Err(e) => println!("server-everything: skipped: {e:#}"),
        },
        None => println!(
            "server-everything: skipped: not found at $TOOLHOST_MCP_EVERYTHING or under \
             target/peers/mcp (run `cargo xtask peers`; needs node)"
        ),
    }

    run(&rt, &targets, window);
    drop(peers);
}

/// Measures every target at each of [`CLIENTS`] and prints the table.
fn run(rt: &tokio::runtime::Runtime, targets: &[Target], window: Duration) {
    println!(
        "\n== tools/call over keep-alive HTTP/1.1, one MCP session per client; \
         {:?} warm-up + {window:?} measured per row ==",
        WARM_UP
    );
    println!(
        "{:<45} {:>7} {:>10} {:>10} {:>10} {:>8} {:>12}",
        "server", "clients", "calls/s", "p50", "p99", "calls", "vs everything"
    );
    let mut results: Vec<(usize, usize, Figures)> = Vec::new();
    rt.block_on(async {
        for (t, target) in targets.iter().enumerate() {
            if let Err(e) = ready(target).await {
                println!("{}: {e:#}", target.label);
                continue;
            }
            for &clients in &CLIENTS {
                match measure(target, clients, window).await {
                    Ok(f) => results.push((t, clients, f)),
                    Err(e) => println!("{} with {clients} clients: failed: {e:#}", target.label),
                }
            }
        }
    });
    let everything_at = |clients: usize| {
        results
            .iter()
            .find(|(t, c, _)| targets[*t].tool.name == "get-sum" && *c == clients)
            .map(|(_, _, f)| f.calls_per_s)
    };
    for (t, clients, f) in &results {
        let ratio = everything_at(*clients)
            .map(|e| format!("{:.1}×", f.calls_per_s / e))
            .unwrap_or_else(|| "-".into());
        println!(
            "{:<45} {:>7} {:>10.0} {:>10.1?} {:>10.1?} {:>8} {:>12}",
            targets[*t].label, clients, f.calls_per_s, f.p50, f.p99, f.calls, ratio
        );
    }
}

/// The cost of the operator console (docs/benchmarks.md, "Console"): `serve --admin`
/// without the console, and with it and one live stream open (a logged-in session
/// reading `/console/live/events`), twice each in alternating order.
fn console_rows(calc: &Path, tmp: &Path, peers: &mut Vec<Peer>) -> Result<Vec<Target>> {
    let token = "bench-operator-token-0123456789abcdef0123456789";
    let token_file = tmp.join("operator.token");
    std::fs::write(&token_file, token)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600))?;
    }
    let tool = || Tool {
        name: "add",
        args: |n| json!({"x": n & 0xffff, "y": 1}),
    };
    let mut rows = Vec::new();
    for (round, console) in [(0, false), (1, true), (2, false), (3, true)] {
        let (port, admin) = (free_port()?, free_port()?);
        let admin_addr = format!("127.0.0.1:{admin}");
        let mut extra = vec!["--no-audit", "--admin", &admin_addr];
        let file = token_file.display().to_string();
        if console {
            extra.extend(["--console", "--admin-token-file", &file]);
        }
        let dir = tmp.join(format!("console{round}"));
        peers.push(spawn_toolhost_with(calc, &dir, port, "", &extra)?);
        if console {
            live_stream(&admin_addr, token)?;
        }
        rows.push(Target {
            label: if console {
                "serve --admin --console, 1 live stream open"
            } else {
                "serve --admin, no console"
            },
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            tool: tool(),
        });
    }
    Ok(rows)
}

/// Logs in to the console at `admin` and keeps its live stream open (read on a thread of
/// its own for the life of the process), as a browser on the live page does.
fn live_stream(admin: &str, token: &str) -> Result<()> {
    use std::io::{Read, Write};
    let started = Instant::now();
    let mut stream = loop {
        match std::net::TcpStream::connect(admin) {
            Ok(s) => break s,
            Err(e) if started.elapsed() > Duration::from_secs(30) => {
                bail!("console at {admin}: {e}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let body = format!("token={token}");
    write!(
        stream,
        "POST /console/login HTTP/1.1\r\nHost: {admin}\r\nConnection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply)?;
    let cookie = reply
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .ok_or_else(|| anyhow!("no session cookie from the console: {reply}"))?
        .to_string();
    let mut events = std::net::TcpStream::connect(admin)?;
    write!(
        events,
        "GET /console/live/events HTTP/1.1\r\nHost: {admin}\r\nCookie: {cookie}\r\n\r\n"
    )?;
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while matches!(events.read(&mut buf), Ok(n) if n > 0) {}
    });
    Ok(())
}
