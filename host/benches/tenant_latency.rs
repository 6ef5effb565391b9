//! Benchmark `tenant_latency`: a client's call latency while another client floods the
//! server, against the same call alone, in the same run. The server is `McpServer` over
//! Streamable HTTP on 127.0.0.1 in this process (4 execution slots, the default), serving
//! two native tools: `add` (instant) and `hold` (sleeps `HOLD`). The flooding client keeps
//! eight `hold` calls in flight at all times (twice the slots: every slot is always its).
//!
//! Three settings, each `SAMPLES` sequential `add` calls of the measured client:
//! - **alone**: nobody else calls;
//! - **two clients**: the flood carries another bearer token (another client: its own
//!   share of the slots);
//! - **one client** (the baseline of what every client was before clients had shares,
//!   and what two stateless clients on one address without tokens still are): the flood
//!   and the measured calls carry the same token, so the measured call waits its turn
//!   behind the flood's calls.
//!
//! Every request is a stateless 2026-07-28 `tools/call` on a connection of its own.
//!
//! Prints the median and p90 of each, and the ratio of each median to **alone**.
//! Run: `cargo bench -p toolhost --bench tenant_latency`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost::mcp::McpServer;
use toolhost::mcp::server::{BearerTokens, HttpServeOptions};
use toolhost::tools::{DynamicTool, ToolOutput, ToolRegistry};
use toolhost_testkit::http::mcp_2026_as;

const MEASURED: &str = "measured-token-0123456789abcdef-0123456789";
const FLOODER: &str = "flooder-token-0123456789abcdef-01234567890";

/// How long a flood call holds its slot.
const HOLD: Duration = Duration::from_millis(1000);
/// Measured calls per setting.
const SAMPLES: usize = 40;
/// Flood calls in flight at once.
const FLOOD: usize = 8;

fn registry() -> ToolRegistry {
    let r = ToolRegistry::new();
    let object = json!({"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}});
    r.register(
        DynamicTool::builder("add")
            .description("Add two integers x and y")
            .parameters(object.clone())
            .handler(|args, _ctx| async move {
                let sum = args["x"].as_i64().unwrap_or(0) + args["y"].as_i64().unwrap_or(0);
                Ok(ToolOutput::json(json!(sum)))
            })
            .build_dyn(),
    )
    .unwrap();
    r.register(
        DynamicTool::builder("hold")
            .description("Hold an execution slot for a while")
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(|_args, _ctx| async move {
                tokio::time::sleep(HOLD).await;
                Ok(ToolOutput::json(json!("held")))
            })
            .build_dyn(),
    )
    .unwrap();
    r
}

fn serve() -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mut tokens = BearerTokens::new();
        tokens.add(MEASURED, "bench").unwrap();
        tokens.add(FLOODER, "bench").unwrap();
        let options = HttpServeOptions {
            auth: Some(tokens),
            ..Default::default()
        };
        rt.block_on(async move {
            let stop = tokio_util::sync::CancellationToken::new();
            McpServer::new(registry())
                .serve_http_opts("127.0.0.1:0".parse().unwrap(), options, stop.clone(), |a| {
                    let _ = tx.send(a);
                })
                .await
                .unwrap();
        });
    });
    rx.recv().unwrap()
}

/// One call of `tool` as the holder of `token`: its latency.
fn call(addr: &str, token: &str, tool: &str) -> Duration {
    let t0 = Instant::now();
    let r = mcp_2026_as(
        addr,
        Some(token),
        "tools/call",
        Some(tool),
        json!({"name": tool, "arguments": {"x": 40, "y": 2}}),
        json!({}),
    )
    .unwrap();
    // The body may be an event stream in chunks: only whether it holds a result matters.
    assert!(r.body.contains(r#""result""#), "{} {}", r.head, r.body);
    t0.elapsed()
}

/// `SAMPLES` measured calls while `flood` (if any) keeps `FLOOD` `hold` calls in flight.
fn measure(addr: &str, flood: Option<&'static str>) -> Vec<Duration> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut flooders = Vec::new();
    if let Some(token) = flood {
        for _ in 0..FLOOD {
            let (addr, stop) = (addr.to_string(), stop.clone());
            flooders.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    call(&addr, token, "hold");
                }
            }));
        }
        // Every slot is the flood's before the first measured call.
        std::thread::sleep(HOLD / 2);
    }
    let mut out: Vec<Duration> = (0..SAMPLES).map(|_| call(addr, MEASURED, "add")).collect();
    stop.store(true, Ordering::Relaxed);
    for f in flooders {
        f.join().unwrap();
    }
    out.sort();
    out
}

fn main() {
    let addr = serve().to_string();
    // Warm-up.
    for _ in 0..20 {
        call(&addr, MEASURED, "add");
    }
    let alone = measure(&addr, None);
    let two = measure(&addr, Some(FLOODER));
    let one = measure(&addr, Some(MEASURED));
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let base = ms(alone[SAMPLES / 2]);
    println!(
        "tenant_latency: {SAMPLES} `add` calls each; flood = {FLOOD} `hold` calls of {} ms in flight, 4 slots",
        HOLD.as_millis()
    );
    println!(
        "{:<34} {:>10} {:>10} {:>12}",
        "setting", "median ms", "p90 ms", "ratio"
    );
    for (name, v) in [
        ("alone", &alone),
        ("flood from another client", &two),
        ("flood from the same identity", &one),
    ] {
        let med = ms(v[SAMPLES / 2]);
        println!(
            "{name:<34} {med:>10.2} {:>10.2} {:>11.2}x",
            ms(v[SAMPLES * 9 / 10]),
            med / base
        );
    }
}
