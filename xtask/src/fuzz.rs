//! `cargo xtask fuzz [SECONDS]`: runs every cargo-fuzz target of `fuzz/` for a short time
//! (default 20 s each), keeping and growing the corpora in `fuzz/corpus/<target>`.
//!
//! Two builds ([`Build`]): `cargo xtask fuzz` fuzzes optimised code, for runs long enough
//! to pay for its long instrumented build; the smoke run at the end of `cargo xtask test`
//! builds unoptimised code, which compiles in a fraction of the time.
//!
//! Installs what it needs on first use: the nightly toolchain (`rustup toolchain install
//! nightly --profile minimal`; libFuzzer's instrumentation needs nightly flags) and
//! `cargo-fuzz` (`cargo install --root target/toolchains`). A crash fails the task and
//! leaves the input in `fuzz/artifacts/<target>/`. Results and longer runs:
//! docs/security.md.

use std::process::Command;

/// The targets, as named in `fuzz/Cargo.toml`.
pub const TARGETS: &[&str] = &[
    "validate_args",
    "render_truncate",
    "redact_escape",
    "policy_parse",
    "net_rule_parse",
    "describe_output",
    "mcp_line_reader",
];

/// The cargo features every target is built with: the union of what the targets need
/// (`wasm` brings toolhost-wasm and wasmtime, `mcp` the MCP client and rmcp). One
/// feature set means one instrumented build of the dependencies, shared by every
/// target; a set per target rebuilt the dependencies whose features differ (tokio, ...)
/// once per set, which cost build time and several GB of `fuzz/target`.
pub const FEATURES: &str = "wasm,mcp";

/// The cargo-fuzz release installed under `target/toolchains`.
pub const CARGO_FUZZ: &str = "cargo-fuzz@0.13.1";

/// How the targets are built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Build {
    /// The release profile (optimised, instrumented): the most executions per second.
    Optimised,
    /// The dev profile (`cargo fuzz run --dev`): slower executions, a much shorter build.
    /// Figures: docs/security.md, "Fuzzing".
    Quick,
}

/// Runs every target for `seconds`.
pub fn run(seconds: u64, build: Build) -> crate::Result {
    ensure_nightly()?;
    let cargo_fuzz = ensure_cargo_fuzz()?;
    let dir = crate::root().join("fuzz");
    for target in TARGETS {
        crate::step(&format!("fuzzing {target} for {seconds} s"));
        std::fs::create_dir_all(dir.join("corpus").join(target))
            .map_err(|e| format!("cannot create the corpus folder of {target}: {e}"))?;
        let mut cmd = Command::new(&cargo_fuzz);
        cmd.current_dir(&dir)
            .env("RUSTUP_TOOLCHAIN", "nightly")
            .args(["fuzz", "run", "--features", FEATURES]);
        if build == Build::Quick {
            cmd.arg("--dev");
        }
        crate::run(
            cmd.args([target, "--"])
                .arg(format!("-max_total_time={seconds}"))
                .arg("-rss_limit_mb=2048")
                .arg("-print_final_stats=1"),
        )?;
    }
    Ok(())
}

fn ensure_nightly() -> crate::Result {
    let listed = Command::new("rustup")
        .args(["toolchain", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("nightly"))
        .unwrap_or(false);
    if !listed {
        crate::step("rustup toolchain install nightly --profile minimal");
        crate::run(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))?;
    }
    Ok(())
}

fn ensure_cargo_fuzz() -> crate::Result<std::path::PathBuf> {
    let root = crate::root().join("target").join("toolchains");
    let bin = root.join("bin").join("cargo-fuzz");
    if !bin.exists() {
        crate::step(&format!("cargo install {CARGO_FUZZ}"));
        crate::run(
            Command::new(crate::cargo())
                // A dev build: cargo-fuzz only drives cargo, and a release build of it
                // costs minutes of a fresh CI run.
                .args(["install", "--debug", "--locked", CARGO_FUZZ, "--root"])
                .arg(&root),
        )?;
    }
    Ok(bin)
}
