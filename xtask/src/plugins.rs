//! `cargo xtask plugins`: builds the guest components. Owned by the WASM work (issue 3).

use std::path::PathBuf;

/// Builds every plugin and fixture; returns the output folder (`target/plugins`).
pub fn build_all() -> crate::Result<PathBuf> {
    let out = crate::root().join("target").join("plugins");
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    crate::langs::build_all(&out)?;
    Ok(out)
}
