//! Benchmark `mcp`, all figures from one run:
//!
//! 1. criterion: one `tools/call` of server-everything's `get-sum` through `McpClient`
//!    (stdio), next to `calc.add` as a WASM tool and the same add as a native tool, each
//!    through the registry pipeline;
//! 2. a timing client (raw JSON-RPC lines over a pipe, the method behind the serve figures):
//!    `toolhost serve --stdio` answering `tools/call` for the WASM `add`, 1500 sequential
//!    calls after 300 warm-up calls, median and p99; the same client against server-everything,
//!    hyper-mcp (an Extism-based MCP server) with its own `add` plugin, and `cat` (an echo
//!    responder: the pipe floor);
//! 3. start to ready: launching `toolhost serve --stdio` (example plugins, warm compile
//!    cache) until `initialize` is answered and until `tools/list` lists every tool of
//!    the folder, medians of 20.
//!
//! Needs `cargo xtask plugins` (target/plugins), `cargo xtask peers` and, for hyper-mcp,
//! `cargo xtask bench-peers`; parts whose inputs are missing are skipped with a message.
//! Run: `cargo bench -p toolhost-cli --bench mcp`.

#[path = "support/raw.rs"]
mod raw;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use raw::{Raw, Stats, stats, time_calls};

use criterion::Criterion;
use serde_json::json;
use toolhost::tools::{DynamicTool, McpClient, McpTransport, ToolOutput, ToolRegistry};

/// server-everything's entry script (`cargo xtask peers`).
fn everything() -> Option<PathBuf> {
    toolhost_testkit::peers::everything()
}

/// The built example plugins (`cargo xtask plugins`).
fn plugins() -> Option<PathBuf> {
    toolhost_testkit::built_plugins(&["calc.wasm"])
}

fn criterion_part(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let mut g = c.benchmark_group("mcp_call");
    g.measurement_time(Duration::from_secs(5));

    let native = ToolRegistry::new();
    native
        .register(
            DynamicTool::builder("add")
                .description("Add two integers a and b")
                .parameters(json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}))
                .handler(|args, _ctx| async move {
                    Ok(ToolOutput::json(json!(
                        args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)
                    )))
                })
                .build_dyn(),
        )
        .ok();
    g.bench_function("native_add_registry", |b| {
        b.iter(|| {
            rt.block_on(async { native.invoke_recorded("add", json!({"a": 2, "b": 3})).await })
        })
    });

    if let Some(dir) = plugins() {
        let wasm = ToolRegistry::new();
        let problems = rt.block_on(toolhost::host::load_plugins(&wasm, &dir));
        if wasm.contains("add") {
            g.bench_function("wasm_calc_add_registry", |b| {
                b.iter(|| {
                    rt.block_on(async {
                        wasm.invoke_recorded("add", json!({"x": 2, "y": 3})).await
                    })
                })
            });
        } else {
            eprintln!(
                "skipping wasm add: not loaded ({} problems)",
                problems.len()
            );
        }
    } else {
        eprintln!("skipping wasm add: run `cargo xtask plugins`");
    }

    if let Some(script) = everything() {
        let client = McpClient::new(
            "everything",
            McpTransport::Stdio {
                command: "node".into(),
                args: vec![script.display().to_string(), "stdio".into()],
                env: Vec::new(),
            },
        );
        let reg = ToolRegistry::new();
        let ok = rt.block_on(async {
            client.connect().await.is_ok() && client.register_into(&reg).await.is_ok()
        });
        if ok {
            g.bench_function("mcp_client_get_sum_direct", |b| {
                b.iter(|| {
                    rt.block_on(async {
                        client.call_tool("get-sum", json!({"a": 2, "b": 3})).await
                    })
                })
            });
            g.bench_function("mcp_client_get_sum_registry", |b| {
                b.iter(|| {
                    rt.block_on(async {
                        reg.invoke_recorded("get-sum", json!({"a": 2, "b": 3}))
                            .await
                    })
                })
            });
        }
        let _ = rt.block_on(client.close());
    } else {
        eprintln!("skipping get-sum: run `cargo xtask peers`");
    }
    g.finish();
}

/// The echo responder: `cat` sends each request line back; the "reply" has the same id.
fn time_pipe_floor() -> std::io::Result<Stats> {
    let mut raw = Raw::spawn(&mut Command::new("cat"))?;
    time_calls(&mut raw, "add", json!({"x": 2, "y": 3}))
}

fn toolhost_cmd(plugins: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    // No config file (the default ./toolhost.toml is absent): the example plugins only.
    cmd.args(["serve", "--stdio"])
        .arg("--plugins")
        .arg(plugins)
        .env("RUST_LOG", "error");
    cmd
}

/// hyper-mcp and its Extism `add` plugin (`cargo xtask bench-peers`): `$TOOLHOST_HYPER_MCP`
/// and `$TOOLHOST_HYPER_MCP_PLUGIN`, else their install paths under
/// `target/peers/hyper-mcp`. `None`, after saying what is missing, when either is absent.
fn hyper_mcp() -> Option<(PathBuf, PathBuf)> {
    let base = toolhost_testkit::workspace_root().join("target/peers/hyper-mcp");
    let from_env =
        |var: &str, default: PathBuf| std::env::var_os(var).map(PathBuf::from).unwrap_or(default);
    let bin = from_env("TOOLHOST_HYPER_MCP", base.join("bin/hyper-mcp"));
    let plugin = from_env("TOOLHOST_HYPER_MCP_PLUGIN", base.join("add.wasm"));
    for (what, path) in [("hyper-mcp", &bin), ("its add plugin", &plugin)] {
        if !path.is_file() {
            println!(
                "hyper-mcp: skipped ({what} missing at {}; run `cargo xtask bench-peers`)",
                path.display()
            );
            return None;
        }
    }
    Some((bin, plugin))
}

