//! Test peers of the LLM work: PyPI `fakellm` (an OpenAI-compatible mock server driven by
//! YAML rules) in a virtualenv under `target/peers/llm/venv`.
//!
//! Idempotent and offline-friendly: a marker file records the pinned requirement; when it
//! matches and the `fakellm` executable is there, nothing is fetched. The tests start
//! fakellm themselves (`crates/llm/tests/all/support.rs`) on a free 127.0.0.1 port.

use std::path::PathBuf;
use std::process::Command;

use crate::{root, run, step};

/// The pinned requirement (0.3.x streams tool-call argument JSON in pieces).
const FAKELLM: &str = "fakellm==0.3.5";

fn venv_dir() -> PathBuf {
    root().join("target").join("peers").join("llm").join("venv")
}

fn bin(name: &str) -> PathBuf {
    if cfg!(windows) {
        venv_dir().join("Scripts").join(format!("{name}.exe"))
    } else {
        venv_dir().join("bin").join(name)
    }
}

/// Installs the peers. Idempotent and offline-friendly: skips what is already installed.
pub fn setup() -> crate::Result {
    let marker = venv_dir().join(".toolhost-installed");
    let installed = std::fs::read_to_string(&marker).is_ok_and(|s| s.trim() == FAKELLM);
    if installed && bin("fakellm").exists() {
        step("LLM PyPI peer: fakellm already installed");
        return Ok(());
    }
    step(&format!(
        "LLM PyPI peer: python venv + pip install {FAKELLM}"
    ));
    if !bin("python").exists() {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let dir = venv_dir();
        std::fs::create_dir_all(dir.parent().unwrap_or(&dir))
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        run(Command::new(&python).arg("-m").arg("venv").arg(&dir))?;
    }
    run(Command::new(bin("python")).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--prefer-binary",
        FAKELLM,
    ]))?;
    if !bin("fakellm").exists() {
        return Err(format!(
            "pip installed {FAKELLM} but {} is missing",
            bin("fakellm").display()
        ));
    }
    std::fs::write(&marker, FAKELLM)
        .map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    Ok(())
}

/// Environment variables the tests need to find the peers.
///
/// - `TOOLHOST_FAKELLM`: the `fakellm` executable.
pub fn test_env() -> Vec<(String, String)> {
    vec![(
        "TOOLHOST_FAKELLM".into(),
        bin("fakellm").display().to_string(),
    )]
}
