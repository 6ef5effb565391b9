//! Benchmark `serve_path`: the per-call cost of `toolhost serve --stdio`, side by side
//! with its floors and its peer, every figure from the same run and the same raw
//! JSON-RPC client (`support/raw.rs`: 300 warm-up then 1,500 sequential `tools/call`).
//!
//! Rows, each a fresh process per sweep:
//! - `cat`: an echo responder, the bare pipe (the request line comes back as its answer);
//! - `floor`: a Python responder that parses each line and answers it without doing
//!   anything (the pipe floor the goals are stated against: the least any server that
//!   reads JSON-RPC does);
//! - `toolhost`: `serve --stdio` answering the `calc` plugin's WASM `add`, audit on (to a
//!   file of its own in a temporary folder);
//! - `toolhost-no-audit`: the same with `--no-audit`;
//! - `everything`: server-everything (Node) answering its `get-sum`;
//! - `gateway`: `serve --stdio` wrapping server-everything, the same `get-sum` through
//!   it (audit on).
//!
//! The rows run in that order, then again (two sweeps), and the table gives each row's
//! medians and p99s with the same-run ratios: each median against the floor's of its
//! sweep, toolhost against server-everything, the gateway against server-everything
//! alone, and p99 against median.
//!
//! Environment, for profiling one row:
//! - `SERVE_PATH_ONLY=toolhost,gateway`: only these rows;
//! - `SERVE_PATH_CALLS=N`: timed calls per row (default 1,500);
//! - `SERVE_PATH_SWEEPS=N`: sweeps (default 2);
//! - `SERVE_PATH_TOOLHOST=PATH`: another `toolhost` binary for the toolhost rows (a
//!   build of another commit, to compare two builds in one run);
//! - `SERVE_PATH_WRAP="perf record -g -o /tmp/serve.data --"`: a command prefix for the
//!   toolhost rows (a profiler, `strace -c -f`, `valgrind --tool=callgrind`).
//!
//! Needs `cargo xtask plugins` (calc) and `cargo xtask peers` (server-everything);
//! rows whose inputs are missing are reported and left out. Run with
//! `cargo xtask bench` (this and `http_throughput`) or
//! `cargo bench -p toolhost-cli --bench serve_path`.

#[path = "support/raw.rs"]
mod raw;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use raw::{Raw, Stats, time_calls_n};
use serde_json::{Value, json};

/// The Python responder of the `floor` row: reads a line, parses it, answers its id with
/// a fixed result; notifications get nothing.
const FLOOR_PY: &str = r#"import json, sys
out = sys.stdout
answer = {"content": [{"type": "text", "text": "5"}], "isError": False}
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m:
        out.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": answer}) + "\n")
        out.flush()
"#;

/// One row: how to start it, and the call it is timed on.
struct Row {
    key: &'static str,
    label: &'static str,
    command: Command,
    tool: &'static str,
    args: Value,
    /// `cat` answers before any handshake (it echoes).
    handshake: bool,
}

fn env_usize(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `SERVE_PATH_WRAP`'s words, then `program`.
fn wrapped(program: &Path) -> Command {
    let wrap: Vec<String> = std::env::var("SERVE_PATH_WRAP")
        .map(|w| w.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    match wrap.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(program);
            c
        }
        None => Command::new(program),
    }
}

fn toolhost(config: &Path, plugins: &Path, audit: Option<&Path>) -> Command {
    let bin = std::env::var_os("SERVE_PATH_TOOLHOST")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_toolhost")));
    let mut cmd = wrapped(&bin);
    cmd.args(["serve", "--stdio", "--config"])
        .arg(config)
        .arg("--plugins")
        .arg(plugins);
    match audit {
        Some(file) => cmd.arg("--audit").arg(file),
        None => cmd.arg("--no-audit"),
    };
    cmd.env("RUST_LOG", "error");
    cmd
}

/// The rows this machine can run, in order; what is missing is said.
fn rows(dir: &Path) -> std::io::Result<Vec<Row>> {
    let mut rows = Vec::new();
    rows.push(Row {
        key: "cat",
        label: "`cat` (echo: the bare pipe)",
        command: Command::new("cat"),
        tool: "add",
        args: json!({"x": 2, "y": 3}),
        handshake: false,
    });
    let floor = dir.join("floor.py");
    std::fs::write(&floor, FLOOR_PY)?;
    let python = toolhost_testkit::peers::python().unwrap_or_else(|| PathBuf::from("python3"));
    let mut cmd = Command::new(python);
    cmd.arg("-u").arg(&floor);
    rows.push(Row {
        key: "floor",
        label: "Python responder that does nothing (the pipe floor)",
        command: cmd,
        tool: "add",
        args: json!({"x": 2, "y": 3}),
        handshake: true,
    });
    let empty = dir.join("empty.toml");
    std::fs::write(&empty, "")?;
    let no_plugins = dir.join("no-plugins");
    std::fs::create_dir_all(&no_plugins)?;
    match toolhost_testkit::built_plugins(&["calc.wasm"]) {
        Some(built) => {
            let plugins = dir.join("plugins");
            std::fs::create_dir_all(&plugins)?;
            for f in ["calc.wasm", "calc.toml"] {
                std::fs::copy(built.join(f), plugins.join(f))?;
            }
            rows.push(Row {
                key: "toolhost",
                label: "`toolhost serve --stdio`, calc `add` (audit on)",
                command: toolhost(&empty, &plugins, Some(&dir.join("audit.jsonl"))),
                tool: "add",
                args: json!({"x": 2, "y": 3}),
                handshake: true,
            });
            rows.push(Row {
                key: "toolhost-no-audit",
                label: "the same, `--no-audit`",
                command: toolhost(&empty, &plugins, None),
                tool: "add",
                args: json!({"x": 2, "y": 3}),
                handshake: true,
            });
        }
        None => println!("toolhost rows: skipped (run `cargo xtask plugins`)"),
    }
    match toolhost_testkit::peers::everything() {
        Some(script) => {
            let mut cmd = Command::new("node");
            cmd.arg(&script).arg("stdio");
            rows.push(Row {
                key: "everything",
                label: "server-everything (Node), `get-sum`",
                command: cmd,
                tool: "get-sum",
                args: json!({"a": 2, "b": 3}),
                handshake: true,
            });
            let gateway = dir.join("gateway.toml");
            std::fs::write(
                &gateway,
                format!(
                    "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
                     default_risk = \"read-only\"\n",
                    script.display().to_string()
                ),
            )?;
            rows.push(Row {
                key: "gateway",
                label: "toolhost wrapping server-everything, `get-sum` (audit on)",
                command: toolhost(&gateway, &no_plugins, Some(&dir.join("gateway.jsonl"))),
                tool: "get-sum",
                args: json!({"a": 2, "b": 3}),
                handshake: true,
            });
        }
        None => println!("server-everything rows: skipped (run `cargo xtask peers`)"),
    }
    let only = std::env::var("SERVE_PATH_ONLY").ok();
    if let Some(only) = only {
        let keys: Vec<&str> = only.split(',').map(str::trim).collect();
        rows.retain(|r| keys.contains(&r.key));
    }
    Ok(rows)
}