/// A `file://` URL for an absolute path, percent-encoding every byte outside the
/// unreserved set and `/` (hyper-mcp reads plugins by URL).
fn file_url(path: &Path) -> String {
    let mut url = String::from("file://");
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            url.push(char::from(b));
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

/// Times hyper-mcp serving the `add` plugin over stdio: writes its config file (one plugin,
/// `bench`, loaded from a `file://` URL) into `dir`, starts it with `RUST_LOG=off` (no log
/// record per call; its log file also goes to `dir`), finds the tool's name in its
/// `tools/list` (hyper-mcp prefixes each tool with its plugin's name), checks one answer,
/// then runs the same timed calls as for the others.
fn time_hyper_mcp(bin: &Path, plugin: &Path, dir: &Path) -> std::io::Result<Stats> {
    let config = dir.join("config.json");
    let body = json!({"plugins": {"bench": {"url": file_url(plugin)}}});
    std::fs::write(&config, body.to_string())?;
    let mut raw = Raw::spawn(
        Command::new(bin)
            .arg("--config-file")
            .arg(&config)
            .env("RUST_LOG", "off")
            .env("HYPER_MCP_LOG_PATH", dir.join("logs")),
    )?;
    raw.handshake()?;
    let list = raw.request(1, "tools/list", json!({}))?;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    let Some(tool) = names
        .iter()
        .find(|n| n.ends_with("-add"))
        .map(|n| n.to_string())
    else {
        return Err(std::io::Error::other(format!(
            "no `add` tool in hyper-mcp's tools/list (plugin not loaded?): {names:?}"
        )));
    };
    println!("hyper-mcp tools/list: {names:?}; timing {tool}");
    let check = raw.request(
        2,
        "tools/call",
        json!({"name": tool, "arguments": {"a": 2, "b": 3}}),
    )?;
    if check["result"]["content"][0]["text"] != json!("5") {
        return Err(std::io::Error::other(format!("2 + 3 answered {check}")));
    }
    time_calls(&mut raw, &tool, json!({"a": 2, "b": 3}))
}

/// Prints one timing line (or why it failed).
fn report(label: &str, stats: std::io::Result<Stats>) {
    match stats {
        Ok(s) => println!(
            "{label}: median {:>8.1?}  p99 {:>8.1?}  n={}",
            s.median, s.p99, s.n
        ),
        Err(e) => println!("{label}: failed: {e}"),
    }
}

/// Start to ready, 20 launches of `toolhost serve --stdio` on the plugins folder (warm
/// compile cache): until `initialize` is answered, and until `tools/list` lists every
/// tool of the folder. `serve` answers at once and loads the plugins in the background,
/// so the second is polled (every millisecond) until the count is that of a full load.
fn start_to_ready(dir: &Path) {
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            println!("start to ready: no async runtime: {e}");
            return;
        }
    };
    let full = ToolRegistry::new();
    rt.block_on(toolhost::host::load_plugins(&full, dir));
    let expected = full.len();
    let (mut answered, mut listed) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        let t = Instant::now();
        let run = Raw::spawn(&mut toolhost_cmd(dir)).and_then(|mut raw| {
            raw.handshake()?;
            answered.push(t.elapsed());
            for id in 1..30_000 {
                let v = raw.request(id, "tools/list", json!({}))?;
                if v["result"]["tools"].as_array().map(Vec::len) == Some(expected) {
                    listed.push(t.elapsed());
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(std::io::Error::other(format!(
                "never listed all {expected} tools"
            )))
        });
        if let Err(e) = run {
            println!("start to ready: failed: {e}");
            break;
        }
    }
    for (what, v) in [
        ("initialize answered", answered),
        (&*format!("all {expected} tools listed"), listed),
    ] {
        if !v.is_empty() {
            let s = stats(v);
            println!(
                "start to ready ({what}): median {:>8.1?}  p99 {:>8.1?}  n={}",
                s.median, s.p99, s.n
            );
        }
    }
}

fn timing_part() {
    println!("\n== raw JSON-RPC timing client (1500 sequential tools/call after 300 warm-up) ==");
    report("pipe floor (cat echo)", time_pipe_floor());
    if let Some(dir) = plugins() {
        report(
            "toolhost serve --stdio (wasm add)",
            Raw::spawn(&mut toolhost_cmd(&dir)).and_then(|mut raw| {
                raw.handshake()?;
                time_calls(&mut raw, "add", json!({"x": 2, "y": 3}))
            }),
        );
        start_to_ready(&dir);
    } else {
        println!("toolhost serve: skipped (run `cargo xtask plugins`)");
    }
    if let Some(script) = everything() {
        report(
            "server-everything (get-sum)",
            Raw::spawn(Command::new("node").arg(&script).arg("stdio")).and_then(|mut raw| {
                raw.handshake()?;
                time_calls(&mut raw, "get-sum", json!({"a": 2, "b": 3}))
            }),
        );
    }
    if let Some((bin, plugin)) = hyper_mcp() {
        report(
            "hyper-mcp (Extism add plugin)",
            tempfile::tempdir().and_then(|dir| time_hyper_mcp(&bin, &plugin, dir.path())),
        );
    }
}

fn main() {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        eprintln!("cannot start a tokio runtime");
        return;
    };
    let mut c = Criterion::default().configure_from_args();
    criterion_part(&mut c, &rt);
    c.final_summary();
    timing_part();
}
