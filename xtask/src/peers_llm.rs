//! Test peers of the LLM work: PyPI `fakellm` (an OpenAI-compatible mock server driven by
//! YAML rules) in a virtualenv under `target/peers/llm/venv`.
//!
//! Idempotent and offline-friendly: a marker file records the pinned requirement; when it
//! matches and the `fakellm` executable is there, nothing is fetched. The tests start
//! fakellm themselves (`crates/llm/tests/all/support.rs`) on a free 127.0.0.1 port.

use std::path::{Path, PathBuf};
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
    pip_venv("LLM PyPI peer", &venv_dir(), FAKELLM, "fakellm")
}

/// Installs the pinned `requirement` with pip into the virtualenv `venv` (made when
/// missing), so that its executable `bin` is there; `what` names it in the step header.
/// Idempotent and offline-friendly: a marker file records the requirement, and when it
/// matches and `bin` is there nothing is fetched.
pub(crate) fn pip_venv(what: &str, venv: &Path, requirement: &str, bin: &str) -> crate::Result {
    let exe = |name: &str| venv.join("bin").join(name);
    let marker = venv.join(".toolhost-installed");
    let installed = std::fs::read_to_string(&marker).is_ok_and(|s| s.trim() == requirement);
    if installed && exe(bin).exists() {
        step(&format!("{what}: {bin} already installed"));
        return Ok(());
    }
    step(&format!("{what}: python venv + pip install {requirement}"));
    if !exe("python").exists() {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        std::fs::create_dir_all(venv.parent().unwrap_or(venv))
            .map_err(|e| format!("cannot create {}: {e}", venv.display()))?;
        run(Command::new(&python).arg("-m").arg("venv").arg(venv))?;
    }
    run(Command::new(exe("python")).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--prefer-binary",
        requirement,
    ]))?;
    if !exe(bin).exists() {
        return Err(format!(
            "pip installed {requirement} but {} is missing",
            exe(bin).display()
        ));
    }
    std::fs::write(&marker, requirement)
        .map_err(|e| format!("cannot write {}: {e}", marker.display()))
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