fn run(row: &mut Row, timed: usize) -> std::io::Result<Stats> {
    let mut raw = Raw::spawn(&mut row.command)?;
    if row.handshake {
        raw.handshake()?;
    }
    time_calls_n(&mut raw, row.tool, row.args.clone(), timed)
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn ratio(a: Duration, b: Duration) -> String {
    if b.is_zero() {
        return "–".into();
    }
    format!("{:.2}×", a.as_secs_f64() / b.as_secs_f64())
}

fn main() {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("serve_path: no temporary folder: {e}");
            std::process::exit(1);
        }
    };
    let mut rows = match rows(dir.path()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("serve_path: cannot set up: {e}");
            std::process::exit(1);
        }
    };
    let timed = env_usize("SERVE_PATH_CALLS", raw::TIMED).max(1);
    let sweeps = env_usize("SERVE_PATH_SWEEPS", 2).max(1);
    println!(
        "== serve_path: {} warm-up + {timed} timed sequential tools/call per row, {sweeps} sweeps ==",
        raw::WARM_UP
    );
    // results[row][sweep]
    let mut results: Vec<Vec<Option<Stats>>> = vec![Vec::new(); rows.len()];
    for sweep in 1..=sweeps {
        for (i, row) in rows.iter_mut().enumerate() {
            let r = run(row, timed);
            match &r {
                Ok(s) => println!(
                    "sweep {sweep} {:<18} median {:>7} µs  p99 {:>7} µs  n={}",
                    row.key,
                    us(s.median),
                    us(s.p99),
                    s.n
                ),
                Err(e) => println!("sweep {sweep} {:<18} failed: {e}", row.key),
            }
            results[i].push(r.ok());
        }
    }
    let find = |key: &str, sweep: usize| -> Option<Stats> {
        rows.iter()
            .position(|r| r.key == key)
            .and_then(|i| results[i][sweep])
    };
    println!();
    let mut head = String::from("| server |");
    let mut rule = String::from("|---|");
    for s in 1..=sweeps {
        head.push_str(&format!(" sweep {s}: median / p99 (µs) | ÷ floor |"));
        rule.push_str("---|---|");
    }
    println!("{head}\n{rule}");
    for (i, row) in rows.iter().enumerate() {
        let mut line = format!("| {} |", row.label);
        for (s, r) in results[i].iter().enumerate() {
            match (r, find("floor", s)) {
                (Some(r), Some(f)) => line.push_str(&format!(
                    " {} / {} | {} |",
                    us(r.median),
                    us(r.p99),
                    ratio(r.median, f.median)
                )),
                (Some(r), None) => {
                    line.push_str(&format!(" {} / {} | – |", us(r.median), us(r.p99)))
                }
                (None, _) => line.push_str(" failed | – |"),
            }
        }
        println!("{line}");
    }
    println!();
    for s in 0..sweeps {
        let mut said = Vec::new();
        if let (Some(t), Some(f)) = (find("toolhost", s), find("floor", s)) {
            said.push(format!(
                "toolhost ÷ floor {} (goal ≤ 1.50×)",
                ratio(t.median, f.median)
            ));
            said.push(format!(
                "toolhost p99 ÷ median {} (goal ≤ 2.00×)",
                ratio(t.p99, t.median)
            ));
        }
        if let (Some(t), Some(e)) = (find("toolhost", s), find("everything", s)) {
            said.push(format!(
                "server-everything ÷ toolhost {} (goal ≥ 1.50×)",
                ratio(e.median, t.median)
            ));
        }
        if let (Some(g), Some(e)) = (find("gateway", s), find("everything", s)) {
            said.push(format!(
                "gateway ÷ server-everything {} (goal ≤ 1.30×)",
                ratio(g.median, e.median)
            ));
        }
        if let (Some(t), Some(n)) = (find("toolhost", s), find("toolhost-no-audit", s)) {
            said.push(format!("audit costs {} µs", {
                let d = t.median.as_secs_f64() - n.median.as_secs_f64();
                format!("{:.1}", d * 1e6)
            }));
        }
        if !said.is_empty() {
            println!("sweep {}: {}", s + 1, said.join("; "));
        }
    }
}
