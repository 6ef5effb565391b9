//! Soak: many `tools/call` of the WASM `add` through `toolhost serve`, over stdio (raw
//! JSON-RPC lines, eight requests in flight) and over Streamable HTTP (eight rmcp clients,
//! one session each, on kept-alive connections). Every call must answer with the right
//! sum, and the server's resident memory may grow by less than 5 % between the end of the
//! warm-up (the first tenth of the calls) and the end of the run: a leak per call or per
//! session shows up here long before it shows up in production.
//!
//! 100 000 calls per transport by default; `TOOLHOST_SOAK_CALLS` sets another count (for
//! a quick local run). `cargo xtask soak` runs this file alone and prints the figures
//! recorded in `docs/benchmarks.md`. Linux only (resident memory is read from `/proc`).
#![cfg(target_os = "linux")]
// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::tools::{McpClient, McpTransport};
use toolhost_testkit::jsonrpc::StdioClient;

/// Calls in flight at once, on both transports.
const CONCURRENCY: usize = 8;
/// Largest allowed growth of resident memory after warm-up, percent.
const MAX_GROWTH_PERCENT: f64 = 5.0;

fn calls() -> usize {
    std::env::var("TOOLHOST_SOAK_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000)
}

/// A plugins folder holding only the built `calc` example (`cargo xtask plugins`; a
/// missing build fails the test), so the server starts without compiling the large JS
/// and Python examples.
fn plugins(dir: &std::path::Path) -> PathBuf {
    let built = toolhost_testkit::plugins_dir();
    assert!(
        built.join("calc.wasm").exists(),
        "the soak needs the example plugins: run `cargo xtask plugins` (looked in {})",
        built.display()
    );
    let p = dir.join("plugins");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::copy(built.join("calc.wasm"), p.join("calc.wasm")).unwrap();
    p
}

/// `toolhost serve` on the `calc` plugin with an empty config.
fn serve(extra: &[&str]) -> Command {
    let dir = toolhost_testkit::temp_dir("soak");
    std::fs::write(dir.join("toolhost.toml"), "").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.arg("serve")
        .args(extra)
        .arg("--config")
        .arg(dir.join("toolhost.toml"))
        .arg("--plugins")
        .arg(plugins(&dir))
        .env("RUST_LOG", "warn")
        // The soak runs with the audit trail on (as `serve` does by default), in its
        // own folder: 100 000 records rotate the file several times.
        .env("XDG_DATA_HOME", dir.join("data"))
        .stderr(Stdio::inherit());
    cmd
}

/// Resident memory of a process, KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Whether a `tools/call` result (the JSON-RPC `result`, or the client's canonical value)
/// carries `sum` (calc's `add` answers a double: `3.0` as text, `{"result": 3.0}` as
/// structured content).
fn holds_sum(result: &Value, sum: u64) -> bool {
    let number = |v: &Value| {
        v.as_f64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse::<f64>().ok()))
    };
    let candidates = [
        number(result),
        number(&result["result"]),
        number(&result["structuredContent"]["result"]),
        number(&result["content"][0]["text"]),
    ];
    candidates.iter().flatten().any(|n| *n == sum as f64)
}

/// What one soak run measured.
struct Figures {
    calls: usize,
    elapsed: Duration,
    warm_kib: u64,
    end_kib: u64,
}

impl Figures {
    fn check(&self, transport: &str) {
        let growth = (self.end_kib as f64 - self.warm_kib as f64) * 100.0 / self.warm_kib as f64;
        eprintln!(
            "soak {transport}: {} calls in {:.1} s ({:.0} calls/s), RSS after warm-up {} KiB, \
             at the end {} KiB ({growth:+.2} %)",
            self.calls,
            self.elapsed.as_secs_f64(),
            self.calls as f64 / self.elapsed.as_secs_f64(),
            self.warm_kib,
            self.end_kib,
        );
        assert!(
            growth < MAX_GROWTH_PERCENT,
            "soak {transport}: resident memory grew {growth:.2} % after warm-up ({} -> {} KiB)",
            self.warm_kib,
            self.end_kib
        );
    }
}

/// Kills the server when the test ends, whatever happened.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn stdio_soak_answers_every_call_without_growing() {
    let total = calls();
    let warm = total / 10;
    let mut server = StdioClient::spawn(&mut serve(&["--stdio"]));
    let pid = server.pid();
    server.initialize("soak");

    let mut in_flight: HashSet<u64> = HashSet::new();
    let mut next: u64 = 1;
    let mut done = 0usize;
    let mut warm_kib = 0;
    let start = Instant::now();
    let mut warm_at = start;
    while done < total {
        while in_flight.len() < CONCURRENCY && (next as usize) <= total {
            server.send(json!({"jsonrpc": "2.0", "id": next, "method": "tools/call",
                "params": {"name": "add", "arguments": {"x": next, "y": 1}}}));
            in_flight.insert(next);
            next += 1;
        }
        let reply = server.next_message();
        let Some(id) = reply["id"].as_u64() else {
            continue; // a notification
        };
        assert!(in_flight.remove(&id), "an answer to no request: {reply}");
        assert!(
            reply["result"]["isError"] != true && holds_sum(&reply["result"], id + 1),
            "call {id} failed: {reply}"
        );
        done += 1;
        if done == warm {
            warm_kib = rss_kib(pid);
            warm_at = Instant::now();
        }
    }
    let figures = Figures {
        calls: total - warm,
        elapsed: warm_at.elapsed(),
        warm_kib,
        end_kib: rss_kib(pid),
    };
    figures.check("stdio");
}

#[test]
fn http_soak_answers_every_call_without_growing() {
    let total = calls();
    let port = toolhost_testkit::free_port();
    let server = Server(
        serve(&["--http", &format!("127.0.0.1:{port}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = server.0.id();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        toolhost_testkit::wait_for_port(port).await;
        let mut clients = Vec::new();
        for i in 0..CONCURRENCY {
            let client = McpClient::new(
                format!("soak{i}"),
                McpTransport::StreamableHttp {
                    url: format!("http://127.0.0.1:{port}/mcp"),
                    headers: None,
                },
            )
            .with_timeout(60);
            client.connect().await.unwrap();
            clients.push(std::sync::Arc::new(client));
        }
        // Client i makes calls i, i + 8, i + 16, ... of each phase.
        let phase = |from: usize, to: usize| {
            let tasks: Vec<_> = clients
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let c = c.clone();
                    tokio::spawn(async move {
                        for n in (from + i..to).step_by(CONCURRENCY) {
                            let got = c
                                .call_tool("add", json!({"x": n, "y": 1}))
                                .await
                                .unwrap_or_else(|e| panic!("call {n} failed: {e}"));
                            assert!(holds_sum(&got, n as u64 + 1), "call {n}: {got}");
                        }
                    })
                })
                .collect();
            async move {
                for t in tasks {
                    t.await.unwrap();
                }
            }
        };
        let warm = total / 10;
        phase(0, warm).await;
        let warm_kib = rss_kib(pid);
        let start = Instant::now();
        phase(warm, total).await;
        let figures = Figures {
            calls: total - warm,
            elapsed: start.elapsed(),
            warm_kib,
            end_kib: rss_kib(pid),
        };
        figures.check("http");
    });
    drop(server);
}
