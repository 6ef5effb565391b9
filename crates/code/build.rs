//! Builds the code-mode runner (`runner/`, Boa in a wasm32-wasip2 component) and puts it
//! in `OUT_DIR/runner.wasm` for `include_bytes!`, so the library and `cargo install`
//! carry code mode with nothing else to install. The runner is built once per target
//! folder (`<target>/code-runner`, shared by every profile), with `--locked`.
//!
//! Needs the `wasm32-wasip2` target (`rustup target add wasm32-wasip2`): without it the
//! build stops with that command.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let runner = here.join("runner");
    for p in ["src", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", runner.join(p).display());
    }
    println!("cargo:rerun-if-changed={}", here.join("wit").display());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default());
    let target = runner_target(&out);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&runner)
        .args([
            "build",
            "--release",
            "--locked",
            "--target",
            "wasm32-wasip2",
        ])
        .env("CARGO_TARGET_DIR", &target);
    // The outer build's settings are not the guest's: no clippy driver, host flags or
    // coverage instrumentation in a wasm build.
    for var in [
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_PROFILE_RELEASE_DEBUG",
        "CLIPPY_ARGS",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status();
    let built = target.join("wasm32-wasip2/release/toolhost-code-runner.wasm");
    match status {
        Ok(s) if s.success() && built.exists() => {}
        Ok(s) => fail(&format!(
            "building the code-mode runner failed ({s}); it needs the wasm32-wasip2 target: \
             `rustup target add wasm32-wasip2`"
        )),
        Err(e) => fail(&format!(
            "cannot run cargo to build the code-mode runner: {e}"
        )),
    }
    if let Err(e) = std::fs::copy(&built, out.join("runner.wasm")) {
        fail(&format!("cannot copy {}: {e}", built.display()));
    }
}

/// `<target>/code-runner`, from `OUT_DIR` (`<target>/<profile>/build/<crate>/out`), or
/// `OUT_DIR/code-runner` when that shape is not there.
fn runner_target(out: &Path) -> PathBuf {
    match out.ancestors().nth(4) {
        Some(t) if t.join("CACHEDIR.TAG").exists() => t.join("code-runner"),
        _ => out.join("code-runner"),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1)
}
