//! `cargo xtask bench-peers`: the peers only the benchmarks compare against, installed under
//! `target/peers/hyper-mcp` (never by `cargo xtask test`: no test needs them).
//!
//! - the tool-search catalogue: published MCP servers whose tools make the workload of
//!   `cli/benches/discovery.rs` (`peers_mcp::CATALOGUE_NPM`, `target/peers/mcp/catalogue`);
//! - hyper-mcp, an MCP server whose tools are Extism plugins, `cargo install`ed from
//!   crates.io at a pinned version into `target/peers/hyper-mcp/bin/hyper-mcp` (a long
//!   build: run at `nice -n 19` with one build job unless `CARGO_BUILD_JOBS` says otherwise;
//!   its build folder `target/peers/hyper-mcp/build` is kept so an interrupted install
//!   resumes). Skipped when `cargo install --list` shows that version already there.
//! - its `add` plugin (`host/benches/peers/hyper_add`, the Extism PDK, `wasm32-wasip1`),
//!   built into `target/peers/hyper-mcp/plugin-target` and copied to
//!   `target/peers/hyper-mcp/add.wasm`. The MCP benchmark (`host/benches/mcp.rs`) writes
//!   the config file pointing hyper-mcp at it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{root, run, step};

/// The hyper-mcp release the benchmark figures are for (the newest on crates.io when the
/// bench was added).
pub const HYPER_MCP_VERSION: &str = "0.8.3";

/// Extism plugins are core wasm modules for WASI preview 1, not components.
const PLUGIN_TARGET: &str = "wasm32-wasip1";

/// `target/peers/hyper-mcp`: everything this task installs.
fn base() -> PathBuf {
    root().join("target").join("peers").join("hyper-mcp")
}

/// Installs hyper-mcp and builds its `add` plugin; idempotent.
pub fn setup() -> crate::Result {
    let base = base();
    std::fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    crate::peers_mcp::setup_catalogue()?;
    install_hyper_mcp(&base)?;
    let wasm = build_plugin(&base)?;
    step("bench peers ready");
    eprintln!(
        "hyper-mcp {HYPER_MCP_VERSION}: {}\nadd plugin: {}\n\
         measure with: cargo bench -p toolhost-cli --bench mcp",
        hyper_mcp_bin(&base).display(),
        wasm.display()
    );
    Ok(())
}

fn hyper_mcp_bin(base: &Path) -> PathBuf {
    base.join("bin")
        .join(format!("hyper-mcp{}", std::env::consts::EXE_SUFFIX))
}

/// True when `cargo install --list` under `base` shows hyper-mcp at the pinned version and
/// its binary is there.
fn installed(base: &Path) -> bool {
    let want = format!("hyper-mcp v{HYPER_MCP_VERSION}:");
    let listed = Command::new(crate::cargo())
        .args(["install", "--list", "--root"])
        .arg(base)
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == want)
        })
        .unwrap_or(false);
    listed && hyper_mcp_bin(base).is_file()
}

/// A cargo command run at the lowest priority when `nice` is there (a long build must
/// not starve whatever else runs on the machine).
fn nice_cargo() -> Command {
    let nice = Path::new("/usr/bin/nice");
    let mut cmd = if nice.is_file() {
        let mut c = Command::new(nice);
        c.args(["-n", "19"]).arg(crate::cargo());
        c
    } else {
        Command::new(crate::cargo())
    };
    if std::env::var_os("CARGO_BUILD_JOBS").is_none() {
        cmd.env("CARGO_BUILD_JOBS", "1");
    }
    cmd.env("CARGO_INCREMENTAL", "0");
    cmd
}

fn install_hyper_mcp(base: &Path) -> crate::Result {
    if installed(base) {
        step(&format!(
            "hyper-mcp {HYPER_MCP_VERSION}: already installed in {}",
            base.display()
        ));
        return Ok(());
    }
    step(&format!(
        "hyper-mcp {HYPER_MCP_VERSION}: cargo install (a long build: 581 crates, \
         about 45 min at one job on a busy 2-core machine; cargo prints each crate)"
    ));
    run(nice_cargo()
        .args(["install", "hyper-mcp", "--version", HYPER_MCP_VERSION])
        .args(["--locked", "--root"])
        .arg(base)
        .arg("--target-dir")
        .arg(base.join("build")))?;
    if installed(base) {
        Ok(())
    } else {
        Err(format!(
            "cargo install finished but {} is not hyper-mcp {HYPER_MCP_VERSION}",
            hyper_mcp_bin(base).display()
        ))
    }
}

/// Builds the `add` plugin (release, `wasm32-wasip1`) and copies it to `base/add.wasm`.
fn build_plugin(base: &Path) -> crate::Result<PathBuf> {
    crate::plugins::ensure_target(PLUGIN_TARGET)?;
    let manifest = root().join("host/benches/peers/hyper_add/Cargo.toml");
    let target_dir = base.join("plugin-target");
    step(&format!(
        "hyper-mcp add plugin: cargo build --release --target {PLUGIN_TARGET} ({})",
        manifest.display()
    ));
    run(nice_cargo()
        .args(["build", "--release", "--locked", "--target", PLUGIN_TARGET])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target_dir))?;
    let built = target_dir
        .join(PLUGIN_TARGET)
        .join("release")
        .join("hyper_add.wasm");
    let dest = base.join("add.wasm");
    std::fs::copy(&built, &dest)
        .map_err(|e| format!("cannot copy {} to {}: {e}", built.display(), dest.display()))?;
    Ok(dest)
}
