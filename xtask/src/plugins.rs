//! `cargo xtask plugins`: builds the guest components.
//!
//! - installs the `wasm32-wasip2` target through rustup if it is missing;
//! - builds the example plugins (`plugins/`, a guest workspace) and copies each
//!   `NAME.wasm` with its policy `NAME.toml` into `target/plugins/`;
//! - builds the hostile test fixtures (`tests/fixtures/`) into `target/plugins/fixtures/`
//!   (a subfolder, so `toolhost list --plugins target/plugins` shows only the examples);
//! - then the other languages' plugins (`crate::langs`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The guest target.
pub const TARGET: &str = "wasm32-wasip2";

/// The Rust example plugins (members of the guest workspace `plugins/`).
pub const RUST_EXAMPLES: &[&str] = &["calc", "files", "fetch"];

/// Builds the Rust example plugins only (what `cargo xtask demo` shows) into
/// `target/plugins`, with their policies and the data folder `files.toml` grants; returns
/// that folder. Needs nothing but rustup's `wasm32-wasip2` target.
pub fn build_examples() -> crate::Result<PathBuf> {
    let root = crate::root();
    let out = root.join("target").join("plugins");
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    ensure_target(TARGET)?;
    crate::step("building the Rust example plugins (wasm32-wasip2)");
    build_workspace(&root.join("plugins"), &out, RUST_EXAMPLES)?;
    // The data folder files.toml grants (`read = ["./data/files"]`, relative to the policy).
    copy_dir(
        &root.join("plugins").join("files").join("data"),
        &out.join("data").join("files"),
    )?;
    Ok(out)
}

/// Builds every plugin and fixture; returns the output folder (`target/plugins`).
pub fn build_all() -> crate::Result<PathBuf> {
    let root = crate::root();
    let out = build_examples()?;
    std::fs::create_dir_all(out.join("fixtures"))
        .map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    crate::step("building the hostile test fixtures (wasm32-wasip2)");
    build_workspace(
        &root.join("tests").join("fixtures"),
        &out.join("fixtures"),
        &[
            "hostile",
            "baddesc",
            "hostile_fs",
            "aaa_shadow",
            "desc_sleep",
            "desc_spin",
            "desc_flood",
            "desc_huge",
            "hostile_term",
            "hostile_html",
            "content_v2",
            "plain_wit",
            "plain_http",
            "config_keyed",
        ],
    )?;
    crate::langs::build_all(&out)?;
    Ok(out)
}

/// Copies a folder of plain files (sample data a policy grants) into `to`.
fn copy_dir(from: &Path, to: &Path) -> crate::Result {
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries.flatten() {
        let (path, dest) = (entry.path(), to.join(entry.file_name()));
        if path.is_dir() {
            copy_dir(&path, &dest)?;
        } else {
            std::fs::copy(&path, &dest).map_err(|e| {
                format!("cannot copy {} to {}: {e}", path.display(), dest.display())
            })?;
        }
    }
    Ok(())
}

/// Installs the Rust `target` through rustup unless it is already installed.
pub fn ensure_target(target: &str) -> crate::Result {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == target)
        })
        .unwrap_or(false);
    if !installed {
        crate::step(&format!("rustup target add {target}"));
        crate::run(Command::new("rustup").args(["target", "add", target]))?;
    }
    Ok(())
}

/// Builds a guest workspace in release mode and copies `NAME.wasm` (+ `NAME.toml` from
/// the workspace folder, when there is one) into `out`.
fn build_workspace(ws: &Path, out: &Path, names: &[&str]) -> crate::Result {
    let target_dir = crate::root().join("target").join("guest");
    crate::run(
        Command::new(crate::cargo())
            .current_dir(ws)
            .args(["build", "--release", "--target", TARGET, "--target-dir"])
            .arg(&target_dir),
    )?;
    let built = target_dir.join(TARGET).join("release");
    for name in names {
        let wasm = built.join(format!("{name}.wasm"));
        std::fs::copy(&wasm, out.join(format!("{name}.wasm")))
            .map_err(|e| format!("cannot copy {}: {e}", wasm.display()))?;
        let policy = ws.join(format!("{name}.toml"));
        if policy.is_file() {
            // Copied as is: relative folders in a policy are relative to the policy file,
            // so `read = ["./data/files"]` in files.toml grants `<out>/data/files`.
            std::fs::copy(&policy, out.join(format!("{name}.toml")))
                .map_err(|e| format!("cannot copy {}: {e}", policy.display()))?;
        }
    }
    Ok(())
}
