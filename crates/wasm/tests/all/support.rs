//! Test support: builds the guest components once per run and loads them with a policy.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;
use toolhost_core::tools::{ToolCall, ToolContext, ToolInvocation, ToolRegistry};
use toolhost_wasm::{EngineOptions, WasmEngine, folder};

/// Where the built `.wasm` files are.
pub struct Guests {
    /// Example plugins (calc, files, fetch).
    pub plugins: PathBuf,
    /// Hostile fixtures (hostile, baddesc).
    pub fixtures: PathBuf,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cargo_build(ws: &Path, target_dir: &Path) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(ws)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(target_dir)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo for {}: {e}", ws.display()));
    assert!(
        out.status.success(),
        "guest build of {} failed (is the wasm32-wasip2 target installed? `cargo xtask plugins` installs it):\n{}",
        ws.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds (or finds) the guests. `TOOLHOST_TEST_PLUGINS` (set by `cargo xtask test`) points
/// at a folder already built by `cargo xtask plugins`; otherwise the test builds them.
pub fn guests() -> &'static Guests {
    static G: OnceLock<Guests> = OnceLock::new();
    G.get_or_init(|| {
        if let Ok(dir) = std::env::var("TOOLHOST_TEST_PLUGINS") {
            let dir = PathBuf::from(dir);
            if dir.join("calc.wasm").is_file() && dir.join("fixtures/hostile.wasm").is_file() {
                return Guests {
                    fixtures: dir.join("fixtures"),
                    plugins: dir,
                };
            }
        }
        let target = root().join("target").join("guest");
        cargo_build(&root().join("plugins"), &target);
        cargo_build(&root().join("tests").join("fixtures"), &target);
        let built = target.join("wasm32-wasip2").join("release");
        Guests {
            plugins: built.clone(),
            fixtures: built,
        }
    })
}

/// The engine shared by the tests (default options, compile cache under target/).
pub fn engine() -> &'static WasmEngine {
    static E: OnceLock<WasmEngine> = OnceLock::new();
    E.get_or_init(|| {
        WasmEngine::with_options(EngineOptions {
            cache_dir: Some(root().join("target").join("guest").join("test-cache")),
            ..EngineOptions::default()
        })
        .unwrap_or_else(|e| panic!("{e}"))
    })
}

/// The path of a built guest (`hostile`, `calc`, ...).
pub fn wasm(name: &str) -> PathBuf {
    let g = guests();
    let p = g.plugins.join(format!("{name}.wasm"));
    if p.is_file() {
        p
    } else {
        g.fixtures.join(format!("{name}.wasm"))
    }
}

/// A plugins folder in `dir` holding `name.wasm` with this policy.
pub fn install(dir: &Path, name: &str, policy: Option<&str>) {
    std::fs::copy(wasm(name), dir.join(format!("{name}.wasm")))
        .unwrap_or_else(|e| panic!("copy {name}: {e}"));
    if let Some(p) = policy {
        std::fs::write(dir.join(format!("{name}.toml")), p).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A registry with the plugins of `dir` loaded; panics on any load error.
pub async fn registry(dir: &Path) -> ToolRegistry {
    let registry = ToolRegistry::new();
    let (_p, errors) = folder::load_into(engine(), &registry, dir).await;
    assert!(errors.is_empty(), "load errors: {errors:?}");
    registry
}

/// One plugin with a policy, in a fresh folder; returns the registry and the folder.
pub async fn with_policy(name: &str, policy: &str) -> (ToolRegistry, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    install(dir.path(), name, Some(policy));
    (registry(dir.path()).await, dir)
}

/// Calls a tool through the full registry pipeline.
pub async fn call(reg: &ToolRegistry, tool: &str, args: Value) -> ToolInvocation {
    reg.invoke_call(ToolCall::new(tool, args), &ToolContext::new("test", "test"))
        .await
}

/// The error text of a failed invocation (panics if it succeeded).
pub fn err_text(inv: &ToolInvocation) -> String {
    match &inv.output {
        Ok(o) => panic!("expected an error, got {:?}", o.render),
        Err(e) => e.to_string(),
    }
}

/// Asserts that a harmless call on the same registry still works (the host survived).
pub async fn still_works(reg: &ToolRegistry) {
    let tool = if reg.contains("burn") { "burn" } else { "add" };
    let args = if tool == "burn" {
        serde_json::json!({"depth": 10})
    } else {
        serde_json::json!({"x": 1, "y": 2})
    };
    let inv = call(reg, tool, args).await;
    assert!(
        inv.is_ok(),
        "a good call failed after a hostile one: {}",
        inv.model_text()
    );
}
