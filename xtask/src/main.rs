//! `cargo xtask`: set-up and build tasks of the toolhost workspace.
//!
//! - `cargo xtask plugins`: builds every example plugin (and the hostile test fixtures) into
//!   `target/plugins/` (`.wasm` + policy), installing the `wasm32-wasip2` target if missing.
//! - `cargo xtask test`: everything a fresh machine needs (targets, plugins, npm/PyPI peers),
//!   then fmt, clippy and every test.
//! - `cargo xtask demo`: builds everything and shows toolhost at work on its examples.
//! - `cargo xtask bench-docs`: rebuilds `docs/benchmarks.md` from the per-area files.
//! - `cargo xtask bench-peers`: installs the peers only benchmarks use (hyper-mcp and its
//!   `add` plugin, for `host/benches/mcp.rs`); `cargo xtask test` does not run it.
//! - `cargo xtask fuzz [SECONDS]`: runs every fuzz target of `fuzz/` briefly (also the last
//!   step of `cargo xtask test`).
//! - `cargo xtask env`: prints, as shell `export` lines, the variables `cargo xtask test`
//!   gives the tests (where the plugins and peers are), so that one test can be run alone:
//!   `eval "$(cargo xtask env)" && cargo test -p toolhost --test serve`.
//! - `cargo xtask soak [CALLS]`: the soak of `host/tests/soak.rs` alone, one transport at a
//!   time, with its figures printed (`cargo xtask test` runs it too, with 100 000 calls).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod bench_docs;
mod demo;
mod fuzz;
mod langs;
mod peers_bench;
mod peers_dist;
mod peers_llm;
mod peers_mcp;
mod plugins;

type Result<T = ()> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = args.first().map(String::as_str).unwrap_or("help");
    let rest = &args[args.len().min(1)..];
    let result = match task {
        "plugins" => plugins::build_all().map(|_| ()),
        "test" => test(rest),
        "lint" => lint(),
        "demo" => demo::run(),
        "peers" => setup_peers(),
        "env" => {
            print_env();
            Ok(())
        }
        "bench-docs" => bench_docs::run(),
        "bench-peers" => peers_bench::setup(),
        "fuzz" => match rest.first().map(|s| s.parse::<u64>()) {
            None => fuzz::run(20, fuzz::Build::Optimised),
            Some(Ok(secs)) => fuzz::run(secs, fuzz::Build::Optimised),
            Some(Err(_)) => Err("usage: cargo xtask fuzz [SECONDS per target]".into()),
        },
        "soak" => match rest.first().map(|s| s.parse::<u64>()) {
            None => soak(None),
            Some(Ok(calls)) => soak(Some(calls)),
            Some(Err(_)) => Err("usage: cargo xtask soak [CALLS per transport]".into()),
        },
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\n\
                 tasks:\n  \
                 plugins   build every example plugin and test fixture into target/plugins\n  \
                 test      set up everything the tests need, then run fmt, clippy and all tests\n            \
                 (extra arguments go to `cargo test`)\n  \
                 lint      cargo fmt --check and cargo clippy -D warnings\n  \
                 peers     install the test peers (npm, PyPI, Debian docker-registry + minisign)\n  \
                 env       print the tests' environment as `export` lines (eval it to run one test)\n  \
                 bench-docs  rebuild docs/benchmarks.md from docs/benchmarks/*.md\n  \
                 bench-peers install the benchmarks' own peers (hyper-mcp + its add plugin)\n  \
                 fuzz      run every cargo-fuzz target of fuzz/ briefly (default 20 s each)\n  \
                 soak      100 000 tools/call over serve --stdio and --http, figures printed\n  \
                 demo      build everything and run toolhost on its example plugins"
            );
            Err(String::new())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("xtask: error: {e}");
            }
            ExitCode::FAILURE
        }
    }
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The cargo to call (the one running us).
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Prints a step header, so a person waiting sees progress.
pub fn step(msg: &str) {
    eprintln!("\n==> {msg}");
}

/// Prints the free space of the file system that holds `target/` (`df -h`), so a run
/// that fills the disk says how full it was before each large build. Informational: a
/// missing `df` prints nothing.
pub fn disk_report() {
    let target = root().join("target");
    let dir = if target.is_dir() { target } else { root() };
    if let Ok(out) = Command::new("df").arg("-h").arg(&dir).output() {
        eprint!("{}", String::from_utf8_lossy(&out.stdout));
    }
}

/// Runs a command, failing with its description if it does not succeed.
pub fn run(cmd: &mut Command) -> Result {
    let desc = format!("{cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {desc}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{desc} failed with {status}"))
    }
}

fn setup_peers() -> Result {
    peers_mcp::setup()?;
    peers_llm::setup()?;
    peers_dist::setup()?;
    Ok(())
}

/// The environment `cargo xtask test` gives `cargo test`: the plugins folder and where each
/// peer is installed.
fn test_env() -> Vec<(String, String)> {
    let plugins = root().join("target").join("plugins");
    std::iter::once((
        "TOOLHOST_TEST_PLUGINS".to_string(),
        plugins.display().to_string(),
    ))
    .chain(peers_mcp::test_env())
    .chain(peers_llm::test_env())
    .chain(peers_dist::test_env())
    .collect()
}

/// Prints [`test_env`] as POSIX shell `export` lines, each value single-quoted.
fn print_env() {
    for (k, v) in test_env() {
        println!("export {k}='{}'", v.replace('\'', r"'\''"));
    }
}

fn lint() -> Result {
    step("cargo fmt --check");
    run(Command::new(cargo())
        .current_dir(root())
        .args(["fmt", "--all", "--check"]))?;
    step("cargo clippy --all-targets -- -D warnings");
    run(Command::new(cargo()).current_dir(root()).args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))
}

/// Runs the soak test file alone, transports one after the other, printing its figures.
fn soak(calls: Option<u64>) -> Result {
    let plugins_dir = plugins::build_all()?;
    step("cargo test -p toolhost --test soak");
    let mut cmd = Command::new(cargo());
    cmd.current_dir(root())
        .args(["test", "-p", "toolhost", "--test", "soak", "--"])
        .args(["--nocapture", "--test-threads=1"])
        .env("TOOLHOST_TEST_PLUGINS", &plugins_dir);
    if let Some(n) = calls {
        cmd.env("TOOLHOST_SOAK_CALLS", n.to_string());
    }
    run(&mut cmd)
}

fn test(extra: &[String]) -> Result {
    disk_report();
    let plugins_dir = plugins::build_all()?;
    setup_peers()?;
    lint()?;
    step("cargo test --workspace");
    let mut cmd = Command::new(cargo());
    cmd.current_dir(root())
        .args(["test", "--workspace"])
        .args(extra)
        .envs(test_env())
        .env("TOOLHOST_TEST_PLUGINS", &plugins_dir);
    run(&mut cmd)?;
    disk_report();
    fuzz::run(20, fuzz::Build::Quick)
}
