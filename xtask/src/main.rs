//! `cargo xtask`: set-up and build tasks of the toolhost workspace.
//!
//! - `cargo xtask plugins`: builds every example plugin (and the hostile test fixtures) into
//!   `target/plugins/` (`.wasm` + policy), installing the `wasm32-wasip2` target if missing.
//! - `cargo xtask test`: everything a fresh machine needs (targets, plugins, npm/PyPI/Debian
//!   peers, Chromium among them), then fmt, the test build linted by clippy, every test and
//!   the fuzz smoke runs, and a table of each step's wall time (`docs/ci.md`).
//! - `cargo xtask demo`: builds everything and shows toolhost at work on its examples.
//! - `cargo xtask bench-docs`: rebuilds `docs/benchmarks.md` from the per-area files.
//! - `cargo xtask bench-peers`: installs the peers only benchmarks use (hyper-mcp and its
//!   `add` plugin, for `cli/benches/mcp.rs`; the tool-search catalogue, for
//!   `cli/benches/discovery.rs`); `cargo xtask test` does not run it.
//! - `cargo xtask fuzz [SECONDS]`: runs every fuzz target of `fuzz/` briefly (also the last
//!   step of `cargo xtask test`).
//! - `cargo xtask env`: prints, as shell `export` lines, the variables `cargo xtask test`
//!   gives the tests (where the plugins and peers are), so that one test can be run alone:
//!   `eval "$(cargo xtask env)" && cargo test -p toolhost-cli --test all serve::`.
//! - `cargo xtask bench`: the per-call side-by-side of `serve` (`cli/benches/serve_path.rs`:
//!   the pipe floor, `serve --stdio` with and without the audit, server-everything, and
//!   `serve` wrapping it, two sweeps, same-run ratios), then `serve --http` at 1, 8 and 64
//!   clients (`cli/benches/http_throughput.rs`). Not a test: `cargo xtask test` never runs
//!   it, and its figures go into `docs/benchmarks.md` by hand.
//! - `cargo xtask soak [CALLS]`: the soak of `cli/tests/all/soak.rs` alone, one transport at a
//!   time, with its figures printed (`cargo xtask test` runs it too, with 100 000 calls).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod bench_docs;
mod demo;
mod fuzz;
mod langs;
mod peers_bench;
mod peers_browser;
mod peers_deploy;
mod peers_dist;
mod peers_llm;
mod peers_mcp;
mod plugins;
mod timing;

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
        "bench" => bench(),
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
                 peers     install the test peers (npm, PyPI, Debian docker-registry, minisign, haproxy, chromium)\n  \
                 env       print the tests' environment as `export` lines (eval it to run one test)\n  \
                 bench     serve's per-call side-by-side (floor, audit, server-everything, gateway) and HTTP throughput\n  \
                 bench-docs  rebuild docs/benchmarks.md from docs/benchmarks/*.md\n  \
                 bench-peers install the benchmarks' own peers (hyper-mcp + its add plugin, the tool-search catalogue)\n  \
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

thread_local! {
    /// Whether this thread does work in the background of the main sequence of steps
    /// (its steps are printed, but timed as one overlapped row; see `test_steps`).
    static BACKGROUND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Prints a step header, so a person waiting sees progress, and starts timing the step
/// (the table at the end of `test` and `demo`).
pub fn step(msg: &str) {
    if BACKGROUND.get() {
        eprintln!("\n==> [background] {msg}");
    } else {
        timing::mark(msg);
        eprintln!("\n==> {msg}");
    }
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
    peers_deploy::setup()?;
    peers_dist::setup()?;
    peers_browser::setup_debian()?;
    peers_browser::setup_pypi()?;
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
    .chain(peers_browser::test_env())
    .collect()
}

/// Prints [`test_env`] as POSIX shell `export` lines, each value single-quoted.
fn print_env() {
    for (k, v) in test_env() {
        println!("export {k}='{}'", v.replace('\'', r"'\''"));
    }
}

/// The crates outside the root workspace (excluded from it): the guest plugins, the test
/// fixtures, the SDK and the fuzz targets. (`templates/rust` is a template with
/// placeholders, not a crate until `cargo generate` fills them in.)
const OTHER_WORKSPACES: &[&str] = &[
    "plugins",
    "tests/fixtures",
    "sdk",
    "fuzz",
    "crates/code/runner",
];

/// `cargo fmt --all --check` in the root workspace and in each of [`OTHER_WORKSPACES`]:
/// `--all` covers the root's members only.
fn fmt_check() -> Result {
    step("cargo fmt --check (every workspace)");
    run(Command::new(cargo())
        .current_dir(root())
        .args(["fmt", "--all", "--check"]))?;
    for dir in OTHER_WORKSPACES {
        run(Command::new(cargo())
            .current_dir(root().join(dir))
            .args(["fmt", "--all", "--check"]))?;
    }
    Ok(())
}

fn lint() -> Result {
    fmt_check()?;
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
/// `cargo xtask bench`: the plugins and peers the benchmarks need, then `serve_path` and
/// `http_throughput`, each printing its table (see the module docs).
fn bench() -> Result {
    plugins::build_all()?;
    // server-everything and Python (serve_path), HAProxy (http_throughput's replicas).
    peers_mcp::setup()?;
    peers_dist::setup()?;
    for bench in ["serve_path", "http_throughput"] {
        step(&format!("cargo bench -p toolhost-cli --bench {bench}"));
        let mut cmd = Command::new(cargo());
        cmd.current_dir(root())
            .args(["bench", "-p", "toolhost-cli", "--bench", bench])
            .envs(test_env());
        run(&mut cmd)?;
    }
    Ok(())
}

fn soak(calls: Option<u64>) -> Result {
    let plugins_dir = plugins::build_all()?;
    step("cargo test -p toolhost-cli --test all soak::");
    let mut cmd = Command::new(cargo());
    cmd.current_dir(root())
        .args([
            "test",
            "-p",
            "toolhost-cli",
            "--test",
            "all",
            "soak::",
            "--",
        ])
        .args(["--nocapture", "--test-threads=1"])
        .env("TOOLHOST_TEST_PLUGINS", &plugins_dir);
    if let Some(n) = calls {
        cmd.env("TOOLHOST_SOAK_CALLS", n.to_string());
    }
    run(&mut cmd)
}

/// `cargo xtask test`: every step, then the table of their wall times (printed also when a
/// step failed, so a slow or failing run still shows where its time went).
fn test(extra: &[String]) -> Result {
    let result = test_steps(extra);
    eprint!("{}", timing::table("cargo xtask test"));
    result
}

fn test_steps(extra: &[String]) -> Result {
    disk_report();
    // The npm and PyPI peers are mostly downloads: they install on a thread of their own
    // while the plugins and the tests build on both cores. (The Debian peers stay in
    // the main sequence: two apt-get at once fight over dpkg's lock.)
    let background = std::thread::spawn(|| {
        BACKGROUND.set(true);
        let started = std::time::Instant::now();
        let result = peers_mcp::setup()
            .and_then(|()| peers_llm::setup())
            .and_then(|()| peers_deploy::setup())
            .and_then(|()| peers_browser::setup_pypi());
        (result, started.elapsed())
    });
    let plugins_dir = plugins::build_all()?;
    peers_dist::setup()?;
    peers_browser::setup_debian()?;
    fmt_check()?;
    // Clippy lints the workspace's crates while they are compiled for the tests, instead of
    // in a `cargo clippy` run of its own: that run checks every dependency a second time
    // (check mode shares nothing with a build), which cost 10+ minutes of a fresh CI run.
    // Same lints, same targets (`--all-targets`: benches and examples too), `-D warnings`.
    let lint = clippy_build_env()?;
    step("cargo test --workspace --all-targets --no-run (linted by clippy, -D warnings)");
    run(Command::new(cargo())
        .current_dir(root())
        .args([
            "test",
            "--locked",
            "--workspace",
            "--all-targets",
            "--no-run",
        ])
        .envs(lint.clone()))?;
    let (peers, took) = background
        .join()
        .map_err(|_| "the thread installing the peers panicked".to_string())?;
    timing::overlapped(
        "npm + PyPI peers, in the background of the steps above",
        took,
    );
    peers?;
    step("cargo test --workspace");
    let mut cmd = Command::new(cargo());
    cmd.current_dir(root())
        .args(["test", "--locked", "--workspace"])
        .args(extra)
        // The same wrapper and arguments as the build above, so nothing is rebuilt.
        .envs(lint.clone())
        .envs(test_env())
        .env("TOOLHOST_TEST_PLUGINS", &plugins_dir);
    timing::run_cargo_test(&mut cmd)?;
    sdk_tests()?;
    install_route(&plugins_dir)?;
    peers_deploy::lint_manifests()?;
    disk_report();
    fuzz::run(20, fuzz::Build::Quick)
}

/// The SDK's own tests (its own package, outside the workspace): the compile-fail cases of
/// `#[toolhost_sdk::tool]` and `export!`, built for the host's target. Without the
/// workspace's clippy wrapper: the SDK's generated WIT bindings are not this workspace's
/// code to lint (a plugin project keeps the SDK out of its workspace for the same reason).
fn sdk_tests() -> Result {
    step("cargo test (sdk/: the #[tool] compile tests)");
    run(Command::new(cargo())
        .current_dir(root())
        .args([
            "test",
            "--locked",
            "--manifest-path",
            "sdk/Cargo.toml",
            "--target-dir",
        ])
        .arg(root().join("target").join("sdk"))
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS"))
}

/// The README's way to get the binary outside this repository, as far as CI can afford
/// it: the binary `cargo test` built (`--locked`, from the same sources and lock file
/// as `cargo install --locked --path cli`) is put in a scratch root's `bin/` and run from
/// a folder outside the checkout, with a plugins folder of its own: `--version`, `list`,
/// `call add` and a completion script. (A real `cargo install` resolves the features of
/// `toolhost` alone, without the tests' tokio `test-util`, and would rebuild everything
/// that depends on tokio: minutes of every run for the same sources; `docs/ci.md`.)
fn install_route(plugins: &Path) -> Result {
    step("install route: the toolhost binary in a bin/ of its own, run from outside the checkout");
    let install_root = root().join("target").join("install-route");
    let _ = std::fs::remove_dir_all(&install_root);
    let built = root().join("target").join("debug").join("toolhost");
    std::fs::create_dir_all(install_root.join("bin"))
        .map_err(|e| format!("{}: {e}", install_root.display()))?;
    std::fs::copy(&built, install_root.join("bin").join("toolhost"))
        .map_err(|e| format!("cannot copy {}: {e}", built.display()))?;
    let bin = install_root.join("bin").join("toolhost");
    let outside =
        std::env::temp_dir().join(format!("toolhost-install-route-{}", std::process::id()));
    std::fs::create_dir_all(&outside).map_err(|e| format!("{}: {e}", outside.display()))?;
    let check = |args: &[&str], want: &str| -> Result {
        let out = Command::new(&bin)
            .current_dir(&outside)
            .args(args)
            .env("XDG_DATA_HOME", outside.join("data"))
            .env("XDG_CACHE_HOME", outside.join("cache"))
            .env_remove("TOOLHOST_PLUGINS")
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && text.contains(want) {
            eprintln!("    toolhost {}: ok", args.join(" "));
            Ok(())
        } else {
            Err(format!(
                "the installed toolhost {}: {} (wanted {want:?})\n{text}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    // A plugins folder of the user's own, outside the checkout, with one example (the
    // large JS and Python examples would only add their compile time here).
    let user_plugins = outside.join("plugins");
    std::fs::create_dir_all(&user_plugins)
        .map_err(|e| format!("{}: {e}", user_plugins.display()))?;
    for file in ["calc.wasm", "calc.toml"] {
        std::fs::copy(plugins.join(file), user_plugins.join(file))
            .map_err(|e| format!("cannot copy {file}: {e}"))?;
    }
    let user_plugins = user_plugins.display().to_string();
    let result = check(&["--version"], "wasmtime")
        .and_then(|()| check(&["list", "--plugins", &user_plugins], "add"))
        .and_then(|()| {
            check(
                &[
                    "call",
                    "add",
                    r#"{"x": 20, "y": 22}"#,
                    "--plugins",
                    &user_plugins,
                ],
                "42",
            )
        })
        .and_then(|()| check(&["completions", "bash"], "toolhost"));
    let _ = std::fs::remove_dir_all(&outside);
    result
}

/// The environment that makes cargo compile the workspace's own crates with clippy's
/// driver, as `cargo clippy -- -D warnings` does (`RUSTC_WORKSPACE_WRAPPER` =
/// `clippy-driver`, its arguments in `CLIPPY_ARGS`, each followed by the separator
/// `__CLIPPY_HACKERY__`), but in a real build: the driver lints, then compiles as rustc
/// does. Dependencies are compiled by plain rustc.
fn clippy_build_env() -> Result<Vec<(String, String)>> {
    let driver = Command::new("rustup")
        .args(["which", "clippy-driver"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|p| !p.is_empty())
        .ok_or("clippy-driver not found: install clippy with `rustup component add clippy`")?;
    let args = ["-D", "warnings"]
        .iter()
        .map(|a| format!("{a}__CLIPPY_HACKERY__"))
        .collect::<String>();
    Ok(vec![
        ("RUSTC_WORKSPACE_WRAPPER".into(), driver),
        ("CLIPPY_ARGS".into(), args),
    ])
}
